#include "engine/kernels/spmv_sliced.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

#include "engine/core/error.h"
#include "engine/kernels/cpu_features.h"

namespace xnn::kernels {

SlicedSparseWeights::SlicedSparseWeights(int64_t rows, int64_t cols, const float* w, int64_t ldw)
    : rows_(rows), cols_(cols) {
  if (rows < 0 || cols < 0 || rows * cols > std::numeric_limits<int32_t>::max()) {
    throw Error("SlicedSparseWeights: " + std::to_string(rows) + "x" + std::to_string(cols) +
                " weights exceed the int32 offsets of the sliced format");
  }
  const int64_t col_blocks = (cols + kCols - 1) / kCols;
  group_start_.push_back(0);
  std::vector<int32_t> found[kRows];  // per lane: the nonzero columns of this block, in order
  for (int64_t g = 0; g < groups(); ++g) {
    for (int64_t b = 0; b < col_blocks; ++b) {
      const int64_t c0 = b * kCols, c1 = std::min(cols, c0 + kCols);
      size_t depth = 0;
      for (int lane = 0; lane < kRows; ++lane) {
        found[lane].clear();
        const int64_t r = g * kRows + lane;
        if (r >= rows) continue;
        for (int64_t c = c0; c < c1; ++c) {
          if (w[r * ldw + c] != 0.0f) found[lane].push_back(static_cast<int32_t>(c - c0));
        }
        depth = std::max(depth, found[lane].size());
        nnz_ += static_cast<int64_t>(found[lane].size());
      }
      if (depth == 0) continue;
      const int64_t first_quad = static_cast<int64_t>(lanes_.size()) / (4 * kRows);
      blocks_.push_back({static_cast<int32_t>(b), static_cast<int32_t>(depth), slices(), first_quad});
      for (size_t s = 0; s < depth; ++s) {
        for (int lane = 0; lane < kRows; ++lane) {
          const bool has = s < found[lane].size();
          const int64_t r = g * kRows + lane;
          weights_.push_back(has ? w[r * ldw + c0 + found[lane][s]] : 0.0f);
        }
      }
      for (size_t q = 0; q < (depth + 3) / 4; ++q) {
        for (int lane = 0; lane < kRows; ++lane) {
          for (size_t j = 0; j < 4; ++j) {
            const size_t s = 4 * q + j;
            lanes_.push_back(s < found[lane].size() ? static_cast<uint8_t>(found[lane][s]) : 0);
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

void f32_spmv_sliced_groups__scalar(const SlicedSparseWeights& w, int64_t g0, int64_t g1, const float* x, float* y16) {
  constexpr int R = SlicedSparseWeights::kRows;
  const int64_t cols = w.cols();
  for (int64_t g = g0; g < g1; ++g) {
    float acc[4][R] = {};
    for (int32_t bi = w.group_start()[g]; bi < w.group_start()[g + 1]; ++bi) {
      const SlicedSparseWeights::Block& blk = w.blocks()[bi];
      const int64_t c0 = int64_t{blk.col_block} * SlicedSparseWeights::kCols;
      for (int s = 0; s < blk.slices; ++s) {
        float* a = acc[s % 4];
        const float* wv = w.weights() + (blk.first_slice + s) * R;
        const uint8_t* lv = w.lanes() + (blk.first_quad + s / 4) * 4 * R;
        for (int l = 0; l < R; ++l) {
          // Columns past the end read as 0, as the kernel's masked loads do (their weight is 0).
          const int64_t c = c0 + lv[4 * l + s % 4];
          a[l] = std::fma(wv[l], c < cols ? x[c] : 0.0f, a[l]);
        }
      }
    }
    for (int l = 0; l < R; ++l) y16[(g - g0) * R + l] = (acc[0][l] + acc[1][l]) + (acc[2][l] + acc[3][l]);
  }
}

bool spmv_sliced_fast() {
  static const bool fast = [] {
    const char* env = std::getenv("XNN_ISA");
    const bool capped = env && (std::string(env) == "avx2" || std::string(env) == "scalar");
    return !capped && cpu_features().avx512;
  }();
  return fast;
}

std::string spmv_sliced_kernel_name() {
  return spmv_sliced_fast() ? "f32_spmv_16x32perm__avx512" : "f32_spmv_16x32perm__scalar";
}

void f32_spmv_sliced(const SlicedSparseWeights& w, const float* x, const float* bias, const Activation& act, float* y,
                     ThreadPool* pool) {
  constexpr int R = SlicedSparseWeights::kRows;
  // Tasks of 4 groups (64 rows, as the dense GEMV); each writes its 16-row results to the stack.
  const int64_t per_task = 4, tasks = (w.groups() + per_task - 1) / per_task;
  const bool fast = spmv_sliced_fast();
  parallel_for(pool, tasks, [&](int64_t t) {
    const int64_t g0 = t * per_task, g1 = std::min(w.groups(), g0 + per_task);
    alignas(64) float y16[per_task * R];
    if (fast) {
      f32_spmv_sliced_groups__avx512(w, g0, g1, x, y16);
    } else {
      f32_spmv_sliced_groups__scalar(w, g0, g1, x, y16);
    }
    const int64_t r0 = g0 * R, r1 = std::min(w.rows(), g1 * R);
    for (int64_t r = r0; r < r1; ++r) y[r] = apply_activation_scalar(y16[r - r0] + (bias ? bias[r] : 0.0f), act);
  });
}

}  // namespace xnn::kernels
