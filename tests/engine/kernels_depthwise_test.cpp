// Depthwise convolution kernels (engine/kernels/depthwise.h) against a direct double-precision
// loop nest: random shapes, strides, paddings (asymmetric, larger than the kernel), bias,
// residual (also in place), every activation, both ISAs, 1 and 2 threads.
// DepthwiseBench.DISABLED_Gflops prints single-thread GFLOP/s of typical model shapes (run with
// --gtest_also_run_disabled_tests); it asserts nothing about speed.
#include <gtest/gtest.h>

#include <algorithm>
#include <ctime>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

#include "engine/kernels/depthwise.h"
#include "tests/engine/activation_reference.h"

namespace xnn::kernels {
namespace {

std::vector<float> random_vector(std::mt19937& rng, int64_t n, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = d(rng);
  return v;
}

using test_ref::act_double;

// out = act(conv + bias + residual), accumulated in double, the activation in double too (its
// formulas those of apply_activation_scalar). Also returns, per output, the sum of the
// magnitudes of the terms added: the scale of the float rounding error.
std::vector<double> reference(const DepthwiseParams& p, const std::vector<float>& x, const std::vector<float>& w,
                              const float* bias, const float* residual, const Activation& act,
                              std::vector<double>* magnitude) {
  std::vector<double> y(static_cast<size_t>(p.channels * p.out_h * p.out_w));
  magnitude->assign(y.size(), 0.0);
  const int64_t k = p.kernel;
  for (int64_t c = 0; c < p.channels; ++c) {
    for (int64_t oh = 0; oh < p.out_h; ++oh) {
      for (int64_t ow = 0; ow < p.out_w; ++ow) {
        double acc = bias ? bias[c] : 0.0;
        double mag = std::fabs(acc);
        for (int64_t kh = 0; kh < k; ++kh) {
          const int64_t ih = oh * p.stride - p.pad_t + kh;
          if (ih < 0 || ih >= p.in_h) continue;
          for (int64_t kw = 0; kw < k; ++kw) {
            const int64_t iw = ow * p.stride - p.pad_l + kw;
            if (iw < 0 || iw >= p.in_w) continue;
            const double term = static_cast<double>(x[static_cast<size_t>((c * p.in_h + ih) * p.in_w + iw)]) *
                                w[static_cast<size_t>((c * k + kh) * k + kw)];
            acc += term;
            mag += std::fabs(term);
          }
        }
        const size_t o = static_cast<size_t>((c * p.out_h + oh) * p.out_w + ow);
        if (residual) acc += residual[o], mag += std::fabs(residual[o]);
        y[o] = act_double(acc, act);
        (*magnitude)[o] = mag;
      }
    }
  }
  return y;
}

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

// Runs one case on `isa` with `threads` and compares with the double reference. Tolerance: a
// float sum of n <= 27 terms is within n * 2^-24 of the exact sum relative to the terms'
// magnitudes (the activations' slopes are <= 1.5); plus a few ulp of the result for exp.
void check_case(const Case& t, Isa isa, int threads, bool with_bias, bool with_residual, bool in_place,
                const Activation& act, uint32_t seed) {
  const DepthwiseParams p = params(t);
  ASSERT_GT(p.out_h, 0);
  ASSERT_GT(p.out_w, 0);
  std::mt19937 rng(seed);
  const std::vector<float> x = random_vector(rng, p.channels * p.in_h * p.in_w);
  const std::vector<float> w = random_vector(rng, p.channels * p.kernel * p.kernel);
  const std::vector<float> b = random_vector(rng, p.channels);
  const std::vector<float> r = random_vector(rng, p.channels * p.out_h * p.out_w);
  // Sentinels around the output catch stores past either end.
  const size_t n = static_cast<size_t>(p.channels * p.out_h * p.out_w);
  std::vector<float> y(n + 16, 12345.0f);
  float* out = y.data() + 8;
  const float* res = nullptr;
  if (with_residual) {
    if (in_place) std::copy(r.begin(), r.end(), out);
    res = in_place ? out : r.data();
  }
  ThreadPool pool(threads);
  f32_dwconv(p, x.data(), w.data(), with_bias ? b.data() : nullptr, res, act, out, &pool, isa);
  std::vector<double> mag;
  const std::vector<double> want = reference(p, x, w, with_bias ? b.data() : nullptr,
                                             with_residual ? r.data() : nullptr, act, &mag);
  for (int i = 0; i < 8; ++i) {
    ASSERT_EQ(y[static_cast<size_t>(i)], 12345.0f) << "store before the output";
    ASSERT_EQ(y[n + 8 + static_cast<size_t>(i)], 12345.0f) << "store past the output";
  }
  const double eps = std::ldexp(1.0, -24);
  for (size_t i = 0; i < n; ++i) {
    const double tol = 1.5 * (p.kernel * p.kernel + 2) * eps * mag[i] + 4 * eps * std::fabs(want[i]) + 1e-30;
    ASSERT_NEAR(out[i], want[i], tol)
        << dwconv_kernel_name(p, isa) << " c" << t.c << " " << t.h << "x" << t.w << " pads " << t.pt
        << "," << t.pl << "," << t.pb << "," << t.pr << " threads " << threads << " act "
        << act_kind_name(act.kind) << " at " << i << " (c " << i / static_cast<size_t>(p.out_h * p.out_w) << ")";
  }
}

class DepthwiseIsa : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (!isa_supported(GetParam())) GTEST_SKIP() << "ISA not supported on this CPU";
  }
};

