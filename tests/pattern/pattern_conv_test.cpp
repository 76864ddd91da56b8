// The pattern-sparse 3×3 conv (engine/kernels/pattern_conv.h) and the CPU backend's choice of it
// (engine/backends/cpu/pattern_conv_cpu.cpp): compact weights, the kernel against the reference
// Conv / FusedConv over shapes with width tails, odd sizes, padding, all-zero filters and every
// epilogue (both ISAs, 1 and 2 threads, batch 2); the backend takes it only when every kernel
// keeps <= 5 taps and the kept work is small enough, and a Session names it in its plan.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "engine/backends/cpu/cpu_kernel.h"
#include "engine/kernels/pattern_conv.h"
#include "engine/runtime/executor.h"
#include "engine/runtime/session.h"

namespace xnn {
namespace {

using kernels::Isa;

Tensor random_tensor(const Shape& shape, std::mt19937& rng) {
  std::normal_distribution<float> dist(0.0f, 1.0f);
  Tensor t(DType::kF32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng);
  return t;
}

// Keeps `taps` random positions of each 3×3 kernel (from 8 fixed patterns when taps == 4), and
// zeroes `connectivity` of the kernels and every kernel of filter 1 (an all-zero filter).
void make_pattern_weights(Tensor& w, int taps, double connectivity, std::mt19937& rng) {
  static const uint16_t kPatterns[8] = {0x01B, 0x036, 0x0D8, 0x1B0, 0x03A, 0x0B8, 0x09A, 0x0B2};
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::uniform_int_distribution<int> pick(0, 7), pos(0, 8);
  float* v = w.data<float>();
  const int64_t cin = w.dim(1);
  for (int64_t k = 0; k < w.numel() / 9; ++k) {
    uint16_t mask = 0;
    if (taps == 4) {
      mask = kPatterns[pick(rng)];
    } else {
      while (__builtin_popcount(mask) < taps) mask = static_cast<uint16_t>(mask | (1u << pos(rng)));
    }
    if (u(rng) < connectivity || (w.dim(0) > 2 && k / cin == 1)) mask = 0;
    for (int t = 0; t < 9; ++t) {
      if (!(mask & (1u << t))) v[k * 9 + t] = 0.0f;
    }
  }
}

std::vector<Isa> isas() {
  std::vector<Isa> v{Isa::kScalar};
  if (kernels::isa_supported(Isa::kAvx2)) v.push_back(Isa::kAvx2);
  return v;
}

struct Case {
  Node node;
  std::vector<Tensor> inputs;  // undefined = absent optional input
};

Case conv3x3(std::mt19937& rng, int64_t n, int64_t cin, int64_t cout, int64_t h, int64_t w, std::vector<int64_t> pads,
             int taps, double connectivity, bool bias, bool residual, const std::string& act,
             std::vector<float> params = {}, int64_t stride = 1) {
  Case c;
  const bool fused = residual || !act.empty();
  c.node.op_type = fused ? "FusedConv" : "Conv";
  c.node.domain = fused ? "ai.xnn" : "";
  c.node.name = "conv";
  c.node.attrs["kernel_shape"] = std::vector<int64_t>{3, 3};
  c.node.attrs["pads"] = pads;
  c.node.attrs["strides"] = std::vector<int64_t>{stride, stride};
  if (!act.empty()) c.node.attrs["activation"] = act;
  if (!params.empty()) c.node.attrs["activation_params"] = params;
  Tensor wt = random_tensor({cout, cin, 3, 3}, rng);
  make_pattern_weights(wt, taps, connectivity, rng);
  c.inputs = {random_tensor({n, cin, h, w}, rng), wt, bias ? random_tensor({cout}, rng) : Tensor()};
  if (residual) {
    const int64_t oh = h + pads[0] + pads[2] - 2, ow = w + pads[1] + pads[3] - 2;
    c.inputs.push_back(random_tensor({n, cout, (oh - 1) / stride + 1, (ow - 1) / stride + 1}, rng));
  }
  c.node.inputs.assign(c.inputs.size(), 0);
  c.node.outputs = {0};
  return c;
}

// Reference kernel vs the CPU backend's kernel: max error relative to the largest |reference|
// (at least 1), and the kernel's name ("none" when no CPU kernel applies).
std::pair<double, std::string> compare(const Case& c, Isa isa, int threads) {
  std::vector<const Tensor*> in_ptrs;
  for (const Tensor& t : c.inputs) in_ptrs.push_back(t.defined() ? &t : nullptr);
  std::vector<Tensor> want;
  run_node(OpRegistry::builtin(), c.node, in_ptrs, want);
  std::vector<TensorInfo> ins(c.inputs.size()), outs(1);
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const bool constant = i == 1 || i == 2;
    if (c.inputs[i].defined()) ins[i] = TensorInfo{DType::kF32, c.inputs[i].shape(), constant ? &c.inputs[i] : nullptr};
  }
  outs[0] = TensorInfo{want[0].dtype(), want[0].shape(), nullptr};
  ThreadPool pool(threads);
  CpuKernelPrepareContext ctx{c.node, ins, outs, isa, &pool, false};
  std::unique_ptr<CpuKernel> k = CpuKernelRegistry::builtin().create(ctx);
  if (!k) return {1e30, "none"};
  Tensor got(want[0].dtype(), want[0].shape());
  for (int64_t i = 0; i < got.numel(); ++i) got.data<float>()[i] = std::nanf("");
  Tensor* out_ptr = &got;
  KernelContext kctx(c.node, in_ptrs, std::span<Tensor* const>(&out_ptr, 1), &pool);
  k->run(kctx);
  k->run(kctx);  // a second run on reused scratch gives the same result
  double max_ref = 1.0, max_diff = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double w = want[0].data<float>()[i], g = got.data<float>()[i];
    max_ref = std::max(max_ref, std::fabs(w));
    max_diff = std::isnan(g) ? 1e30 : std::max(max_diff, std::fabs(g - w));
  }
  return {max_diff / max_ref, k->name()};
}

