// im2col into GEMM panels (engine/kernels/im2col.h): the scalar kernel against the definition
// (input pixel of tap (c, ki, kj) at each output position, 0 in the padding), the AVX-512 gather
// kernel against the scalar one bit for bit, over random geometries (strides, dilations, pads,
// non-square kernels, position ranges that start mid-row and end in a partial panel).
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "engine/kernels/cpu_features.h"
#include "engine/kernels/im2col.h"

namespace xnn::kernels {
namespace {

Im2colGeometry random_geometry(std::mt19937& rng) {
  auto pick = [&](int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(rng() % static_cast<uint32_t>(hi - lo + 1)); };
  Im2colGeometry g;
  g.channels = pick(1, 6);
  g.kernel_h = pick(1, 5), g.kernel_w = pick(1, 5);
  g.stride_h = pick(1, 3), g.stride_w = pick(1, 3);
  g.dilation_h = pick(1, 2), g.dilation_w = pick(1, 2);
  g.pad_t = pick(0, 2), g.pad_l = pick(0, 2);
  const int64_t pad_b = pick(0, 2), pad_r = pick(0, 2);
  const int64_t span_h = (g.kernel_h - 1) * g.dilation_h + 1, span_w = (g.kernel_w - 1) * g.dilation_w + 1;
  g.in_h = pick(std::max<int64_t>(1, span_h - g.pad_t - pad_b), 30);
  g.in_w = pick(std::max<int64_t>(1, span_w - g.pad_l - pad_r), 40);
  g.out_h = (g.in_h + g.pad_t + pad_b - span_h) / g.stride_h + 1;
  g.out_w = (g.in_w + g.pad_l + pad_r - span_w) / g.stride_w + 1;
  return g;
}

float tap_value(const Im2colGeometry& g, const std::vector<float>& x, int64_t r, int64_t p) {
  const int64_t c = r / (g.kernel_h * g.kernel_w), ki = (r / g.kernel_w) % g.kernel_h, kj = r % g.kernel_w;
  const int64_t iy = (p / g.out_w) * g.stride_h - g.pad_t + ki * g.dilation_h;
  const int64_t ix = (p % g.out_w) * g.stride_w - g.pad_l + kj * g.dilation_w;
  if (iy < 0 || iy >= g.in_h || ix < 0 || ix >= g.in_w) return 0.0f;
  return x[static_cast<size_t>((c * g.in_h + iy) * g.in_w + ix)];
}

TEST(Im2colPanels, ScalarMatchesTheDefinitionAndAvx512MatchesScalar) {
  std::mt19937 rng(31);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const bool avx512 = avx512_enabled();
  for (int iter = 0; iter < 300; ++iter) {
    const Im2colGeometry g = random_geometry(rng);
    std::vector<float> x(static_cast<size_t>(g.channels * g.in_h * g.in_w));
    for (float& v : x) v = dist(rng);
    const int64_t positions = g.out_h * g.out_w, k = g.depth();
    const int64_t p0 = static_cast<int64_t>(rng() % static_cast<uint32_t>(positions));
    const int64_t count = 1 + static_cast<int64_t>(rng() % static_cast<uint32_t>(positions - p0));
    for (int64_t nr : {8, 16}) {
      const int64_t panels = (count + nr - 1) / nr;
      std::vector<float> got(static_cast<size_t>(panels * k * nr), 99.0f);
      f32_im2col_panels__scalar(g, x.data(), p0, count, nr, got.data());
      for (int64_t q = 0; q < panels * nr; ++q) {
        for (int64_t r = 0; r < k; ++r) {
          const float want = q < count ? tap_value(g, x, r, p0 + q) : 0.0f;
          ASSERT_EQ(got[static_cast<size_t>((q / nr) * k * nr + r * nr + q % nr)], want)
              << "iteration " << iter << " nr " << nr << " position " << p0 + q << " tap " << r;
        }
      }
      if (nr == 16 && avx512) {
        std::vector<float> fast(got.size(), 99.0f);
        f32_im2col_panels16__avx512(g, x.data(), p0, count, fast.data());
        ASSERT_EQ(fast, got) << "iteration " << iter;
      }
    }
  }
}

}  // namespace
// Column blocks: a multiple of 16 between 64 and 1024 positions, ~96 Ki floats (384 KB) of
// columns, never more than the image has.
TEST(Im2colBlockColumns, SizedForL2AndClampedToTheImage) {
  EXPECT_EQ(im2col_block_columns(27, 12544), 1024);   // 3x3x3 stem: the 1024 ceiling
  EXPECT_EQ(im2col_block_columns(200, 12544), 480);   // 98304 / 200 = 491 -> 480
  EXPECT_EQ(im2col_block_columns(4608, 49), 49);      // 512x3x3 at 7x7: 64 > 49 positions
  EXPECT_EQ(im2col_block_columns(4608, 3136), 64);    // deep: the 64-column floor
  EXPECT_EQ(im2col_block_columns(1, 100000), 1024);   // shallow: the 1024 ceiling
  EXPECT_EQ(im2col_block_columns(0, 500), 500);
  for (int64_t k = 1; k < 5000; k += 37) {
    const int64_t nb = im2col_block_columns(k, 1 << 20);
    EXPECT_EQ(nb % 16, 0) << k;
    EXPECT_GE(nb, 64) << k;
    EXPECT_LE(nb, 1024) << k;
    if (nb > 64 && nb < 1024) {
      EXPECT_LE(nb * k, 96 << 10) << k;
      EXPECT_GT((nb + 16) * k, 96 << 10) << k;
    }
  }
}

}  // namespace xnn::kernels
