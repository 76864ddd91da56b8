// Int8 depthwise convolution (engine/kernels/qdepthwise.h): the reference against a
// double-precision computation, and the scalar and AVX2 kernels against the reference byte for
// byte: random shapes (widths around the 8/16-output steps), 3×3, 5×5 and 7×7, stride 1 and 2,
// asymmetric and oversized padding, random zero points / multipliers / clamps, extreme values,
// 1 and 2 threads, no stores outside the output. The same for the flat small-plane kernel
// (qdepthwise_flat.h) where its plan fits, and which shapes it fits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/thread_pool.h"
#include "engine/kernels/qdepthwise.h"
#include "engine/kernels/qdepthwise_flat.h"

namespace xnn::kernels {
namespace {

struct Case {
  int64_t c, h, w, k, s, pt, pl, pb, pr;
};

DepthwiseParams params(const Case& t) {
  DepthwiseParams p;
  p.channels = t.c, p.in_h = t.h, p.in_w = t.w, p.kernel = t.k, p.stride = t.s, p.pad_t = t.pt, p.pad_l = t.pl;
  p.out_h = (t.h + t.pt + t.pb - t.k) / t.s + 1;
  p.out_w = (t.w + t.pl + t.pr - t.k) / t.s + 1;
  return p;
}

enum class Fill { kRandom, kMax, kMin };

struct Data {
  std::vector<uint8_t> x;
  std::vector<int8_t> w;
  std::vector<int32_t> bias;
  std::vector<float> mult;
  uint8_t x_zp = 0;
  QRequant rq;
};

Data make_data(const DepthwiseParams& p, std::mt19937& rng, Fill fill) {
  Data d;
  std::uniform_int_distribution<int> u8(0, 255), s8(-128, 127), b(-30000, 30000);
  std::uniform_real_distribution<float> m(0.0005f, 0.01f);
  d.x.resize(static_cast<size_t>(p.channels * p.in_h * p.in_w));
  d.w.resize(static_cast<size_t>(p.channels * p.kernel * p.kernel));
  for (uint8_t& v : d.x) v = fill == Fill::kRandom ? static_cast<uint8_t>(u8(rng)) : (fill == Fill::kMax ? 255 : 0);
  for (int8_t& v : d.w) v = fill == Fill::kRandom ? static_cast<int8_t>(s8(rng)) : 127;
  d.bias.resize(static_cast<size_t>(p.channels));
  d.mult.resize(static_cast<size_t>(p.channels));
  for (int32_t& v : d.bias) v = b(rng);
  for (float& v : d.mult) v = fill == Fill::kRandom ? m(rng) : 1.0f / 8192.0f;
  d.x_zp = fill == Fill::kRandom ? static_cast<uint8_t>(u8(rng)) : (fill == Fill::kMax ? 0 : 255);
  d.rq.multiplier = d.mult.data();
  d.rq.zero_point = u8(rng);
  if (fill != Fill::kRandom) {
    d.rq.zero_point = 128;  // room for the ±100 the extreme sums requantise to
  } else if (rng() % 2) {  // a fused ReLU / ReLU6-like window
    d.rq.qmin = static_cast<uint8_t>(std::uniform_int_distribution<int>(0, 100)(rng));
    d.rq.qmax = static_cast<uint8_t>(d.rq.qmin + std::uniform_int_distribution<int>(0, 155)(rng));
  }
  return d;
}

std::string describe(const Case& t, Isa isa, int threads) {
  return qs8_dwconv_kernel_name(t.k, t.s, isa) + " c" + std::to_string(t.c) + " " + std::to_string(t.h) + "x" +
         std::to_string(t.w) + " pads " + std::to_string(t.pt) + "," + std::to_string(t.pl) + "," +
         std::to_string(t.pb) + "," + std::to_string(t.pr) + " threads " + std::to_string(threads);
}

// Which kernel check_case runs: qs8_dwconv with the given ISA, or the flat kernel (its plan must fit).
enum class Path { kRows, kFlat };

// Runs one case and compares with the reference byte for byte; sentinels catch stray stores.
void check_case(const Case& t, Isa isa, int threads, std::mt19937& rng, Fill fill = Fill::kRandom,
                bool with_bias = true, Path path = Path::kRows) {
  const DepthwiseParams p = params(t);
  ASSERT_GT(p.out_h, 0);
  ASSERT_GT(p.out_w, 0);
  const Data d = make_data(p, rng, fill);
  const int32_t* bias = with_bias ? d.bias.data() : nullptr;
  const size_t n = static_cast<size_t>(p.channels * p.out_h * p.out_w);
  std::vector<uint8_t> want(n);
  qs8_dwconv_reference(p, d.x.data(), d.x_zp, d.w.data(), bias, d.rq, want.data());
  std::vector<uint8_t> y(n + 32, 0xA5);
  ThreadPool pool(threads);
  if (path == Path::kFlat) {
    const std::optional<QDwFlatPlan> plan = qs8_dwconv_flat_plan(p);
    ASSERT_TRUE(plan.has_value()) << describe(t, isa, threads);
    qs8_dwconv_flat(*plan, d.x.data(), d.x_zp, d.w.data(), bias, d.rq, y.data() + 16, &pool);
  } else {
    qs8_dwconv(p, d.x.data(), d.x_zp, d.w.data(), bias, d.rq, y.data() + 16, &pool, isa);
  }
  for (size_t i = 0; i < 16; ++i) {
    ASSERT_EQ(y[i], 0xA5) << "store before the output: " << describe(t, isa, threads);
    ASSERT_EQ(y[n + 16 + i], 0xA5) << "store past the output: " << describe(t, isa, threads);
  }
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(int{y[i + 16]}, int{want[i]})
        << describe(t, isa, threads) << " at " << i << " (c " << i / static_cast<size_t>(p.out_h * p.out_w) << ")";
  }
}

TEST(QDepthwiseReference, MatchesDoublePrecisionWithinRounding) {
  std::mt19937 rng(1);
  int64_t total = 0, off = 0;
  for (const Case& t : {Case{3, 9, 11, 3, 1, 1, 1, 1, 1}, Case{2, 12, 7, 5, 2, 2, 0, 3, 2}}) {
    const DepthwiseParams p = params(t);
    const Data d = make_data(p, rng, Fill::kRandom);
    std::vector<uint8_t> y(static_cast<size_t>(p.channels * p.out_h * p.out_w));
    qs8_dwconv_reference(p, d.x.data(), d.x_zp, d.w.data(), d.bias.data(), d.rq, y.data());
    for (int64_t c = 0; c < p.channels; ++c) {
      for (int64_t oy = 0; oy < p.out_h; ++oy) {
        for (int64_t ox = 0; ox < p.out_w; ++ox) {
          double acc = d.bias[static_cast<size_t>(c)];
          for (int64_t kh = 0; kh < p.kernel; ++kh) {
            for (int64_t kw = 0; kw < p.kernel; ++kw) {
              const int64_t iy = oy * p.stride - p.pad_t + kh, ix = ox * p.stride - p.pad_l + kw;
              if (iy < 0 || iy >= p.in_h || ix < 0 || ix >= p.in_w) continue;  // padding: real zero
              acc += d.w[static_cast<size_t>((c * p.kernel + kh) * p.kernel + kw)] *
                     (static_cast<double>(d.x[static_cast<size_t>((c * p.in_h + iy) * p.in_w + ix)]) - d.x_zp);
            }
          }
          const double q = std::nearbyint(acc * d.mult[static_cast<size_t>(c)]) + d.rq.zero_point;
          const double want = std::clamp(q, static_cast<double>(d.rq.qmin), static_cast<double>(d.rq.qmax));
          const int got = y[static_cast<size_t>((c * p.out_h + oy) * p.out_w + ox)];
          ASSERT_LE(std::fabs(got - want), 1.0) << "c " << c << " (" << oy << ", " << ox << ")";
          ++total;
          off += got != want;
        }
      }
    }
  }
  EXPECT_LT(off * 100, total) << off << " of " << total << " off by one";
}

class QDepthwiseIsa : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (!isa_supported(GetParam())) GTEST_SKIP() << "ISA not supported on this CPU";
  }
  Isa isa() const { return GetParam(); }
};