TEST(PatternConvWeights, CompactFormKeepsTapsByChannelBlockAndPattern) {
  // 2 filters × 40 input channels (3 channel blocks of 16); filter 0 keeps 3 kernels, filter 1 none.
  std::vector<float> w(2 * 40 * 9, 0.0f);
  auto set = [&](int o, int c, std::initializer_list<std::pair<int, float>> taps) {
    for (auto [t, v] : taps) w[static_cast<size_t>((o * 40 + c) * 9 + t)] = v;
  };
  set(0, 35, {{4, 1.0f}, {1, 2.0f}});           // block 2, pattern {1, 4}
  set(0, 3, {{4, 3.0f}, {5, 4.0f}, {7, 5.0f}});  // block 0, pattern {4, 5, 7}
  set(0, 9, {{1, 6.0f}, {4, 7.0f}});             // block 0, pattern {1, 4}
  const auto p = kernels::PatternConvWeights::from_dense(2, 40, w.data());
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->taps(), 3);
  EXPECT_EQ(p->channel_blocks(), 3);
  EXPECT_EQ(p->kept_kernels(), 3);
  EXPECT_EQ(p->patterns().size(), 2u);
  EXPECT_DOUBLE_EQ(p->connectivity_sparsity(), 1.0 - 3.0 / 80.0);
  EXPECT_DOUBLE_EQ(p->work_fraction(), 9.0 / (80.0 * 9.0));
  // Filter 0: block 0 holds channels 3 and 9, block 1 none, block 2 channel 35; filter 1 is empty.
  EXPECT_EQ(p->entry_begin(0, 0), 0);
  EXPECT_EQ(p->entry_begin(0, 1), 2);
  EXPECT_EQ(p->entry_begin(0, 2), 2);
  EXPECT_EQ(p->entry_begin(1, 0), 3);
  EXPECT_EQ(p->entry_begin(1, 3), 3);
  // Within block 0 grouped by pattern: channel 3's pattern was seen first (id 0).
  EXPECT_EQ(p->entry_channel()[0], 3);
  EXPECT_EQ(p->entry_channel()[1], 9);
  EXPECT_EQ(p->entry_channel()[2], 35);
  // Channel 9 keeps 2 taps in a 3-tap layer: its third weight is padding (0).
  EXPECT_EQ(p->entry_weights()[3], 6.0f);
  EXPECT_EQ(p->entry_weights()[4], 7.0f);
  EXPECT_EQ(p->entry_weights()[5], 0.0f);
  // A kernel with 6 nonzeros is not a pattern kernel.
  set(1, 0, {{0, 1.0f}, {1, 1.0f}, {2, 1.0f}, {3, 1.0f}, {4, 1.0f}, {5, 1.0f}});
  EXPECT_FALSE(kernels::PatternConvWeights::from_dense(2, 40, w.data()).has_value());
  EXPECT_FALSE(kernels::PatternConvWeights::from_dense(2, 40, w.data(), 4).has_value());
}

