// Elementwise kernels (engine/kernels/elementwise.h): exp and sigmoid accuracy in ulp over the
// whole float range (overflow, underflow, subnormals, +-inf, NaN), every activation against its
// scalar definition, binary ops and softmax against the ops' reference kernels, both ISAs and
// 1/2 threads.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "engine/kernels/elementwise.h"
#include "engine/runtime/executor.h"

namespace xnn::kernels {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

// Distance in representable floats (0 for equal values and for two NaNs; +-0 are 0 apart).
int64_t ulp_distance(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) ? 0 : std::numeric_limits<int64_t>::max();
  const auto ordered = [](float f) {
    int32_t i;
    std::memcpy(&i, &f, sizeof i);
    return i < 0 ? -static_cast<int64_t>(i & 0x7fffffff) : static_cast<int64_t>(i);
  };
  const int64_t d = ordered(a) - ordered(b);
  return d < 0 ? -d : d;
}

// Inputs spanning the interesting range: a dense sweep, random floats of every exponent, and the
// special values.
std::vector<float> sweep_inputs(float lo, float hi, int dense) {
  std::vector<float> v;
  for (int i = 0; i <= dense; ++i) v.push_back(lo + (hi - lo) * static_cast<float>(i) / static_cast<float>(dense));
  std::mt19937 rng(42);
  std::uniform_int_distribution<uint32_t> bits;
  for (int i = 0; i < 200000; ++i) {
    const uint32_t b = bits(rng);
    float f;
    std::memcpy(&f, &b, sizeof f);
    if (!std::isnan(f)) v.push_back(f);
  }
  for (float f : {0.0f, -0.0f, 1.0f, -1.0f, 100.0f, -100.0f, 88.0f, 88.72283f, 88.7228394f, 88.72284f, 89.0f,
                  -87.33654f, -87.5f, -100.0f, -103.0f, -103.97208f, -103.97209f, -104.0f, -110.0f, 1e-30f, -1e-30f,
                  std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(),
                  std::numeric_limits<float>::denorm_min(), kInf, -kInf}) {
    v.push_back(f);
  }
  return v;
}

bool have_avx2() { return isa_supported(Isa::kAvx2); }

// ---- exp ------------------------------------------------------------------------------------

TEST(ElementwiseExp, Avx2WithinTwoUlpEverywhere) {
  if (!have_avx2()) GTEST_SKIP() << "AVX2 not supported";
  const std::vector<float> x = sweep_inputs(-110.0f, 95.0f, 2000000);
  std::vector<float> y(x.size());
  f32_vexp(static_cast<int64_t>(x.size()), x.data(), y.data(), Isa::kAvx2);
  int64_t worst = 0;
  float worst_x = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const float want = static_cast<float>(std::exp(static_cast<double>(x[i])));  // correctly rounded (nearly)
    const int64_t d = ulp_distance(y[i], want);
    if (d > worst) worst = d, worst_x = x[i];
  }
  EXPECT_LE(worst, 2) << "at x = " << worst_x;
  std::printf("f32_vexp__avx2: max error %lld ulp (at x = %.9g) over %zu inputs\n", static_cast<long long>(worst),
              worst_x, x.size());
}

TEST(ElementwiseExp, SpecialValuesBothIsas) {
  for (Isa isa : {Isa::kScalar, Isa::kAvx2}) {
    if (!isa_supported(isa)) continue;
    const std::vector<float> x = {kInf,   -kInf,  kNaN,  -kNaN,   0.0f,   -0.0f,
                                  89.0f,  100.0f, 1e30f, -105.0f, -1e30f, -110.0f};
    std::vector<float> y(x.size());
    f32_vexp(static_cast<int64_t>(x.size()), x.data(), y.data(), isa);
    EXPECT_EQ(y[0], kInf);
    EXPECT_EQ(y[1], 0.0f);
    EXPECT_TRUE(std::isnan(y[2]));
    EXPECT_TRUE(std::isnan(y[3]));
    EXPECT_EQ(y[4], 1.0f);
    EXPECT_EQ(y[5], 1.0f);
    EXPECT_EQ(y[6], kInf);
    EXPECT_EQ(y[7], kInf);
    EXPECT_EQ(y[8], kInf);
    EXPECT_EQ(y[9], 0.0f);
    EXPECT_EQ(y[10], 0.0f);
    EXPECT_EQ(y[11], 0.0f);
  }
}

