// QLinearConv (2-D, NCHW) on the int8 CPU kernels (engine/kernels/qconv.h, qdepthwise.h).
//
// Applies when the node is in the int8 kernels' scheme (requantize.h): x and y uint8 with
// per-tensor constant scales and zero points; weights a constant int8 OIHW tensor with zero
// point 0 (per tensor or per output channel) and a constant scale per tensor or per channel;
// bias absent or a constant int32 [M]; every multiplier x_scale·w_scale[m] / y_scale finite and
// > 0; no input can overflow the int32 accumulator. Anything else (uint8 weights, non-zero
// weight zero points, int8 x or y, weights or scales computed at run time) gets no CPU kernel
// and the op's reference kernel runs it. The multipliers are formed once here, with the
// reference's float arithmetic, so both requantise to the same bytes.
//
// Algorithm rule (per node, at preparation; --tune times the applicable ones instead):
//   1. depthwise (group == C == M > 1), square 3x3/5x5/7x7 kernel, stride 1 or 2 (both axes),
//      dilation 1 -> qs8_dwconv (direct, vectorised along the output row), or on CPUs with
//      AVX512-VNNI+VBMI, output rows narrower than 16 and 16 consecutive outputs reading at most
//      127 input bytes (7x7 and 14x14 outputs), qs8_dwconv_flat (16 outputs of the plane per zmm,
//      across rows);
//   2. anything else -> qs8_conv2d: per group, the GEMM on the input as is for 1x1 stride 1
//      without padding, else uint8 im2col (padded with x's zero point) + GEMM.
// Batches run image by image.
#include <algorithm>
#include <chrono>
#include <limits>
#include <optional>
#include <random>

#include "engine/backends/cpu/cpu_kernel.h"
#include "engine/backends/cpu/quant_params_cpu.h"
#include "engine/kernels/qconv.h"
#include "engine/kernels/qdepthwise.h"
#include "engine/kernels/qdepthwise_flat.h"
#include "engine/ops/op_helpers.h"

namespace xnn {
namespace {

using kernels::Isa;

enum class QConvAlgo { kDepthwise, kGemm };

// Everything the node fixes at preparation, shared by the candidates --tune builds.
struct QConvParams {
  int64_t batch = 1;
  kernels::QConvShape shape;
  std::vector<int8_t> weights;  // OIHW
  std::vector<int32_t> bias;    // empty = no bias
  std::vector<float> multipliers;
  uint8_t x_zero_point = 0, y_zero_point = 0;
};

class QConvKernel final : public CpuKernel {
 public:
  QConvKernel(std::shared_ptr<const QConvParams> p, QConvAlgo algo, Isa isa) : p_(std::move(p)), algo_(algo), isa_(isa) {
    if (algo_ == QConvAlgo::kGemm) packed_.emplace(p_->shape, p_->weights.data(), bias(), isa);
    // Output rows narrower than 16 (7x7, 14x14) where the CPU has VBMI: the flat kernel
    // (qdepthwise_flat.h), whose permute indices depend only on the shape and are built here, once.
    if (algo_ == QConvAlgo::kDepthwise && isa == Isa::kAvx2 && kernels::qs8_dwconv_flat_enabled()) {
      flat_ = kernels::qs8_dwconv_flat_plan(depthwise_params());
      if (flat_ && !kernels::qs8_dwconv_flat_pays(*flat_)) flat_.reset();
    }
    rq_.multiplier = p_->multipliers.data();
    rq_.zero_point = p_->y_zero_point;
  }

  std::string name() const override {
    if (flat_) return kernels::qs8_dwconv_flat_kernel_name(*flat_);
    return algo_ == QConvAlgo::kDepthwise ? kernels::qs8_dwconv_kernel_name(p_->shape.kernel_h, p_->shape.stride_h, isa_)
                                          : packed_->kernel_name();
  }

  void run(KernelContext& ctx) override {
    run_raw(ctx.input(0).data<uint8_t>(), ctx.output(0).data<uint8_t>(), ctx.pool());
  }

