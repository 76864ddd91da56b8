// Int8 GEMM micro-kernels for CPUs with AVX512-VNNI (compiled with -mavx512vnni -mavx512vl
// -mavx512bw; called only after cpuid says so, see cpu_features()):
//
//   qs8_gemm_6x16c4__avx512vnni / 6x8c4: the EVEX encoding of vpdpbusd on ymm, for the 256-bit
//      VNNI layout (6-row panels) on CPUs without AVX-VNNI; same body as the AVX-VNNI kernels
//      (qgemm_vnni_c4.h).
//   qs8_gemm_16x16c4__avx512vnni / 8x16c4: vpdpbusd on zmm, the 512-bit layout (16- or 8-row
//      panels). A zmm lane group holds the 4 k values of 16 columns, which is exactly one group of
//      the 16-column c4 X panel, so X is packed as for AVX2 and each group is one 64-byte load;
//      each row's 4 weights are broadcast to all lanes and one vpdpbusd does 64 multiply-adds.
//      16x16: 16 accumulators (vpdpbusd has a latency of ~5 cycles at 2 per cycle, so at least 10
//      chains are needed) + X + broadcasts of the 32 zmm registers; per group 17 loads and 16
//      vpdpbusd, twice the work per instruction of the 6x16 ymm kernel. 8x16 serves weight
//      matrices whose row count 16-row panels would pad by much more (e.g. 24 rows).
//   16x8c4 / 8x8c4: the same panels on ymm for an X panel with at most 8 valid columns.
// The zmm epilogue (requant_avx512.h, Requant16x4: four rows narrowed together) requantises with
// the float operations of requantize() and narrows with saturation to the same bytes as the ymm
// epilogue, then stores through a byte mask, so edge tiles write nothing outside Y.
#include "engine/kernels/qgemm_vnni_c4.h"
#include "engine/kernels/requant_avx512.h"

