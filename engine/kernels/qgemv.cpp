#include "engine/kernels/qgemv.h"

#include <algorithm>

#include "engine/kernels/cpu_features.h"

namespace xnn::kernels {

void qs8_gemv(int64_t n, int64_t k, const int8_t* w, int64_t ldw, const int16_t* x, const int32_t* init, int32_t* acc,
              ThreadPool* pool) {
  // Blocks of rows per task, so a task is a few hundred thousand products.
  const int64_t rows_per_task = std::max<int64_t>(1, (int64_t{1} << 18) / std::max<int64_t>(k, 1));
  const int64_t tasks = (n + rows_per_task - 1) / rows_per_task;
  const bool avx512 = avx512_enabled();
  const bool avx2 = best_isa() == Isa::kAvx2;
  parallel_for(pool, tasks, [&](int64_t t) {
    const int64_t j1 = std::min(n, (t + 1) * rows_per_task);
    if (avx512) return internal::qs8_gemv_rows__avx512(t * rows_per_task, j1, k, w, ldw, x, init, acc);
    if (avx2) return internal::qs8_gemv_rows__avx2(t * rows_per_task, j1, k, w, ldw, x, init, acc);
    for (int64_t j = t * rows_per_task; j < j1; ++j) {
      const int8_t* wj = w + j * ldw;
      int32_t s = 0;
      for (int64_t p = 0; p < k; ++p) s += static_cast<int32_t>(wj[p]) * static_cast<int32_t>(x[p]);
      acc[j] = (init ? init[j] : 0) + s;
    }
  });
}

std::string qs8_gemv_kernel_name() {
  if (avx512_enabled()) return "qs8_gemv__avx512";
  return best_isa() == Isa::kAvx2 ? "qs8_gemv__avx2" : "qs8_gemv__scalar";
}

}  // namespace xnn::kernels
