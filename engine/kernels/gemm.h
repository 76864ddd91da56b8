// fp32 GEMM for the CPU backend: C = A·B (+ bias per row of C) (+ residual) then activation.
// Serves 1×1 convolution (A = weights [Cout×Cin], B = input [Cin×H·W]), im2col convolution,
// Gemm/MatMul and the batched stage of Winograd.
//
// Design (Goto/BLIS): A is packed into MR-row panels once (weights, at session preparation),
// B is packed per call into NR-column panels in cache-sized blocks, and a register-blocked
// MR×NR micro-kernel (f32_gemm_<MR>x<NR>__<isa>) accumulates over K. Work is split over C
// tiles on the thread pool. The scalar micro-kernel uses the same packed layout. On AVX-512 CPUs
// f32_gemm_16x16__avx512 (16-row A panels, zmm) replaces the AVX2 kernel.
//
// Matrices are described by (data, row stride, column stride) in elements, so transposed
// operands (Gemm transA/transB, MatMul of a transposed view) need no copies beyond packing.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "engine/core/thread_pool.h"
#include "engine/kernels/activation.h"
#include "engine/kernels/cpu_features.h"

namespace xnn::kernels {

struct MatrixRef {
  const float* data = nullptr;
  int64_t row_stride = 0;  // elements between (i, j) and (i+1, j)
  int64_t col_stride = 1;  // elements between (i, j) and (i, j+1)
  float at(int64_t i, int64_t j) const { return data[i * row_stride + j * col_stride]; }
};

struct GemmEpilogue {
  const float* bias = nullptr;      // length M (one per row of C, i.e. per output channel), or null
  const float* residual = nullptr;  // M×N, row stride ldr (column stride 1), added before act
  int64_t ldr = 0;
  Activation act;
};

// The micro-kernel family for Isa::kAvx2: f32_gemm_6x16__avx2, or f32_gemm_16x16__avx512 on a
// CPU with AVX-512 (avx512_enabled(): not under XNN_ISA=avx2). Sessions take the best; tests pin
// each.
enum class F32GemmKernels { kAvx2, kAvx512 };
F32GemmKernels best_f32_gemm_kernels();
bool f32_gemm_kernels_supported(F32GemmKernels family);  // regardless of XNN_ISA

// A packed for the micro-kernel of one ISA. Owns its memory; immutable after packing, so one
// PackedA may be used by several threads and sessions at once.
class PackedA {
 public:
  PackedA() = default;
  // family: the kernels for Isa::kAvx2 (one the CPU cannot run falls back to kAvx2).
  PackedA(int64_t m, int64_t k, MatrixRef a, Isa isa, F32GemmKernels family = best_f32_gemm_kernels());
  int64_t rows() const { return m_; }
  int64_t depth() const { return k_; }
  Isa isa() const { return isa_; }
  const float* data() const { return data_.get(); }
  size_t bytes() const { return bytes_; }
  F32GemmKernels family() const { return family_; }
  const char* kernel_name() const;  // e.g. "f32_gemm_16x16__avx512"

 private:
  int64_t m_ = 0, k_ = 0;
  Isa isa_ = Isa::kScalar;
  F32GemmKernels family_ = F32GemmKernels::kAvx2;
  size_t bytes_ = 0;
  std::shared_ptr<float[]> data_;
};

// C[M×N] (row stride ldc, column stride 1) = epilogue(A·B). B is K×N.
// Steady state allocates nothing: per-thread packing buffers grow once and are reused.
void f32_gemm(const PackedA& a, int64_t n, MatrixRef b, float* c, int64_t ldc, const GemmEpilogue& ep,
              ThreadPool* pool);

// Same with A unpacked (activations × activations, e.g. MatMul): packs A per call.
void f32_gemm(int64_t m, int64_t n, int64_t k, MatrixRef a, MatrixRef b, float* c, int64_t ldc,
              const GemmEpilogue& ep, ThreadPool* pool, Isa isa = best_isa(),
              F32GemmKernels family = best_f32_gemm_kernels());

// ---- GEMM on operands the caller packed itself ----
// For callers that can write both operands straight into the micro-kernel's panel layouts more
// cheaply than packing a row-major matrix (training's weight gradient builds its im2col panels
// from a channels-last copy of the input, one contiguous run per panel row; the Winograd weight
// gradient reads its transformed input in place).
//   a_panels: ceil(m/mr) panels, panel i holding A[i·mr + r][q] at i·mr·k + q·mr + r (rows past
//             m zero);
//   b:        ceil(n/nr) panels of k rows of nr floats, panel j starting at b + j·b_panel_stride,
//             its row q (B[q][j·nr .. j·nr + nr)) b_row_stride floats after row q−1. Packed:
//             b_row_stride = nr, b_panel_stride = nr·k. Columns past n may hold anything finite
//             or not: they only reach columns of C that are not written.
// mr and nr depend on the ISA and family (f32_gemm_panel_shape). Single-threaded: callers split
// the work. C[m×n] (row stride ldc) = A·B, or += with accumulate.
struct GemmPanelShape {
  int mr, nr;
};
GemmPanelShape f32_gemm_panel_shape(Isa isa, F32GemmKernels family = best_f32_gemm_kernels());
void f32_gemm_panels(int64_t m, int64_t n, int64_t k, const float* a_panels, const float* b, int64_t b_row_stride,
                     int64_t b_panel_stride, float* c, int64_t ldc, bool accumulate, Isa isa,
                     F32GemmKernels family = best_f32_gemm_kernels());

// f32_gemm with B already in `a`'s micro-kernel panel layout (nr = f32_gemm_panel_shape(a.isa(),
// a.family()).nr): ceil(n/nr) panels, panel j at b_panels + j·k·nr, its row q (B[q][j·nr ..
// j·nr + nr)) at + q·nr; columns past n finite or not (they reach no written column of C).
// Threads and epilogue as f32_gemm; nothing is packed per call (im2col writes these panels
// directly: engine/kernels/im2col.h).
void f32_gemm_packed_b(const PackedA& a, int64_t n, const float* b_panels, float* c, int64_t ldc,
                       const GemmEpilogue& ep, ThreadPool* pool);

// The micro-kernel name for an ISA (and the best family), e.g. "f32_gemm_6x16__avx2".
std::string gemm_kernel_name(Isa isa);

}  // namespace xnn::kernels