TEST(ElementwiseExp, TailsAndInPlace) {
  if (!have_avx2()) GTEST_SKIP() << "AVX2 not supported";
  for (int64_t n = 0; n < 40; ++n) {
    std::vector<float> buf(static_cast<size_t>(n) + 16, -7.0f);
    for (int64_t i = 0; i < n; ++i) buf[static_cast<size_t>(i + 8)] = 0.25f * static_cast<float>(i) - 3;
    f32_vexp(n, buf.data() + 8, buf.data() + 8, Isa::kAvx2);
    for (int i = 0; i < 8; ++i) {
      ASSERT_EQ(buf[static_cast<size_t>(i)], -7.0f);
      ASSERT_EQ(buf[static_cast<size_t>(n + 8 + i)], -7.0f);
    }
    for (int64_t i = 0; i < n; ++i) {
      const float want = std::exp(0.25f * static_cast<float>(i) - 3);
      ASSERT_LE(ulp_distance(buf[static_cast<size_t>(i + 8)], want), 2) << n << " " << i;
    }
  }
}

// ---- activations ----------------------------------------------------------------------------

std::vector<Activation> all_activations() {
  return {Activation{},
          Activation::relu(),
          Activation::clip(0.0f, 6.0f),
          Activation::clip(-1.5f, 2.5f),
          Activation::clip(3.0f, 1.0f),  // min > max
          Activation::clip(0.0f, kInf),
          Activation::leaky_relu(0.01f),
          Activation::leaky_relu(-0.5f),
          Activation{ActKind::kHardSwish},
          Activation{ActKind::kHardSigmoid, 0.2f, 0.5f},
          Activation{ActKind::kHardSigmoid, 1.0f / 6.0f, 0.5f},
          Activation{ActKind::kSigmoid},
          Activation{ActKind::kSilu}};
}

// What the AVX2 path owes the scalar definition: bit-exact for the comparisons; for the hard ops
// one rounding of slack for the fused multiply-add (absolute, scaled by the input); a few ulp
// for the exp-based ones (where the scalar formula itself loses accuracy, i.e. results below
// FLT_MIN, an absolute 1e-37).
bool act_close(ActKind kind, float x, float got, float want) {
  if (std::isnan(want) || std::isnan(got)) return std::isnan(want) && std::isnan(got);
  switch (kind) {
    case ActKind::kHardSwish:
    case ActKind::kHardSigmoid:
      // Near the kinks the fused rounding is an absolute ~|x| * 2^-24.
      return ulp_distance(got, want) <= 2 || std::fabs(got - want) <= 2e-7f * (1 + std::fabs(x));
    case ActKind::kSigmoid:
    case ActKind::kSilu: return ulp_distance(got, want) <= 4 || std::fabs(got - want) <= 1e-37f;
    default: {
      if (got != want) return false;
      return std::signbit(got) == std::signbit(want);  // -0 stays -0 where the definition keeps it
    }
  }
}

TEST(ElementwiseAct, EveryKindMatchesScalarDefinition) {
  std::vector<float> x = sweep_inputs(-12.0f, 12.0f, 20000);
  for (float f : {kNaN, -0.0f, 0.0f, 6.0f, -3.0f, 3.0f, 2.5f, -1.5f, 1.0f, 3.0f}) x.push_back(f);
  for (Isa isa : {Isa::kScalar, Isa::kAvx2}) {
    if (!isa_supported(isa)) continue;
    for (const Activation& act : all_activations()) {
      std::vector<float> y(x.size());
      f32_vact(static_cast<int64_t>(x.size()), x.data(), y.data(), act, isa);
      for (size_t i = 0; i < x.size(); ++i) {
        const float want = apply_activation_scalar(x[i], act);
        ASSERT_TRUE(act_close(act.kind, x[i], y[i], want))
            << isa_name(isa) << " " << act_kind_name(act.kind) << "(" << act.alpha << ", " << act.beta << ") at x = "
            << x[i] << ": got " << y[i] << ", want " << want;
      }
      // apply_activation (in place) takes the same path.
      std::vector<float> z = x;
      apply_activation(z.data(), static_cast<int64_t>(z.size()), act, isa);
      for (size_t i = 0; i < x.size(); ++i) {
        ASSERT_TRUE(ulp_distance(z[i], y[i]) == 0) << "apply_activation differs from f32_vact at " << x[i];
      }
    }
  }
}

