#include "engine/kernels/spmm.h"

#include <algorithm>
#include <limits>

#include "engine/core/error.h"
#include "engine/kernels/scratch.h"

namespace xnn::kernels {

double zero_fraction(const float* w, int64_t n) {
  if (n <= 0) return 0;
  int64_t zeros = 0;
  for (int64_t i = 0; i < n; ++i) zeros += w[i] == 0.0f;
  return static_cast<double>(zeros) / static_cast<double>(n);
}

SparseWeights::SparseWeights(int64_t rows, int64_t cols, const float* w, int64_t ldw, int64_t x_stride)
    : rows_(rows), cols_(cols), x_stride_(x_stride) {
  if (rows < 0 || cols < 0 || x_stride < 0 || rows * cols > std::numeric_limits<int32_t>::max()) {
    throw Error("SparseWeights: " + std::to_string(rows) + "x" + std::to_string(cols) +
                " weights exceed the int32 offsets of the sparse format");
  }
  row_start_.reserve(static_cast<size_t>(rows + 1));
  row_start_.push_back(0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const float v = w[r * ldw + c];
      if (v != 0.0f) {
        values_.push_back(v);
        columns_.push_back(static_cast<int32_t>(c));
      }
    }
    row_start_.push_back(static_cast<int32_t>(values_.size()));
  }
  chunks_ = std::max<int64_t>(1, (cols + kMaxChunkCols - 1) / kMaxChunkCols);
  chunk_cols_ = (cols + chunks_ - 1) / chunks_;
  if (chunks_ > 1) {
    // Columns are ascending within a row: one pass per row finds where each chunk starts.
    chunk_start_.resize(static_cast<size_t>(rows * (chunks_ + 1)));
    for (int64_t r = 0; r < rows; ++r) {
      int32_t* cs = chunk_start_.data() + r * (chunks_ + 1);
      int32_t k = row_start_[r];
      for (int64_t c = 0; c < chunks_; ++c) {
        cs[c] = k;
        while (k < row_start_[r + 1] && columns_[k] < (c + 1) * chunk_cols_) ++k;
      }
      cs[chunks_] = row_start_[r + 1];
    }
  }
}

double SparseWeights::sparsity() const {
  const int64_t total = rows_ * cols_;
  return total ? 1.0 - static_cast<double>(nnz()) / static_cast<double>(total) : 0.0;
}

size_t SparseWeights::bytes() const {
  return values_.size() * sizeof(float) + (columns_.size() + row_start_.size() + chunk_start_.size()) * sizeof(int32_t);
}

// The reference path: plain CSR with column indices, 8 columns at a time (the compiler may
// vectorise the lane loop with SSE).
void f32_spmm_block__scalar(const SparseWeights& w, int64_t r0, int64_t r1, int64_t c0, int64_t c1, const float* x,
                            float* y, int64_t ldy, const SpmmEpilogue& ep) {
  constexpr int64_t kLanes = 8;
  const float* values = w.values();
  const int32_t* cols = w.columns();
  const int32_t* start = w.row_start();
  const int64_t stride = w.x_stride();
  for (int64_t c = c0; c < c1; c += kLanes) {
    const int64_t len = std::min(kLanes, c1 - c);
    for (int64_t r = r0; r < r1; ++r) {
      float acc[kLanes];
      const float b = ep.bias ? ep.bias[r] : 0.0f;
      for (int64_t l = 0; l < kLanes; ++l) acc[l] = b;
      for (int32_t k = start[r]; k < start[r + 1]; ++k) {
        const float wv = values[k];
        const float* xr = x + cols[k] * stride + c;
        for (int64_t l = 0; l < len; ++l) acc[l] += wv * xr[l];
      }
      float* yr = y + r * ldy + c;
      const float* res = ep.residual ? ep.residual + r * ep.ldr + c : nullptr;
      for (int64_t l = 0; l < len; ++l) yr[l] = apply_activation_scalar(res ? acc[l] + res[l] : acc[l], ep.act);
    }
  }
}

namespace {

// One thread's block: its columns packed into its own scratch, then walked.
template <typename Pack, typename Packed>
void spmm_block(Pack pack, Packed packed, int64_t panel, const SparseWeights& w, int64_t r0, int64_t r1, int64_t c0,
                int64_t c1, const float* x, float* y, int64_t ldy, const SpmmEpilogue& ep) {
  const int64_t k = w.cols(), tiles = (c1 - c0 + panel - 1) / panel;
  float* panels = thread_scratch_f32(static_cast<size_t>(tiles * k * panel), 0);
  pack(x, w.x_stride(), k, 0, k, c0, c1, panels);
  packed(w, r0, r1, c0, c1, panels, y, ldy, ep);
}

}  // namespace

void f32_spmm_block__avx2(const SparseWeights& w, int64_t r0, int64_t r1, int64_t c0, int64_t c1, const float* x,
                          float* y, int64_t ldy, const SpmmEpilogue& ep) {
  spmm_block(f32_spmm_pack__avx2, f32_spmm_packed__avx2, kSpmmPanelAvx2, w, r0, r1, c0, c1, x, y, ldy, ep);
}

