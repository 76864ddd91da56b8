// Tests for the Winograd 3×3 convolution (engine/kernels/winograd.{h,cpp}, winograd_avx2.cpp):
// every tile × ISA against a double-precision direct convolution on random small shapes
// (channel counts that are not multiples of the vector width, images smaller than one tile,
// asymmetric padding, outputs not multiples of the tile, every epilogue variant, 1–3 threads),
// and the project's 1e-4 error budget on a ResNet-18 layer.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "engine/core/thread_pool.h"
#include "engine/kernels/winograd.h"

namespace xnn::kernels {
namespace {

struct ConvCase {
  int64_t cin, cout, h, w, pad_t, pad_l, pad_b, pad_r;
  bool bias = false, residual = false;
  Activation act;
  int64_t oh() const { return h + pad_t + pad_b - 2; }
  int64_t ow() const { return w + pad_l + pad_r - 2; }
  std::string str() const {
    char buf[200];
    std::snprintf(
        buf, sizeof(buf), "cin=%lld cout=%lld h=%lld w=%lld pads(t,l,b,r)=%lld,%lld,%lld,%lld bias=%d res=%d act=%s",
        static_cast<long long>(cin), static_cast<long long>(cout), static_cast<long long>(h), static_cast<long long>(w),
        static_cast<long long>(pad_t), static_cast<long long>(pad_l), static_cast<long long>(pad_b),
        static_cast<long long>(pad_r), bias, residual, act_kind_name(act.kind));
    return buf;
  }
};

struct ConvData {
  std::vector<float> input, weights, bias, residual;
};

ConvData make_data(const ConvCase& c, std::mt19937& rng) {
  ConvData d;
  std::normal_distribution<float> unit(0.0f, 1.0f);
  std::normal_distribution<float> kaiming(0.0f, std::sqrt(2.0f / (9.0f * static_cast<float>(c.cin))));
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  d.input.resize(static_cast<size_t>(c.cin * c.h * c.w));
  for (float& x : d.input) x = unit(rng);
  d.weights.resize(static_cast<size_t>(c.cout * c.cin * 9));
  for (float& x : d.weights) x = kaiming(rng);
  if (c.bias) {
    d.bias.resize(static_cast<size_t>(c.cout));
    for (float& x : d.bias) x = uni(rng);
  }
  if (c.residual) {
    d.residual.resize(static_cast<size_t>(c.cout * c.oh() * c.ow()));
    for (float& x : d.residual) x = unit(rng);
  }
  return d;
}

double activate(double x, const Activation& a) {
  switch (a.kind) {
    case ActKind::kRelu: return x > 0 ? x : 0;
    case ActKind::kClip: return std::min<double>(std::max<double>(x, a.alpha), a.beta);
    case ActKind::kLeakyRelu: return x >= 0 ? x : x * a.alpha;
    default: return x;
  }
}

// Direct convolution in double, with the epilogue.
std::vector<double> reference(const ConvCase& c, const ConvData& d) {
  const int64_t oh = c.oh(), ow = c.ow();
  std::vector<double> out(static_cast<size_t>(c.cout * oh * ow), 0.0);
  for (int64_t co = 0; co < c.cout; ++co) {
    double* o = out.data() + co * oh * ow;
    for (int64_t ci = 0; ci < c.cin; ++ci) {
      const float* in = d.input.data() + ci * c.h * c.w;
      const float* k = d.weights.data() + (co * c.cin + ci) * 9;
      for (int64_t ky = 0; ky < 3; ++ky) {
        for (int64_t kx = 0; kx < 3; ++kx) {
          const double wv = k[ky * 3 + kx];
          for (int64_t y = 0; y < oh; ++y) {
            const int64_t iy = y + ky - c.pad_t;
            if (iy < 0 || iy >= c.h) continue;
            for (int64_t x = 0; x < ow; ++x) {
              const int64_t ix = x + kx - c.pad_l;
              if (ix >= 0 && ix < c.w) o[y * ow + x] += wv * in[iy * c.w + ix];
            }
          }
        }
      }
    }
    for (int64_t i = 0; i < oh * ow; ++i) {
      double x = o[i];
      if (c.bias) x += d.bias[static_cast<size_t>(co)];
      if (c.residual) x += d.residual[static_cast<size_t>(co * oh * ow + i)];
      o[i] = activate(x, c.act);
    }
  }
  return out;
}

std::vector<float> run_winograd(const ConvCase& c, const ConvData& d, WinogradTile tile, Isa isa, int threads,
                                WinogradWeights storage = WinogradWeights::kAuto) {
  const WinogradConv3x3 conv(c.cout, c.cin, d.weights.data(), tile, isa, storage);
  // NaN-filled, so an output the kernel forgets to write fails the comparison.
  std::vector<float> out(static_cast<size_t>(c.cout * c.oh() * c.ow()), std::nanf(""));
  ConvEpilogue ep;
  ep.bias = c.bias ? d.bias.data() : nullptr;
  ep.residual = c.residual ? d.residual.data() : nullptr;
  ep.act = c.act;
  ThreadPool pool(threads);
  conv.run(d.input.data(), c.h, c.w, c.pad_t, c.pad_l, out.data(), c.oh(), c.ow(), ep, threads > 1 ? &pool : nullptr);
  return out;
}

// max |got - ref| / max(1, max |ref|): the project's error measure.
double relative_error(const std::vector<float>& got, const std::vector<double>& ref) {
  double err = 0, scale = 1;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double e = std::fabs(static_cast<double>(got[i]) - ref[i]);
    err = std::isnan(e) ? INFINITY : std::max(err, e);
    scale = std::max(scale, std::fabs(ref[i]));
  }
  return err / scale;
}

// Few input channels leave little rounding error, so a tolerance well under the 1e-4 budget
// there; deep sums get the budget.
double tolerance(const ConvCase& c) { return c.cin <= 32 ? 1e-5 : 1e-4; }

// Tile, ISA and weight storage (transformed once, or raw and transformed per run).
using Variant = std::tuple<WinogradTile, Isa, WinogradWeights>;

class WinogradConv : public ::testing::TestWithParam<Variant> {
 protected:
  void SetUp() override {
    if (!isa_supported(isa())) GTEST_SKIP() << "AVX2+FMA not supported on this CPU";
  }
  WinogradTile tile() const { return std::get<0>(GetParam()); }
  Isa isa() const { return std::get<1>(GetParam()); }
  WinogradWeights storage() const { return std::get<2>(GetParam()); }
  std::vector<float> run(const ConvCase& c, const ConvData& d, int threads) const {
    return run_winograd(c, d, tile(), isa(), threads, storage());
  }
};

TEST_P(WinogradConv, RandomSmallShapesAllEpilogues) {
  std::mt19937 rng(1234 + static_cast<int>(tile()) * 10 + static_cast<int>(isa()));
  const int64_t channels[] = {1, 3, 8, 17};
  const int64_t sizes[] = {1, 2, 5, 7, 13, 16};
  const Activation acts[] = {Activation{}, Activation::relu(), Activation::clip(0.0f, 6.0f),
                             Activation::leaky_relu(0.1f)};
  auto pick = [&](const auto& arr) { return arr[std::uniform_int_distribution<size_t>(0, std::size(arr) - 1)(rng)]; };
  int checked = 0;
  for (int iter = 0; checked < 120 && iter < 1000; ++iter) {
    ConvCase c;
    c.cin = pick(channels);
    c.cout = pick(channels);
    c.h = pick(sizes);
    c.w = pick(sizes);
    std::uniform_int_distribution<int64_t> pad(0, 2);
    c.pad_t = pad(rng);
    c.pad_l = pad(rng);
    // Mostly symmetric "same"/"valid" padding, sometimes asymmetric.
    const bool asym = rng() % 3 == 0;
    c.pad_b = asym ? pad(rng) : c.pad_t;
    c.pad_r = asym ? pad(rng) : c.pad_l;
    if (c.oh() <= 0 || c.ow() <= 0) continue;
    c.bias = rng() % 2;
    c.residual = rng() % 2;
    c.act = pick(acts);
    const ConvData d = make_data(c, rng);
    const std::vector<double> ref = reference(c, d);
    for (int threads : {1, 2}) {
      const double err = relative_error(run(c, d, threads), ref);
      ASSERT_LE(err, 1e-5) << c.str() << " threads=" << threads;
    }
    ++checked;
  }
  EXPECT_EQ(checked, 120);
}

// Fixed shapes that exercise each code path on purpose: one tile, a partial last tile in both
// directions, 8-channel groups with a partial last group, more than one 16-channel GEMM panel,
// pixel runs of 8 in the packing, images smaller than the padding, and more input channels
// than one raw-weight chunk (partial sums accumulated in M).
TEST_P(WinogradConv, EdgeShapes) {
  std::mt19937 rng(99);
  const ConvCase cases[] = {
      {1, 1, 1, 1, 1, 1, 1, 1, true, false, Activation{}},
      {3, 5, 3, 3, 0, 0, 0, 0, false, false, Activation{}},
      {8, 16, 8, 8, 1, 1, 1, 1, true, true, Activation::relu()},
      {17, 33, 16, 13, 1, 1, 1, 1, true, true, Activation::clip(0.0f, 6.0f)},
      {9, 17, 19, 23, 2, 0, 1, 2, true, false, Activation::relu()},
      {16, 40, 25, 26, 1, 2, 0, 0, false, true, Activation{}},
      {2, 3, 2, 1, 2, 2, 2, 2, true, true, Activation::relu()},
      {24, 24, 12, 12, 1, 1, 1, 1, false, false, Activation::leaky_relu(0.2f)},
      // More input channels than one raw-weight transform chunk (F(4,3): 112, F(6,3): 64).
      {150, 20, 9, 8, 1, 1, 1, 1, true, true, Activation::clip(0.0f, 6.0f)},
  };
  for (const ConvCase& c : cases) {
    const ConvData d = make_data(c, rng);
    const std::vector<double> ref = reference(c, d);
    for (int threads : {1, 2, 3}) {
      const double err = relative_error(run(c, d, threads), ref);
      EXPECT_LE(err, tolerance(c)) << c.str() << " threads=" << threads;
    }
  }
}

TEST_P(WinogradConv, InPlaceResidual) {
  std::mt19937 rng(7);
  const ConvCase c{12, 20, 15, 14, 1, 1, 1, 1, true, true, Activation::relu()};
  const ConvData d = make_data(c, rng);
  const std::vector<double> ref = reference(c, d);
  const WinogradConv3x3 conv(c.cout, c.cin, d.weights.data(), tile(), isa(), storage());
  std::vector<float> out = d.residual;
  const ConvEpilogue ep{d.bias.data(), out.data(), Activation::relu()};
  conv.run(d.input.data(), c.h, c.w, c.pad_t, c.pad_l, out.data(), c.oh(), c.ow(), ep, nullptr);
  EXPECT_LE(relative_error(out, ref), 1e-5);
}

// Every thread count and all parallel schedules (blocks of tiles per task for large images, one
// block per thread for mid-size ones such as SqueezeNet's 32->128 @ 27x27, stages split across
// tasks for small ones) compute each output with the same operations in the same order, so the
// results are bit-identical.
TEST_P(WinogradConv, ThreadCountsAgreeBitwise) {
  std::mt19937 rng(5);
  for (const ConvCase& c : {ConvCase{32, 48, 60, 50, 1, 1, 1, 1, true, true, Activation::relu()},
                            ConvCase{32, 128, 27, 27, 1, 1, 1, 1, true, false, Activation::relu()},
                            ConvCase{64, 64, 7, 7, 1, 1, 1, 1, true, false, Activation{}}}) {
    const ConvData d = make_data(c, rng);
    const std::vector<float> one = run(c, d, 1);
    for (int threads : {2, 3, 4}) {
      EXPECT_TRUE(one == run(c, d, threads)) << c.str() << " threads=" << threads;
    }
  }
}

TEST_P(WinogradConv, NameAndPackedSize) {
  const int64_t cout = 20, cin = 3;
  std::vector<float> w(static_cast<size_t>(cout * cin * 9), 0.5f);
  const WinogradConv3x3 conv(cout, cin, w.data(), tile(), isa(), storage());
  const std::string expect = std::string("f32_conv3x3s1_winograd_") + (tile() == WinogradTile::kF43 ? "f43" : "f63") +
                             "__" + std::string(isa_name(isa()));
  EXPECT_EQ(conv.name(), expect);
  const size_t alpha = static_cast<size_t>(tile()) + 2;
  const size_t per_pair = storage() == WinogradWeights::kRaw ? 9 : alpha * alpha;
  EXPECT_EQ(conv.raw_weights(), storage() == WinogradWeights::kRaw);
  EXPECT_EQ(conv.packed_weight_bytes(), per_pair * 32 * cin * sizeof(float));  // cout padded to 16
}

// The 1e-4 budget on a ResNet-18 layer (256 channels at 14×14, pad 1: deep sums, and the layer
// where both weight storages are plausible), every tile × ISA × storage. All four ResNet-18
// layers are in DISABLED_ErrorReport.
TEST_P(WinogradConv, ResNetLayerWithinErrorBudget) {
  std::mt19937 rng(2024);
  const ConvCase c{256, 256, 14, 14, 1, 1, 1, 1, false, false, Activation{}};
  const ConvData d = make_data(c, rng);
  const double err = relative_error(run(c, d, 2), reference(c, d));
  EXPECT_LE(err, 1e-4) << c.str();
  std::printf("[ error   ] %s: %.3g\n", c.str().c_str(), err);
}

std::string param_name(const ::testing::TestParamInfo<Variant>& info) {
  return std::string(std::get<0>(info.param) == WinogradTile::kF43 ? "F43" : "F63") + "_" +
         std::string(isa_name(std::get<1>(info.param))) +
         (std::get<2>(info.param) == WinogradWeights::kRaw ? "_raw" : "_transformed");
}

INSTANTIATE_TEST_SUITE_P(Winograd, WinogradConv,
                         ::testing::Combine(::testing::Values(WinogradTile::kF43, WinogradTile::kF63),
                                            ::testing::Values(Isa::kScalar, Isa::kAvx2),
                                            ::testing::Values(WinogradWeights::kTransformed, WinogradWeights::kRaw)),
                         param_name);

// kAuto keeps U when it is small and the raw weights when U would be large.
TEST(WinogradWeightStorage, AutoFollowsTransformedSize) {
  std::vector<float> w(static_cast<size_t>(512 * 512 * 9), 0.01f);
  EXPECT_FALSE(WinogradConv3x3(128, 128, w.data(), WinogradTile::kF63, Isa::kScalar).raw_weights());  // 4 MiB
  EXPECT_TRUE(WinogradConv3x3(256, 256, w.data(), WinogradTile::kF43, Isa::kScalar).raw_weights());   // 9 MiB
  EXPECT_TRUE(WinogradConv3x3(512, 512, w.data(), WinogradTile::kF43, Isa::kScalar).raw_weights());
}

TEST(WinogradSelection, Rule) {
  // ResNet-18's 3×3 stride-1 layers: F(4,3) (F(6,3) saves only 9% at 56 and 28, 0% below).
  // With AVX-512, 512 @ 7 (4 tiles, raw weights) takes the zmm im2col GEMM instead.
  for (Isa isa : {Isa::kScalar, Isa::kAvx2}) {
    for (int64_t ch : {64, 128, 256, 512}) {
      const int64_t size = 56 * 64 / ch;
      if (ch == 512 && isa == Isa::kAvx2 && avx512_enabled()) {
        EXPECT_FALSE(choose_winograd_tile(ch, ch, size, size, isa).has_value());
      } else {
        EXPECT_EQ(choose_winograd_tile(ch, ch, size, size, isa), WinogradTile::kF43) << ch;
      }
    }
  }
  // Few tiles with transformed weights: Winograd, but with AVX-512 the plane and U decide: at
  // 14x14 and below, U over 2.5 MiB costs more to stream than F(4,3) saves over the zmm im2col
  // GEMM (GoogLeNet's 128->256 @ 14: U 4.7 MB); smaller U (SqueezeNet's 64->256 @ 13: 2.4 MB,
  // 128 @ 7: 2.4 MB) and 27x27 or 28x28 planes stay Winograd.
  const bool zmm = avx512_enabled();
  EXPECT_EQ(choose_winograd_tile(128, 128, 7, 7, Isa::kAvx2), WinogradTile::kF43);
  EXPECT_EQ(choose_winograd_tile(64, 256, 13, 13, Isa::kAvx2), WinogradTile::kF43);
  EXPECT_EQ(choose_winograd_tile(128, 256, 14, 14, Isa::kScalar), WinogradTile::kF43);
  EXPECT_EQ(choose_winograd_tile(128, 256, 14, 14, Isa::kAvx2).has_value(), !zmm);
  EXPECT_EQ(choose_winograd_tile(160, 320, 7, 7, Isa::kAvx2).has_value(), !zmm);
  EXPECT_EQ(choose_winograd_tile(256, 256, 28, 28, Isa::kAvx2), WinogradTile::kF43);
  // Many tiles with raw weights keep Winograd (512 @ 14: 16 tiles).
  EXPECT_EQ(choose_winograd_tile(512, 512, 14, 14, Isa::kAvx2), WinogradTile::kF43);
  // Sizes that split into 6×6 tiles: F(6,3) on AVX2, while its weights stay transformed.
  EXPECT_EQ(choose_winograd_tile(64, 64, 48, 48, Isa::kAvx2), WinogradTile::kF63);
  EXPECT_EQ(choose_winograd_tile(128, 128, 24, 24, Isa::kAvx2), WinogradTile::kF63);
  EXPECT_EQ(choose_winograd_tile(64, 64, 48, 48, Isa::kScalar), WinogradTile::kF43);
  EXPECT_EQ(choose_winograd_tile(512, 512, 48, 48, Isa::kAvx2), WinogradTile::kF43);
  for (Isa isa : {Isa::kScalar, Isa::kAvx2}) {
    EXPECT_FALSE(choose_winograd_tile(3, 64, 112, 112, isa).has_value());  // too few channels
    EXPECT_FALSE(choose_winograd_tile(64, 4, 56, 56, isa).has_value());
    EXPECT_FALSE(choose_winograd_tile(64, 64, 2, 2, isa).has_value());  // one tile, mostly padding
    EXPECT_FALSE(choose_winograd_tile(64, 64, 0, 5, isa).has_value());
    EXPECT_TRUE(choose_winograd_tile(8, 8, 56, 56, isa).has_value());
  }
}

// The figures behind the selection rule's accuracy column: every ResNet-18 3×3 layer, both tiles,
// both weight storages. Slow (double-precision direct convolutions); run with
// --gtest_also_run_disabled_tests.
TEST(WinogradAccuracy, DISABLED_ErrorReport) {
  const Isa isa = best_isa();
  for (int64_t ch : {64, 128, 256, 512}) {
    const int64_t size = 56 * 64 / ch;
    const ConvCase c{ch, ch, size, size, 1, 1, 1, 1, false, false, Activation{}};
    std::mt19937 rng(static_cast<unsigned>(ch));
    const ConvData d = make_data(c, rng);
    const std::vector<double> ref = reference(c, d);
    for (WinogradTile tile : {WinogradTile::kF43, WinogradTile::kF63}) {
      for (WinogradWeights storage : {WinogradWeights::kTransformed, WinogradWeights::kRaw}) {
        const double err = relative_error(run_winograd(c, d, tile, isa, 2, storage), ref);
        std::printf("[ error   ] %s %s %s %lld@%lld: %.3g\n", tile == WinogradTile::kF43 ? "F(4,3)" : "F(6,3)",
                    std::string(isa_name(isa)).c_str(), storage == WinogradWeights::kRaw ? "raw" : "transformed",
                    static_cast<long long>(ch), static_cast<long long>(size), err);
        EXPECT_LE(err, 1e-4);
      }
    }
  }
}

}  // namespace
}  // namespace xnn::kernels