TEST(ElementwiseAct, SigmoidAndSiluAccuracy) {
  if (!have_avx2()) GTEST_SKIP() << "AVX2 not supported";
  const std::vector<float> x = sweep_inputs(-110.0f, 110.0f, 1000000);
  std::vector<float> s(x.size()), si(x.size());
  f32_vact(static_cast<int64_t>(x.size()), x.data(), s.data(), Activation{ActKind::kSigmoid}, Isa::kAvx2);
  f32_vact(static_cast<int64_t>(x.size()), x.data(), si.data(), Activation{ActKind::kSilu}, Isa::kAvx2);
  int64_t worst_s = 0, worst_si = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double xd = x[i];
    const double sd = xd >= 0 ? 1 / (1 + std::exp(-xd)) : std::exp(xd) / (1 + std::exp(xd));
    const float want_s = static_cast<float>(sd);
    const float want_si = static_cast<float>(xd * sd);
    worst_s = std::max(worst_s, ulp_distance(s[i], want_s));
    // Silu follows the definition x / (1 + exp(-x)), which is -0 once exp(-x) overflows
    // (x < -88.72, where |silu(x)| < 3e-37): compare absolutely there. silu(-inf) is NaN.
    if (x[i] == -kInf) {
      ASSERT_TRUE(std::isnan(si[i]));
    } else if (x[i] > -88.7f) {
      worst_si = std::max(worst_si, ulp_distance(si[i], want_si));
    } else {
      ASSERT_LE(std::fabs(si[i] - want_si), 3e-37f) << x[i];
    }
  }
  EXPECT_LE(worst_s, 3);
  EXPECT_LE(worst_si, 4);
  std::printf("f32_vsigmoid__avx2: max %lld ulp; f32_vsilu__avx2: max %lld ulp\n", static_cast<long long>(worst_s),
              static_cast<long long>(worst_si));
  // Saturation and specials.
  const std::vector<float> sp = {kInf, -kInf, kNaN, 100.0f, -100.0f, 0.0f};
  std::vector<float> o(sp.size());
  f32_vact(static_cast<int64_t>(sp.size()), sp.data(), o.data(), Activation{ActKind::kSigmoid}, Isa::kAvx2);
  EXPECT_EQ(o[0], 1.0f);
  EXPECT_EQ(o[1], 0.0f);
  EXPECT_TRUE(std::isnan(o[2]));
  EXPECT_EQ(o[3], 1.0f);
  EXPECT_GT(o[4], 0.0f);  // exp(-100) ~ 3.7e-44: a subnormal, not flushed
  EXPECT_LT(o[4], 1e-43f);
  EXPECT_EQ(o[5], 0.5f);
}

TEST(ElementwiseAct, ThreadedMatchesSerial) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> d(-8, 8);
  std::vector<float> x(100003);
  for (float& v : x) v = d(rng);
  for (Isa isa : {Isa::kScalar, Isa::kAvx2}) {
    if (!isa_supported(isa)) continue;
    std::vector<float> a(x.size()), b(x.size());
    ThreadPool pool(2);
    f32_vact(static_cast<int64_t>(x.size()), x.data(), a.data(), Activation{ActKind::kSilu}, isa);
    f32_activation(static_cast<int64_t>(x.size()), x.data(), b.data(), Activation{ActKind::kSilu}, &pool, isa);
    ASSERT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)));
  }
  EXPECT_EQ(activation_kernel_name(ActKind::kHardSwish, Isa::kScalar), "f32_vhswish__scalar");
  if (have_avx2()) {
    EXPECT_EQ(activation_kernel_name(ActKind::kRelu, Isa::kAvx2), "f32_vrelu__avx2");
  }
}

// ---- binary ---------------------------------------------------------------------------------

using Shape = std::vector<int64_t>;

Tensor random_tensor(std::mt19937& rng, const Shape& shape) {
  Tensor t(DType::kF32, shape);
  std::uniform_real_distribution<float> d(-2, 2);
  for (int64_t i = 0; i < t.numel(); ++i) {
    float v = d(rng);
    if (std::fabs(v) < 0.05f) v = 0.5f;  // keep divisors away from 0 (x / 0 is tested separately)
    t.data<float>()[i] = v;
  }
  return t;
}

