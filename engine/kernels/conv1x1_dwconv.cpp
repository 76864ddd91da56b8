// Banded 1×1 conv → depthwise conv (design in conv1x1_dwconv.h).
#include "engine/kernels/conv1x1_dwconv.h"

#include <algorithm>
#include <cstring>

#include "engine/core/error.h"
#include "engine/kernels/row_bands.h"
#include "engine/kernels/scratch.h"

namespace xnn::kernels {

using bands::for_each_row_range;
using bands::kBandBytes;

bool conv1x1_dwconv_supported(const PackedA& weights, const DepthwiseParams& dw, Isa isa) {
  return dwconv_c16(dw, isa) && weights.family() == F32GemmKernels::kAvx512 && weights.rows() == dw.channels &&
         f32_dwconv_supported(dw.kernel, dw.stride, 1);
}

int64_t conv1x1_dwconv_band_rows(const DepthwiseParams& dw) {
  const int64_t row_bytes = std::max<int64_t>(1, dw.channels * dw.in_w * static_cast<int64_t>(sizeof(float)));
  const int64_t in_rows = std::max<int64_t>(dw.kernel, kBandBytes / row_bytes);
  return std::clamp<int64_t>((in_rows - dw.kernel) / dw.stride + 1, 1, std::max<int64_t>(dw.out_h, 1));
}

void f32_conv1x1_dwconv(const Conv1x1Stage& expand, const DwconvStage& dw, const float* input, float* output,
                        ThreadPool* pool) {
  const DepthwiseParams& p = dw.params;
  XNN_CHECK(expand.weights && expand.weights->rows() == p.channels, "f32_conv1x1_dwconv: channel counts differ");
  XNN_CHECK(!expand.residual, "f32_conv1x1_dwconv: the 1x1 stage takes no residual");
  XNN_CHECK(p.in_channel_stride == 0 && p.in_row0 == 0, "f32_conv1x1_dwconv: the driver places the bands");
  if (p.channels <= 0 || p.out_h <= 0 || p.out_w <= 0) return;
  const int64_t w = p.in_w, plane = p.in_h * p.in_w;
  const int64_t band_out = conv1x1_dwconv_band_rows(p);
  const int64_t band_in = (band_out - 1) * p.stride + p.kernel;  // buffer rows per channel
  const int64_t buf_stride = band_in * w;
  const GemmEpilogue ep1{expand.bias, nullptr, 0, expand.act};

  for_each_row_range(pool, p.out_h, [&](int64_t oh_begin, int64_t oh_end) {
    float* buf = thread_scratch_f32(static_cast<size_t>(p.channels * buf_stride), 3);
    DepthwiseParams band = p;
    band.in_channel_stride = buf_stride;
    bands::BandBuffer have{buf, p.channels, buf_stride, w};  // image rows [have0, have1), have0 first
    for (int64_t oh0 = oh_begin; oh0 < oh_end; oh0 += band_out) {
      const int64_t oh1 = std::min(oh_end, oh0 + band_out);
      const bands::RowRange need = bands::window_rows(oh0, oh1, p.kernel, p.stride, p.pad_t, p.in_h);
      const int64_t from = have.advance_to(need.begin);
      if (need.end > from) {
        f32_gemm(*expand.weights, (need.end - from) * w, MatrixRef{input + from * w, plane, 1},
                 buf + (from - have.have0) * w, buf_stride, ep1, nullptr);
        have.have1 = need.end;
      }
      band.in_row0 = have.have0;
      for (int64_t c0 = 0; c0 < p.channels; c0 += 16) {
        f32_dwconv_c16__avx512(band, c0, oh0, oh1, buf, dw.weights, dw.bias, dw.residual, dw.act, output);
      }
    }
  });
}

bool dwconv_conv1x1_supported(const DepthwiseParams& dw, const PackedA& weights, Isa isa) {
  return dwconv_c16(dw, isa) && weights.family() == F32GemmKernels::kAvx512 && weights.depth() == dw.channels &&
         f32_dwconv_supported(dw.kernel, dw.stride, 1);
}

int64_t dwconv_conv1x1_band_rows(const DepthwiseParams& dw) {
  const int64_t row_bytes = std::max<int64_t>(1, dw.channels * dw.out_w * static_cast<int64_t>(sizeof(float)));
  return std::clamp<int64_t>(kBandBytes / row_bytes, 1, std::max<int64_t>(dw.out_h, 1));
}

void f32_dwconv_conv1x1(const DwconvStage& dw, const Conv1x1Stage& project, const float* input, float* output,
                        ThreadPool* pool) {
  const DepthwiseParams& p = dw.params;
  XNN_CHECK(project.weights && project.weights->depth() == p.channels, "f32_dwconv_conv1x1: channel counts differ");
  XNN_CHECK(!dw.residual, "f32_dwconv_conv1x1: the depthwise stage takes no residual");
  XNN_CHECK(p.out_channel_stride == 0 && p.out_row0 == 0, "f32_dwconv_conv1x1: the driver places the bands");
  if (p.channels <= 0 || p.out_h <= 0 || p.out_w <= 0) return;
  const int64_t band_rows = dwconv_conv1x1_band_rows(p);
  const int64_t buf_stride = band_rows * p.out_w, out_plane = p.out_h * p.out_w;
  for_each_row_range(pool, p.out_h, [&](int64_t oh_begin, int64_t oh_end) {
    float* buf = thread_scratch_f32(static_cast<size_t>(p.channels * buf_stride), 3);
    DepthwiseParams band = p;
    band.out_channel_stride = buf_stride;
    for (int64_t oh0 = oh_begin; oh0 < oh_end; oh0 += band_rows) {
      const int64_t oh1 = std::min(oh_end, oh0 + band_rows), first = oh0 * p.out_w;
      band.out_row0 = oh0;
      for (int64_t c0 = 0; c0 < p.channels; c0 += 16) {
        f32_dwconv_c16__avx512(band, c0, oh0, oh1, input, dw.weights, dw.bias, nullptr, dw.act, buf);
      }
      const GemmEpilogue ep{project.bias, project.residual ? project.residual + first : nullptr, out_plane, project.act};
      f32_gemm(*project.weights, (oh1 - oh0) * p.out_w, MatrixRef{buf, buf_stride, 1}, output + first, out_plane, ep,
               nullptr);
    }
  });
}

}  // namespace xnn::kernels
