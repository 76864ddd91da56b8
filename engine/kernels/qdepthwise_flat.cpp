// The flat small-plane int8 depthwise convolution (qdepthwise_flat.h): the plan, the driver.
#include "engine/kernels/qdepthwise_flat.h"

#include <algorithm>

#include "engine/core/error.h"
#include "engine/kernels/cpu_features.h"
#include "engine/kernels/qdepthwise.h"

namespace xnn::kernels {

namespace {
constexpr int64_t kLanes = 16;
// Window bytes a vector may read: byte 127 (one register: 63) holds the zero point.
constexpr int64_t kWindow = 127, kWindowOneRegister = 63;
constexpr uint8_t kZeroPointByte = 127, kZeroPointByteOneRegister = 63;
}  // namespace

std::optional<QDwFlatPlan> qs8_dwconv_flat_plan(const DepthwiseParams& p) {
  if (!qs8_dwconv_supported(p.kernel, p.stride, 1) || p.channels <= 0 || p.out_h <= 0 || p.out_w <= 0 ||
      p.in_h <= 0 || p.in_w <= 0 || p.pad_t < 0 || p.pad_l < 0) {
    return std::nullopt;
  }
  const int64_t k = p.kernel, s = p.stride, outputs = p.out_h * p.out_w;
  QDwFlatPlan plan;
  plan.shape = p;
  plan.vectors = (outputs + kLanes - 1) / kLanes;
  plan.quads = static_cast<int>((k * k + 3) / 4);
  // The input rows each vector's outputs read, inside the image; one register when every
  // vector's rows fit in 63 bytes.
  std::vector<int64_t> first_row(static_cast<size_t>(plan.vectors));
  int64_t widest = 0;
  for (int64_t v = 0; v < plan.vectors; ++v) {
    const int64_t first = v * kLanes, last = std::min(outputs, first + kLanes) - 1;
    const int64_t row0 = std::max<int64_t>(0, first / p.out_w * s - p.pad_t);
    const int64_t row1 = std::min(p.in_h - 1, last / p.out_w * s - p.pad_t + k - 1);
    first_row[static_cast<size_t>(v)] = row0;
    widest = std::max(widest, (row1 - row0 + 1) * p.in_w);
  }
  if (widest > kWindow) return std::nullopt;
  plan.one_register = widest <= kWindowOneRegister;
  const uint8_t zero_point_byte = plan.one_register ? kZeroPointByteOneRegister : kZeroPointByte;
  plan.index.assign(static_cast<size_t>(plan.vectors * plan.quads * 64), zero_point_byte);
  for (int64_t v = 0; v < plan.vectors; ++v) {
    const int64_t first = v * kLanes, last = std::min(outputs, first + kLanes) - 1;
    const int64_t window = first_row[static_cast<size_t>(v)] * p.in_w;
    plan.window.push_back(window);
    plan.window_bytes.push_back(static_cast<int32_t>(std::min<int64_t>(128, p.in_h * p.in_w - window)));
    plan.outputs.push_back(static_cast<int32_t>(last - first + 1));
    for (int64_t i = 0; first + i <= last; ++i) {
      const int64_t oy = (first + i) / p.out_w, ox = (first + i) % p.out_w;
      for (int64_t t = 0; t < k * k; ++t) {
        const int64_t iy = oy * s - p.pad_t + t / k, ix = ox * s - p.pad_l + t % k;
        if (iy < 0 || iy >= p.in_h || ix < 0 || ix >= p.in_w) continue;
        plan.index[static_cast<size_t>((v * plan.quads + t / 4) * 64 + 4 * i + t % 4)] =
            static_cast<uint8_t>(iy * p.in_w + ix - window);
      }
    }
  }
  return plan;
}

bool qs8_dwconv_flat_pays(const QDwFlatPlan& plan) { return plan.shape.out_w < 16; }

bool qs8_dwconv_flat_enabled() { return qs8_dwconv_vnni_enabled(); }

std::string qs8_dwconv_flat_kernel_name(const QDwFlatPlan& plan) {
  const std::string k = std::to_string(plan.shape.kernel);
  return "qs8_dwconv" + k + "x" + k + "s" + std::to_string(plan.shape.stride) + "_flat__avx512vnni";
}

void qs8_dwconv_flat(const QDwFlatPlan& plan, const uint8_t* input, uint8_t x_zero_point, const int8_t* weights,
                     const int32_t* bias, const QRequant& rq, uint8_t* output, ThreadPool* pool) {
  internal::qs8_dwconv_check_params(plan.shape, rq, bias, "qs8_dwconv_flat");
  XNN_CHECK(qs8_dwconv_flat_enabled(), "qs8_dwconv_flat: needs AVX512-VNNI and VBMI");
  // Tasks of channels: ~4 per thread, at least 8 channels each (a 7×7 channel is ~100 cycles).
  const int64_t channels = plan.shape.channels, threads = pool ? pool->threads() : 1;
  const int64_t per_task = std::max<int64_t>(8, (channels + 4 * threads - 1) / (4 * threads));
  parallel_for(pool, (channels + per_task - 1) / per_task, [&](int64_t t) {
    const int64_t c0 = t * per_task, c1 = std::min(channels, c0 + per_task);
    internal::qs8_dwconv_flat_channels__avx512vnni(plan, c0, c1, input, x_zero_point, weights, bias, rq, output);
  });
}

}  // namespace xnn::kernels
