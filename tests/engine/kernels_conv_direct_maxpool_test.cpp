// The banded direct convolution -> max pool driver (engine/kernels/conv_direct_maxpool.h) against
// the two ops run one after the other (f32_conv_direct into a whole intermediate tensor, then
// f32_maxpool2d): bit for bit, over stems of 1-4 input channels, output channel counts around
// the kernel's blocks of 4, 3x3 and 7x7 convolutions, 3x3 and 2x2 pools with and without
// padding (and a ceil-mode extra row and column, whose windows hang over the image), many bands
// per thread range, 1-3 threads, NaN and negative outputs. AVX-512 only (the driver's domain).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "engine/core/thread_pool.h"
#include "engine/kernels/conv_direct_maxpool.h"

namespace xnn::kernels {
namespace {

struct StemPoolCase {
  int64_t cin, cout, h, w, k, s, conv_pad;
  int64_t pool_k, pool_s, pool_pad;
  bool ceil_mode;
  Activation act;
};

int64_t pool_out(int64_t in, int64_t k, int64_t s, int64_t pad, bool ceil_mode) {
  const int64_t span = in + 2 * pad - k;
  int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  if (ceil_mode && (out - 1) * s >= in + pad) --out;  // the last window must start inside
  return out;
}

void check(const StemPoolCase& c, int threads, uint32_t seed) {
  DirectConvParams conv{c.cin, c.cout, c.h, c.w, 0, 0, c.k, c.s, c.conv_pad, c.conv_pad};
  conv.out_h = (c.h + 2 * c.conv_pad - c.k) / c.s + 1;
  conv.out_w = (c.w + 2 * c.conv_pad - c.k) / c.s + 1;
  Pool2dParams pool;
  pool.planes = c.cout;
  pool.in_h = conv.out_h, pool.in_w = conv.out_w;
  pool.kernel_h = pool.kernel_w = c.pool_k;
  pool.stride_h = pool.stride_w = c.pool_s;
  pool.pad_t = pool.pad_l = pool.pad_b = pool.pad_r = c.pool_pad;
  pool.out_h = pool_out(conv.out_h, c.pool_k, c.pool_s, c.pool_pad, c.ceil_mode);
  pool.out_w = pool_out(conv.out_w, c.pool_k, c.pool_s, c.pool_pad, c.ceil_mode);
  ASSERT_TRUE(conv_direct_maxpool_supported(conv, pool, Isa::kAvx2));

  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  const auto random = [&](int64_t n) {
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = d(rng);
    return v;
  };
  std::vector<float> x = random(c.cin * c.h * c.w);
  const std::vector<float> w = random(c.cout * c.cin * c.k * c.k), b = random(c.cout);
  x[static_cast<size_t>(rng() % x.size())] = std::numeric_limits<float>::quiet_NaN();  // NaN windows

  ThreadPool tp(threads);
  std::vector<float> mid(static_cast<size_t>(c.cout * conv.out_h * conv.out_w));
  std::vector<float> want(static_cast<size_t>(c.cout * pool.out_h * pool.out_w));
  f32_conv_direct(conv, x.data(), w.data(), b.data(), nullptr, c.act, mid.data(), &tp, Isa::kAvx2);
  f32_maxpool2d(pool, mid.data(), want.data(), &tp, Isa::kAvx2);

  std::vector<float> got(want.size() + 32, 777.0f);
  f32_conv_direct_maxpool(conv, w.data(), b.data(), c.act, pool, x.data(), got.data() + 16, &tp, Isa::kAvx2);
  for (int i = 0; i < 16; ++i) {
    ASSERT_EQ(got[static_cast<size_t>(i)], 777.0f) << "store before the output";
    ASSERT_EQ(got[want.size() + 16 + static_cast<size_t>(i)], 777.0f) << "store past the output";
  }
  ASSERT_EQ(0, std::memcmp(got.data() + 16, want.data(), want.size() * sizeof(float)))
      << c.cin << "->" << c.cout << " " << c.h << "x" << c.w << " conv k" << c.k << " s" << c.s << " pad "
      << c.conv_pad << ", pool k" << c.pool_k << " s" << c.pool_s << " pad " << c.pool_pad << " ceil " << c.ceil_mode
      << ", bands of " << conv_direct_maxpool_band_rows(conv, pool) << " rows, threads " << threads;
}

TEST(ConvDirectMaxPool, MatchesTheTwoOpsBitForBit) {
  if (!avx512_enabled()) GTEST_SKIP() << "the banded stem + pool runs on AVX-512 CPUs only";
  const StemPoolCase cases[] = {
      {3, 64, 224, 224, 3, 2, 0, 3, 2, 0, true, Activation::relu()},   // SqueezeNet 1.1's stem and pool
      {3, 64, 96, 96, 7, 2, 3, 3, 2, 1, false, Activation::relu()},    // ResNet's, smaller image
      {3, 13, 200, 150, 3, 2, 1, 3, 2, 1, true, Activation{}},         // a partial block of 4 channels
      {1, 5, 61, 260, 3, 1, 1, 2, 2, 0, true, Activation::relu()},     // grey, stride-1 conv, 2x2 pool
      {4, 40, 120, 300, 5, 2, 2, 3, 2, 0, false, Activation::clip(0, 6)},
      {2, 16, 33, 70, 3, 1, 0, 3, 2, 1, true, Activation::leaky_relu(0.1f)},
  };
  uint32_t seed = 5;
  for (const StemPoolCase& c : cases) {
    for (int threads : {1, 2, 3}) {
      check(c, threads, seed++);
      if (HasFatalFailure()) return;
    }
  }
}

TEST(ConvDirectMaxPool, SupportedOnlyForTheStemKernelAndAWholeReader) {
  if (!avx512_enabled()) GTEST_SKIP() << "the banded stem + pool runs on AVX-512 CPUs only";
  DirectConvParams conv{3, 64, 224, 224, 111, 111, 3, 2, 0, 0};
  Pool2dParams pool;
  pool.planes = 64, pool.in_h = 111, pool.in_w = 111, pool.out_h = 55, pool.out_w = 55;
  pool.kernel_h = pool.kernel_w = 3, pool.stride_h = pool.stride_w = 2;
  EXPECT_TRUE(conv_direct_maxpool_supported(conv, pool, Isa::kAvx2));
  EXPECT_FALSE(conv_direct_maxpool_supported(conv, pool, Isa::kScalar));
  Pool2dParams other = pool;
  other.planes = 32;  // reads only part of the convolution
  EXPECT_FALSE(conv_direct_maxpool_supported(conv, other, Isa::kAvx2));
  DirectConvParams deep = conv;
  deep.in_channels = 8;  // the c16 kernel's domain, which writes no bands
  EXPECT_FALSE(conv_direct_maxpool_supported(deep, pool, Isa::kAvx2));
  EXPECT_GE(conv_direct_maxpool_band_rows(conv, pool), 1);
  EXPECT_LT(conv_direct_maxpool_band_rows(conv, pool), pool.out_h);  // several bands on a 224x224 stem
}

}  // namespace
}  // namespace xnn::kernels
