// Direct convolution of few input channels (engine/kernels/direct_conv.h) against a double
// loop nest: random shapes (1-16 input channels, output channels around multiples of 16,
// kernels 3/5/7, strides 1/2, paddings up to past the kernel), bias, residual (also in place),
// every activation, 1 and 2 threads, on the scalar path, the AVX2 path and (where the CPU has
// it) the AVX-512 paths (16 output channels in the lanes; for at most 4 input channels, pixels in
// the lanes), including planes large enough to be split into several row bands.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "engine/kernels/direct_conv.h"
#include "tests/engine/activation_reference.h"

namespace xnn::kernels {
namespace {

using test_ref::act_double;

struct Case {
  int64_t cin, cout, h, w, k, s, pt, pl, pb, pr;
};

void check(const Case& t, Isa isa, int threads, bool with_bias, bool with_residual, bool in_place,
           const Activation& act, uint32_t seed) {
  DirectConvParams p;
  p.in_channels = t.cin, p.out_channels = t.cout, p.in_h = t.h, p.in_w = t.w, p.kernel = t.k, p.stride = t.s;
  p.pad_t = t.pt, p.pad_l = t.pl;
  p.out_h = (t.h + t.pt + t.pb - t.k) / t.s + 1;
  p.out_w = (t.w + t.pl + t.pr - t.k) / t.s + 1;
  ASSERT_GT(p.out_h, 0);
  ASSERT_GT(p.out_w, 0);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  const auto random = [&](int64_t n) {
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = d(rng);
    return v;
  };
  const int64_t kk = t.k * t.k, out_plane = p.out_h * p.out_w, n = t.cout * out_plane;
  const std::vector<float> x = random(t.cin * t.h * t.w), w = random(t.cout * t.cin * kk), b = random(t.cout),
                           r = random(n);
  std::vector<float> y(static_cast<size_t>(n + 32), 777.0f);
  float* out = y.data() + 16;
  const float* res = nullptr;
  if (with_residual) {
    if (in_place) std::copy(r.begin(), r.end(), out);
    res = in_place ? out : r.data();
  }
  ThreadPool pool(threads);
  f32_conv_direct(p, x.data(), w.data(), with_bias ? b.data() : nullptr, res, act, out, &pool, isa);
  for (int i = 0; i < 16; ++i) {
    ASSERT_EQ(y[static_cast<size_t>(i)], 777.0f) << "store before the output";
    ASSERT_EQ(y[static_cast<size_t>(n + 16 + i)], 777.0f) << "store past the output";
  }
  const double eps = std::ldexp(1.0, -24);
  for (int64_t co = 0; co < t.cout; ++co) {
    for (int64_t oy = 0; oy < p.out_h; ++oy) {
      for (int64_t ox = 0; ox < p.out_w; ++ox) {
        double acc = with_bias ? b[static_cast<size_t>(co)] : 0.0, mag = std::fabs(acc);
        for (int64_t ci = 0; ci < t.cin; ++ci) {
          for (int64_t kh = 0; kh < t.k; ++kh) {
            const int64_t ih = oy * t.s - t.pt + kh;
            if (ih < 0 || ih >= t.h) continue;
            for (int64_t kw = 0; kw < t.k; ++kw) {
              const int64_t iw = ox * t.s - t.pl + kw;
              if (iw < 0 || iw >= t.w) continue;
              const double term = static_cast<double>(x[static_cast<size_t>((ci * t.h + ih) * t.w + iw)]) *
                                  w[static_cast<size_t>(((co * t.cin + ci) * t.k + kh) * t.k + kw)];
              acc += term;
              mag += std::fabs(term);
            }
          }
        }
        const size_t o = static_cast<size_t>(co * out_plane + oy * p.out_w + ox);
        if (with_residual) acc += r[o], mag += std::fabs(r[o]);
        const double want = act_double(acc, act);
        const double tol = 1.5 * static_cast<double>(t.cin * kk + 2) * eps * mag + 4 * eps * std::fabs(want) + 1e-30;
        ASSERT_NEAR(out[o], want, tol) << conv_direct_kernel_name(p, isa) << " cin " << t.cin << " cout " << t.cout
                                       << " " << t.h << "x" << t.w << " k" << t.k << " s" << t.s << " pads " << t.pt
                                       << "," << t.pl << "," << t.pb << "," << t.pr << " threads " << threads
                                       << " at co " << co << " (" << oy << ", " << ox << ")";
      }
    }
  }
}

class DirectConvIsa : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (!isa_supported(GetParam())) GTEST_SKIP() << "ISA not supported on this CPU";
  }
};

TEST_P(DirectConvIsa, RandomShapes) {
  std::mt19937 rng(31);
  const Activation acts[] = {Activation{}, Activation::relu(), Activation::clip(0, 6), Activation::leaky_relu(0.1f),
                             Activation{ActKind::kHardSwish}, Activation{ActKind::kHardSigmoid, 0.2f, 0.5f},
                             Activation{ActKind::kSigmoid}, Activation{ActKind::kSilu}};
  for (int iter = 0; iter < 80; ++iter) {
    Case t;
    t.k = 3 + 2 * static_cast<int64_t>(rng() % 3);
    t.s = 1 + static_cast<int64_t>(rng() % 2);
    t.cin = 1 + rng() % 16;
    t.cout = std::vector<int64_t>{1, 6, 15, 16, 17, 33}[rng() % 6];
    t.pt = rng() % (t.k + 1), t.pl = rng() % (t.k + 1), t.pb = rng() % (t.k + 1), t.pr = rng() % (t.k + 1);
    t.h = t.k + rng() % 18;
    t.w = t.k + rng() % 30;
    if ((t.h + t.pt + t.pb - t.k) < 0 || (t.w + t.pl + t.pr - t.k) < 0) continue;
    check(t, GetParam(), 1 + iter % 2, rng() % 2, rng() % 3 == 0, rng() % 2, acts[iter % 8], 300 + iter);
    if (HasFatalFailure()) return;
  }
}