TEST(PatternConvKernel, MatchesReferenceOverShapesAndEpilogues) {
  std::mt19937 rng(1);
  struct Shape4 {
    int64_t n, cin, cout, h, w;
    std::vector<int64_t> pads;
    int taps;
  };
  const std::vector<Shape4> shapes = {
      {1, 3, 5, 5, 5, {1, 1, 1, 1}, 4},     {1, 8, 16, 8, 8, {1, 1, 1, 1}, 4},  {2, 5, 7, 9, 13, {1, 1, 1, 1}, 3},
      {1, 40, 9, 7, 7, {1, 1, 1, 1}, 4},    {1, 16, 8, 6, 17, {0, 0, 0, 0}, 5}, {1, 6, 4, 11, 33, {2, 1, 0, 2}, 2},
      {1, 33, 20, 14, 14, {1, 1, 1, 1}, 4}, {1, 4, 3, 3, 1, {1, 1, 1, 1}, 1},   {1, 12, 6, 10, 56, {1, 1, 1, 1}, 4},
  };
  for (const Shape4& s : shapes) {
    const Case c = conv3x3(rng, s.n, s.cin, s.cout, s.h, s.w, s.pads, s.taps, 0.8, true, false, "");
    for (Isa isa : isas()) {
      for (int threads : {1, 2}) {
        const auto [err, name] = compare(c, isa, threads);
        EXPECT_LT(err, 1e-5) << s.cin << "->" << s.cout << " " << s.h << "x" << s.w << " " << name;
        EXPECT_EQ(name, kernels::patconv_kernel_name(isa));
      }
    }
  }
  // Every epilogue: bias or not, residual, each activation.
  struct Epi {
    bool bias, residual;
    std::string act;
    std::vector<float> params;
  };
  const std::vector<Epi> epis = {{false, false, "", {}},        {true, true, "", {}},
                                 {true, false, "Relu", {}},     {false, true, "Relu", {}},
                                 {true, true, "Clip", {-0.5f, 0.5f}}, {true, false, "LeakyRelu", {0.1f}},
                                 {true, true, "HardSwish", {}}, {true, false, "HardSigmoid", {0.2f, 0.5f}},
                                 {true, true, "Sigmoid", {}},   {false, false, "Silu", {}}};
  for (const Epi& e : epis) {
    const Case c = conv3x3(rng, 2, 10, 12, 9, 19, {1, 1, 1, 1}, 4, 0.75, e.bias, e.residual, e.act, e.params);
    for (Isa isa : isas()) {
      const auto [err, name] = compare(c, isa, 2);
      EXPECT_LT(err, 1e-5) << "act '" << e.act << "' bias " << e.bias << " residual " << e.residual << " " << name;
      EXPECT_EQ(name, kernels::patconv_kernel_name(isa));
    }
  }
}

