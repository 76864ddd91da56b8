// Micro-kernels behind f32_gemm (engine/kernels/gemm.h). Internal: only gemm*.cpp and the
// GEMM tests/benchmarks include this.
//
// Packed layouts (shared by every micro-kernel of one shape):
//   A: K-block major (see a_offset in gemm.cpp): for each K block [pc, pc+kc), panels of MR rows,
//      panel p holding A[p*MR + r][pc + q] at q*MR + r; rows past M are 0. A micro-kernel sees
//      one panel of one K block: kc × MR floats, k-major.
//   B: panels of NR columns per (kc × nc) block; panel q holds B[k][q*NR + c] at q*kc*NR + k*NR + c,
//      columns past the block are 0. Full panels of a row-major B may also be read in place
//      (b_stride = B's row stride).
//
// A call computes one MR×NR tile over kc steps and writes it to C (row stride ldc, rows < mr,
// columns < nr only, so edge tiles never touch memory outside C):
//   v = A·B (+ C if accumulate) (+ bias[i]) (+ residual[i*ldr + j]), then act, then store.
// The driver passes bias/residual/act only with the K block where they belong, so each is
// applied exactly once.
#pragma once
#include <cstddef>
#include <cstdint>

#include "engine/kernels/activation.h"

namespace xnn::kernels::internal {

struct GemmTileEpilogue {
  const float* bias = nullptr;      // bias for the tile's first row, or null
  const float* residual = nullptr;  // residual at the tile's (0, 0), or null
  int64_t ldr = 0;
  const Activation* act = nullptr;  // null or kNone: no activation
};

// b_stride: floats between consecutive k rows of B: NR for a packed panel, or the row stride of
// a row-major B read in place (the kernel then reads NR columns of each row, unaligned).
using GemmUkernelFn = void (*)(size_t mr, size_t nr, size_t kc, const float* a, const float* b, int64_t b_stride,
                               float* c, int64_t ldc, bool accumulate, const GemmTileEpilogue& ep);

#define XNN_GEMM_UKERNEL(name)                                                                                        \
  void name(size_t mr, size_t nr, size_t kc, const float* a, const float* b, int64_t b_stride, float* c, int64_t ldc, \
            bool accumulate, const GemmTileEpilogue& ep)

// AVX2+FMA (defined in gemm_avx2.cpp; call only when isa_supported(Isa::kAvx2)).
// 6x16: 12 ymm accumulators. 6x8 reads the first 8 columns of each B row, for the last panel of
// a block when it has at most 8 valid columns (N = 49, N = 1, ...).
inline constexpr int kAvx2Mr = 6;
inline constexpr int kAvx2Nr = 16;
XNN_GEMM_UKERNEL(f32_gemm_6x16__avx2);
XNN_GEMM_UKERNEL(f32_gemm_6x8__avx2);

// AVX-512 (gemm_avx512.cpp; call only when avx512_enabled()): A in 16-row panels, the same
// 16-column B panels. 16x8 for a last panel with at most 8 valid columns.
inline constexpr int kAvx512Mr = 16;
XNN_GEMM_UKERNEL(f32_gemm_16x16__avx512);
XNN_GEMM_UKERNEL(f32_gemm_16x8__avx512);
// The same kernel, prefetching B read in place two panels ahead instead of one: for a task of
// one A panel, whose calls follow each other panel by panel.
XNN_GEMM_UKERNEL(f32_gemm_16x16__avx512_prefetch2);

// Scalar (baseline x86-64; the compiler may use SSE2). 4x8 is the scalar ISA's shape; 6x16 runs
// an AVX2-packed A on a CPU without AVX2.
inline constexpr int kScalarMr = 4;
inline constexpr int kScalarNr = 8;
XNN_GEMM_UKERNEL(f32_gemm_4x8__scalar);
XNN_GEMM_UKERNEL(f32_gemm_6x16__scalar);

}  // namespace xnn::kernels::internal