Tensor run_reference(const std::string& op, const std::vector<const Tensor*>& inputs,
                     const std::map<std::string, Attribute>& attrs = {}) {
  Node node;
  node.op_type = op;
  node.name = "ref";
  node.attrs = attrs;
  for (size_t i = 0; i < inputs.size(); ++i) node.inputs.push_back(static_cast<int>(i));
  node.outputs.push_back(100);
  std::vector<Tensor> outs;
  run_node(OpRegistry::builtin(), node, inputs, outs);
  return outs[0];
}

TEST(ElementwiseBinary, PlanForms) {
  BinaryBroadcast p;
  ASSERT_TRUE(plan_binary_broadcast({2, 3, 4}, {2, 3, 4}, &p));
  EXPECT_EQ(p.kind, BroadcastKind::kSame);
  EXPECT_EQ(p.numel(), 24);
  ASSERT_TRUE(plan_binary_broadcast({1, 3, 4}, {3, 4}, &p));
  EXPECT_EQ(p.kind, BroadcastKind::kSame);
  ASSERT_TRUE(plan_binary_broadcast({2, 3, 4}, {}, &p));
  EXPECT_EQ(p.kind, BroadcastKind::kScalar);
  EXPECT_FALSE(p.small_is_a);
  ASSERT_TRUE(plan_binary_broadcast({1, 1, 1}, {5, 6}, &p));
  EXPECT_EQ(p.kind, BroadcastKind::kScalar);
  EXPECT_TRUE(p.small_is_a);
  EXPECT_EQ(p.numel(), 30);
  ASSERT_TRUE(plan_binary_broadcast({2, 8, 5, 5}, {1, 8, 1, 1}, &p));  // SE scaling
  EXPECT_EQ(p.kind, BroadcastKind::kChannel);
  EXPECT_EQ(p.outer, 2);
  EXPECT_EQ(p.channels, 8);
  EXPECT_EQ(p.inner, 25);
  ASSERT_TRUE(plan_binary_broadcast({2, 8, 1, 1}, {2, 8, 5, 5}, &p));  // per image: [N*C] channels
  EXPECT_EQ(p.kind, BroadcastKind::kChannel);
  EXPECT_TRUE(p.small_is_a);
  EXPECT_EQ(p.outer, 1);
  EXPECT_EQ(p.channels, 16);
  EXPECT_EQ(p.inner, 25);
  ASSERT_TRUE(plan_binary_broadcast({4, 7, 16}, {16}, &p));  // bias over the last dim
  EXPECT_EQ(p.kind, BroadcastKind::kChannel);
  EXPECT_EQ(p.outer, 28);
  EXPECT_EQ(p.channels, 16);
  EXPECT_EQ(p.inner, 1);
  EXPECT_FALSE(plan_binary_broadcast({2, 1, 4}, {1, 3, 1}, &p));  // both broadcast
  EXPECT_FALSE(plan_binary_broadcast({2, 3, 4}, {2, 1, 4}, &p));  // channel dims split
  EXPECT_FALSE(plan_binary_broadcast({2, 3}, {4, 3, 2}, &p));     // incompatible
}

TEST(ElementwiseBinary, MatchesReferenceExactly) {
  // (a shape, b shape): every form, each operand being the small one, with odd sizes for tails and
  // sizes past the threading threshold.
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{37}, {37}},           {{3, 5, 7}, {3, 5, 7}},   {{70001}, {70001}},      {{2, 9, 11}, {}},
      {{1}, {4, 33}},         {{300, 301}, {1, 1}},     {{2, 6, 5, 7}, {1, 6, 1, 1}}, {{6, 1, 1}, {3, 6, 9, 9}},
      {{2, 6, 1, 1}, {2, 6, 13, 3}}, {{5, 9, 19}, {19}},   {{3}, {7, 3}},           {{4, 64, 40, 40}, {4, 64, 1, 1}},
      {{64, 1, 1}, {4, 64, 40, 40}},  {{3000, 37}, {37}},
  };
  std::mt19937 rng(11);
  const std::pair<BinaryOp, const char*> ops[] = {
      {BinaryOp::kAdd, "Add"}, {BinaryOp::kSub, "Sub"}, {BinaryOp::kMul, "Mul"}, {BinaryOp::kDiv, "Div"}};
  for (const auto& [sa, sb] : shapes) {
    const Tensor a = random_tensor(rng, sa), b = random_tensor(rng, sb);
    BinaryBroadcast plan;
    ASSERT_TRUE(plan_binary_broadcast(sa, sb, &plan)) << shape_str(sa) << " " << shape_str(sb);
    for (const auto& [op, name] : ops) {
      const Tensor want = run_reference(name, {&a, &b});
      ASSERT_EQ(want.numel(), plan.numel());
      for (Isa isa : {Isa::kScalar, Isa::kAvx2}) {
        if (!isa_supported(isa)) continue;
        for (int threads : {1, 2}) {
          ThreadPool pool(threads);
          std::vector<float> got(static_cast<size_t>(plan.numel()));
          f32_binary(op, plan, a.data<float>(), b.data<float>(), got.data(), Activation{}, &pool, isa);
          for (int64_t i = 0; i < want.numel(); ++i) {
            ASSERT_EQ(got[static_cast<size_t>(i)], want.data<float>()[i])
                << binary_kernel_name(op, plan, isa) << " " << shape_str(sa) << " " << shape_str(sb) << " threads "
                << threads << " at " << i;
          }
        }
      }
    }
  }
}