TEST_P(DepthwiseIsa, RandomShapes) {
  std::mt19937 rng(1234);
  const Activation acts[] = {Activation{}, Activation::relu(), Activation::clip(0, 6), Activation::leaky_relu(0.1f),
                             Activation{ActKind::kHardSwish}, Activation{ActKind::kHardSigmoid, 0.2f, 0.5f},
                             Activation{ActKind::kSigmoid}, Activation{ActKind::kSilu}};
  for (int iter = 0; iter < 160; ++iter) {
    Case t;
    t.k = 3 + 2 * static_cast<int64_t>(rng() % 3);  // 3, 5 or 7
    t.s = rng() % 2 ? 1 : 2;
    t.c = 1 + rng() % 6;
    t.h = t.k + rng() % 20;
    t.w = t.k + rng() % 40;
    t.pt = rng() % (t.k + 1);  // up to one past the kernel: rows of pure padding
    t.pl = rng() % (t.k + 1);
    t.pb = rng() % (t.k + 1);
    t.pr = rng() % (t.k + 1);
    const bool bias = rng() % 2, residual = rng() % 3 == 0, in_place = rng() % 2;
    const int threads = 1 + iter % 2;
    check_case(t, GetParam(), threads, bias, residual, in_place, acts[iter % 8], 100 + iter);
    if (HasFatalFailure()) return;
  }
}

TEST_P(DepthwiseIsa, EdgeShapes) {
  // Tiny images (smaller than a vector, smaller than the window with padding), widths around
  // the vector length, few channels with 2 threads (row blocks), no padding at all.
  const Case cases[] = {
      {1, 1, 1, 3, 1, 1, 1, 1, 1},   {2, 2, 2, 5, 1, 2, 2, 2, 2},   {3, 1, 9, 3, 2, 1, 1, 1, 1},
      {1, 7, 7, 3, 1, 1, 1, 1, 1},   {1, 8, 8, 3, 1, 1, 1, 1, 1},   {1, 9, 17, 3, 1, 1, 1, 1, 1},
      {2, 16, 16, 3, 2, 0, 0, 1, 1}, {2, 15, 33, 5, 2, 2, 2, 2, 2}, {1, 40, 40, 3, 1, 0, 0, 0, 0},
      {1, 33, 31, 5, 1, 2, 2, 2, 2}, {3, 12, 24, 5, 2, 1, 2, 2, 1}, {2, 5, 40, 3, 2, 3, 0, 0, 3},
      {1, 7, 7, 7, 1, 3, 3, 3, 3},   {2, 3, 17, 7, 2, 3, 3, 3, 3},   {1, 19, 9, 7, 2, 0, 1, 2, 3},
  };
  for (const Case& t : cases) {
    for (int threads : {1, 2}) {
      check_case(t, GetParam(), threads, true, true, false, Activation::clip(0, 6), 7);
      if (HasFatalFailure()) return;
    }
  }
}

