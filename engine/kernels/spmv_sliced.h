// Batch-1 sparse linear layer by in-register permutes: y[rows] = act(W · x + bias) with W
// unstructured-sparse, for CPUs with AVX-512 (kernel f32_spmv_16x32perm__avx512).
//
// Why a second batch-1 format: the CSR kernel (spmm.h, f32_spmv_8x1__avx2) fetches x[col] for
// every nonzero with vgatherdps, about one cycle per nonzero, so at 80% zeros it does not beat a
// dense GEMV that streams the weights from L2 (784→300: 0.8x). Here the lanes of a vector are 16
// output rows, and x is read 32 columns at a time into two registers; vpermt2ps then picks, for
// each lane, the x of that row's next nonzero in the block (a 5-bit index), and one FMA adds 16
// products. A block of 16 rows × 32 columns is stored as S "slices" (S = the largest nonzero
// count of its 16 rows in those columns): per slice 16 weights (0 where a row has run out) and
// 16 byte indices. At 80% zeros a row has ~6.4 nonzeros per block and S is ~10, so about 60% of
// the lanes do useful work, with no gathers: one permute and one FMA per 16 lanes. The indices of
// 4 consecutive slices share one 64-byte vector, slice j of the 4 in byte j of each lane's dword:
// vpermt2ps reads only the low 5 bits of a dword, so slice j's indices are that vector shifted
// right by 8·j (one load and three shifts per 4 slices instead of four byte-to-dword loads).
//
// The sum order is fixed by the format (slice s of a block goes to accumulator s mod 4; the four
// are added (0+1)+(2+3) at the end), so
// the scalar path (f32_spmv_sliced_groups__scalar, std::fma per lane) and the AVX-512 kernel are
// bit-exact with each other. Against the dense or CSR sum the order differs (float rounding).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/thread_pool.h"
#include "engine/kernels/activation.h"

namespace xnn::kernels {

class SlicedSparseWeights {
 public:
  static constexpr int kRows = 16;  // output rows per group (vector lanes)
  static constexpr int kCols = 32;  // columns per block (two 16-float registers of x)

  struct Block {
    int32_t col_block;    // columns [32·col_block, 32·col_block + 32)
    int32_t slices;       // S >= 1 (blocks with no nonzero are not stored)
    int64_t first_slice;  // index of its first slice in weights() (16 floats per slice)
    int64_t first_quad;   // index of its first 4-slice index vector in lanes() (64 bytes each)
  };

  SlicedSparseWeights() = default;
  // From dense row-major W [rows × cols] (row stride ldw); exact zeros are dropped.
  SlicedSparseWeights(int64_t rows, int64_t cols, const float* w, int64_t ldw);

  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  int64_t groups() const { return (rows_ + kRows - 1) / kRows; }
  int64_t nnz() const { return nnz_; }
  int64_t slices() const { return static_cast<int64_t>(weights_.size()) / kRows; }
  size_t bytes() const;

  const float* weights() const { return weights_.data(); }  // slices × 16
  // Per block, ceil(S/4) vectors of 16 lanes × 4 bytes: byte j of lane l in vector q is the
  // column offset in the block of slice 4q + j for row l (0 past S or where the row ran out).
  const uint8_t* lanes() const { return lanes_.data(); }
  const Block* blocks() const { return blocks_.data(); }
  const int32_t* group_start() const { return group_start_.data(); }  // groups + 1 offsets into blocks

 private:
  int64_t rows_ = 0, cols_ = 0, nnz_ = 0;
  std::vector<float> weights_;
  std::vector<uint8_t> lanes_;
  std::vector<Block> blocks_;
  std::vector<int32_t> group_start_;
};

// Whether f32_spmv_sliced runs its AVX-512 kernel here (AVX-512F with OS support, and XNN_ISA
// does not cap the ISA at avx2 or scalar). The CPU backend takes this format only then.
bool spmv_sliced_fast();
std::string spmv_sliced_kernel_name();  // "f32_spmv_16x32perm__avx512" or "f32_spmv_16x32perm__scalar"

// y[r] = act(W[r,:]·x + bias[r]); x has w.cols() elements.
void f32_spmv_sliced(const SlicedSparseWeights& w, const float* x, const float* bias, const Activation& act, float* y,
                     ThreadPool* pool);

// Groups [g0, g1) of W · x into y16 (16 floats per group, rows past the end included), no
// epilogue: the two paths with the same results bit for bit.
void f32_spmv_sliced_groups__scalar(const SlicedSparseWeights& w, int64_t g0, int64_t g1, const float* x, float* y16);
void f32_spmv_sliced_groups__avx512(const SlicedSparseWeights& w, int64_t g0, int64_t g1, const float* x, float* y16);

}  // namespace xnn::kernels
