// Sparse-weight × dense-activation products for pruned layers (unstructured sparsity).
//
//   f32_spmm: Y[rows × n] = epilogue(W · X), W sparse [rows × cols], X dense [cols × n] row-major.
//             1×1 convolution in NCHW (W = weights [Cout × Cin], X = input [Cin × H·W]) and linear
//             layers with a batch (X = the transposed activations [K × M]).
//   f32_spmv: y[rows] = act(W · x + bias), the batch-1 linear layer.
//
// Design (XNNPACK's ARM spmm, which XNNPACK switches off on x86 with AVX): vectorise over the
// n columns (spatial positions), not over the weights. For a tile of 32 columns and one output
// row, walk the row's nonzeros: broadcast the weight, FMA it with 32 contiguous floats of the
// input row it multiplies; every output row costs exactly its nonzeros, so the work scales with
// density. A block of X (up to 256 columns) is first copied into panels of 32 (AVX2) or 64
// (AVX-512) columns, so the input rows a tile reads are 128/256 B apart, aligned, and
// zero-padded: read in place they would be a whole row of X apart (a page per nonzero on 56x56
// maps). A thread that owns a whole column block packs it itself; threads that split a block's
// rows share one copy, packed by all of them over slices of k.
// Deep inputs are walked in k-chunks (SparseWeights::chunk_cols() input rows, at most 192): a
// 7x7 512->512 layer's packed panel is 128 KB, so most nonzeros' 256-byte reads came from L2;
// one chunk of it stays in L1 while all output rows take their nonzeros in it, the partial sums
// going through Y between chunks (the epilogue runs after the last chunk).
// A narrow column tail (at most 4 columns past the last whole vector of 16 with AVX-512: a 7x7
// map's 49th column) costs the column kernel a whole vector per nonzero; given W also in the
// sliced batch-1 form (spmv_sliced.h), f32_spmm runs those columns through the permute kernel.
// f32_spmv (one column) has nothing to vectorise over n: it gathers x[col] for 8 nonzeros of a
// row at a time (AVX2 vgatherdps) and reduces.
//
// Zeros are detected from the constant weights (exact 0.0f; -0.0f counts as zero): a pruned
// model is stored dense with zeros and the CPU backend chooses these kernels when the share of
// zeros pays for them (engine/backends/cpu/sparse_cpu.cpp).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/thread_pool.h"
#include "engine/kernels/activation.h"
#include "engine/kernels/cpu_features.h"
#include "engine/kernels/spmv_sliced.h"

namespace xnn::kernels {

// Share of exact zeros among n floats (0 for n = 0).
double zero_fraction(const float* w, int64_t n);

// W [rows × cols] in compressed sparse rows, for a right operand X whose rows are x_stride
// floats apart. Immutable after construction, so one instance serves many threads.
class SparseWeights {
 public:
  SparseWeights() = default;
  // From dense row-major W (row stride ldw floats); exact zeros are dropped. Throws an Error
  // when rows × cols does not fit the int32 offsets.
  SparseWeights(int64_t rows, int64_t cols, const float* w, int64_t ldw, int64_t x_stride);

  // Widest k-chunk (columns of W) the spmm kernels walk at once: 192 input rows of a 64-float
  // panel are 48 KB, a Sapphire Rapids L1 (of a 32-float AVX2 panel: 24 KB of a 32 KB L1).
  // Narrower chunks cost more than they save: every chunk of every row pays ~30 cycles (loop
  // exit, partial sums through Y); measured 7x7 512->512 at 80% zeros, 3 chunks of 171: 4.6
  // cycles per nonzero, 4 of 128: 4.7, 6 of 86: 5.5, unchunked 5.3. Both vector kernels use the
  // same chunks, so they add in the same order.
  static constexpr int64_t kMaxChunkCols = 192;

  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  int64_t x_stride() const { return x_stride_; }
  int64_t nnz() const { return static_cast<int64_t>(values_.size()); }
  double sparsity() const;  // 1 - nnz / (rows × cols); 0 for an empty matrix
  size_t bytes() const;     // memory held by the sparse form

  const float* values() const { return values_.data(); }       // nonzeros, row by row
  const int32_t* columns() const { return columns_.data(); }   // column of each nonzero
  const int32_t* row_start() const { return row_start_.data(); }  // rows + 1 offsets into values

  // W's columns split into chunks() chunks of chunk_cols() (the last may be narrower), as few as
  // kMaxChunkCols allows, of equal width. chunk_start(r)[c] .. chunk_start(r)[c + 1] are the
  // offsets of row r's nonzeros in chunk c (chunks() + 1 entries).
  int64_t chunks() const { return chunks_; }
  int64_t chunk_cols() const { return chunk_cols_; }
  const int32_t* chunk_start(int64_t r) const {
    return chunks_ == 1 ? row_start_.data() + r : chunk_start_.data() + r * (chunks_ + 1);
  }

