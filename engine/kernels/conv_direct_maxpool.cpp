// Banded direct convolution → max pool (design in conv_direct_maxpool.h).
#include "engine/kernels/conv_direct_maxpool.h"

#include <algorithm>

#include "engine/core/error.h"
#include "engine/kernels/row_bands.h"
#include "engine/kernels/scratch.h"

namespace xnn::kernels {

bool conv_direct_maxpool_supported(const DirectConvParams& conv, const Pool2dParams& pool, Isa isa) {
  return direct_conv_stem(conv, isa) && conv.out_channel_stride == 0 && conv.out_row0 == 0 &&
         pool.planes == conv.out_channels && pool.in_h == conv.out_h && pool.in_w == conv.out_w && pool.out_h > 0 &&
         pool.out_w > 0 && pool.kernel_h >= pool.stride_h;
}

int64_t conv_direct_maxpool_band_rows(const DirectConvParams& conv, const Pool2dParams& pool) {
  const int64_t row_bytes = std::max<int64_t>(1, conv.out_channels * conv.out_w * static_cast<int64_t>(sizeof(float)));
  const int64_t conv_rows = std::max<int64_t>(pool.kernel_h, bands::kBandBytes / row_bytes);
  return std::clamp<int64_t>((conv_rows - pool.kernel_h) / pool.stride_h + 1, 1, pool.out_h);
}

void f32_conv_direct_maxpool(const DirectConvParams& conv, const float* weights, const float* bias,
                             const Activation& act, const Pool2dParams& pool, const float* input, float* output,
                             ThreadPool* thread_pool, Isa isa) {
  XNN_CHECK(conv_direct_maxpool_supported(conv, pool, isa), "f32_conv_direct_maxpool: unsupported pair");
  const int64_t channels = conv.out_channels, w = conv.out_w;
  const int64_t band_out = conv_direct_maxpool_band_rows(conv, pool);
  const int64_t buf_stride = ((band_out - 1) * pool.stride_h + pool.kernel_h) * w;  // floats per channel
  const int64_t pool_plane = pool.out_h * pool.out_w, conv_band = conv_direct_band_rows(conv);
  bands::for_each_row_range(thread_pool, pool.out_h, [&](int64_t py_begin, int64_t py_end) {
    float* buf = thread_scratch_f32(static_cast<size_t>(channels * buf_stride), 3);
    bands::BandBuffer have{buf, channels, buf_stride, w};  // convolution rows [have0, have1)
    DirectConvParams band = conv;
    band.out_channel_stride = buf_stride;
    for (int64_t py0 = py_begin; py0 < py_end; py0 += band_out) {
      const int64_t py1 = std::min(py_end, py0 + band_out);
      const bands::RowRange need = bands::window_rows(py0, py1, pool.kernel_h, pool.stride_h, pool.pad_t, conv.out_h);
      const int64_t from = have.advance_to(need.begin);
      band.out_row0 = have.have0;
      // In the convolution's own bands (its padded input rows L1-sized), as f32_conv_direct.
      for (int64_t r0 = from; r0 < need.end; r0 += conv_band) {
        const int64_t r1 = std::min(need.end, r0 + conv_band);
        f32_conv_direct_stem__avx512(band, 0, channels, r0, r1, input, weights, bias, nullptr, act, buf);
      }
      have.have1 = std::max(have.have1, need.end);
      // The band's pool: rows [py0, py1) over convolution rows [have0, have1), the image's top
      // padding only where the band starts at the top.
      Pool2dParams part = pool;
      part.planes = 1;
      part.in_h = have.have1 - have.have0;
      part.out_h = py1 - py0;
      part.pad_t = have.have0 + pool.pad_t - py0 * pool.stride_h;
      for (int64_t c = 0; c < channels; ++c) {
        f32_maxpool2d_plane(part, buf + c * buf_stride, output + c * pool_plane + py0 * pool.out_w, isa);
      }
    }
  });
}

}  // namespace xnn::kernels
