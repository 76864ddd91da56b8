#include "engine/kernels/codebook.h"

#include <algorithm>

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
  // As f32_rowq_gemm: blocks of 64 output rows across threads, A 4 rows at a time so each weight
  // row is decoded once per 4 rows of A.
  constexpr int64_t kRowBlock = 64, kABlock = 4;
  const int64_t blocks = (w.rows + kRowBlock - 1) / kRowBlock;
  parallel_for(pool, blocks, [&](int64_t b) {
    const int64_t n0 = b * kRowBlock, n1 = std::min(w.rows, n0 + kRowBlock), width = n1 - n0;
    float dots[kABlock * kRowBlock];
    for (int64_t i0 = 0; i0 < m; i0 += kABlock) {
      const int64_t mb = std::min(kABlock, m - i0);
      if (isa == Isa::kAvx2) {
        codebook_dots__avx2(a + i0 * w.cols, mb, w, n0, n1, dots);
      } else {
        codebook_dots__scalar(a + i0 * w.cols, mb, w, n0, n1, dots);
      }
      for (int64_t i = 0; i < mb; ++i) {
        float* yi = y + (i0 + i) * w.rows;
        for (int64_t n = n0; n < n1; ++n) yi[n] = dots[i * width + (n - n0)] + (bias ? bias[n] : 0.0f);
      }
    }
  });
}

std::string codebook_gemm_kernel_name(int bits, Isa isa) {
  const std::string b = std::to_string(bits);
  return isa == Isa::kAvx2 ? "f32_cb" + b + "_gemm_4x8__avx2" : "f32_cb" + b + "_gemm_4x1__scalar";
}

}  // namespace xnn::kernels
