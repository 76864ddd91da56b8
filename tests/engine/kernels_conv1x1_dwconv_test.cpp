// The banded 1x1 conv -> depthwise conv driver (engine/kernels/conv1x1_dwconv.h), and the
// depthwise -> 1x1 one, against the two stages run one after the other (f32_gemm into a whole intermediate tensor, then f32_dwconv):
// channel counts around the 16-lane blocks, widths that leave narrow GEMM panels in a band, every
// depthwise kernel and stride, paddings up to past the kernel, several bands and thread ranges,
// residual and activations. AVX-512 only (the driver's domain).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "engine/core/thread_pool.h"
#include "engine/kernels/conv1x1_dwconv.h"

namespace xnn::kernels {
namespace {

std::vector<float> random_vector(std::mt19937& rng, int64_t n) {
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = d(rng);
  return v;
}

struct PairCase {
  int64_t cin, channels, h, w, kernel, stride, pad;
  bool residual;
  Activation act1, act2;
};

// Runs the case both ways at `threads` threads; returns the largest difference relative to the
// largest output magnitude (0 when every output matches bit for bit).
double compare(const PairCase& c, int threads, std::mt19937& rng) {
  const int64_t oh = (c.h + 2 * c.pad - c.kernel) / c.stride + 1, ow = (c.w + 2 * c.pad - c.kernel) / c.stride + 1;
  const DepthwiseParams p{c.channels, c.h, c.w, oh, ow, c.kernel, c.stride, c.pad, c.pad};
  const std::vector<float> x = random_vector(rng, c.cin * c.h * c.w), w1 = random_vector(rng, c.channels * c.cin),
                           b1 = random_vector(rng, c.channels),
                           wd = random_vector(rng, c.channels * c.kernel * c.kernel),
                           bd = random_vector(rng, c.channels);
  const int64_t out_size = c.channels * p.out_h * p.out_w;
  const std::vector<float> res = random_vector(rng, out_size);
  const PackedA packed(c.channels, c.cin, MatrixRef{w1.data(), c.cin, 1}, Isa::kAvx2);
  EXPECT_TRUE(conv1x1_dwconv_supported(packed, p, Isa::kAvx2));
  const float* residual = c.residual ? res.data() : nullptr;
  ThreadPool pool(threads);

  std::vector<float> mid(static_cast<size_t>(c.channels * c.h * c.w)), want(static_cast<size_t>(out_size));
  f32_gemm(packed, c.h * c.w, MatrixRef{x.data(), c.h * c.w, 1}, mid.data(), c.h * c.w,
           GemmEpilogue{b1.data(), nullptr, 0, c.act1}, &pool);
  f32_dwconv(p, mid.data(), wd.data(), bd.data(), residual, c.act2, want.data(), &pool, Isa::kAvx2);

  std::vector<float> got(static_cast<size_t>(out_size), std::nanf(""));
  const Conv1x1Stage expand{&packed, b1.data(), c.act1};
  const DwconvStage depthwise{p, wd.data(), bd.data(), residual, c.act2};
  f32_conv1x1_dwconv(expand, depthwise, x.data(), got.data(), &pool);
  double max_ref = 0, max_diff = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    max_ref = std::max(max_ref, static_cast<double>(std::fabs(want[i])));
    max_diff = std::isnan(got[i]) ? 1e30 : std::max(max_diff, static_cast<double>(std::fabs(got[i] - want[i])));
  }
  return max_diff / std::max(max_ref, 1.0);
}

class Conv1x1DwconvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!avx512_enabled()) GTEST_SKIP() << "the banded driver runs the AVX-512 depthwise kernel";
  }
};

