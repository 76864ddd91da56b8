// Optimised Conv / FusedConv / Gemm / MatMul kernels of the CPU backend against the reference
// kernels, over random shapes, strides, paddings, dilations, groups and fused epilogues, for
// every ISA this CPU supports and for 1 and 2 threads. Also checks which algorithm the rule
// picks, so a change of rule is a visible change.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "engine/backends/cpu/cpu_kernel.h"
#include "engine/runtime/executor.h"

namespace xnn {
namespace {

using kernels::Isa;

Tensor random_tensor(const Shape& shape, std::mt19937& rng, float scale = 1.0f) {
  std::normal_distribution<float> dist(0.0f, scale);
  Tensor t(DType::kF32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng);
  return t;
}

struct Case {
  Node node;
  std::vector<Tensor> inputs;  // undefined = absent optional input
  std::vector<bool> constant;
};

// Runs the case through the reference kernel and through the CPU kernel (must exist); returns
// the max error relative to the reference output's largest magnitude, and the kernel name.
std::pair<double, std::string> compare(const Case& c, Isa isa, int threads) {
  const OpRegistry& reg = OpRegistry::builtin();
  std::vector<const Tensor*> in_ptrs;
  for (const Tensor& t : c.inputs) in_ptrs.push_back(t.defined() ? &t : nullptr);
  std::vector<Tensor> want;
  run_node(reg, c.node, in_ptrs, want);

  std::vector<TensorInfo> ins(c.inputs.size()), outs(1);
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    if (!c.inputs[i].defined()) continue;
    ins[i] = TensorInfo{DType::kF32, c.inputs[i].shape(), c.constant[i] ? &c.inputs[i] : nullptr};
  }
  outs[0] = TensorInfo{want[0].dtype(), want[0].shape(), nullptr};
  ThreadPool pool(threads);
  CpuKernelPrepareContext ctx{c.node, ins, outs, isa, &pool, false};
  std::unique_ptr<CpuKernel> k = CpuKernelRegistry::builtin().create(ctx);
  if (!k) return {1e30, "none"};
  Tensor got(want[0].dtype(), want[0].shape());
  // Poison the output: every element must be written.
  for (int64_t i = 0; i < got.numel(); ++i) got.data<float>()[i] = std::nanf("");
  Tensor* out_ptr = &got;
  KernelContext kctx(c.node, in_ptrs, std::span<Tensor* const>(&out_ptr, 1), &pool);
  k->run(kctx);
  k->run(kctx);  // a second run must give the same (no state carried over)
  double max_ref = 0, max_diff = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double w = want[0].data<float>()[i], g = got.data<float>()[i];
    max_ref = std::max(max_ref, std::fabs(w));
    max_diff = std::isnan(g) ? 1e30 : std::max(max_diff, std::fabs(g - w));
  }
  return {max_diff / std::max(max_ref, 1.0), k->name()};
}

std::vector<Isa> isas() {
  std::vector<Isa> v{Isa::kScalar};
  if (kernels::isa_supported(Isa::kAvx2)) v.push_back(Isa::kAvx2);
  return v;
}

Case conv_case(std::mt19937& rng, int64_t n, int64_t cin, int64_t cout, int64_t h, int64_t w, int64_t k, int64_t stride,
               int64_t pad, int64_t dilation, int64_t group, bool bias, bool residual, const std::string& act,
               std::vector<float> act_params = {}) {
  Case c;
  c.node.op_type = residual || !act.empty() ? "FusedConv" : "Conv";
  c.node.domain = c.node.op_type == "FusedConv" ? "ai.xnn" : "";
  c.node.name = "conv";
  c.node.attrs["kernel_shape"] = std::vector<int64_t>{k, k};
  c.node.attrs["strides"] = std::vector<int64_t>{stride, stride};
  c.node.attrs["pads"] = std::vector<int64_t>{pad, pad, pad, pad};
  c.node.attrs["dilations"] = std::vector<int64_t>{dilation, dilation};
  c.node.attrs["group"] = group;
  if (!act.empty()) c.node.attrs["activation"] = act;
  if (!act_params.empty()) c.node.attrs["activation_params"] = act_params;
  const float wscale = 1.0f / std::sqrt(static_cast<float>(cin / group * k * k));
  c.inputs.push_back(random_tensor({n, cin, h, w}, rng));
  c.inputs.push_back(random_tensor({cout, cin / group, k, k}, rng, wscale));
  c.inputs.push_back(bias ? random_tensor({cout}, rng) : Tensor());
  c.constant = {false, true, true};
  if (residual) {
    const int64_t oh = (h + 2 * pad - dilation * (k - 1) - 1) / stride + 1;
    const int64_t ow = (w + 2 * pad - dilation * (k - 1) - 1) / stride + 1;
    c.inputs.push_back(random_tensor({n, cout, oh, ow}, rng));
    c.constant.push_back(false);
  }
  c.node.inputs.assign(c.inputs.size(), 0);
  c.node.outputs = {0};
  return c;
}