// Random shapes: output widths 1..40 (the 8- and 16-output steps and their tails), paddings up to
// larger than the kernel (whole rows/columns of padding), odd heights (row groups of 1-4).
TEST_P(QDepthwiseIsa, RandomShapesMatchReference) {
  std::mt19937 rng(2);
  std::uniform_int_distribution<int64_t> size(1, 40), pad(0, 6), ch(1, 5);
  for (int64_t k : {3, 5, 7}) {
    for (int64_t s : {1, 2}) {
      for (int i = 0; i < 40; ++i) {
        Case t{ch(rng), size(rng), size(rng), k, s, pad(rng), pad(rng), pad(rng), pad(rng)};
        if ((t.h + t.pt + t.pb - k) < 0 || (t.w + t.pl + t.pr - k) < 0) continue;
        check_case(t, isa(), 1 + i % 2, rng, Fill::kRandom, i % 5 != 0);
        if (HasFatalFailure()) return;
      }
    }
  }
}

// MobileNetV2-like layers (reduced channels) with "same" padding, 1 and 2 threads.
TEST_P(QDepthwiseIsa, ModelShapesMatchReference) {
  std::mt19937 rng(3);
  const std::vector<Case> cases = {{3, 112, 112, 3, 1, 1, 1, 1, 1}, {4, 112, 112, 3, 2, 0, 0, 1, 1},
                                   {5, 56, 56, 3, 1, 1, 1, 1, 1},   {5, 56, 56, 3, 2, 1, 1, 1, 1},
                                   {6, 14, 14, 3, 1, 1, 1, 1, 1},   {7, 7, 7, 3, 1, 1, 1, 1, 1},
                                   {3, 28, 28, 5, 1, 2, 2, 2, 2},   {3, 28, 28, 5, 2, 2, 2, 2, 2},
                                   {2, 28, 28, 7, 1, 3, 3, 3, 3},   {2, 28, 28, 7, 2, 3, 3, 3, 3}};
  for (const Case& t : cases) {
    for (int threads : {1, 2}) {
      check_case(t, isa(), threads, rng);
      if (HasFatalFailure()) return;
    }
  }
}