// Shapes of MobileNet-style bottlenecks, several bands each (96 channels x 80 columns: 12 input
// rows per band), at 1-3 threads; widths of 56 and 28 leave 8- and 4-column panels in some
// bands. Equal to the unfused pair within fp32 rounding (exactly, but for the narrow panels'
// two-chain sums).
TEST_F(Conv1x1DwconvTest, MatchesTheTwoStagesOverBandsAndThreads) {
  std::mt19937 rng(5);
  const Activation relu6 = Activation::clip(0.0f, 6.0f);
  const std::vector<PairCase> cases = {
      {16, 96, 80, 80, 3, 2, 1, false, relu6, relu6},  {24, 96, 61, 56, 3, 1, 1, false, relu6, relu6},
      {16, 40, 97, 28, 5, 2, 2, false, Activation{ActKind::kSilu}, Activation{ActKind::kSilu}},
      {8, 72, 45, 37, 7, 1, 3, true, Activation::relu(), Activation{}},
      {3, 17, 30, 33, 5, 1, 4, true, Activation{ActKind::kHardSwish}, Activation::leaky_relu(0.1f)},
      {32, 144, 40, 40, 3, 1, 0, false, relu6, relu6},  {12, 96, 9, 7, 3, 2, 1, false, Activation{}, Activation{}},
      {5, 33, 70, 19, 7, 2, 0, true, Activation{ActKind::kSigmoid}, relu6},
  };
  for (const PairCase& c : cases) {
    for (int threads : {1, 2, 3}) {
      EXPECT_LE(compare(c, threads, rng), 1e-6)
          << c.cin << "->" << c.channels << " " << c.h << "x" << c.w << " k" << c.kernel << " s" << c.stride << " pad "
          << c.pad << " threads " << threads;
    }
  }
}

// Random shapes, several bands and a single one.
TEST_F(Conv1x1DwconvTest, RandomShapesMatchTheTwoStages) {
  std::mt19937 rng(9);
  const Activation acts[] = {Activation{}, Activation::relu(), Activation::clip(0.0f, 6.0f), Activation{ActKind::kSilu}};
  for (int trial = 0; trial < 40; ++trial) {
    PairCase c;
    c.kernel = std::vector<int64_t>{3, 3, 5, 7}[rng() % 4];
    c.stride = 1 + static_cast<int64_t>(rng() % 2);
    c.pad = static_cast<int64_t>(rng() % (c.kernel / 2 + 2));
    c.cin = 1 + static_cast<int64_t>(rng() % 40);
    c.channels = 1 + static_cast<int64_t>(rng() % 120);
    c.h = c.kernel + static_cast<int64_t>(rng() % 90);
    c.w = c.kernel + static_cast<int64_t>(rng() % 90);
    c.residual = rng() % 3 == 0;
    c.act1 = acts[rng() % 4];
    c.act2 = acts[rng() % 4];
    const int threads = 1 + static_cast<int>(rng() % 3);
    EXPECT_LE(compare(c, threads, rng), 1e-6) << "trial " << trial << ": " << c.cin << "->" << c.channels << " "
                                              << c.h << "x" << c.w << " k" << c.kernel << " s" << c.stride;
  }
}

// The other order: a depthwise conv whose output a 1x1 conv reads (with its residual), against
// f32_dwconv into a whole intermediate then f32_gemm; bands of output rows over 1-3 threads.
double compare_projection(const PairCase& c, int64_t cout, int threads, std::mt19937& rng) {
  const int64_t oh = (c.h + 2 * c.pad - c.kernel) / c.stride + 1, ow = (c.w + 2 * c.pad - c.kernel) / c.stride + 1;
  const DepthwiseParams p{c.channels, c.h, c.w, oh, ow, c.kernel, c.stride, c.pad, c.pad};
  const std::vector<float> x = random_vector(rng, c.channels * c.h * c.w),
                           wd = random_vector(rng, c.channels * c.kernel * c.kernel), bd = random_vector(rng, c.channels),
                           w2 = random_vector(rng, cout * c.channels), b2 = random_vector(rng, cout),
                           res = random_vector(rng, cout * oh * ow);
  const PackedA packed(cout, c.channels, MatrixRef{w2.data(), c.channels, 1}, Isa::kAvx2);
  EXPECT_TRUE(dwconv_conv1x1_supported(p, packed, Isa::kAvx2));
  const float* residual = c.residual ? res.data() : nullptr;
  ThreadPool pool(threads);
  std::vector<float> mid(static_cast<size_t>(c.channels * oh * ow)), want(static_cast<size_t>(cout * oh * ow));
  f32_dwconv(p, x.data(), wd.data(), bd.data(), nullptr, c.act1, mid.data(), &pool, Isa::kAvx2);
  f32_gemm(packed, oh * ow, MatrixRef{mid.data(), oh * ow, 1}, want.data(), oh * ow,
           GemmEpilogue{b2.data(), residual, oh * ow, c.act2}, &pool);
  std::vector<float> got(want.size(), std::nanf(""));
  f32_dwconv_conv1x1(DwconvStage{p, wd.data(), bd.data(), nullptr, c.act1},
                     Conv1x1Stage{&packed, b2.data(), c.act2, residual}, x.data(), got.data(), &pool);
  double max_ref = 0, max_diff = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    max_ref = std::max(max_ref, static_cast<double>(std::fabs(want[i])));
    max_diff = std::isnan(got[i]) ? 1e30 : std::max(max_diff, static_cast<double>(std::fabs(got[i] - want[i])));
  }
  return max_diff / std::max(max_ref, 1.0);
}