void f32_spmm_block__avx512(const SparseWeights& w, int64_t r0, int64_t r1, int64_t c0, int64_t c1, const float* x,
                            float* y, int64_t ldy, const SpmmEpilogue& ep) {
  spmm_block(f32_spmm_pack__avx512, f32_spmm_packed__avx512, kSpmmPanelAvx512, w, r0, r1, c0, c1, x, y, ldy, ep);
}

namespace {

// Columns [c0, c1) of Y through the sliced form, one column at a time: each column of X is
// copied into a contiguous vector (the permute kernel reads x whole), then every task takes a
// range of row groups for all those columns, so the groups' slices are read from L1 after the
// first column.
void spmm_sliced_columns(const SlicedSparseWeights& s, int64_t c0, int64_t c1, const float* x, int64_t x_stride,
                         float* y, int64_t ldy, const SpmmEpilogue& ep, ThreadPool* pool) {
  const int64_t k = s.cols(), cols = c1 - c0, group_rows = s.shape().rows;
  // Scratch slot 1 of the calling thread (slot 0 holds shared panels only inside spmm_columns).
  float* xc = thread_scratch_f32(static_cast<size_t>(cols * k), 1);
  for (int64_t kk = 0; kk < k; ++kk) {
    for (int64_t c = 0; c < cols; ++c) xc[c * k + kk] = x[kk * x_stride + c0 + c];
  }
  // Tasks of 64 rows, as f32_spmv_sliced; sums on the stack, then the epilogue per column.
  const int64_t per_task = 64 / group_rows, tasks = (s.groups() + per_task - 1) / per_task;
  parallel_for(pool, tasks, [&](int64_t t) {
    const int64_t g0 = t * per_task, g1 = std::min(s.groups(), g0 + per_task);
    const int64_t r0 = g0 * group_rows, r1 = std::min(s.rows(), g1 * group_rows);
    alignas(64) float sums[64];
    for (int64_t c = 0; c < cols; ++c) {
      f32_spmv_sliced_groups(s, g0, g1, xc + c * k, sums);
      const int64_t col = c0 + c;
      for (int64_t r = r0; r < r1; ++r) {
        float v = sums[r - r0] + (ep.bias ? ep.bias[r] : 0.0f);
        if (ep.residual) v += ep.residual[r * ep.ldr + col];
        y[r * ldy + col] = apply_activation_scalar(v, ep.act);
      }
    }
  });
}

void spmm_columns(const SparseWeights& w, int64_t n, const float* x, float* y, int64_t ldy, const SpmmEpilogue& ep,
                  ThreadPool* pool, Isa isa) {
  const int64_t rows = w.rows(), k = w.cols();
  // Column blocks of up to 256 (a [cols × 256] input block stays in L2); when they are too few
  // to keep every thread busy, output rows are split too.
  const int threads = pool ? pool->threads() : 1;
  const int64_t col_block = std::min<int64_t>(256, (n + 31) / 32 * 32);
  const int64_t col_blocks = (n + col_block - 1) / col_block;
  int64_t row_blocks = 1;
  if (threads > 1 && col_blocks < 4 * threads) {
    row_blocks = std::clamp<int64_t>((4 * threads + col_blocks - 1) / col_blocks, 1, std::max<int64_t>(1, rows / 8));
  }
  const int64_t rows_per_block = (rows + row_blocks - 1) / row_blocks;
  const bool avx512 = isa == Isa::kAvx2 && avx512_enabled();
  const auto block_range = [&](int64_t t, int64_t& r0, int64_t& r1, int64_t& c0, int64_t& c1) {
    const int64_t cb = t / row_blocks, rb = t % row_blocks;
    c0 = cb * col_block, c1 = std::min(n, c0 + col_block);
    r0 = rb * rows_per_block, r1 = std::min(rows, r0 + rows_per_block);
  };
  if (isa != Isa::kAvx2) {
    parallel_for(pool, col_blocks * row_blocks, [&](int64_t t) {
      int64_t r0, r1, c0, c1;
      block_range(t, r0, r1, c0, c1);
      if (r0 < r1) f32_spmm_block__scalar(w, r0, r1, c0, c1, x, y, ldy, ep);
    });
    return;
  }
  if (row_blocks == 1) {
    // Each task packs its own column block into its scratch and walks it right away (hot).
    parallel_for(pool, col_blocks, [&](int64_t cb) {
      const int64_t c0 = cb * col_block, c1 = std::min(n, c0 + col_block);
      if (avx512) {
        f32_spmm_block__avx512(w, 0, rows, c0, c1, x, y, ldy, ep);
      } else {
        f32_spmm_block__avx2(w, 0, rows, c0, c1, x, y, ldy, ep);
      }
    });
    return;
  }
  // Row-split blocks share their column block's panels: packed once, in the calling thread's
  // scratch, by all threads over slices of k; then every task walks its rows. (Each task
  // packing its own copy cost 8 copies of a 7x7x512 panel per call: 2 threads ran 784->300 at
  // batch 64 no faster than 1.)
  const int64_t panel = avx512 ? kSpmmPanelAvx512 : kSpmmPanelAvx2;
  const int64_t block_floats = (col_block + panel - 1) / panel * panel * k;
  float* panels = thread_scratch_f32(static_cast<size_t>(col_blocks * block_floats), 0);
  const int64_t k_slice = std::max<int64_t>(32, (k + 2 * threads - 1) / (2 * threads));
  const int64_t k_slices = (k + k_slice - 1) / k_slice;
  parallel_for(pool, col_blocks * k_slices, [&](int64_t t) {
    const int64_t cb = t / k_slices, k0 = t % k_slices * k_slice, k1 = std::min(k, k0 + k_slice);
    const int64_t c0 = cb * col_block, c1 = std::min(n, c0 + col_block);
    float* dst = panels + cb * block_floats;
    if (avx512) {
      f32_spmm_pack__avx512(x, w.x_stride(), k, k0, k1, c0, c1, dst);
    } else {
      f32_spmm_pack__avx2(x, w.x_stride(), k, k0, k1, c0, c1, dst);
    }
  });
  parallel_for(pool, col_blocks * row_blocks, [&](int64_t t) {
    int64_t r0, r1, c0, c1;
    block_range(t, r0, r1, c0, c1);
    if (r0 >= r1) return;
    const float* src = panels + t / row_blocks * block_floats;
    if (avx512) {
      f32_spmm_packed__avx512(w, r0, r1, c0, c1, src, y, ldy, ep);
    } else {
      f32_spmm_packed__avx2(w, r0, r1, c0, c1, src, y, ldy, ep);
    }
  });
}

}  // namespace

