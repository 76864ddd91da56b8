// Pattern-sparse 3×3 Conv / ai.xnn FusedConv for pattern-pruned weights
// (engine/kernels/pattern_conv.h, compress/prune/pattern_prune.h).
//
// Registered before the dense conv (cpu_kernel.cpp); returns null, so the dense rule of
// conv_cpu.cpp (Winograd F(4,3)/F(6,3) or im2col GEMM) runs, unless
//   - fp32 NCHW, constant weights [C_out × C_in × 3 × 3], group 1, stride 1, dilation 1;
//   - every 3×3 kernel is all zero or keeps at most kMaxPatternTaps nonzeros;
//   - the taps the pattern kernel performs are few enough to beat the dense kernel:
//     work_fraction() = stored taps / (C_out·C_in·9) <= 0.14 for outputs up to 14×14, else 0.10.
// Bias, FusedConv's residual input and every fused activation are applied by the kernel, so a
// fused node still writes its output once.
#include "engine/backends/cpu/const_weight_conv.h"
#include "engine/backends/cpu/cpu_kernel.h"
#include "engine/kernels/pattern_conv.h"
#include "engine/ops/fused_activation.h"
#include "engine/ops/op_helpers.h"

namespace xnn {
namespace {

using kernels::Isa;

// From engine/bench/pattern_conv_bench.cpp (AVX2, one thread, dense time / pattern time, 4 of 9
// taps; the table is in compress/prune/README.md): the dense rule's Winograd F(4,3) runs these
// shapes at 120-215 dense-equivalent GFLOP/s while the pattern kernel does ~20-35 GFLOP/s of
// real work, so 4-of-9 patterns alone (work 0.44) run at 0.3-1.0x and connectivity pruning must
// remove most kernels. At 70% removed (work 0.13): 7²×512 3.0x, 7²×64 1.4x, 14²×256 1.3x,
// 14²×64 1.2x, but 28²×128 0.8x and 56²×64 0.95x. So: up to 14×14 outputs from work 0.14
// (4 of 9 taps with >= ~69% of the kernels removed); larger planes from work 0.10 (>= ~78%
// removed, where the 70% figures extrapolate to ~1.1-1.3x).
constexpr double kMaxWorkFractionSmallPlane = 0.14;
constexpr int64_t kSmallPlane = 14 * 14;
constexpr double kMaxWorkFraction = 0.10;

class PatternConvKernel final : public CpuKernel {
 public:
  PatternConvKernel(int64_t n, int64_t cin, const kernels::PatternConvShape& s, kernels::PatternConvWeights w,
                    std::vector<float> bias, bool has_residual, kernels::Activation act, Isa isa)
      : n_(n), cin_(cin), s_(s), w_(std::move(w)), bias_(std::move(bias)), has_residual_(has_residual), act_(act),
        isa_(isa) {}

  std::string name() const override { return kernels::patconv_kernel_name(isa_); }

  void run(KernelContext& ctx) override {
    const float* x = ctx.input(0).data<float>();
    const float* z = has_residual_ ? ctx.input(3).data<float>() : nullptr;
    float* y = ctx.output(0).data<float>();
    const int64_t in_image = cin_ * s_.h * s_.w, out_image = w_.cout() * s_.oh * s_.ow;
    for (int64_t b = 0; b < n_; ++b) {
      kernels::PatternConvEpilogue ep;
      ep.bias = bias_.empty() ? nullptr : bias_.data();
      ep.residual = z ? z + b * out_image : nullptr;
      ep.act = act_;
      kernels::f32_patconv3x3(w_, s_, x + b * in_image, y + b * out_image, ep, ctx.pool(), isa_);
    }
  }

 private:
  int64_t n_, cin_;
  kernels::PatternConvShape s_;
  kernels::PatternConvWeights w_;
  std::vector<float> bias_;
  bool has_residual_;
  kernels::Activation act_;
  Isa isa_;
};

std::unique_ptr<CpuKernel> make_pattern_conv_kernel(const CpuKernelPrepareContext& ctx) {
  std::optional<ConstWeightConv> c = match_const_weight_conv(ctx, 3, 3);
  if (!c) return nullptr;
  for (size_t i = 0; i < 2; ++i) {
    if (c->geo.strides[i] != 1 || c->geo.dilations[i] != 1) return nullptr;
  }
  const Shape& out = c->out;
  std::optional<kernels::PatternConvWeights> pw =
      kernels::PatternConvWeights::from_dense(c->cout, c->cin, c->weights, kernels::kMaxPatternTaps,
                                              kernels::pattern_channel_block(out[2], out[3]));
  const double max_work = out[2] * out[3] <= kSmallPlane ? kMaxWorkFractionSmallPlane : kMaxWorkFraction;
  if (!pw || pw->work_fraction() > max_work) return nullptr;
  kernels::PatternConvShape s;
  s.h = c->in[2], s.w = c->in[3], s.oh = out[2], s.ow = out[3];
  s.pad_top = c->geo.pads_begin[0], s.pad_left = c->geo.pads_begin[1];
  return std::make_unique<PatternConvKernel>(c->in[0], c->cin, s, std::move(*pw), std::move(c->bias), c->has_residual,
                                             fused_activation(ctx.node), ctx.isa);
}

}  // namespace

void register_cpu_pattern_conv_kernels(CpuKernelRegistry& r) {
  r.add("Conv", "", make_pattern_conv_kernel);
  r.add("FusedConv", "ai.xnn", make_pattern_conv_kernel);
}

}  // namespace xnn
