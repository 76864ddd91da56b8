#include "engine/kernels/spmv_sliced.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "engine/core/error.h"
#include "engine/kernels/cpu_features.h"

namespace xnn::kernels {

SlicedSparseWeights::SlicedSparseWeights(int64_t rows, int64_t cols, const float* w, int64_t ldw, SliceShape shape)
    : shape_(shape), rows_(rows), cols_(cols) {
  if (rows < 0 || cols < 0 || rows * cols > std::numeric_limits<int32_t>::max()) {
    throw Error("SlicedSparseWeights: " + std::to_string(rows) + "x" + std::to_string(cols) +
                " weights exceed the int32 offsets of the sliced format");
  }
  if ((shape.rows != 8 && shape.rows != 16) || shape.cols < 1 || shape.cols > 32) {
    throw Error("SlicedSparseWeights: slice shape " + std::to_string(shape.rows) + "x" + std::to_string(shape.cols) +
                " (expected 8 or 16 rows and 1-32 columns)");
  }
  const int group_rows = shape.rows, block_cols = shape.cols;
  const int64_t col_blocks = (cols + block_cols - 1) / block_cols;
  group_start_.push_back(0);
  std::vector<std::vector<int32_t>> found(static_cast<size_t>(group_rows));  // per lane: this block's nonzero columns
  for (int64_t g = 0; g < groups(); ++g) {
    for (int64_t b = 0; b < col_blocks; ++b) {
      const int64_t c0 = b * block_cols, c1 = std::min(cols, c0 + block_cols);
      size_t depth = 0;
      for (int lane = 0; lane < group_rows; ++lane) {
        found[static_cast<size_t>(lane)].clear();
        const int64_t r = g * group_rows + lane;
        if (r >= rows) continue;
        for (int64_t c = c0; c < c1; ++c) {
          if (w[r * ldw + c] != 0.0f) found[static_cast<size_t>(lane)].push_back(static_cast<int32_t>(c - c0));
        }
        depth = std::max(depth, found[static_cast<size_t>(lane)].size());
        nnz_ += static_cast<int64_t>(found[static_cast<size_t>(lane)].size());
      }
      if (depth == 0) continue;
      // 8×8: blocks of exactly 4 slices (padding slices have weight 0; a column block with more
      // than 4 is stored as several blocks), so the AVX2 kernel runs one index vector and four
      // permutes per block, with no loop or branch on the count.
      if (shape.rows == 8) depth = (depth + 3) / 4 * 4;
      const size_t per_block = shape.rows == 8 ? 4 : depth;
      for (size_t s = 0; s < depth; s += per_block) {
        const int64_t first_quad = static_cast<int64_t>(lanes_.size() / (4 * group_rows)) + static_cast<int64_t>(s / 4);
        blocks_.push_back({static_cast<int32_t>(b), static_cast<int32_t>(per_block), slices() + static_cast<int64_t>(s),
                           first_quad});
      }
      for (size_t s = 0; s < depth; ++s) {
        for (int lane = 0; lane < group_rows; ++lane) {
          const bool has = s < found[static_cast<size_t>(lane)].size();
          const int64_t r = g * group_rows + lane;
          weights_.push_back(has ? w[r * ldw + c0 + found[static_cast<size_t>(lane)][s]] : 0.0f);
        }
      }
      for (size_t q = 0; q < (depth + 3) / 4; ++q) {
        for (int lane = 0; lane < group_rows; ++lane) {
          for (size_t j = 0; j < 4; ++j) {
            const size_t s = 4 * q + j;
            lanes_.push_back(s < found[static_cast<size_t>(lane)].size() ? static_cast<uint8_t>(found[static_cast<size_t>(lane)][s]) : 0);
          }
        }
      }
    }
    group_start_.push_back(static_cast<int32_t>(blocks_.size()));
  }
}

size_t SlicedSparseWeights::bytes() const {
  return weights_.size() * sizeof(float) + lanes_.size() + blocks_.size() * sizeof(Block) +
         group_start_.size() * sizeof(int32_t);
}

void f32_spmv_sliced_groups__scalar(const SlicedSparseWeights& w, int64_t g0, int64_t g1, const float* x,
                                    float* y_groups) {
  const int R = w.shape().rows;
  // 8×8 alternates two sets of 4 accumulators between consecutive blocks (spmv_sliced.h).
  const int sets = R == 8 ? 2 : 1;
  const int64_t cols = w.cols();
  for (int64_t g = g0; g < g1; ++g) {
    float acc[2][4][16] = {};
    const int32_t b0 = w.group_start()[g];
    for (int32_t bi = b0; bi < w.group_start()[g + 1]; ++bi) {
      const SlicedSparseWeights::Block& blk = w.blocks()[bi];
      const int64_t c0 = int64_t{blk.col_block} * w.shape().cols;
      for (int s = 0; s < blk.slices; ++s) {
        float* a = acc[(bi - b0) % sets][s % 4];
        const float* wv = w.weights() + (blk.first_slice + s) * R;
        const uint8_t* lv = w.lanes() + (blk.first_quad + s / 4) * 4 * R;
        for (int l = 0; l < R; ++l) {
          // Columns past the end read as 0, as the kernel's masked loads do (their weight is 0).
          const int64_t c = c0 + lv[4 * l + s % 4];
          a[l] = std::fma(wv[l], c < cols ? x[c] : 0.0f, a[l]);
        }
      }
    }
    for (int l = 0; l < R; ++l) {
      float sum = (acc[0][0][l] + acc[0][1][l]) + (acc[0][2][l] + acc[0][3][l]);
      if (sets == 2) sum += (acc[1][0][l] + acc[1][1][l]) + (acc[1][2][l] + acc[1][3][l]);
      y_groups[(g - g0) * R + l] = sum;
    }
  }
}

bool spmv_sliced_fast() { return best_isa() == Isa::kAvx2; }

SliceShape spmv_sliced_shape() { return avx512_enabled() ? kSlices16x32 : kSlices8x8; }

namespace {
// Which SIMD kernel runs the shape here, if any.
enum class SlicedPath { kScalar, kAvx2, kAvx512 };
SlicedPath sliced_path(SliceShape shape) {
  if (shape == kSlices16x32 && avx512_enabled()) return SlicedPath::kAvx512;
  if (shape == kSlices8x8 && best_isa() == Isa::kAvx2) return SlicedPath::kAvx2;
  return SlicedPath::kScalar;
}
}  // namespace

std::string spmv_sliced_kernel_name(SliceShape shape) {
  const std::string tile = "f32_spmv_" + std::to_string(shape.rows) + "x" + std::to_string(shape.cols) + "perm__";
  switch (sliced_path(shape)) {
    case SlicedPath::kAvx512: return tile + "avx512";
    case SlicedPath::kAvx2: return tile + "avx2";
    default: return tile + "scalar";
  }
}

void f32_spmv_sliced(const SlicedSparseWeights& w, const float* x, const float* bias, const Activation& act, float* y,
                     ThreadPool* pool) {
  const int R = w.shape().rows;
  // Tasks of 64 rows (as the dense GEMV); each writes its per-group results to the stack.
  const int64_t per_task = 64 / R, tasks = (w.groups() + per_task - 1) / per_task;
  const SlicedPath path = sliced_path(w.shape());
  parallel_for(pool, tasks, [&](int64_t t) {
    const int64_t g0 = t * per_task, g1 = std::min(w.groups(), g0 + per_task);
    alignas(64) float yg[64];
    switch (path) {
      case SlicedPath::kAvx512: f32_spmv_sliced_groups__avx512(w, g0, g1, x, yg); break;
      case SlicedPath::kAvx2: f32_spmv_sliced_groups__avx2(w, g0, g1, x, yg); break;
      default: f32_spmv_sliced_groups__scalar(w, g0, g1, x, yg); break;
    }
    const int64_t r0 = g0 * R, r1 = std::min(w.rows(), g1 * R);
    for (int64_t r = r0; r < r1; ++r) y[r] = apply_activation_scalar(yg[r - r0] + (bias ? bias[r] : 0.0f), act);
  });
}

}  // namespace xnn::kernels