int64_t spmm_sliced_tail(int64_t n, Isa isa) {
  if (isa != Isa::kAvx2 || !avx512_enabled() || spmv_sliced_shape() != kSlices16x32) return 0;
  const int64_t partial = n % 16;
  return partial <= kMaxSlicedTail ? partial : 0;
}

std::optional<SlicedSparseWeights> spmm_sliced_tail_form(int64_t rows, int64_t cols, const float* w, int64_t ldw,
                                                         int64_t n, Isa isa) {
  if (spmm_sliced_tail(n, isa) == 0) return std::nullopt;
  return SlicedSparseWeights(rows, cols, w, ldw, spmv_sliced_shape());
}

void f32_spmm(const SparseWeights& w, int64_t n, const float* x, float* y, int64_t ldy, const SpmmEpilogue& ep,
              ThreadPool* pool, Isa isa, const SlicedSparseWeights* tail) {
  if (w.rows() == 0 || n <= 0) return;
  const int64_t sliced = tail ? spmm_sliced_tail(n, isa) : 0;
  if (sliced) {
    XNN_CHECK(tail->rows() == w.rows() && tail->cols() == w.cols(), "f32_spmm: the sliced form is of another matrix");
  }
  if (n > sliced) spmm_columns(w, n - sliced, x, y, ldy, ep, pool, isa);
  if (sliced) spmm_sliced_columns(*tail, n - sliced, n, x, w.x_stride(), y, ldy, ep, pool);
}

std::string spmm_kernel_name(Isa isa) {
  if (isa != Isa::kAvx2) return "f32_spmm_8x1__scalar";
  return avx512_enabled() ? "f32_spmm_64x1__avx512" : "f32_spmm_32x1__avx2";
}

void f32_spmv_rows__scalar(const SparseWeights& w, int64_t r0, int64_t r1, const float* x, float* y) {
  const float* values = w.values();
  const int32_t* cols = w.columns();
  const int32_t* start = w.row_start();
  for (int64_t r = r0; r < r1; ++r) {
    float acc[4] = {0, 0, 0, 0};
    int32_t k = start[r];
    const int32_t end = start[r + 1];
    for (; k + 4 <= end; k += 4) {
      for (int j = 0; j < 4; ++j) acc[j] += values[k + j] * x[cols[k + j]];
    }
    for (; k < end; ++k) acc[0] += values[k] * x[cols[k]];
    y[r] = (acc[0] + acc[1]) + (acc[2] + acc[3]);
  }
}

void f32_spmv(const SparseWeights& w, const float* x, const float* bias, const Activation& act, float* y,
              ThreadPool* pool, Isa isa) {
  const int64_t rows = w.rows();
  // Blocks of 64 rows, as the dense GEMV: enough work per task to amortise the hand-out.
  const int64_t block = 64, blocks = (rows + block - 1) / block;
  parallel_for(pool, blocks, [&](int64_t b) {
    const int64_t r0 = b * block, r1 = std::min(rows, r0 + block);
    if (isa == Isa::kAvx2) {
      f32_spmv_rows__avx2(w, r0, r1, x, y);
    } else {
      f32_spmv_rows__scalar(w, r0, r1, x, y);
    }
    for (int64_t r = r0; r < r1; ++r) y[r] = apply_activation_scalar(y[r] + (bias ? bias[r] : 0.0f), act);
  });
}

std::string spmv_kernel_name(Isa isa) { return isa == Isa::kAvx2 ? "f32_spmv_8x1__avx2" : "f32_spmv_1x4__scalar"; }

}  // namespace xnn::kernels
