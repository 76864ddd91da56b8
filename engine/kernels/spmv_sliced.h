// Batch-1 sparse linear layer by in-register permutes: y[rows] = act(W · x + bias) with W
// unstructured-sparse. Two shapes of one format: 16 rows × 32 columns for AVX-512
// (f32_spmv_16x32perm__avx512: vpermt2ps over two zmm of x) and 8 rows × 16 columns for AVX2
// (f32_spmv_8x16perm__avx2: vpermps over each of two ymm of x, then a blend). The text below
// describes 16×32.
//
// Why a second batch-1 format: the CSR kernel (spmm.h, f32_spmv_8x1__avx2) fetches x[col] for
// every nonzero with vgatherdps, about one cycle per nonzero, so at 80% zeros it does not beat a
// dense GEMV that streams the weights from L2 (784→300: 0.8x). Here the lanes of a vector are 16
// output rows, and x is read 32 columns at a time into two registers; vpermt2ps then picks, for
// each lane, the x of that row's next nonzero in the block (a 5-bit index), and one FMA adds 16
// products. A group of 16 rows is stored as blocks of exactly 4 "slices" (so the kernels have no
// loop or branch on a count): a block is a window of 32 columns, [col0, col0 + 32), and per slice
// 16 weights and 16 byte indices (column - col0); in slice j every lane holds its row's next
// nonzero inside the window, or weight 0 at index 0 where it has none left there. Windows slide:
// each starts at the smallest column a lane of the group still has to take, so a lane whose
// nonzeros are sparse takes them from ahead while the others catch up (the constructor's comment
// has the figures): at 80% zeros 75% of the lanes carry a nonzero, with no gathers, one permute
// and one FMA per 16 lanes. The indices of a block's 4 slices share one vector of dwords, slice j
// in byte j of each lane's dword: the permutes read only the low 5 bits of a dword (AVX2: 3, and
// bit 3 picks the register), so slice j's indices are that vector shifted right by 8·j (one load
// and three shifts per block instead of four byte-to-dword loads).
//
// The sum order is fixed by the format (slice j of a block goes to accumulator j of one of two
// sets, the sets alternating between consecutive blocks of a group; at the end each set is added
// (0+1)+(2+3), then the two sets), so the scalar path (f32_spmv_sliced_groups__scalar, std::fma
// per lane) and the SIMD kernels are bit-exact with each other. Against the dense or CSR sum the
// order differs (float rounding).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/aligned_vector.h"
#include "engine/core/thread_pool.h"
#include "engine/kernels/activation.h"

namespace xnn::kernels {

// Rows per group (the vector lanes) and columns per block (the x floats one permute picks from).
struct SliceShape {
  int rows;
  int cols;
  bool operator==(const SliceShape& o) const { return rows == o.rows && cols == o.cols; }
};
inline constexpr SliceShape kSlices16x32{16, 32};  // AVX-512
inline constexpr SliceShape kSlices8x16{8, 16};    // AVX2

class SlicedSparseWeights {
 public:
  static constexpr int32_t kSlicesPerBlock = 4;  // one index vector per block

  struct Block {
    int32_t col0;         // its window: columns [col0, col0 + shape.cols), inside the row when it fits
    int32_t slices;       // always kSlicesPerBlock
    int64_t first_slice;  // index of its first slice in weights() (shape.rows floats per slice)
    int64_t first_quad;   // index of its first 4-slice index vector in lanes() (4·shape.rows bytes)
  };

  SlicedSparseWeights() = default;
  // From dense row-major W [rows × cols] (row stride ldw); exact zeros are dropped. shape.rows
  // is 8 or 16 and shape.cols at most 32 (the index bytes hold 5 bits); throws an Error otherwise.
  SlicedSparseWeights(int64_t rows, int64_t cols, const float* w, int64_t ldw, SliceShape shape = kSlices16x32);

  SliceShape shape() const { return shape_; }
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  int64_t groups() const { return (rows_ + shape_.rows - 1) / shape_.rows; }
  int64_t nnz() const { return nnz_; }
  int64_t slices() const { return static_cast<int64_t>(weights_.size()) / shape_.rows; }
  size_t bytes() const;

  const float* weights() const { return weights_.data(); }  // slices × shape.rows
  // Per block, one vector of shape.rows lanes × 4 bytes: byte j of lane l is the column offset in
  // the block's window of slice j for row l (0 where the slice has weight 0 there).
  const uint8_t* lanes() const { return lanes_.data(); }
  const Block* blocks() const { return blocks_.data(); }
  const int32_t* group_start() const { return group_start_.data(); }  // groups + 1 offsets into blocks

 private:
  SliceShape shape_ = kSlices16x32;
  int64_t rows_ = 0, cols_ = 0, nnz_ = 0;
  // Cache-line aligned: every slice (16 floats) and index vector (64 bytes) of the 16x32 shape is
  // then one line, not two (aligned_vector.h).
  AlignedVector<float> weights_;
  AlignedVector<uint8_t> lanes_;
  std::vector<Block> blocks_;
  std::vector<int32_t> group_start_;
};

// Whether f32_spmv_sliced has a SIMD kernel here (AVX2, or AVX-512 unless XNN_ISA caps it),
// and the shape that kernel takes: 16×32 where avx512_enabled(), else 8×16. The CPU backend
// takes this format for batch-1 linear layers only when fast.
bool spmv_sliced_fast();
SliceShape spmv_sliced_shape();
// "f32_spmv_16x32perm__avx512", "f32_spmv_8x16perm__avx2", or "..perm__scalar" where the shape
// has no SIMD kernel here.
std::string spmv_sliced_kernel_name(SliceShape shape);

// y[r] = act(W[r,:]·x + bias[r]); x has w.cols() elements.
void f32_spmv_sliced(const SlicedSparseWeights& w, const float* x, const float* bias, const Activation& act, float* y,
                     ThreadPool* pool);

// Groups [g0, g1) of W · x into y_groups (shape.rows floats per group, rows past the end
// included), no epilogue, through the fastest path for W's shape here (the three below).
void f32_spmv_sliced_groups(const SlicedSparseWeights& w, int64_t g0, int64_t g1, const float* x, float* y_groups);

// Groups [g0, g1) of W · x into y_groups (shape.rows floats per group, rows past the end
// included), no epilogue: the paths give the same results bit for bit. The SIMD kernels take
// their own shape only (16×32 for avx512, 8×16 for avx2).
void f32_spmv_sliced_groups__scalar(const SlicedSparseWeights& w, int64_t g0, int64_t g1, const float* x,
                                    float* y_groups);
void f32_spmv_sliced_groups__avx512(const SlicedSparseWeights& w, int64_t g0, int64_t g1, const float* x, float* y16);
void f32_spmv_sliced_groups__avx2(const SlicedSparseWeights& w, int64_t g0, int64_t g1, const float* x, float* y8);

}  // namespace xnn::kernels
