#include "engine/kernels/im2col.h"

#include <algorithm>

namespace xnn::kernels {

int64_t im2col_block_columns(int64_t k, int64_t n) {
  const int64_t nb = std::clamp<int64_t>((int64_t{96} << 10) / std::max<int64_t>(k, 1), 64, 1024) / 16 * 16;
  return std::min(nb, n);
}

void f32_im2col_panels__scalar(const Im2colGeometry& g, const float* input, int64_t p0, int64_t count, int64_t nr,
                               float* panels) {
  const int64_t k = g.depth(), plane = g.in_h * g.in_w;
  for (int64_t j = 0; j * nr < count; ++j) {
    float* panel = panels + j * k * nr;
    for (int64_t lane = 0; lane < nr; ++lane) {
      const int64_t q = j * nr + lane;
      if (q >= count) {
        for (int64_t r = 0; r < k; ++r) panel[r * nr + lane] = 0.0f;
        continue;
      }
      const int64_t p = p0 + q, oy = p / g.out_w, ox = p % g.out_w;
      const int64_t iy0 = oy * g.stride_h - g.pad_t, ix0 = ox * g.stride_w - g.pad_l;
      int64_t r = 0;
      for (int64_t c = 0; c < g.channels; ++c) {
        for (int64_t ki = 0; ki < g.kernel_h; ++ki) {
          const int64_t iy = iy0 + ki * g.dilation_h;
          for (int64_t kj = 0; kj < g.kernel_w; ++kj, ++r) {
            const int64_t ix = ix0 + kj * g.dilation_w;
            const bool inside = iy >= 0 && iy < g.in_h && ix >= 0 && ix < g.in_w;
            panel[r * nr + lane] = inside ? input[c * plane + iy * g.in_w + ix] : 0.0f;
          }
        }
      }
    }
  }
}

}  // namespace xnn::kernels