TEST_P(DepthwiseIsa, ModelShapes) {
  // Scaled-down channel counts of MobileNetV2 / EfficientNet-B0 / MobileNetV3 layers.
  const Case cases[] = {
      {4, 112, 112, 3, 1, 1, 1, 1, 1}, {3, 112, 112, 3, 2, 0, 0, 1, 1}, {8, 56, 56, 3, 1, 1, 1, 1, 1},
      {8, 28, 28, 3, 2, 0, 0, 1, 1},   {16, 14, 14, 3, 1, 1, 1, 1, 1},  {16, 7, 7, 3, 1, 1, 1, 1, 1},
      {8, 28, 28, 5, 2, 1, 1, 2, 2},   {16, 14, 14, 5, 1, 2, 2, 2, 2},  {16, 7, 7, 5, 1, 2, 2, 2, 2},
      {8, 112, 112, 3, 2, 1, 1, 1, 1}, {8, 56, 56, 7, 2, 3, 3, 3, 3},   {16, 14, 14, 7, 1, 3, 3, 3, 3},
  };
  for (const Case& t : cases) {
    check_case(t, GetParam(), 2, true, false, false, Activation{ActKind::kHardSwish}, 9);
    if (HasFatalFailure()) return;
  }
}

TEST_P(DepthwiseIsa, SmallPlanes) {
  // The late layers of small-image networks (4x4 to 8x8 outputs): on AVX2 these run with 8
  // channels in the lanes (dwconv_channels_in_lanes), with AVX-512 16 (dwconv_c16, every plane
  // size); channel counts that leave a partial block,
  // paddings up to past the kernel (taps skipped at the top and bottom, zeros at the sides),
  // residual in place and not.
  std::mt19937 rng(4321);
  const Activation acts[] = {Activation{}, Activation::relu(), Activation::clip(0, 6), Activation{ActKind::kHardSwish},
                             Activation{ActKind::kSilu}, Activation{ActKind::kSigmoid}};
  int lanes_cases = 0;
  for (int iter = 0; iter < 120; ++iter) {
    Case t;
    t.k = 3 + 2 * static_cast<int64_t>(rng() % 3);
    t.s = rng() % 2 ? 1 : 2;
    t.c = 1 + rng() % 21;
    t.pt = rng() % (t.k + 1), t.pl = rng() % (t.k + 1), t.pb = rng() % (t.k + 1), t.pr = rng() % (t.k + 1);
    const int64_t oh = 1 + rng() % 8, ow = 1 + rng() % 8;
    t.h = std::max<int64_t>(1, (oh - 1) * t.s + t.k - t.pt - t.pb);
    t.w = std::max<int64_t>(1, (ow - 1) * t.s + t.k - t.pl - t.pr);
    if (params(t).out_h <= 0 || params(t).out_w <= 0) continue;
    lanes_cases += dwconv_channels_in_lanes(params(t), GetParam()) || dwconv_c16(params(t), GetParam());
    const bool residual = rng() % 2, in_place = rng() % 2;
    check_case(t, GetParam(), 1 + iter % 2, rng() % 2, residual, in_place, acts[iter % 6], 500 + iter);
    if (HasFatalFailure()) return;
  }
  if (GetParam() == Isa::kAvx2) {
    EXPECT_GT(lanes_cases, 40);
  }
}