namespace xnn::kernels::internal {
namespace {
struct DpbusdEvex {
  __m256i operator()(__m256i acc, __m256i x, __m256i w) const { return _mm256_dpbusd_epi32(acc, x, w); }
};

// The k loop of a 16- or 8-row tile as one asm block over a 64-byte aligned tile of int32
// accumulators: loaded into zmm0-15 (zmm0-7), one 64-byte X load (zmm16) and one vpdpbusd per row
// per group, stored back at the end. Each row's 4 weights are an embedded-broadcast ({1to16})
// memory operand: one fused uop, where GCC 12 emits vpbroadcastd + vpdpbusd for the intrinsics.
// Written in asm because GCC's own allocation of the intrinsics kept moving accumulators through
// the stack inside the loop once the epilogue was inlined (see avx2::store_tile).
// Per accumulator row I (the assembler evaluates I*64 and I*4): load from / store to the tile, and
// one vpdpbusd with row I's 4 weights broadcast from memory.
//
// Software prefetch distances (bytes ahead in the weight and X panels). The hardware streamers
// stop at 4 KB page boundaries, and a weight panel of a deep layer (ResNet-18's layer4: 16 rows ×
// 4608 = 74 KB, 2.4 MB for the layer) comes from L3 on its first use, so the first call of each
// row panel waited on every page; prefetching 2 KB ahead also runs into the next row panel.
// Measured on ResNet-18 int8 (one thread, interleaved builds): the layer4 convolutions took 20%
// less time relative to the rest, layers 1-2 unchanged.
#define XNN_QGEMM_W_PREFETCH "2048"
#define XNN_QGEMM_X_PREFETCH "2048"
#define XNN_LD(I) "vmovdqa64 " #I "*64(%[t]), %%zmm" #I "\n\t"
#define XNN_ST(I) "vmovdqa64 %%zmm" #I ", " #I "*64(%[t])\n\t"
#define XNN_DP(I) "vpdpbusd " #I "*4(%[w])%{1to16%}, %%zmm16, %%zmm" #I "\n\t"
#define XNN_ROWS_0_7(OP) OP(0) OP(1) OP(2) OP(3) OP(4) OP(5) OP(6) OP(7)
#define XNN_ROWS_8_15(OP) OP(8) OP(9) OP(10) OP(11) OP(12) OP(13) OP(14) OP(15)
#define XNN_ZMM_0_7 "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7"
#define XNN_ZMM_8_15 "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15"

// One k loop over `groups` for the 16 rows (ROWS_A ROWS_B) or 8 rows (ROWS_A, ROWS_B empty) of a
// tile: LOAD_X puts the group's 64 bytes of X in zmm16, W_STEP / X_STEP advance the pointers.
#define XNN_NONE(OP)
#define XNN_K_LOOP(ROWS_A, ROWS_B, LOAD_X, W_STEP, X_STEP)                                \
  ROWS_A(XNN_LD) ROWS_B(XNN_LD)                                                           \
  "1:\n\t" LOAD_X "prefetcht0 " XNN_QGEMM_W_PREFETCH "(%[w])\n\t"                        \
  ROWS_A(XNN_DP) ROWS_B(XNN_DP)                                                           \
  "add $" W_STEP ", %[w]\n\t" X_STEP "dec %[g]\n\t"                                        \
  "jnz 1b\n\t" ROWS_A(XNN_ST) ROWS_B(XNN_ST)
// X packed: the next 64 bytes of the panel (aligned), prefetched ahead like the weights.
#define XNN_X_PACKED "vmovdqa64 (%[x]), %%zmm16\n\tprefetcht0 " XNN_QGEMM_X_PREFETCH "(%[x])\n\t"
#define XNN_X_PACKED_STEP "add $64, %[x]\n\t"
// X interleaved (qs8_gemm_interleaved): group g's 16 columns are the 64 bytes at x + off[g], an
// input stored 4 channels per pixel, read in place (unaligned: a tap's shift moves them in 4-byte
// steps), so X is never packed. The offsets stream is 8 bytes per group beside the weights' 64.
#define XNN_X_OFFSETS "mov (%[o]), %%rax\n\tvmovdqu64 (%[x],%%rax), %%zmm16\n\t"
#define XNN_X_OFFSETS_STEP "add $8, %[o]\n\t"

inline void k_loop_16(__m512i* t, size_t groups, const int8_t* w, const uint8_t* x) {
  asm volatile(XNN_K_LOOP(XNN_ROWS_0_7, XNN_ROWS_8_15, XNN_X_PACKED, "64", XNN_X_PACKED_STEP)
               : [w] "+r"(w), [x] "+r"(x), [g] "+r"(groups)
               : [t] "r"(t)
               : "cc", "memory", XNN_ZMM_0_7, XNN_ZMM_8_15, "xmm16");
}
inline void k_loop_8(__m512i* t, size_t groups, const int8_t* w, const uint8_t* x) {
  asm volatile(XNN_K_LOOP(XNN_ROWS_0_7, XNN_NONE, XNN_X_PACKED, "32", XNN_X_PACKED_STEP)
               : [w] "+r"(w), [x] "+r"(x), [g] "+r"(groups)
               : [t] "r"(t)
               : "cc", "memory", XNN_ZMM_0_7, "xmm16");
}
inline void k_loop_16_offsets(__m512i* t, size_t groups, const int8_t* w, const uint8_t* x, const int64_t* off) {
  asm volatile(XNN_K_LOOP(XNN_ROWS_0_7, XNN_ROWS_8_15, XNN_X_OFFSETS, "64", XNN_X_OFFSETS_STEP)
               : [w] "+r"(w), [o] "+r"(off), [g] "+r"(groups)
               : [t] "r"(t), [x] "r"(x)
               : "cc", "memory", "rax", XNN_ZMM_0_7, XNN_ZMM_8_15, "xmm16");
}
inline void k_loop_8_offsets(__m512i* t, size_t groups, const int8_t* w, const uint8_t* x, const int64_t* off) {
  asm volatile(XNN_K_LOOP(XNN_ROWS_0_7, XNN_NONE, XNN_X_OFFSETS, "32", XNN_X_OFFSETS_STEP)
               : [w] "+r"(w), [o] "+r"(off), [g] "+r"(groups)
               : [t] "r"(t), [x] "r"(x)
               : "cc", "memory", "rax", XNN_ZMM_0_7, "xmm16");
}
#undef XNN_NONE
#undef XNN_K_LOOP
#undef XNN_X_PACKED
#undef XNN_X_PACKED_STEP
#undef XNN_X_OFFSETS
#undef XNN_X_OFFSETS_STEP
#undef XNN_QGEMM_W_PREFETCH
#undef XNN_QGEMM_X_PREFETCH
#undef XNN_LD
#undef XNN_ST
#undef XNN_DP
#undef XNN_ROWS_0_7
#undef XNN_ROWS_8_15
#undef XNN_ZMM_0_7
#undef XNN_ZMM_8_15

// x_offsets null: X is a packed 16-column panel; else the interleaved form (k_loop_*_offsets).
template <int MR>
inline void qgemm_16c4_zmm(size_t mr, size_t nr, size_t groups, const int8_t* w, const uint8_t* x,
                           const int64_t* x_offsets, const QTileParams& p, uint8_t* y, int64_t ldy) {
  static_assert(MR == 16 || MR == 8);
  alignas(64) __m512i acc[MR];
  unroll<MR>([&](auto i) { acc[i] = _mm512_set1_epi32(p.init[i]); });
  if (groups != 0) {
    if constexpr (MR == 16) {
      if (x_offsets) {
        k_loop_16_offsets(acc, groups, w, x, x_offsets);
      } else {
        k_loop_16(acc, groups, w, x);
      }
    } else {
      if (x_offsets) {
        k_loop_8_offsets(acc, groups, w, x, x_offsets);
      } else {
        k_loop_8(acc, groups, w, x);
      }
    }
  }
  // Four rows at a time (Requant16x4); rows past mr are computed and not stored (their
  // multipliers are read only where they exist).
  const avx512::Requant16x4 rq(p.upper, p.zero_point, p.qmin);
  unroll<MR / 4>([&](auto q) {
    constexpr int r0 = 4 * decltype(q)::value;
    if (static_cast<size_t>(r0) < mr) {
      float m[4];
      for (int r = 0; r < 4; ++r) m[r] = static_cast<size_t>(r0 + r) < mr ? p.multiplier[r0 + r] : 0.0f;
      const __m512i rows = rq(acc[r0], acc[r0 + 1], acc[r0 + 2], acc[r0 + 3], m);
      const int64_t n = static_cast<int64_t>(nr);
      avx512::store_bytes16(y + r0 * ldy, _mm512_castsi512_si128(rows), n);
      if (static_cast<size_t>(r0 + 1) < mr) avx512::store_bytes16(y + (r0 + 1) * ldy, _mm512_extracti32x4_epi32(rows, 1), n);
      if (static_cast<size_t>(r0 + 2) < mr) avx512::store_bytes16(y + (r0 + 2) * ldy, _mm512_extracti32x4_epi32(rows, 2), n);
      if (static_cast<size_t>(r0 + 3) < mr) avx512::store_bytes16(y + (r0 + 3) * ldy, _mm512_extracti32x4_epi32(rows, 3), n);
    }
  });
}
}  // namespace

XNN_QGEMM_UKERNEL(qs8_gemm_6x16c4__avx512vnni) {
  qgemm_c4_vnni<kVnniMr, 2>(DpbusdEvex{}, mr, nr, groups, static_cast<const int8_t*>(w),
                            static_cast<const uint8_t*>(x), p, y, ldy);
}
XNN_QGEMM_UKERNEL(qs8_gemm_6x8c4__avx512vnni) {
  qgemm_c4_vnni<kVnniMr, 1>(DpbusdEvex{}, mr, nr, groups, static_cast<const int8_t*>(w),
                            static_cast<const uint8_t*>(x), p, y, ldy);
}
XNN_QGEMM_UKERNEL(qs8_gemm_16x16c4__avx512vnni) {
  qgemm_16c4_zmm<16>(mr, nr, groups, static_cast<const int8_t*>(w), static_cast<const uint8_t*>(x), nullptr, p, y,
                     ldy);
}
XNN_QGEMM_UKERNEL(qs8_gemm_8x16c4__avx512vnni) {
  qgemm_16c4_zmm<8>(mr, nr, groups, static_cast<const int8_t*>(w), static_cast<const uint8_t*>(x), nullptr, p, y,
                    ldy);
}
XNN_QGEMM_INTERLEAVED_UKERNEL(qs8_gemm_16x16c4_interleaved__avx512vnni) {
  qgemm_16c4_zmm<16>(mr, nr, groups, static_cast<const int8_t*>(w), x, x_offsets, p, y, ldy);
}
XNN_QGEMM_INTERLEAVED_UKERNEL(qs8_gemm_8x16c4_interleaved__avx512vnni) {
  qgemm_16c4_zmm<8>(mr, nr, groups, static_cast<const int8_t*>(w), x, x_offsets, p, y, ldy);
}
XNN_QGEMM_UKERNEL(qs8_gemm_16x8c4__avx512vnni) {
  qgemm_c4_vnni<16, 1>(DpbusdEvex{}, mr, nr, groups, static_cast<const int8_t*>(w), static_cast<const uint8_t*>(x),
                       p, y, ldy);
}
XNN_QGEMM_UKERNEL(qs8_gemm_8x8c4__avx512vnni) {
  qgemm_c4_vnni<8, 1>(DpbusdEvex{}, mr, nr, groups, static_cast<const int8_t*>(w), static_cast<const uint8_t*>(x),
                      p, y, ldy);
}

}  // namespace xnn::kernels::internal