TEST(CpuBackendConv, RandomShapesMatchReference) {
  std::mt19937 rng(1234);
  const char* acts[] = {"", "Relu", "Clip", "LeakyRelu", "HardSwish", "Sigmoid", "Silu", "HardSigmoid"};
  for (int trial = 0; trial < 120; ++trial) {
    const int64_t k = std::vector<int64_t>{1, 1, 3, 3, 3, 5, 7}[rng() % 7];
    const int64_t stride = 1 + rng() % 2, dilation = (rng() % 5 == 0) ? 2 : 1, pad = rng() % (k / 2 + 2);
    int64_t group = 1, cin = 1 + rng() % 12, cout = 1 + rng() % 20;
    const int mode = static_cast<int>(rng() % 4);
    if (mode == 1) {  // depthwise
      group = cin = cout = 1 + rng() % 24;
    } else if (mode == 2) {  // grouped
      group = 2 + rng() % 3;
      cin = group * (1 + rng() % 4);
      cout = group * (1 + rng() % 4);
    }
    const int64_t h = k * dilation + rng() % 14, w = k * dilation + rng() % 14;
    const std::string act = acts[rng() % 8];
    std::vector<float> params;
    if (act == "Clip") params = {0.0f, 6.0f};
    if (act == "LeakyRelu") params = {0.1f};
    if (act == "HardSigmoid") params = {1.0f / 6, 0.5f};
    const bool residual = rng() % 3 == 0;
    const Case c = conv_case(rng, 1 + rng() % 2, cin, cout, h, w, k, stride, pad, dilation, group, rng() % 2, residual,
                             act, params);
    for (Isa isa : isas()) {
      for (int threads : {1, 2}) {
        const auto [err, name] = compare(c, isa, threads);
        EXPECT_LE(err, 2e-5) << "trial " << trial << " kernel " << name << " k" << k << " s" << stride << " p" << pad
                             << " d" << dilation << " g" << group << " cin" << cin << " cout" << cout << " " << h << "x"
                             << w << " act '" << act << "' residual " << residual << " threads " << threads;
      }
    }
  }
}