TEST(ElementwiseBinary, InPlaceSpecialsAndFusedActivation) {
  for (Isa isa : {Isa::kScalar, Isa::kAvx2}) {
    if (!isa_supported(isa)) continue;
    // x / 0, 0 / 0, inf - inf, NaN: IEEE results, as the reference.
    std::vector<float> a = {1.0f, -1.0f, 0.0f, kInf, kNaN, 3.0f, -0.0f, 2.0f, 5.0f};
    std::vector<float> b = {0.0f, 0.0f, 0.0f, kInf, 1.0f, kNaN, 1.0f, -0.0f, 2.0f};
    const Tensor ta = Tensor::from_vector(a, {9}), tb = Tensor::from_vector(b, {9});
    for (const auto& [op, name] : {std::pair{BinaryOp::kDiv, "Div"}, std::pair{BinaryOp::kSub, "Sub"}}) {
      const Tensor want = run_reference(name, {&ta, &tb});
      std::vector<float> out = a;  // in place on a
      BinaryBroadcast plan;
      ASSERT_TRUE(plan_binary_broadcast({9}, {9}, &plan));
      f32_binary(op, plan, out.data(), b.data(), out.data(), Activation{}, nullptr, isa);
      for (size_t i = 0; i < a.size(); ++i) {
        ASSERT_EQ(ulp_distance(out[i], want.data<float>()[i]), 0) << name << " " << isa_name(isa) << " at " << i;
      }
    }
    // Fused activation: act(a op b) for each broadcast form, with blocks longer than the
    // kernels' activation block (2048).
    std::mt19937 rng(2);
    const Tensor x = random_tensor(rng, {2, 5, 41, 53});
    const Tensor others[] = {random_tensor(rng, {1, 5, 1, 1}), random_tensor(rng, {2, 5, 41, 53}),
                             random_tensor(rng, {1})};
    for (const Tensor& y : others) {
      BinaryBroadcast plan;
      ASSERT_TRUE(plan_binary_broadcast(x.shape(), y.shape(), &plan));
      const Tensor prod = run_reference("Mul", {&x, &y});
      for (const Activation& act : all_activations()) {
        std::vector<float> got(static_cast<size_t>(x.numel()));
        f32_binary(BinaryOp::kMul, plan, x.data<float>(), y.data<float>(), got.data(), act, nullptr, isa);
        for (int64_t i = 0; i < x.numel(); ++i) {
          const float want = apply_activation_scalar(prod.data<float>()[i], act);
          ASSERT_TRUE(act_close(act.kind, prod.data<float>()[i], got[static_cast<size_t>(i)], want))
              << binary_kernel_name(BinaryOp::kMul, plan, isa) << " " << act_kind_name(act.kind) << " " << i;
        }
      }
    }
  }
  BinaryBroadcast same, channel;
  ASSERT_TRUE(plan_binary_broadcast({4}, {4}, &same));
  ASSERT_TRUE(plan_binary_broadcast({2, 4, 3}, {4, 1}, &channel));
  EXPECT_EQ(binary_kernel_name(BinaryOp::kAdd, same, Isa::kScalar), "f32_vadd__scalar");
  EXPECT_EQ(binary_kernel_name(BinaryOp::kMul, channel, Isa::kScalar), "f32_vmul_channel__scalar");
  BinaryBroadcast scalar_left;
  ASSERT_TRUE(plan_binary_broadcast({}, {4}, &scalar_left));
  EXPECT_EQ(binary_kernel_name(BinaryOp::kSub, scalar_left, Isa::kScalar), "f32_vrsubc__scalar");
}