  void run_raw(const uint8_t* x, uint8_t* y, ThreadPool* pool) const {
    const kernels::QConvShape& s = p_->shape;
    const int64_t in_image = s.in_channels * s.in_h * s.in_w, out_image = s.out_channels * s.out_h() * s.out_w();
    for (int64_t b = 0; b < p_->batch; ++b) {
      if (flat_) {
        kernels::qs8_dwconv_flat(*flat_, x + b * in_image, p_->x_zero_point, p_->weights.data(), bias(), rq_,
                                 y + b * out_image, pool);
      } else if (algo_ == QConvAlgo::kDepthwise) {
        kernels::qs8_dwconv(depthwise_params(), x + b * in_image, p_->x_zero_point, p_->weights.data(), bias(), rq_,
                            y + b * out_image, pool, isa_);
      } else {
        kernels::qs8_conv2d(*packed_, x + b * in_image, p_->x_zero_point, rq_, y + b * out_image, pool);
      }
    }
  }

 private:
  const int32_t* bias() const { return p_->bias.empty() ? nullptr : p_->bias.data(); }
  kernels::DepthwiseParams depthwise_params() const {
    const kernels::QConvShape& s = p_->shape;
    return {s.in_channels, s.in_h, s.in_w, s.out_h(), s.out_w(), s.kernel_h, s.stride_h, s.pad_t, s.pad_l};
  }