TEST(CpuBackendConv, AlgorithmRule) {
  std::mt19937 rng(5);
  auto name_of = [&](const Case& c) { return compare(c, kernels::best_isa(), 1); };
  // depthwise 3x3 s2, 5x5 s1
  EXPECT_NE(name_of(conv_case(rng, 1, 16, 16, 14, 14, 3, 2, 1, 1, 16, true, false, "Relu")).second.find("dwconv"), std::string::npos);
  EXPECT_NE(name_of(conv_case(rng, 1, 8, 8, 9, 9, 5, 1, 2, 1, 8, true, false, "")).second.find("dwconv"), std::string::npos);
  // 1x1 stride 1 -> GEMM directly
  EXPECT_NE(name_of(conv_case(rng, 1, 32, 64, 14, 14, 1, 1, 0, 1, 1, true, true, "Relu")).second.find("conv1x1"), std::string::npos);
  // 1x1 on a 1x1 plane (squeeze-excitation) -> GEMV on the stored weights, batch 1 and 2, every
  // activation; with a residual -> GEMM. Both agree with the reference.
  for (int64_t batch : {1, 2}) {
    for (const char* act : {"", "Relu", "Sigmoid", "Silu", "HardSwish"}) {
      for (int threads : {1, 2}) {
        const auto [err, name] = compare(conv_case(rng, batch, 150, 70, 1, 1, 1, 1, 0, 1, 1, true, false, act),
                                         kernels::best_isa(), threads);
        EXPECT_NE(name.find("conv1x1_f32_gemv"), std::string::npos) << name;
        EXPECT_LE(err, 2e-5) << name << " act '" << act << "' batch " << batch;
      }
    }
  }
  {
    const auto [err, name] = name_of(conv_case(rng, 1, 40, 24, 1, 1, 1, 1, 0, 1, 1, false, true, "Relu"));
    EXPECT_NE(name.find("conv1x1_gemm"), std::string::npos) << name;
    EXPECT_LE(err, 2e-5);
  }
  // 3x3 stride 1 with many channels -> Winograd; error within the 1e-4 budget
  const auto [err, name] = name_of(conv_case(rng, 1, 64, 64, 28, 28, 3, 1, 1, 1, 1, true, true, "Relu"));
  EXPECT_NE(name.find("winograd"), std::string::npos) << name;
  EXPECT_LE(err, 1e-4);
  // few input channels (first layers on grey or RGB images) -> direct, any stride, 3/5/7
  EXPECT_NE(name_of(conv_case(rng, 1, 1, 24, 28, 28, 3, 1, 1, 1, 1, true, false, "Relu")).second.find("direct"), std::string::npos);
  EXPECT_NE(name_of(conv_case(rng, 1, 3, 32, 33, 33, 3, 2, 1, 1, 1, true, false, "")).second.find("direct"), std::string::npos);
  EXPECT_NE(name_of(conv_case(rng, 1, 1, 6, 28, 28, 5, 1, 2, 1, 1, true, false, "Relu")).second.find("direct"), std::string::npos);
  EXPECT_NE(name_of(conv_case(rng, 1, 6, 16, 14, 14, 5, 1, 2, 1, 1, true, false, "Relu")).second.find("direct"), std::string::npos);
  // ... but, on AVX2, not a large-plane RGB stem at stride 2 with many output channels
  // (SqueezeNet's 3->64 3x3, ResNet's 7x7, MobileNetV2's 3->32 3x3): the AVX-512 stem kernel
  // takes all three; nor 3x3 with more channels
  const bool c16 = kernels::avx512_enabled();
  EXPECT_NE(name_of(conv_case(rng, 1, 3, 64, 80, 80, 3, 2, 0, 1, 1, true, false, "")).second.find(c16 ? "direct_4x64" : "im2col"),
            std::string::npos);
  EXPECT_NE(name_of(conv_case(rng, 1, 3, 64, 80, 80, 7, 2, 3, 1, 1, true, false, "")).second.find(c16 ? "direct_4x64" : "im2col"),
            std::string::npos);
  EXPECT_NE(name_of(conv_case(rng, 1, 3, 32, 80, 80, 3, 2, 1, 1, 1, true, false, "Clip", {0.0f, 6.0f})).second.find(c16 ? "direct_4x64" : "im2col"),
            std::string::npos);
  EXPECT_NE(name_of(conv_case(rng, 1, 16, 16, 15, 15, 3, 2, 1, 1, 1, true, false, "")).second.find("im2col"), std::string::npos);
  // strided 3x3 -> im2col
  EXPECT_NE(name_of(conv_case(rng, 1, 16, 32, 15, 15, 3, 2, 1, 1, 1, false, false, "")).second.find("im2col"), std::string::npos);
}

// The direct kernel over its whole domain (C_in 1-4 by the rule; more as 5x5/7x7 or --tune
// picks it): every kernel size and stride, paddings up to past the kernel, planes narrower than the
// kernel, residual and activations; the accumulation over input channels must keep the bias,
// residual and activation applied exactly once.
TEST(CpuBackendConv, DirectFewInputChannelsMatchReference) {
  std::mt19937 rng(77);
  const char* acts[] = {"", "Relu", "HardSwish", "Silu"};
  int direct_cases = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const int64_t k = 3 + 2 * static_cast<int64_t>(rng() % 3), stride = 1 + rng() % 2, pad = rng() % (k / 2 + 2);
    const int64_t cin = 1 + rng() % 4, cout = 1 + rng() % 20;
    const int64_t h = std::max<int64_t>(1, k - 2 * pad) + rng() % 30, w = std::max<int64_t>(1, k - 2 * pad) + rng() % 30;
    const bool residual = rng() % 3 == 0;
    const Case c = conv_case(rng, 1 + rng() % 2, cin, cout, h, w, k, stride, pad, 1, 1, rng() % 2, residual,
                             acts[rng() % 4]);
    for (Isa isa : isas()) {
      for (int threads : {1, 2}) {
        const auto [err, name] = compare(c, isa, threads);
        direct_cases += name.find("direct") != std::string::npos;
        EXPECT_LE(err, 2e-5) << "trial " << trial << " kernel " << name << " k" << k << " s" << stride << " p" << pad
                             << " cin" << cin << " cout" << cout << " " << h << "x" << w << " threads " << threads;
      }
    }
  }
  EXPECT_EQ(direct_cases, 60 * 2 * static_cast<int>(isas().size()));
}