// ---- softmax --------------------------------------------------------------------------------

// The scalar path is the reference's arithmetic (bit-equal); the AVX2 path is held to a double
// precision softmax (comparing it with the float reference would mostly measure the reference's
// own sequential summation error on long rows).
TEST(ElementwiseSoftmax, MatchesReference) {
  std::mt19937 rng(5);
  const std::vector<Shape> shapes = {{1, 1000}, {7, 13}, {3, 4, 5}, {64, 49}, {2, 1}, {300, 257}, {5, 8}, {1, 3}};
  int64_t worst = 0;
  for (const Shape& s : shapes) {
    Tensor x(DType::kF32, s);
    std::uniform_real_distribution<float> d(-30, 30);
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = d(rng);
    const Tensor want = run_reference("Softmax", {&x});
    const int64_t len = s.back(), rows = x.numel() / len;
    std::vector<float> exact(static_cast<size_t>(x.numel()));
    for (int64_t r = 0; r < rows; ++r) {
      // x - max rounded to float as the kernels (and the reference) compute it: its rounding,
      // ~|x - max| * 2^-24 relative after exp, is the algorithm's, not the exp's.
      const float* xr = x.data<float>() + r * len;
      float max = xr[0];
      for (int64_t i = 0; i < len; ++i) max = std::max(max, xr[i]);
      double sum = 0;
      for (int64_t i = 0; i < len; ++i) sum += std::exp(static_cast<double>(xr[i] - max));
      for (int64_t i = 0; i < len; ++i) {
        exact[static_cast<size_t>(r * len + i)] = static_cast<float>(std::exp(static_cast<double>(xr[i] - max)) / sum);
      }
    }
    for (Isa isa : {Isa::kScalar, Isa::kAvx2}) {
      if (!isa_supported(isa)) continue;
      for (int threads : {1, 2}) {
        ThreadPool pool(threads);
        std::vector<float> got(static_cast<size_t>(x.numel()));
        f32_softmax(rows, len, x.data<float>(), got.data(), &pool, isa);
        for (int64_t i = 0; i < x.numel(); ++i) {
          const float g = got[static_cast<size_t>(i)];
          if (isa == Isa::kScalar) {
            ASSERT_EQ(g, want.data<float>()[i]) << "scalar path is the reference's arithmetic";
            continue;
          }
          // exp to 1-2 ulp, 16 partial sums, a reciprocal: a few ulp (absolute below FLT_MIN).
          const float e = exact[static_cast<size_t>(i)];
          ASSERT_TRUE(ulp_distance(g, e) <= 6 || std::fabs(g - e) < 1e-37f)
              << shape_str(s) << " at " << i << ": " << g << " vs " << e;
          if (std::fabs(e) >= std::numeric_limits<float>::min()) worst = std::max(worst, ulp_distance(g, e));
        }
      }
    }
  }
  if (isa_supported(Isa::kAvx2)) std::printf("f32_softmax__avx2: max %lld ulp\n", static_cast<long long>(worst));
}

TEST(ElementwiseSoftmax, LargeInfiniteAndNaNInputs) {
  const std::vector<float> x = {1000.0f, 1000.0f, -1000.0f, 0.0f,                   // no overflow
                                -kInf, 0.0f, 1.0f, -kInf,                           // -inf -> 0
                                kNaN, 1.0f, 2.0f, 3.0f,                             // NaN row
                                kInf, 1.0f, 2.0f, 3.0f};                            // inf row: NaN
  const Tensor tx = Tensor::from_vector(x, {4, 4});
  const Tensor want = run_reference("Softmax", {&tx});
  for (Isa isa : {Isa::kScalar, Isa::kAvx2}) {
    if (!isa_supported(isa)) continue;
    std::vector<float> got(x.size());
    f32_softmax(4, 4, x.data(), got.data(), nullptr, isa);
    for (size_t i = 0; i < x.size(); ++i) {
      const float w = want.data<float>()[i];
      ASSERT_TRUE(ulp_distance(got[i], w) <= 2) << isa_name(isa) << " at " << i << ": " << got[i] << " vs " << w;
    }
  }
  EXPECT_EQ(softmax_kernel_name(Isa::kScalar), "f32_softmax__scalar");
}

}  // namespace
}  // namespace xnn::kernels