  std::shared_ptr<const QConvParams> p_;
  QConvAlgo algo_;
  Isa isa_;
  kernels::QRequant rq_;
  std::optional<kernels::PackedQConvWeights> packed_;
  std::optional<kernels::QDwFlatPlan> flat_;
};

// Whether no input can overflow the int32 accumulator of `algo` (the kernels' own checks, made
// here so that such a node falls back instead of failing at run time).
bool accumulator_fits(const QConvParams& p, QConvAlgo algo) {
  int64_t max_abs_bias = 0;
  for (int32_t b : p.bias) max_abs_bias = std::max(max_abs_bias, b < 0 ? -int64_t{b} : int64_t{b});
  if (algo == QConvAlgo::kDepthwise) {
    const int64_t k = p.shape.kernel_h;
    return max_abs_bias <= std::numeric_limits<int32_t>::max() - k * k * 128 * 255;
  }
  return p.shape.depth() <= kernels::qs8_gemm_max_depth(max_abs_bias);
}

// The applicable algorithms, the rule's pick first.
std::vector<QConvAlgo> candidates(const QConvParams& p) {
  const kernels::QConvShape& s = p.shape;
  std::vector<QConvAlgo> c;
  const bool depthwise = s.groups > 1 && s.groups == s.in_channels && s.groups == s.out_channels;
  if (depthwise && s.kernel_h == s.kernel_w && s.stride_h == s.stride_w && s.dilation_w == 1 &&
      kernels::qs8_dwconv_supported(s.kernel_h, s.stride_h, s.dilation_h) && accumulator_fits(p, QConvAlgo::kDepthwise)) {
    c.push_back(QConvAlgo::kDepthwise);
  }
  if (accumulator_fits(p, QConvAlgo::kGemm)) c.push_back(QConvAlgo::kGemm);
  return c;
}

// The node's parameters when it is in the int8 kernels' scheme (see the header comment).
std::optional<QConvParams> qconv_params(const CpuKernelPrepareContext& ctx) {
  const Node& n = ctx.node;
  if (ctx.inputs.size() < 8 || ctx.outputs.empty()) return std::nullopt;
  const TensorInfo& x = ctx.inputs[0];
  const TensorInfo& w = ctx.inputs[3];
  if (x.dtype != DType::kU8 || x.shape.size() != 4 || ctx.outputs[0].dtype != DType::kU8) return std::nullopt;
  if (w.dtype != DType::kI8 || !w.value || w.shape.size() != 4 || ctx.outputs[0].shape.size() != 4) return std::nullopt;
  QConvParams p;
  kernels::QConvShape& s = p.shape;
  p.batch = x.shape[0];
  s.in_channels = x.shape[1], s.in_h = x.shape[2], s.in_w = x.shape[3];
  s.out_channels = w.shape[0], s.kernel_h = w.shape[2], s.kernel_w = w.shape[3];
  s.groups = n.attr_int("group", 1);
  if (s.groups < 1 || s.in_channels % s.groups || s.out_channels % s.groups || w.shape[1] != s.in_channels / s.groups) {
    return std::nullopt;
  }
  const WindowGeometry geo = window_geometry(n, {s.in_h, s.in_w}, {s.kernel_h, s.kernel_w}, false);
  s.stride_h = geo.strides[0], s.stride_w = geo.strides[1], s.dilation_h = geo.dilations[0], s.dilation_w = geo.dilations[1];
  s.pad_t = geo.pads_begin[0], s.pad_l = geo.pads_begin[1], s.pad_b = geo.pads_end[0], s.pad_r = geo.pads_end[1];
  const Shape& y = ctx.outputs[0].shape;
  if (geo.out[0] <= 0 || geo.out[1] <= 0 || s.out_h() != geo.out[0] || s.out_w() != geo.out[1] ||
      y != Shape{p.batch, s.out_channels, s.out_h(), s.out_w()}) {
    return std::nullopt;
  }

  const auto x_scale = constant_scale(ctx.inputs[1]), y_scale = constant_scale(ctx.inputs[6]);
  const auto x_zp = constant_u8_zero_point(ctx.inputs[2]), y_zp = constant_u8_zero_point(ctx.inputs[7]);
  const auto w_scales = constant_scales(ctx.inputs[4], s.out_channels);
  const auto bias = constant_bias(ctx.inputs.size() > 8 ? ctx.inputs[8] : TensorInfo{}, s.out_channels);
  if (!x_scale || !y_scale || !x_zp || !y_zp || !w_scales || !bias || !zero_i8_zero_point(ctx.inputs[5])) {
    return std::nullopt;
  }
  auto multipliers = requant_multipliers(*x_scale, *w_scales, *y_scale);
  if (!multipliers) return std::nullopt;
  p.multipliers = std::move(*multipliers);
  p.bias = std::move(*bias);
  p.x_zero_point = *x_zp, p.y_zero_point = *y_zp;
  const int8_t* wv = w.value->data<int8_t>();
  p.weights.assign(wv, wv + w.value->numel());
  return p;
}

std::unique_ptr<CpuKernel> make_qlinear_conv_kernel(const CpuKernelPrepareContext& ctx) {
  std::optional<QConvParams> params = qconv_params(ctx);
  if (!params) return nullptr;
  const std::vector<QConvAlgo> algos = candidates(*params);
  if (algos.empty()) return nullptr;
  auto p = std::make_shared<const QConvParams>(std::move(*params));
  if (!ctx.tune || algos.size() == 1) return std::make_unique<QConvKernel>(p, algos.front(), ctx.isa);

  // --tune: time each candidate on this shape (random input; 1 warm-up + best of 3).
  const kernels::QConvShape& s = p->shape;
  std::vector<uint8_t> in(static_cast<size_t>(p->batch * s.in_channels * s.in_h * s.in_w));
  std::vector<uint8_t> out(static_cast<size_t>(p->batch * s.out_channels * s.out_h() * s.out_w()));
  std::mt19937 rng(1);
  for (uint8_t& v : in) v = static_cast<uint8_t>(rng());
  std::unique_ptr<QConvKernel> best;
  double best_ms = 1e300;
  for (QConvAlgo a : algos) {
    auto k = std::make_unique<QConvKernel>(p, a, ctx.isa);
    double t_best = 1e300;
    for (int rep = 0; rep < 4; ++rep) {
      const auto t0 = std::chrono::steady_clock::now();
      k->run_raw(in.data(), out.data(), ctx.pool);
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (rep > 0) t_best = std::min(t_best, ms);
    }
    if (t_best < best_ms) best_ms = t_best, best = std::move(k);
  }
  return best;
}

}  // namespace

void register_cpu_qconv_kernels(CpuKernelRegistry& r) { r.add("QLinearConv", "", make_qlinear_conv_kernel); }

}  // namespace xnn
