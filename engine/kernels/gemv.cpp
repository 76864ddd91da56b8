#include "engine/kernels/gemv.h"

#include <algorithm>

namespace xnn::kernels {

void f32_gemv_rows__scalar(int64_t r0, int64_t r1, int64_t k, const float* w, int64_t ldw, const float* x, float* y) {
  for (int64_t r = r0; r < r1; ++r) {
    const float* row = w + r * ldw;
    float acc[4] = {0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 4 <= k; i += 4) {
      for (int j = 0; j < 4; ++j) acc[j] += row[i + j] * x[i + j];
    }
    for (; i < k; ++i) acc[0] += row[i] * x[i];
    y[r] = (acc[0] + acc[1]) + (acc[2] + acc[3]);
  }
}

void f32_gemv(int64_t rows, int64_t k, const float* w, int64_t ldw, const float* x, const float* bias,
              const Activation& act, float* y, ThreadPool* pool, Isa isa) {
  // Blocks of 64 rows (~k*256 bytes of weights each) balance across threads.
  const int64_t block = 64, blocks = (rows + block - 1) / block;
  parallel_for(pool, blocks, [&](int64_t b) {
    const int64_t r0 = b * block, r1 = std::min(rows, r0 + block);
    if (isa == Isa::kAvx2) {
      f32_gemv_rows__avx2(r0, r1, k, w, ldw, x, y);
    } else {
      f32_gemv_rows__scalar(r0, r1, k, w, ldw, x, y);
    }
    for (int64_t r = r0; r < r1; ++r) y[r] = apply_activation_scalar(y[r] + (bias ? bias[r] : 0.0f), act);
  });
}

std::string gemv_kernel_name(Isa isa) { return isa == Isa::kAvx2 ? "f32_gemv_4x8__avx2" : "f32_gemv_1x4__scalar"; }

}  // namespace xnn::kernels