// Weights 127 with every input 255 and zero point 0, or every input 0 and zero point 255: the
// largest products of either sign (±32385) in every tap, with padding mixed in.
TEST_P(QDepthwiseIsa, ExtremeValuesAreExact) {
  std::mt19937 rng(4);
  for (int64_t k : {3, 5, 7}) {
    for (int64_t s : {1, 2}) {
      for (Fill f : {Fill::kMax, Fill::kMin}) {
        check_case({2, 19, 37, k, s, 2, 1, 2, 3}, isa(), 1, rng, f);
        if (HasFatalFailure()) return;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(QDepthwise, QDepthwiseIsa, ::testing::Values(Isa::kScalar, Isa::kAvx2),
                         [](const ::testing::TestParamInfo<Isa>& info) { return std::string(isa_name(info.param)); });

// The flat kernel's plan fits where 16 consecutive outputs read at most 127 bytes of whole input
// rows: the 7×7, 14×14 and 28×28 layers of MobileNetV2/EfficientNet-like nets, not larger ones.
TEST(QDepthwiseFlat, PlanFitsSmallPlanes) {
  const auto fits = [](const Case& t) { return qs8_dwconv_flat_plan(params(t)).has_value(); };
  EXPECT_TRUE(fits({960, 7, 7, 3, 1, 1, 1, 1, 1}));
  EXPECT_TRUE(fits({672, 7, 7, 5, 1, 2, 2, 2, 2}));
  EXPECT_TRUE(fits({576, 14, 14, 3, 2, 1, 1, 1, 1}));  // 14x14 -> 7x7
  EXPECT_TRUE(fits({672, 14, 14, 5, 2, 2, 2, 2, 2}));  // 9 input rows x 14 = 126 bytes
  EXPECT_TRUE(fits({384, 14, 14, 3, 1, 1, 1, 1, 1}));
  EXPECT_TRUE(fits({480, 14, 14, 5, 1, 2, 2, 2, 2}));
  EXPECT_TRUE(fits({192, 28, 28, 3, 1, 1, 1, 1, 1}));
  // ... but pays only for rows narrower than 16 (the row kernels' vector).
  EXPECT_FALSE(qs8_dwconv_flat_pays(*qs8_dwconv_flat_plan(params({192, 28, 28, 3, 1, 1, 1, 1, 1}))));
  EXPECT_TRUE(qs8_dwconv_flat_pays(*qs8_dwconv_flat_plan(params({384, 14, 14, 3, 1, 1, 1, 1, 1}))));
  EXPECT_FALSE(fits({192, 28, 28, 3, 2, 1, 1, 1, 1}));  // 5 rows x 28 = 140 bytes
  EXPECT_FALSE(fits({144, 56, 56, 3, 1, 1, 1, 1, 1}));
  EXPECT_FALSE(fits({240, 28, 28, 5, 1, 2, 2, 2, 2}));
  const QDwFlatPlan plan = *qs8_dwconv_flat_plan(params({1, 7, 7, 3, 1, 1, 1, 1, 1}));
  EXPECT_EQ(plan.vectors, 4);  // 49 outputs
  EXPECT_EQ(plan.quads, 3);    // 9 taps
  EXPECT_EQ(plan.outputs.back(), 1);
  EXPECT_TRUE(plan.one_register);  // 5 input rows of 7 at most
  EXPECT_FALSE(qs8_dwconv_flat_plan(params({1, 14, 14, 3, 2, 1, 1, 1, 1}))->one_register);  // 7 rows of 14
  EXPECT_EQ(plan.window[0], 0);
  EXPECT_EQ(plan.window[1], 7);   // outputs 16..31: output rows 2..4 read input rows 1..5
  EXPECT_EQ(plan.window[2], 21);  // outputs 32..47: output rows 4..6 read input rows 3..6
  // Output 0 (0, 0), tap 0 (-1, -1) is padding: the zero-point byte; tap 4 (0, 0) is byte 0.
  EXPECT_EQ(plan.index[0], 63);
  EXPECT_EQ(plan.index[64 + 0], 0);
  EXPECT_EQ(qs8_dwconv_flat_kernel_name(plan), "qs8_dwconv3x3s1_flat__avx512vnni");
}

// Random shapes where the plan fits (planes up to 30x30, every kernel, stride and padding up to
// oversized), extreme values, model shapes; 1 and 2 threads.
TEST(QDepthwiseFlat, MatchesReferenceByteForByte) {
  if (!qs8_dwconv_flat_enabled()) GTEST_SKIP() << "needs AVX512-VNNI and VBMI";
  std::mt19937 rng(5);
  std::uniform_int_distribution<int64_t> size(1, 30), pad(0, 4), ch(1, 20);
  int ran = 0;
  for (int64_t k : {3, 5, 7}) {
    for (int64_t s : {1, 2}) {
      for (int i = 0; i < 120 && ran < 400; ++i) {
        Case t{ch(rng), size(rng), size(rng), k, s, pad(rng), pad(rng), pad(rng), pad(rng)};
        if ((t.h + t.pt + t.pb - k) < 0 || (t.w + t.pl + t.pr - k) < 0) continue;
        if (!qs8_dwconv_flat_plan(params(t))) continue;
        check_case(t, Isa::kAvx2, 1 + i % 2, rng, Fill::kRandom, i % 5 != 0, Path::kFlat);
        if (HasFatalFailure()) return;
        ++ran;
      }
    }
  }
  EXPECT_GT(ran, 100);
  for (const Case& t : {Case{9, 7, 7, 3, 1, 1, 1, 1, 1}, Case{5, 14, 14, 5, 2, 2, 2, 2, 2}, Case{3, 28, 28, 3, 1, 1, 1, 1, 1},
                        Case{4, 14, 14, 3, 2, 0, 0, 1, 1}, Case{33, 7, 7, 7, 1, 3, 3, 3, 3}}) {
    for (Fill f : {Fill::kRandom, Fill::kMax, Fill::kMin}) {
      check_case(t, Isa::kAvx2, 2, rng, f, true, Path::kFlat);
      if (HasFatalFailure()) return;
    }
  }
}

TEST(QDepthwise, KernelNamesAndSupport) {
  EXPECT_EQ(qs8_dwconv_kernel_name(3, 1, Isa::kScalar), "qs8_dwconv3x3s1__scalar");
  if (isa_supported(Isa::kAvx2)) {
    EXPECT_EQ(qs8_dwconv_kernel_name(5, 2, Isa::kAvx2),
              qs8_dwconv_vnni_enabled() ? "qs8_dwconv5x5s2__avx512vnni" : "qs8_dwconv5x5s2__avx2");
  }
  EXPECT_TRUE(qs8_dwconv_supported(5, 2, 1));
  EXPECT_TRUE(qs8_dwconv_supported(7, 1, 1));
  EXPECT_FALSE(qs8_dwconv_supported(9, 1, 1));
  EXPECT_FALSE(qs8_dwconv_supported(3, 3, 1));
  EXPECT_FALSE(qs8_dwconv_supported(3, 1, 2));
}

TEST(QDepthwise, RejectsUnsupportedShapesAndOverflowableBias) {
  DepthwiseParams p = params({1, 8, 8, 3, 1, 1, 1, 1, 1});
  std::vector<uint8_t> x(64), y(64);
  std::vector<int8_t> w(9, 1);
  const float mult[1] = {0.01f};
  QRequant rq;
  rq.multiplier = mult;
  const int32_t big[1] = {std::numeric_limits<int32_t>::max() - 10};
  EXPECT_THROW(qs8_dwconv(p, x.data(), 0, w.data(), big, rq, y.data(), nullptr, Isa::kScalar), Error);
  p.kernel = 9;
  try {
    qs8_dwconv(p, x.data(), 0, w.data(), nullptr, rq, y.data(), nullptr, Isa::kScalar);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("kernel 9"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace xnn::kernels
