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
  const int group_rows = shape.rows, window = shape.cols;
  group_start_.push_back(0);
  // Per lane: its row's nonzero columns, and how many of them earlier blocks took.
  std::vector<std::vector<int32_t>> nonzero(static_cast<size_t>(group_rows));
  std::vector<size_t> taken(static_cast<size_t>(group_rows));
  for (int64_t g = 0; g < groups(); ++g) {
    for (int lane = 0; lane < group_rows; ++lane) {
      std::vector<int32_t>& cols_of_lane = nonzero[static_cast<size_t>(lane)];
      cols_of_lane.clear();
      taken[static_cast<size_t>(lane)] = 0;
      const int64_t r = g * group_rows + lane;
      if (r >= rows) continue;
      for (int64_t c = 0; c < cols; ++c) {
        if (w[r * ldw + c] != 0.0f) cols_of_lane.push_back(static_cast<int32_t>(c));
      }
      nnz_ += static_cast<int64_t>(cols_of_lane.size());
    }
    // Sliding windows: each block's window starts at the smallest column any lane still has to
    // take (moved left so that it ends inside the row where it can), and every lane takes up to 4
    // of its next nonzeros inside it. Lanes whose nonzeros are sparse there take them from ahead
    // of the slowest lane instead of idling, as they would in fixed, aligned windows: at 80% zeros
    // (784->300, uniform) 75% of the lanes carry a nonzero, against 52% for aligned windows
    // padded to 4 slices; zero columns (image borders) are skipped without cost.
    for (;;) {
      int64_t c0 = cols;
      for (int lane = 0; lane < group_rows; ++lane) {
        const size_t lane_u = static_cast<size_t>(lane);
        if (taken[lane_u] < nonzero[lane_u].size()) c0 = std::min<int64_t>(c0, nonzero[lane_u][taken[lane_u]]);
      }
      if (c0 == cols) break;
      c0 = std::max<int64_t>(0, std::min<int64_t>(c0, cols - window));
      const int64_t c1 = c0 + window;
      const int64_t first_slice = slices(), first_quad = static_cast<int64_t>(lanes_.size() / (4 * group_rows));
      blocks_.push_back({static_cast<int32_t>(c0), kSlicesPerBlock, first_slice, first_quad});
      std::vector<uint8_t> quad(static_cast<size_t>(4 * group_rows), 0);
      for (int s = 0; s < kSlicesPerBlock; ++s) {
        for (int lane = 0; lane < group_rows; ++lane) {
          const size_t lane_u = static_cast<size_t>(lane);
          const std::vector<int32_t>& cols_of_lane = nonzero[lane_u];
          const bool has = taken[lane_u] < cols_of_lane.size() && cols_of_lane[taken[lane_u]] < c1;
          if (has) {
            const int32_t c = cols_of_lane[taken[lane_u]++];
            weights_.push_back(w[(g * group_rows + lane) * ldw + c]);
            quad[static_cast<size_t>(4 * lane + s)] = static_cast<uint8_t>(c - c0);
          } else {
            weights_.push_back(0.0f);  // index 0: a column inside the window, times weight 0
          }
        }
      }
      lanes_.insert(lanes_.end(), quad.begin(), quad.end());
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
  // Consecutive blocks alternate between two sets of 4 accumulators (spmv_sliced.h).
  constexpr int sets = 2;
  const int64_t cols = w.cols();
  for (int64_t g = g0; g < g1; ++g) {
    float acc[2][4][16] = {};
    const int32_t b0 = w.group_start()[g];
    for (int32_t bi = b0; bi < w.group_start()[g + 1]; ++bi) {
      const SlicedSparseWeights::Block& blk = w.blocks()[bi];
      const int64_t c0 = blk.col0;
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
      y_groups[(g - g0) * R + l] =
          ((acc[0][0][l] + acc[0][1][l]) + (acc[0][2][l] + acc[0][3][l])) +
          ((acc[1][0][l] + acc[1][1][l]) + (acc[1][2][l] + acc[1][3][l]));
    }
  }
}

bool spmv_sliced_fast() { return best_isa() == Isa::kAvx2; }

SliceShape spmv_sliced_shape() { return avx512_enabled() ? kSlices16x32 : kSlices8x16; }

namespace {
// Which SIMD kernel runs the shape here, if any.
enum class SlicedPath { kScalar, kAvx2, kAvx512 };
SlicedPath sliced_path(SliceShape shape) {
  if (shape == kSlices16x32 && avx512_enabled()) return SlicedPath::kAvx512;
  if (shape == kSlices8x16 && best_isa() == Isa::kAvx2) return SlicedPath::kAvx2;
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

void f32_spmv_sliced_groups(const SlicedSparseWeights& w, int64_t g0, int64_t g1, const float* x, float* y_groups) {
  switch (sliced_path(w.shape())) {
    case SlicedPath::kAvx512: f32_spmv_sliced_groups__avx512(w, g0, g1, x, y_groups); break;
    case SlicedPath::kAvx2: f32_spmv_sliced_groups__avx2(w, g0, g1, x, y_groups); break;
    default: f32_spmv_sliced_groups__scalar(w, g0, g1, x, y_groups); break;
  }
}

void f32_spmv_sliced(const SlicedSparseWeights& w, const float* x, const float* bias, const Activation& act, float* y,
                     ThreadPool* pool) {
  const int R = w.shape().rows;
  // Tasks of 64 rows (as the dense GEMV); each writes its per-group results to the stack.
  const int64_t per_task = 64 / R, tasks = (w.groups() + per_task - 1) / per_task;
  parallel_for(pool, tasks, [&](int64_t t) {
    const int64_t g0 = t * per_task, g1 = std::min(w.groups(), g0 + per_task);
    alignas(64) float yg[64];
    f32_spmv_sliced_groups(w, g0, g1, x, yg);
    const int64_t r0 = g0 * R, r1 = std::min(w.rows(), g1 * R);
    for (int64_t r = r0; r < r1; ++r) y[r] = apply_activation_scalar(yg[r - r0] + (bias ? bias[r] : 0.0f), act);
  });
}

}  // namespace xnn::kernels
