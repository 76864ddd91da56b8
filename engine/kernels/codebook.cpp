#include "engine/kernels/codebook.h"

#include "engine/kernels/weight_only_gemm.h"

namespace xnn::kernels {

void decode_codebook_row(const uint8_t* row, int bits, int64_t cols, const float* centroids, float* out) {
  for (int64_t c = 0; c < cols; ++c) out[c] = centroids[codebook_code(row, bits, c)];
}

void codebook_gemm_reference(const float* a, int64_t m, const CodebookWeights& w, const float* bias, float* y) {
  for (int64_t i = 0; i < m; ++i) {
    const float* ai = a + i * w.cols;
    for (int64_t n = 0; n < w.rows; ++n) {
      const uint8_t* row = w.codes + n * w.row_bytes;
      float acc = 0;
      for (int64_t k = 0; k < w.cols; ++k) acc += ai[k] * w.centroids[codebook_code(row, w.bits, k)];
      y[i * w.rows + n] = acc + (bias ? bias[n] : 0.0f);
    }
  }
}

void codebook_dots__scalar(const float* a, int64_t m, const CodebookWeights& w, int64_t n0, int64_t n1, float* dots) {
  const int64_t width = n1 - n0;
  for (int64_t n = n0; n < n1; ++n) {
    const uint8_t* row = w.codes + n * w.row_bytes;
    for (int64_t i = 0; i < m; ++i) {
      const float* ai = a + i * w.cols;
      float acc = 0;
      for (int64_t k = 0; k < w.cols; ++k) acc += ai[k] * w.centroids[codebook_code(row, w.bits, k)];
      dots[i * width + (n - n0)] = acc;
    }
  }
}

void f32_codebook_gemm(const float* a, int64_t m, const CodebookWeights& w, const float* bias, float* y,
                       ThreadPool* pool, Isa isa) {
  weight_only_gemm_blocks(
      m, w.rows, pool,
      [&](int64_t i0, int64_t mb, int64_t n0, int64_t n1, float* dots) {
        if (isa == Isa::kAvx2) {
          codebook_dots__avx2(a + i0 * w.cols, mb, w, n0, n1, dots);
        } else {
          codebook_dots__scalar(a + i0 * w.cols, mb, w, n0, n1, dots);
        }
      },
      [&](int64_t i, int64_t n0, int64_t n1, const float* dots) {
        float* yi = y + i * w.rows;
        for (int64_t n = n0; n < n1; ++n) yi[n] = dots[n - n0] + (bias ? bias[n] : 0.0f);
      });
}

std::string codebook_gemm_kernel_name(int bits, Isa isa) {
  const std::string b = std::to_string(bits);
  return isa == Isa::kAvx2 ? "f32_cb" + b + "_gemm_4x8__avx2" : "f32_cb" + b + "_gemm_4x1__scalar";
}

}  // namespace xnn::kernels
