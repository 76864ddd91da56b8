#include "engine/kernels/transpose.h"

namespace xnn::kernels {

void f32_transpose__scalar(int64_t r0, int64_t r1, int64_t c0, int64_t c1, const float* src, int64_t ld_src,
                           float* dst, int64_t ld_dst) {
  // Source rows in the inner loop: the destination row being written stays in L1.
  for (int64_t j = c0; j < c1; ++j)
    for (int64_t i = r0; i < r1; ++i) dst[j * ld_dst + i] = src[i * ld_src + j];
}

void f32_transpose(int64_t rows, int64_t cols, const float* src, int64_t ld_src, float* dst, int64_t ld_dst, Isa isa) {
  int64_t rows8 = 0, cols8 = 0;
  if (isa == Isa::kAvx2) {
    rows8 = rows / 8 * 8, cols8 = cols / 8 * 8;
    f32_transpose_8x8__avx2(rows8, cols8, src, ld_src, dst, ld_dst);
  }
  f32_transpose__scalar(rows8, rows, 0, cols, src, ld_src, dst, ld_dst);   // rows past the tiles
  f32_transpose__scalar(0, rows8, cols8, cols, src, ld_src, dst, ld_dst);  // their columns past the tiles
}

}  // namespace xnn::kernels