TEST(PatternConvBackend, DeclinesWhenTheStructureDoesNotHoldOrDoesNotPay) {
  std::mt19937 rng(2);
  // 4-of-9 patterns alone (work 4/9) do not beat the dense kernel: dense.
  {
    const Case c = conv3x3(rng, 1, 16, 16, 8, 8, {1, 1, 1, 1}, 4, 0.0, true, false, "Relu");
    const auto [err, name] = compare(c, kernels::best_isa(), 1);
    EXPECT_LT(err, 1e-4);
    EXPECT_EQ(name.find("patconv"), std::string::npos) << name;
  }
  // 6 nonzeros in some kernel: not a pattern layer.
  {
    const Case c = conv3x3(rng, 1, 16, 16, 8, 8, {1, 1, 1, 1}, 6, 0.9, true, false, "");
    const auto [err, name] = compare(c, kernels::best_isa(), 1);
    EXPECT_LT(err, 1e-4);
    EXPECT_EQ(name.find("patconv"), std::string::npos) << name;
  }
  // Stride 2: declined (the dense kernel runs).
  {
    const Case c = conv3x3(rng, 1, 16, 16, 9, 9, {1, 1, 1, 1}, 4, 0.9, true, false, "", {}, 2);
    const auto [err, name] = compare(c, kernels::best_isa(), 1);
    EXPECT_LT(err, 1e-4);
    EXPECT_EQ(name.find("patconv"), std::string::npos) << name;
  }
  // 4-of-9 with 80% of the kernels removed: the pattern kernel.
  {
    const Case c = conv3x3(rng, 1, 16, 16, 8, 8, {1, 1, 1, 1}, 4, 0.8, true, false, "");
    EXPECT_NE(compare(c, kernels::best_isa(), 1).second.find("f32_patconv3x3"), std::string::npos);
  }
  // The work threshold depends on the output plane: up to 14×14, 4 of 9 taps with 70% of the
  // kernels removed (work 0.133) pays; on 16×16 it takes 80% (work 0.089).
  const auto with_connectivity = [&](int64_t hw, int tenths) {
    Case c = conv3x3(rng, 1, 40, 2, hw, hw, {1, 1, 1, 1}, 4, 0.0, true, false, "");  // no all-zero filter
    float* w = c.inputs[1].data<float>();
    for (int64_t k = 0; k < 80; ++k) {
      if ((k * 3) % 10 < tenths) std::fill(w + k * 9, w + k * 9 + 9, 0.0f);  // exactly tenths/10 of the kernels
    }
    const auto pw = kernels::PatternConvWeights::from_dense(2, 40, w);
    EXPECT_NEAR(pw->work_fraction(), (1.0 - tenths / 10.0) * 4.0 / 9.0, 1e-12);
    return compare(c, kernels::best_isa(), 1).second;
  };
  EXPECT_NE(with_connectivity(14, 7).find("f32_patconv3x3"), std::string::npos);
  EXPECT_EQ(with_connectivity(16, 7).find("f32_patconv3x3"), std::string::npos);
  EXPECT_NE(with_connectivity(16, 8).find("f32_patconv3x3"), std::string::npos);
}

TEST(PatternConvBackend, SessionPlanNamesPatternKernel) {
  std::mt19937 rng(3);
  auto model = std::make_shared<Model>();
  Graph& g = model->graph;
  Value in;
  in.name = "x";
  in.dtype = DType::kF32;
  in.has_shape = true;
  in.shape = {Dim::fixed(1), Dim::fixed(32), Dim::fixed(14), Dim::fixed(14)};
  const int x = g.add_value(in);
  g.inputs.push_back(x);
  Tensor wt = random_tensor({32, 32, 3, 3}, rng);
  make_pattern_weights(wt, 4, 0.8, rng);
  const int w = g.add_constant("w", wt);
  const int b = g.add_constant("b", random_tensor({32}, rng));
  Value out;
  out.name = "y";
  out.dtype = DType::kF32;
  const int y = g.add_value(out);
  Node n;
  n.op_type = "Conv";
  n.name = "conv";
  n.inputs = {x, w, b};
  n.outputs = {y};
  n.attrs["kernel_shape"] = std::vector<int64_t>{3, 3};
  n.attrs["pads"] = std::vector<int64_t>{1, 1, 1, 1};
  g.nodes.push_back(n);
  g.outputs.push_back(y);
  Session s(model, SessionOptions{});
  s.prepare();
  std::string kernels;
  for (const NodeProfile& p : s.plan_summary()) kernels += p.kernel + " ";
  EXPECT_NE(kernels.find("f32_patconv3x3_"), std::string::npos) << kernels;
}

}  // namespace
}  // namespace xnn