 private:
  int64_t rows_ = 0, cols_ = 0, x_stride_ = 0, chunks_ = 1, chunk_cols_ = 0;
  std::vector<float> values_;
  std::vector<int32_t> columns_, row_start_;
  std::vector<int32_t> chunk_start_;  // rows × (chunks + 1) when chunks > 1
};

struct SpmmEpilogue {
  const float* bias = nullptr;      // one per row of Y, or null
  const float* residual = nullptr;  // rows × n, row stride ldr, added before act
  int64_t ldr = 0;
  Activation act;
};

// Y (row stride ldy) = epilogue(W · X) for the first n columns of X (row stride w.x_stride()).
// Y holds partial sums between k-chunks, so it must not overlap X or the residual.
// `tail`, when given, is W in the sliced batch-1 form (spmv_sliced.h, the shape of
// spmv_sliced_shape()); the last spmm_sliced_tail(n, isa) columns then go through it, one column
// at a time, instead of through a vector of the column kernel that they would fill only in part.
void f32_spmm(const SparseWeights& w, int64_t n, const float* x, float* y, int64_t ldy, const SpmmEpilogue& ep,
              ThreadPool* pool, Isa isa, const SlicedSparseWeights* tail = nullptr);
// "f32_spmm_64x1__avx512" (Isa::kAvx2 where avx512_enabled()), "f32_spmm_32x1__avx2", "f32_spmm_8x1__scalar"
std::string spmm_kernel_name(Isa isa);

// How many of n columns f32_spmm leaves to the sliced form when given one: with AVX-512, the
// columns past the last whole vector of 16 when they are at most kMaxSlicedTail (a 7x7 map's 49th
// column, a 14x14 map's last 4); 0 otherwise. Why: every nonzero costs the column kernel one load
// and one FMA per vector, however few of its lanes are real columns (the 49th column of 7x7
// 512->512 cost as much as columns 32-47), while the permute kernel takes 16 rows' nonzeros per
// FMA, ~1/12 of that per column at 80% zeros. (With AVX2 only it does not pay: the 8x16 permute
// kernel took 10.5 us of the 10 us that 7x7 512->512's 49th column cost the 32-column kernel.)
inline constexpr int64_t kMaxSlicedTail = 4;
int64_t spmm_sliced_tail(int64_t n, Isa isa);
// W [rows × cols] (row stride ldw) in that sliced form when n columns leave such a tail, else empty.
std::optional<SlicedSparseWeights> spmm_sliced_tail_form(int64_t rows, int64_t cols, const float* w, int64_t ldw,
                                                         int64_t n, Isa isa);

// y[r] = act(W[r,:]·x + bias[r]); x has w.cols() elements (x_stride is not used).
void f32_spmv(const SparseWeights& w, const float* x, const float* bias, const Activation& act, float* y,
              ThreadPool* pool, Isa isa);
std::string spmv_kernel_name(Isa isa);  // "f32_spmv_8x1__avx2" (gather), "f32_spmv_1x4__scalar"

// Floats per packed input row of the vector kernels' panels: [tile][k][panel], zero-padded.
constexpr int64_t kSpmmPanelAvx512 = 64, kSpmmPanelAvx2 = 32;

// The ISA paths, split so that threads sharing a column block pack it once:
//   pack:   X rows [k0, k1) of columns [c0, c1) into that block's panels (k = w.cols());
//   packed: output rows [r0, r1) × columns [c0, c1) from the block's panels;
//   block:  both for one thread (panels in its scratch).
void f32_spmm_pack__avx2(const float* x, int64_t stride, int64_t k, int64_t k0, int64_t k1, int64_t c0, int64_t c1,
                         float* panels);
void f32_spmm_pack__avx512(const float* x, int64_t stride, int64_t k, int64_t k0, int64_t k1, int64_t c0, int64_t c1,
                           float* panels);
void f32_spmm_packed__avx2(const SparseWeights& w, int64_t r0, int64_t r1, int64_t c0, int64_t c1, const float* panels,
                           float* y, int64_t ldy, const SpmmEpilogue& ep);
void f32_spmm_packed__avx512(const SparseWeights& w, int64_t r0, int64_t r1, int64_t c0, int64_t c1,
                             const float* panels, float* y, int64_t ldy, const SpmmEpilogue& ep);
void f32_spmm_block__scalar(const SparseWeights& w, int64_t r0, int64_t r1, int64_t c0, int64_t c1, const float* x,
                            float* y, int64_t ldy, const SpmmEpilogue& ep);
void f32_spmm_block__avx2(const SparseWeights& w, int64_t r0, int64_t r1, int64_t c0, int64_t c1, const float* x,
                          float* y, int64_t ldy, const SpmmEpilogue& ep);
void f32_spmm_block__avx512(const SparseWeights& w, int64_t r0, int64_t r1, int64_t c0, int64_t c1, const float* x,
                            float* y, int64_t ldy, const SpmmEpilogue& ep);
// Rows [r0, r1) of W · x, no epilogue.
void f32_spmv_rows__scalar(const SparseWeights& w, int64_t r0, int64_t r1, const float* x, float* y);
void f32_spmv_rows__avx2(const SparseWeights& w, int64_t r0, int64_t r1, const float* x, float* y);

}  // namespace xnn::kernels
