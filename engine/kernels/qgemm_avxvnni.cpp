// Int8 GEMM micro-kernels for CPUs with AVX-VNNI (compiled with -mavx2 -mavxvnni; called only
// after cpuid says so and XNN_ISA allows it, see vnni_enabled()). Layout and semantics are those
// of qgemm.h; the X panels are the AVX2 c4 ones (qs8_pack_x_16c4__avx2); the body is
// qgemm_vnni_c4.h with the VEX-encoded vpdpbusd.
#include "engine/kernels/qgemm_vnni_c4.h"

namespace xnn::kernels::internal {
namespace {
struct DpbusdVex {
  __m256i operator()(__m256i acc, __m256i x, __m256i w) const { return _mm256_dpbusd_avx_epi32(acc, x, w); }
};
}  // namespace

XNN_QGEMM_UKERNEL(qs8_gemm_6x16c4__avxvnni) {
  qgemm_c4_vnni<kVnniMr, 2>(DpbusdVex{}, mr, nr, groups, static_cast<const int8_t*>(w),
                            static_cast<const uint8_t*>(x), p, y, ldy);
}
XNN_QGEMM_UKERNEL(qs8_gemm_6x8c4__avxvnni) {
  qgemm_c4_vnni<kVnniMr, 1>(DpbusdVex{}, mr, nr, groups, static_cast<const int8_t*>(w),
                            static_cast<const uint8_t*>(x), p, y, ldy);
}

}  // namespace xnn::kernels::internal