TEST_P(DepthwiseIsa, ChannelBlocksAndRing) {
  // What the AVX-512 path (16 channels per block) adds: channel counts around multiples of 16,
  // few blocks split into row bands over 2 threads, planes whose padded rows outgrow the
  // all-rows buffer (a ring of k rows, reused), rows wider than a transpose, in-place residual.
  // On the other ISAs the same cases check the row kernels.
  const Case cases[] = {
      {15, 9, 9, 3, 1, 1, 1, 1, 1},    {16, 7, 7, 5, 2, 2, 2, 2, 2},    {17, 14, 14, 3, 2, 0, 0, 1, 1},
      {33, 6, 11, 7, 1, 3, 3, 3, 3},   {20, 64, 64, 3, 1, 1, 1, 1, 1},  {18, 70, 45, 5, 2, 2, 1, 2, 0},
      {31, 80, 80, 7, 2, 3, 3, 3, 3},  {3, 50, 90, 3, 1, 0, 2, 4, 1},   {40, 5, 5, 7, 1, 3, 3, 3, 3},
  };
  const Activation acts[] = {Activation::clip(0, 6), Activation{ActKind::kSilu}, Activation::leaky_relu(0.2f)};
  int i = 0;
  for (const Case& t : cases) {
    for (int threads : {1, 2}) {
      ++i;
      check_case(t, GetParam(), threads, i % 2, true, i % 3 == 0, acts[i % 3], 900 + static_cast<uint32_t>(i));
      if (HasFatalFailure()) return;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Depthwise, DepthwiseIsa, ::testing::Values(Isa::kScalar, Isa::kAvx2),
                         [](const ::testing::TestParamInfo<Isa>& i) { return std::string(isa_name(i.param)); });

TEST(DepthwiseKernel, SupportAndNames) {
  EXPECT_TRUE(f32_dwconv_supported(3, 1, 1));
  EXPECT_TRUE(f32_dwconv_supported(5, 2, 1));
  EXPECT_TRUE(f32_dwconv_supported(7, 1, 1));
  EXPECT_FALSE(f32_dwconv_supported(9, 1, 1));
  EXPECT_FALSE(f32_dwconv_supported(3, 3, 1));
  EXPECT_FALSE(f32_dwconv_supported(3, 1, 2));
  EXPECT_EQ(dwconv_kernel_name(3, 1, Isa::kScalar), "f32_dwconv3x3s1__scalar");
  if (isa_supported(Isa::kAvx2)) {
    EXPECT_EQ(dwconv_kernel_name(5, 2, Isa::kAvx2), "f32_dwconv5x5s2__avx2");
    DepthwiseParams small{72, 4, 4, 4, 4, 7, 1, 3, 3};
    DepthwiseParams wide{72, 14, 14, 14, 14, 3, 1, 1, 1};
    EXPECT_EQ(dwconv_kernel_name(small, Isa::kScalar), "f32_dwconv7x7s1__scalar");
    if (avx512_enabled()) {  // 16 channels in the lanes at every plane size
      EXPECT_TRUE(dwconv_c16(small, Isa::kAvx2));
      EXPECT_FALSE(dwconv_c16(small, Isa::kScalar));
      EXPECT_EQ(dwconv_kernel_name(small, Isa::kAvx2), "f32_dwconv7x7s1c16__avx512");
      EXPECT_EQ(dwconv_kernel_name(wide, Isa::kAvx2), "f32_dwconv3x3s1c16__avx512");
    } else {
      EXPECT_EQ(dwconv_kernel_name(small, Isa::kAvx2), "f32_dwconv7x7s1c8__avx2");
      EXPECT_EQ(dwconv_kernel_name(wide, Isa::kAvx2), "f32_dwconv3x3s1__avx2");
    }
  }
}

TEST(DepthwiseKernel, ScalarAndAvx2Agree) {
  if (!isa_supported(Isa::kAvx2)) GTEST_SKIP() << "AVX2 not supported";
  // Same summation order in both paths (bias, then taps row by row): results within an FMA's
  // rounding of each other.
  const Case t{5, 23, 37, 5, 2, 2, 1, 2, 2};
  const DepthwiseParams p = params(t);
  std::mt19937 rng(5);
  const std::vector<float> x = random_vector(rng, p.channels * p.in_h * p.in_w);
  const std::vector<float> w = random_vector(rng, p.channels * 25);
  std::vector<float> a(static_cast<size_t>(p.channels * p.out_h * p.out_w)), b(a.size());
  f32_dwconv(p, x.data(), w.data(), nullptr, nullptr, Activation{}, a.data(), nullptr, Isa::kScalar);
  f32_dwconv(p, x.data(), w.data(), nullptr, nullptr, Activation{}, b.data(), nullptr, Isa::kAvx2);
  for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-5) << i;
}

// ---- timing (disabled; prints only) ----------------------------------------------------------

// The obvious loop nest: per output, taps with bounds checks, float accumulation.
void naive_dwconv(const DepthwiseParams& p, const float* x, const float* w, const float* bias, float* y) {
  const int64_t k = p.kernel;
  for (int64_t c = 0; c < p.channels; ++c) {
    for (int64_t oh = 0; oh < p.out_h; ++oh) {
      for (int64_t ow = 0; ow < p.out_w; ++ow) {
        float acc = bias[c];
        for (int64_t kh = 0; kh < k; ++kh) {
          const int64_t ih = oh * p.stride - p.pad_t + kh;
          if (ih < 0 || ih >= p.in_h) continue;
          for (int64_t kw = 0; kw < k; ++kw) {
            const int64_t iw = ow * p.stride - p.pad_l + kw;
            if (iw < 0 || iw >= p.in_w) continue;
            acc += x[(c * p.in_h + ih) * p.in_w + iw] * w[(c * k + kh) * k + kw];
          }
        }
        y[(c * p.out_h + oh) * p.out_w + ow] = acc;
      }
    }
  }
}

// CPU time of the calling thread per run: the machine may be shared, and wall time would count
// other processes' slices.
double thread_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

template <typename F>
double seconds_per_run(F&& f) {
  f();  // warm up (scratch growth, caches)
  double best = 1e30;
  for (int rep = 0; rep < 5; ++rep) {  // best of 5 batches
    int runs = 0;
    const double t0 = thread_seconds();
    double elapsed = 0;
    do {
      f();
      ++runs;
      elapsed = thread_seconds() - t0;
    } while (elapsed < 0.05);
    best = std::min(best, elapsed / runs);
  }
  return best;
}

TEST(DepthwiseBench, DISABLED_Gflops) {
  const Case cases[] = {
      {32, 112, 112, 3, 1, 1, 1, 1, 1}, {96, 112, 112, 3, 2, 0, 0, 1, 1}, {144, 56, 56, 3, 1, 1, 1, 1, 1},
      {192, 28, 28, 3, 1, 1, 1, 1, 1},  {576, 14, 14, 3, 1, 1, 1, 1, 1},  {576, 14, 14, 3, 2, 0, 0, 1, 1},
      {960, 7, 7, 3, 1, 1, 1, 1, 1},    {240, 28, 28, 5, 2, 1, 1, 2, 2},  {480, 14, 14, 5, 1, 2, 2, 2, 2},
      {672, 14, 14, 5, 2, 1, 1, 2, 2},  {1152, 7, 7, 5, 1, 2, 2, 2, 2},  {48, 40, 40, 3, 1, 1, 1, 1, 1},
      {32, 56, 56, 5, 1, 2, 2, 2, 2},   {32, 112, 112, 5, 1, 2, 2, 2, 2}, {32, 56, 56, 7, 1, 3, 3, 3, 3},
      {32, 112, 112, 7, 2, 3, 3, 3, 3}, {32, 112, 112, 5, 2, 2, 2, 2, 2},
  };
  // "simd" is Isa::kAvx2's choice: the AVX-512 c16 kernel where avx512_enabled(), else AVX2
  // (XNN_ISA=avx2 keeps AVX2).
  std::printf("%-26s %10s %10s %10s %10s  %s\n", "shape", "naive", "scalar", "simd", "simd/naive", "kernel");
  for (const Case& t : cases) {
    const DepthwiseParams p = params(t);
    std::mt19937 rng(1);
    const std::vector<float> x = random_vector(rng, p.channels * p.in_h * p.in_w);
    const std::vector<float> w = random_vector(rng, p.channels * p.kernel * p.kernel);
    const std::vector<float> b = random_vector(rng, p.channels);
    std::vector<float> y(static_cast<size_t>(p.channels * p.out_h * p.out_w));
    const double flops = 2.0 * static_cast<double>(p.channels * p.out_h * p.out_w * p.kernel * p.kernel);
    const double naive = flops / seconds_per_run([&] { naive_dwconv(p, x.data(), w.data(), b.data(), y.data()); });
    const double scalar = flops / seconds_per_run([&] {
      f32_dwconv(p, x.data(), w.data(), b.data(), nullptr, Activation::clip(0, 6), y.data(), nullptr, Isa::kScalar);
    });
    double avx2 = 0;
    if (isa_supported(Isa::kAvx2)) {
      avx2 = flops / seconds_per_run([&] {
        f32_dwconv(p, x.data(), w.data(), b.data(), nullptr, Activation::clip(0, 6), y.data(), nullptr, Isa::kAvx2);
      });
    }
    char shape[64];
    std::snprintf(shape, sizeof shape, "%lldx%lld %lldx%lld s%lld", static_cast<long long>(t.c),
                  static_cast<long long>(t.h), static_cast<long long>(t.k), static_cast<long long>(t.k),
                  static_cast<long long>(t.s));
    std::printf("%-26s %10.2f %10.2f %10.2f %9.1fx  %s\n", shape, naive * 1e-9, scalar * 1e-9, avx2 * 1e-9, avx2 / naive,
                dwconv_kernel_name(p, Isa::kAvx2).c_str());
  }
}

}  // namespace
}  // namespace xnn::kernels
