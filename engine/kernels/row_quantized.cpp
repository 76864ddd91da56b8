#include "engine/kernels/row_quantized.h"

#include <algorithm>

namespace xnn::kernels {

void dequantize_row(const uint8_t* row, int bits, int64_t cols, float scale, float offset, float* out) {
  for (int64_t c = 0; c < cols; ++c) out[c] = scale * static_cast<float>(row_code(row, bits, c)) + offset;
}

void row_quantized_gemm_reference(const float* a, int64_t m, const RowQuantizedWeights& w, const float* bias, float* y) {
  for (int64_t i = 0; i < m; ++i) {
    const float* ai = a + i * w.cols;
    for (int64_t n = 0; n < w.rows; ++n) {
      const uint8_t* row = w.codes + n * w.row_bytes;
      float acc = 0;
      for (int64_t k = 0; k < w.cols; ++k) {
        acc += ai[k] * (w.scale[n] * static_cast<float>(row_code(row, w.bits, k)) + w.offset[n]);
      }
      y[i * w.rows + n] = acc + (bias ? bias[n] : 0.0f);
    }
  }
}

void rowq_dots__scalar(const float* a, int64_t m, const RowQuantizedWeights& w, int64_t n0, int64_t n1, float* dots) {
  const int64_t width = n1 - n0;
  for (int64_t n = n0; n < n1; ++n) {
    const uint8_t* row = w.codes + n * w.row_bytes;
    for (int64_t i = 0; i < m; ++i) {
      const float* ai = a + i * w.cols;
      float acc = 0;
      for (int64_t k = 0; k < w.cols; ++k) acc += ai[k] * static_cast<float>(row_code(row, w.bits, k));
      dots[i * width + (n - n0)] = acc;
    }
  }
}

void f32_rowq_gemm(const float* a, int64_t m, const RowQuantizedWeights& w, const float* bias, float* y,
                   ThreadPool* pool, Isa isa) {
  // Blocks of 64 output rows balance across threads; A is taken 4 rows at a time so each weight
  // row is widened once per 4 rows of A.
  constexpr int64_t kRowBlock = 64, kABlock = 4;
  const int64_t blocks = (w.rows + kRowBlock - 1) / kRowBlock;
  parallel_for(pool, blocks, [&](int64_t b) {
    const int64_t n0 = b * kRowBlock, n1 = std::min(w.rows, n0 + kRowBlock), width = n1 - n0;
    float dots[kABlock * kRowBlock];
    for (int64_t i0 = 0; i0 < m; i0 += kABlock) {
      const int64_t mb = std::min(kABlock, m - i0);
      if (isa == Isa::kAvx2) {
        rowq_dots__avx2(a + i0 * w.cols, mb, w, n0, n1, dots);
      } else {
        rowq_dots__scalar(a + i0 * w.cols, mb, w, n0, n1, dots);
      }
      for (int64_t i = 0; i < mb; ++i) {
        // Σ_k A[m][k] for the offset term (recomputed per block: K adds against 64·K multiply-adds).
        const float* ai = a + (i0 + i) * w.cols;
        float sum = 0;
        for (int64_t k = 0; k < w.cols; ++k) sum += ai[k];
        float* yi = y + (i0 + i) * w.rows;
        for (int64_t n = n0; n < n1; ++n) {
          yi[n] = w.scale[n] * dots[i * width + (n - n0)] + w.offset[n] * sum + (bias ? bias[n] : 0.0f);
        }
      }
    }
  });
}

std::string rowq_gemm_kernel_name(int bits, Isa isa) {
  const std::string b = std::to_string(bits);
  return isa == Isa::kAvx2 ? "f32_rowq" + b + "_gemm_4x8__avx2" : "f32_rowq" + b + "_gemm_4x1__scalar";
}

}  // namespace xnn::kernels