TEST(CpuBackendConv, ResNetShapesWithinErrorBudget) {
  std::mt19937 rng(9);
  for (auto [c, hw] : std::vector<std::pair<int64_t, int64_t>>{{64, 56}, {128, 28}, {256, 14}, {512, 7}}) {
    const Case cs = conv_case(rng, 1, c, c, hw, hw, 3, 1, 1, 1, 1, true, false, "Relu");
    const auto [err, name] = compare(cs, kernels::best_isa(), 2);
    EXPECT_LE(err, 1e-4) << name << " " << c << "@" << hw;
  }
}

Case gemm_case(std::mt19937& rng, int64_t m, int64_t k, int64_t n, bool trans_a, bool trans_b, int bias_kind,
               float alpha, float beta, const std::string& act) {
  Case c;
  c.node.op_type = act.empty() ? "Gemm" : "FusedGemm";
  c.node.domain = act.empty() ? "" : "ai.xnn";
  c.node.name = "gemm";
  c.node.attrs["transA"] = int64_t{trans_a};
  c.node.attrs["transB"] = int64_t{trans_b};
  c.node.attrs["alpha"] = alpha;
  c.node.attrs["beta"] = beta;
  if (!act.empty()) c.node.attrs["activation"] = act;
  c.inputs.push_back(random_tensor(trans_a ? Shape{k, m} : Shape{m, k}, rng));
  c.inputs.push_back(random_tensor(trans_b ? Shape{n, k} : Shape{k, n}, rng, 0.3f));
  c.constant = {false, true};
  if (bias_kind == 1) c.inputs.push_back(random_tensor({n}, rng)), c.constant.push_back(true);
  if (bias_kind == 2) c.inputs.push_back(random_tensor({1, n}, rng)), c.constant.push_back(true);
  c.node.inputs.assign(c.inputs.size(), 0);
  c.node.outputs = {0};
  return c;
}

TEST(CpuBackendGemm, RandomShapesMatchReference) {
  std::mt19937 rng(77);
  for (int trial = 0; trial < 60; ++trial) {
    const int64_t m = 1 + rng() % 9, k = 1 + rng() % 70, n = 1 + rng() % 40;
    const Case c = gemm_case(rng, m, k, n, rng() % 2, rng() % 2, static_cast<int>(rng() % 3), rng() % 2 ? 1.0f : 0.5f,
                             rng() % 2 ? 1.0f : 2.0f, rng() % 2 ? "Relu" : "");
    for (Isa isa : isas()) {
      for (int threads : {1, 2}) {
        const auto [err, name] = compare(c, isa, threads);
        EXPECT_LE(err, 1e-5) << "trial " << trial << " " << name << " m" << m << " k" << k << " n" << n;
      }
    }
  }
}

TEST(CpuBackendGemm, MatMulLinearAndBatched) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 30; ++trial) {
    Case c;
    c.node.op_type = "MatMul";
    c.node.name = "mm";
    const int64_t b = 1 + rng() % 3, m = 1 + rng() % 7, k = 1 + rng() % 33, n = 1 + rng() % 19;
    const int kind = static_cast<int>(rng() % 3);
    if (kind == 0) {  // linear: constant 2-D B, 3-D A
      c.inputs = {random_tensor({b, m, k}, rng), random_tensor({k, n}, rng)};
      c.constant = {false, true};
    } else if (kind == 1) {  // batched activations
      c.inputs = {random_tensor({b, m, k}, rng), random_tensor({b, k, n}, rng)};
      c.constant = {false, false};
    } else {  // 2-D B shared by the batch, not constant
      c.inputs = {random_tensor({b, m, k}, rng), random_tensor({k, n}, rng)};
      c.constant = {false, false};
    }
    c.node.inputs = {0, 0};
    c.node.outputs = {0};
    for (Isa isa : isas()) {
      const auto [err, name] = compare(c, isa, 2);
      EXPECT_LE(err, 1e-5) << "trial " << trial << " kind " << kind << " " << name;
    }
  }
}

}  // namespace
}  // namespace xnn