// Projection shapes of MobileNetV2 (144 @ 56 -> 24 with residual, 32 @ 112 -> 16), several bands,
// plus random ones.
TEST_F(Conv1x1DwconvTest, DepthwiseThenProjectionMatchesTheTwoStages) {
  std::mt19937 rng(13);
  const Activation relu6 = Activation::clip(0.0f, 6.0f);
  const std::vector<std::pair<PairCase, int64_t>> cases = {
      {{0, 144, 56, 56, 3, 1, 1, true, relu6, Activation{}}, 24},
      {{0, 32, 112, 112, 3, 1, 1, false, relu6, Activation{}}, 16},
      {{0, 96, 61, 47, 3, 2, 1, true, Activation{ActKind::kSilu}, Activation::relu()}, 40},
      {{0, 40, 33, 50, 5, 1, 2, false, relu6, Activation{ActKind::kHardSwish}}, 7},
      {{0, 17, 20, 9, 7, 2, 3, true, Activation{}, Activation{}}, 33},
  };
  for (const auto& [c, cout] : cases) {
    for (int threads : {1, 2, 3}) {
      EXPECT_LE(compare_projection(c, cout, threads, rng), 1e-6)
          << c.channels << "@" << c.h << "x" << c.w << " k" << c.kernel << " s" << c.stride << " -> " << cout
          << " threads " << threads;
    }
  }
  for (int trial = 0; trial < 20; ++trial) {
    PairCase c{};
    c.kernel = std::vector<int64_t>{3, 3, 5, 7}[rng() % 4];
    c.stride = 1 + static_cast<int64_t>(rng() % 2);
    c.pad = static_cast<int64_t>(rng() % (c.kernel / 2 + 2));
    c.channels = 1 + static_cast<int64_t>(rng() % 160);
    c.h = c.kernel + static_cast<int64_t>(rng() % 80);
    c.w = c.kernel + static_cast<int64_t>(rng() % 80);
    c.residual = rng() % 2 == 0;
    c.act1 = Activation::clip(0.0f, 6.0f);
    const int64_t cout = 1 + static_cast<int64_t>(rng() % 48);
    EXPECT_LE(compare_projection(c, cout, 1 + static_cast<int>(rng() % 3), rng), 1e-6) << "trial " << trial;
  }
}

// Bands hold about 384 KB of input rows (depthwise then 1x1: of depthwise output rows), at least
// one output row and at most the whole plane.
TEST(Conv1x1DwconvBands, RowsPerBandFollowTheBudget) {
  DepthwiseParams p;
  p.channels = 96, p.in_h = p.in_w = 112, p.kernel = 3, p.stride = 2, p.out_h = p.out_w = 56;
  // 96 x 112 floats = 43008 bytes a row: 9 input rows, so 4 output rows at stride 2.
  EXPECT_EQ(conv1x1_dwconv_band_rows(p), 4);
  p.stride = 1, p.out_h = p.out_w = 112;
  EXPECT_EQ(conv1x1_dwconv_band_rows(p), 7);
  p.channels = 4096;  // a single row over budget: one output row per band
  EXPECT_EQ(conv1x1_dwconv_band_rows(p), 1);
  p.channels = 8, p.in_h = p.in_w = 14, p.out_h = p.out_w = 14;  // the whole plane fits
  EXPECT_EQ(conv1x1_dwconv_band_rows(p), 14);
  // Depthwise then 1x1: about 384 KB of depthwise output rows (144 x 56 floats: 32256 bytes a row).
  p.channels = 144, p.in_h = p.in_w = p.out_h = p.out_w = 56;
  EXPECT_EQ(dwconv_conv1x1_band_rows(p), 12);
  p.channels = 8, p.in_h = p.in_w = p.out_h = p.out_w = 14;
  EXPECT_EQ(dwconv_conv1x1_band_rows(p), 14);
}

}  // namespace
}  // namespace xnn::kernels