// The AVX-512 stem kernel (at most 4 input channels, rows wider than 8: 4 output channels × 64
// pixels per register tile): rows of one to several tiles with a partial last vector, output
// channel counts that leave a partial block of 4, every kernel and stride, paddings past the
// kernel, in-place residual and the transcendental activations; other ISAs run the same cases.
TEST_P(DirectConvIsa, StemTilesAndEdges) {
  std::mt19937 rng(77);
  const Activation acts[] = {Activation::relu(), Activation{ActKind::kSilu}, Activation{ActKind::kHardSwish},
                             Activation{ActKind::kSigmoid}};
  int iter = 0;
  for (int64_t out_w : {9, 16, 63, 64, 65, 130}) {
    for (int64_t k : {3, 5, 7}) {
      Case t;
      t.k = k;
      t.s = 1 + iter % 2;
      t.cin = 1 + iter % 4;
      t.cout = std::vector<int64_t>{1, 3, 4, 5, 13}[static_cast<size_t>(iter % 5)];
      t.pl = rng() % (k + 1), t.pr = rng() % (k + 1), t.pt = rng() % (k + 1), t.pb = rng() % (k + 1);
      t.w = (out_w - 1) * t.s + k - t.pl - t.pr;
      t.h = k + static_cast<int64_t>(rng() % 9);
      if (t.w <= 0) continue;
      DirectConvParams p{t.cin, t.cout, t.h, t.w, (t.h + t.pt + t.pb - k) / t.s + 1, out_w, k, t.s, t.pt, t.pl};
      if (GetParam() == Isa::kAvx2 && avx512_enabled()) {
        EXPECT_NE(conv_direct_kernel_name(p, GetParam()).find("_direct_4x64__avx512"), std::string::npos)
            << "out_w " << out_w;
      }
      check(t, GetParam(), 1 + iter % 2, iter % 3 != 0, iter % 2 == 0, iter % 4 == 0, acts[iter % 4], 900 + iter);
      if (HasFatalFailure()) return;
      ++iter;
    }
  }
}

TEST_P(DirectConvIsa, ModelShapes) {
  // LeNet-5's layers, a grey 3×3 stride-2 stem, an RGB stem at 112×112 (several row bands), a
  // 7×7 stride-2 RGB stem, 48 outputs (a pair of 16-channel blocks, then one alone).
  const Case cases[] = {{1, 6, 28, 28, 5, 1, 2, 2, 2, 2},     {6, 16, 14, 14, 5, 1, 0, 0, 0, 0},
                        {1, 24, 28, 28, 3, 2, 1, 1, 1, 1},    {3, 32, 112, 112, 3, 2, 0, 0, 1, 1},
                        {3, 16, 60, 60, 7, 2, 3, 3, 3, 3},    {3, 48, 41, 41, 3, 2, 1, 1, 1, 1}};
  for (const Case& t : cases) {
    for (int threads : {1, 2}) {
      check(t, GetParam(), threads, true, threads == 2, threads == 2, Activation::clip(0, 6), 11);
      if (HasFatalFailure()) return;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(DirectConv, DirectConvIsa, ::testing::Values(Isa::kScalar, Isa::kAvx2),
                         [](const ::testing::TestParamInfo<Isa>& i) { return std::string(isa_name(i.param)); });

TEST(DirectConvKernel, Names) {
  DirectConvParams lenet{6, 16, 14, 14, 10, 10, 5, 1, 0, 0};
  EXPECT_EQ(conv_direct_kernel_name(lenet, Isa::kScalar), "f32_conv5x5s1_direct__scalar");
  if (isa_supported(Isa::kAvx2)) {
    EXPECT_EQ(conv_direct_kernel_name(lenet, Isa::kAvx2),
              avx512_enabled() ? "f32_conv5x5s1_direct_c16__avx512" : "f32_conv5x5s1_direct__avx2");
    DirectConvParams deep{17, 16, 14, 14, 10, 10, 5, 1, 0, 0};  // more than 16 input channels: AVX2
    EXPECT_EQ(conv_direct_kernel_name(deep, Isa::kAvx2), "f32_conv5x5s1_direct__avx2");
    // At most 4 input channels and rows wider than 8: the AVX-512 stem kernel.
    DirectConvParams rgb{3, 32, 224, 224, 112, 112, 3, 2, 1, 1}, tiny{3, 32, 8, 8, 8, 8, 3, 1, 1, 1};
    EXPECT_EQ(conv_direct_kernel_name(rgb, Isa::kAvx2),
              avx512_enabled() ? "f32_conv3x3s2_direct_4x64__avx512" : "f32_conv3x3s2_direct__avx2");
    EXPECT_EQ(conv_direct_kernel_name(tiny, Isa::kAvx2),
              avx512_enabled() ? "f32_conv3x3s1_direct_c16__avx512" : "f32_conv3x3s1_direct__avx2");
  }
}

}  // namespace
}  // namespace xnn::kernels
