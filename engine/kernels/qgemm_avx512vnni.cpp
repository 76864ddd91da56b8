// Int8 GEMM micro-kernels for CPUs with AVX512-VNNI and AVX512VL but no AVX-VNNI (Ice Lake,
// Zen 4): the EVEX encoding of vpdpbusd on ymm registers (compiled with -mavx512vnni -mavx512vl;
// called only after cpuid says so, see cpu_features().avx512_vnni). Same layout, packing and
// results as the AVX-VNNI kernels (qgemm_avxvnni.cpp): the body is qgemm_vnni_c4.h. 256 bits
// wide on purpose: the X panels and the epilogue are the AVX2 ones, and Zen 4 splits 512-bit
// operations into two 256-bit halves anyway.
#include "engine/kernels/qgemm_vnni_c4.h"

namespace xnn::kernels::internal {
namespace {
struct DpbusdEvex {
  __m256i operator()(__m256i acc, __m256i x, __m256i w) const { return _mm256_dpbusd_epi32(acc, x, w); }
};
}  // namespace

XNN_QGEMM_UKERNEL(qs8_gemm_6x16c4__avx512vnni) {
  qgemm_c4_vnni<kVnniMr, 2>(DpbusdEvex{}, mr, nr, groups, static_cast<const int8_t*>(w),
                            static_cast<const uint8_t*>(x), p, y, ldy);
}
XNN_QGEMM_UKERNEL(qs8_gemm_6x8c4__avx512vnni) {
  qgemm_c4_vnni<kVnniMr, 1>(DpbusdEvex{}, mr, nr, groups, static_cast<const int8_t*>(w),
                            static_cast<const uint8_t*>(x), p, y, ldy);
}

}  // namespace xnn::kernels::internal
