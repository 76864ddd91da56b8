// Int8 GEMM (engine/kernels/qgemm.h) and requantisation (requantize.h): the reference against a
// double-precision computation, and every packed path (scalar 4x8c2, AVX2 6x16c2, AVX2 4x16c4
// for 7-bit weights, AVX2 layouts through the scalar kernels) against the reference, byte for
// byte: tail-heavy sizes, random zero points / multipliers / clamps, extreme values that would
// saturate vpmaddubsw, column blocks, row strides, 1 and 2 threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/thread_pool.h"
#include "engine/kernels/cpu_features.h"
#include "engine/kernels/qgemm.h"
#include "engine/kernels/qgemv.h"

namespace xnn::kernels {
namespace {

std::vector<int8_t> random_weights(std::mt19937& rng, int64_t n, int lo = -128, int hi = 127) {
  std::uniform_int_distribution<int> d(lo, hi);
  std::vector<int8_t> v(static_cast<size_t>(n));
  for (int8_t& x : v) x = static_cast<int8_t>(d(rng));
  return v;
}

std::vector<uint8_t> random_activations(std::mt19937& rng, int64_t n) {
  std::uniform_int_distribution<int> d(0, 255);
  std::vector<uint8_t> v(static_cast<size_t>(n));
  for (uint8_t& x : v) x = static_cast<uint8_t>(d(rng));
  return v;
}

std::vector<int32_t> random_bias(std::mt19937& rng, int64_t n, int32_t mag = 20000) {
  std::uniform_int_distribution<int32_t> d(-mag, mag);
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (int32_t& x : v) x = d(rng);
  return v;
}

// Multipliers that spread typical accumulators (≈ √K · 74 · 74) over a good part of 0..255.
std::vector<float> random_multipliers(std::mt19937& rng, int64_t n, int64_t k) {
  std::uniform_real_distribution<float> d(0.004f, 0.06f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = d(rng) / std::sqrt(static_cast<float>(k) + 1.0f);
  return v;
}

// One GEMM problem with its reference output.
struct Problem {
  int64_t m = 0, n = 0, k = 0, ldw = 0, ldx = 0, ldy = 0;
  std::vector<int8_t> w;
  std::vector<uint8_t> x;
  std::vector<int32_t> bias;
  std::vector<float> mult;
  uint8_t x_zp = 0;
  QRequant rq;
  std::vector<uint8_t> want;

  void finish() {
    rq.multiplier = mult.data();
    want.assign(static_cast<size_t>((m - 1) * ldy + n), 0);
    qs8_gemm_reference(m, n, k, w.data(), ldw, bias.empty() ? nullptr : bias.data(), x.data(), ldx, x_zp, rq,
                       want.data(), ldy);
  }
};

Problem random_problem(std::mt19937& rng, int64_t m, int64_t n, int64_t k, int w_lo = -128, int w_hi = 127) {
  Problem p;
  p.m = m, p.n = n, p.k = k, p.ldw = k, p.ldx = n, p.ldy = n;
  p.w = random_weights(rng, m * k, w_lo, w_hi);
  p.x = random_activations(rng, k * n);
  p.bias = random_bias(rng, m);
  p.mult = random_multipliers(rng, m, k);
  std::uniform_int_distribution<int> zp(0, 255);
  p.x_zp = static_cast<uint8_t>(zp(rng));
  p.rq.zero_point = zp(rng);
  // Half of the problems clamp (a fused ReLU / ReLU6-like window).
  if (rng() % 2) {
    std::uniform_int_distribution<int> lo(0, 120), width(0, 135);
    p.rq.qmin = static_cast<uint8_t>(lo(rng));
    p.rq.qmax = static_cast<uint8_t>(p.rq.qmin + width(rng));
  }
  p.finish();
  return p;
}

// A packed path: the ISA, and on AVX2 the kernel family (plain AVX2, VNNI on ymm, VNNI on zmm).
struct QGemmPath {
  Isa isa;
  Qs8Kernels family;
  const char* name;
};

std::vector<uint8_t> run_packed(const Problem& p, const QGemmPath& path, ThreadPool* pool = nullptr,
                                std::string* kernel = nullptr) {
  const PackedQs8Weights packed(p.m, p.k, p.w.data(), p.ldw, p.bias.empty() ? nullptr : p.bias.data(), path.isa,
                                path.family);
  if (kernel) *kernel = packed.kernel_name();
  std::vector<uint8_t> y(p.want.size(), 0);
  qs8_gemm(packed, p.n, p.x.data(), p.ldx, p.x_zp, p.rq, y.data(), p.ldy, pool);
  return y;
}

void expect_same(const Problem& p, const std::vector<uint8_t>& got, const std::string& what) {
  for (int64_t i = 0; i < p.m; ++i) {
    for (int64_t j = 0; j < p.n; ++j) {
      const size_t at = static_cast<size_t>(i * p.ldy + j);
      ASSERT_EQ(int{got[at]}, int{p.want[at]}) << what << " m=" << p.m << " n=" << p.n << " k=" << p.k << " at ("
                                               << i << ", " << j << ")";
    }
  }
}

// ---- requantisation --------------------------------------------------------------------------

TEST(QGemmRequantize, RoundsHalfToEvenThenAddsZeroPoint) {
  const float lo = -1000.0f, hi = 1000.0f;
  EXPECT_EQ(requantize(5, 0.5f, lo, hi, 0), 2);    // 2.5 -> 2
  EXPECT_EQ(requantize(7, 0.5f, lo, hi, 0), 4);    // 3.5 -> 4
  EXPECT_EQ(requantize(-5, 0.5f, lo, hi, 10), 8);  // -2.5 -> -2, + 10
  EXPECT_EQ(requantize(-7, 0.5f, lo, hi, 10), 6);  // -3.5 -> -4, + 10
  EXPECT_EQ(requantize(3, 0.25f, lo, hi, 0), 1);   // 0.75 -> 1
  EXPECT_EQ(requantize(0, 0.25f, lo, hi, 128), 128);
}

TEST(QGemmRequantize, ClampsToQminQmaxAroundZeroPoint) {
  QRequant rq;
  rq.zero_point = 100;
  rq.qmin = 100;  // Relu
  rq.qmax = 160;
  const float lo = requant_lower(rq), hi = requant_upper(rq);
  EXPECT_EQ(lo, 0.0f);
  EXPECT_EQ(hi, 60.0f);
  EXPECT_EQ(requantize(-50, 1.0f, lo, hi, 100), 100);
  EXPECT_EQ(requantize(59, 1.0f, lo, hi, 100), 159);
  EXPECT_EQ(requantize(1000000, 1.0f, lo, hi, 100), 160);
  EXPECT_EQ(requantize(std::numeric_limits<int32_t>::max(), 1000.0f, lo, hi, 100), 160);
  EXPECT_EQ(requantize(std::numeric_limits<int32_t>::min(), 1000.0f, lo, hi, 100), 100);
}

TEST(QGemmRequantize, CheckRejectsBadParameters) {
  const float good[2] = {0.5f, 0.25f};
  const float bad[2] = {0.5f, -1.0f};
  const float nan[1] = {std::numeric_limits<float>::quiet_NaN()};
  QRequant rq;
  rq.multiplier = good;
  EXPECT_NO_THROW(check_requant(rq, 2, "test"));
  rq.multiplier = bad;
  EXPECT_THROW(check_requant(rq, 2, "test"), Error);
  rq.multiplier = nan;
  EXPECT_THROW(check_requant(rq, 1, "test"), Error);
  rq.multiplier = good;
  rq.zero_point = 256;
  EXPECT_THROW(check_requant(rq, 2, "test"), Error);
  rq.zero_point = 0;
  rq.qmin = 10;
  rq.qmax = 9;
  try {
    check_requant(rq, 2, "my_op");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("my_op"), std::string::npos) << e.what();
  }
}

TEST(QGemmRequantize, ActivationBoundsFuseReluAndRelu6) {
  const QuantizedBounds none = quantized_activation_bounds({}, 0.05f, 20);
  EXPECT_EQ(none.qmin, 0);
  EXPECT_EQ(none.qmax, 255);
  const QuantizedBounds relu = quantized_activation_bounds(Activation::relu(), 0.05f, 20);
  EXPECT_EQ(relu.qmin, 20);
  EXPECT_EQ(relu.qmax, 255);
  // 6 / 0.05 = 120 steps above the zero point.
  const QuantizedBounds relu6 = quantized_activation_bounds(Activation::clip(0.0f, 6.0f), 0.05f, 20);
  EXPECT_EQ(relu6.qmin, 20);
  EXPECT_EQ(relu6.qmax, 140);
  // A window wider than the uint8 range saturates.
  const QuantizedBounds wide = quantized_activation_bounds(Activation::clip(-100.0f, 100.0f), 0.05f, 20);
  EXPECT_EQ(wide.qmin, 0);
  EXPECT_EQ(wide.qmax, 255);
  EXPECT_THROW(quantized_activation_bounds({ActKind::kSigmoid}, 0.05f, 20), Error);
  EXPECT_THROW(quantized_activation_bounds(Activation::relu(), 0.0f, 20), Error);
}

// ---- reference -------------------------------------------------------------------------------

// The reference against exact integer sums requantised in double: float(acc) and the float
// multiply round, so the result may differ by one step, never more, and rarely at all.
TEST(QGemmReference, MatchesDoublePrecisionWithinRounding) {
  std::mt19937 rng(11);
  int64_t total = 0, off_by_one = 0;
  for (int64_t k : {1, 7, 64, 300, 2304}) {
    Problem p = random_problem(rng, 9, 23, k);
    for (int64_t i = 0; i < p.m; ++i) {
      for (int64_t j = 0; j < p.n; ++j) {
        int64_t acc = p.bias[static_cast<size_t>(i)];
        for (int64_t q = 0; q < k; ++q)
          acc += int64_t{p.w[static_cast<size_t>(i * k + q)]} * (int64_t{p.x[static_cast<size_t>(q * p.n + j)]} - p.x_zp);
        const double scaled = std::nearbyint(static_cast<double>(acc) * p.mult[static_cast<size_t>(i)]);
        const double want = std::clamp(scaled + p.rq.zero_point, static_cast<double>(p.rq.qmin), static_cast<double>(p.rq.qmax));
        const int got = p.want[static_cast<size_t>(i * p.n + j)];
        ASSERT_LE(std::fabs(got - want), 1.0) << "k=" << k << " at (" << i << ", " << j << ") acc=" << acc;
        total++;
        off_by_one += got != want;
      }
    }
  }
  EXPECT_LT(off_by_one * 100, total) << off_by_one << " of " << total << " outputs off by one";
}

TEST(QGemmReference, RejectsAccumulatorOverflow) {
  const int64_t k = 2;
  const int8_t w[2] = {1, 1};
  const uint8_t x[2] = {255, 255};
  const int32_t bias[1] = {std::numeric_limits<int32_t>::max() - 100};
  const float mult[1] = {1.0f};
  QRequant rq;
  rq.multiplier = mult;
  uint8_t y = 0;
  EXPECT_THROW(qs8_gemm_reference(1, 1, k, w, k, bias, x, 1, 0, rq, &y, 1), Error);
}

// ---- packed paths ----------------------------------------------------------------------------

class QGemmIsaTest : public ::testing::TestWithParam<QGemmPath> {
 protected:
  void SetUp() override {
    if (!isa_supported(isa())) GTEST_SKIP() << isa_name(isa()) << " not supported on this CPU";
    if (isa() == Isa::kAvx2 && !qs8_kernels_supported(family()))
      GTEST_SKIP() << GetParam().name << " kernels not supported on this CPU";
  }
  const QGemmPath& path() const { return GetParam(); }
  Isa isa() const { return GetParam().isa; }
  Qs8Kernels family() const { return GetParam().family; }
  bool vnni() const { return isa() == Isa::kAvx2 && family() != Qs8Kernels::kAvx2; }
};

// Sizes around MR (4, 6), NR (8, 16), the narrow kernel (<= 8 columns), K odd / not a multiple of
// 4 (zero-padded groups); full-range weights (c2 on AVX2) and 7-bit weights (c4 on AVX2).
TEST_P(QGemmIsaTest, MatchesReferenceOverSizeCube) {
  const std::vector<int64_t> sizes = {1, 2, 3, 5, 6, 7, 8, 9, 15, 16, 17, 24, 33, 48, 100};
  std::mt19937 rng(1);
  for (bool seven_bit : {false, true}) {
    for (int64_t m : sizes) {
      for (int64_t n : sizes) {
        for (int64_t k : sizes) {
          Problem p = seven_bit ? random_problem(rng, m, n, k, -64, 64) : random_problem(rng, m, n, k);
          std::string kernel;
          const std::vector<uint8_t> y = run_packed(p, path(), nullptr, &kernel);
          expect_same(p, y, kernel);
          if (HasFatalFailure()) return;
        }
      }
    }
  }
}

TEST_P(QGemmIsaTest, ChoosesMaddubsOnlyForSaturationFreeWeights) {
  std::mt19937 rng(2);
  Problem full = random_problem(rng, 8, 8, 64);
  Problem seven = random_problem(rng, 8, 8, 64, -64, 64);
  std::string k_full, k_seven;
  run_packed(full, path(), nullptr, &k_full);
  run_packed(seven, path(), nullptr, &k_seven);
  if (vnni()) {  // vpdpbusd cannot saturate: every weight matrix takes it
    // zmm: 8 rows take the 8-row panels; ymm: the VEX encoding where the CPU has it, else the EVEX one
    const std::string want = family() == Qs8Kernels::kVnni512 ? "qs8_gemm_8x16c4__avx512vnni"
                             : cpu_features().avx_vnni        ? "qs8_gemm_6x16c4__avxvnni"
                                                              : "qs8_gemm_6x16c4__avx512vnni";
    EXPECT_EQ(k_full, want);
    EXPECT_EQ(k_seven, want);
  } else if (isa() == Isa::kAvx2) {
    EXPECT_EQ(k_full, "qs8_gemm_6x16c2__avx2");
    EXPECT_EQ(k_seven, "qs8_gemm_4x16c4__avx2");
  } else {
    EXPECT_EQ(k_full, "qs8_gemm_4x8c2__scalar");
    EXPECT_EQ(k_seven, "qs8_gemm_4x8c2__scalar");
  }
}

// All-extreme operands: with x = 255 every vpmaddubsw pair of full-range weights would saturate
// (255·127·2 > 32767); the c2 path must stay exact. Zero points at both ends, K deep enough to
// put the accumulator near ±2^31 / 4.
TEST_P(QGemmIsaTest, ExtremeValuesAreExact) {
  for (int8_t wv : {int8_t{-128}, int8_t{127}, int8_t{-127}}) {
    for (uint8_t xv : {uint8_t{255}, uint8_t{0}}) {
      for (uint8_t zp : {uint8_t{0}, uint8_t{255}, uint8_t{128}}) {
        for (int64_t k : {1, 2, 3, 4, 5, 1023, 4608}) {
          Problem p;
          p.m = 7, p.n = 19, p.k = k, p.ldw = k, p.ldx = p.n, p.ldy = p.n;
          p.w.assign(static_cast<size_t>(p.m * k), wv);
          p.x.assign(static_cast<size_t>(k * p.n), xv);
          p.bias.assign(static_cast<size_t>(p.m), 0);
          p.x_zp = zp;
          // Multipliers that keep the huge sums inside the output range, so wrong sums show.
          p.mult.assign(static_cast<size_t>(p.m), 100.0f / (128.0f * 255.0f * static_cast<float>(k)));
          p.rq.zero_point = 128;
          p.finish();
          expect_same(p, run_packed(p, path()), "extreme");
          if (HasFatalFailure()) return;
        }
      }
    }
  }
}

// 7-bit weights at the edge of the c4 condition, against x = 255 and x = 0 (the extremes of each
// pair sum): 64 + 64, −64 − 64, 127 + 1 and −128 + 0 are exactly representable pair sums.
TEST_P(QGemmIsaTest, MaddubsBoundaryWeightsAreExact) {
  const std::vector<std::pair<int8_t, int8_t>> pairs = {{64, 64}, {-64, -64}, {127, 1}, {1, 127},
                                                        {-128, 0}, {0, -128}, {127, -128}, {-128, 127}};
  std::mt19937 rng(3);
  for (const auto& [w0, w1] : pairs) {
    for (int fill = 0; fill < 3; ++fill) {
      Problem p;
      p.m = 5, p.n = 21, p.k = 37, p.ldw = p.k, p.ldx = p.n, p.ldy = p.n;
      for (int64_t i = 0; i < p.m * p.k; ++i) p.w.push_back((i % p.k) % 2 ? w1 : w0);
      p.x = fill == 2 ? random_activations(rng, p.k * p.n)
                      : std::vector<uint8_t>(static_cast<size_t>(p.k * p.n), fill ? 255 : 0);
      p.bias = random_bias(rng, p.m);
      p.x_zp = 37;
      p.mult.assign(static_cast<size_t>(p.m), 1.0f / 4096.0f);
      p.rq.zero_point = 128;
      p.finish();
      ASSERT_TRUE(qs8_weights_fit_maddubs(p.m, p.k, p.w.data(), p.ldw));
      std::string kernel;
      expect_same(p, run_packed(p, path(), nullptr, &kernel), kernel);
      if (isa() == Isa::kAvx2 && !vnni()) {
        EXPECT_EQ(kernel, "qs8_gemm_4x16c4__avx2");
      }
      if (HasFatalFailure()) return;
    }
  }
}

// Deep K makes the packed X block (1 MiB) narrower than N: several column blocks per task.
TEST_P(QGemmIsaTest, DeepKSpansColumnBlocks) {
  std::mt19937 rng(4);
  for (int64_t k : {2304, 4608}) {
    for (bool seven_bit : {false, true}) {
      Problem p = seven_bit ? random_problem(rng, 7, 300, k, -64, 64) : random_problem(rng, 7, 300, k);
      expect_same(p, run_packed(p, path()), "deep K");
      if (HasFatalFailure()) return;
    }
  }
}

// Rows of X and Y inside wider buffers: nothing between Y rows or after the last is written.
TEST_P(QGemmIsaTest, RowStridesLeaveGapsUntouched) {
  std::mt19937 rng(5);
  const uint8_t kSentinel = 0xA5;
  for (int64_t n : {1, 5, 8, 9, 15, 16, 17, 31, 33}) {
    for (int64_t m : {1, 5, 7, 13}) {
      Problem p;
      p.m = m, p.n = n, p.k = 29, p.ldw = p.k + 3, p.ldx = n + 7, p.ldy = n + 3;
      p.w = random_weights(rng, p.m * p.ldw);
      p.x = random_activations(rng, p.k * p.ldx);
      p.bias = random_bias(rng, m);
      p.mult = random_multipliers(rng, m, p.k);
      p.x_zp = 3;
      p.rq.zero_point = 250;
      p.finish();
      const PackedQs8Weights packed(p.m, p.k, p.w.data(), p.ldw, p.bias.data(), isa(), family());
      std::vector<uint8_t> y(static_cast<size_t>((m - 1) * p.ldy + n + 16), kSentinel);
      qs8_gemm(packed, n, p.x.data(), p.ldx, p.x_zp, p.rq, y.data(), p.ldy, nullptr);
      expect_same(p, y, "strided");
      for (int64_t i = 0; i < m; ++i) {
        const int64_t gap_end = i + 1 < m ? (i + 1) * p.ldy : static_cast<int64_t>(y.size());
        for (int64_t j = i * p.ldy + n; j < gap_end; ++j)
          ASSERT_EQ(y[static_cast<size_t>(j)], kSentinel) << "m=" << m << " n=" << n << " wrote index " << j;
      }
    }
  }
}

// The task split over 2 threads (rows and columns) gives the same bytes, ResNet/MobileNet-like
// shapes reduced to test size.
TEST_P(QGemmIsaTest, TwoThreadsMatchReference) {
  std::mt19937 rng(6);
  ThreadPool pool(2);
  const std::vector<std::vector<int64_t>> shapes = {{64, 784, 144}, {24, 3136, 16}, {160, 49, 576}, {130, 97, 33}};
  for (const auto& s : shapes) {
    for (bool seven_bit : {false, true}) {
      Problem p = seven_bit ? random_problem(rng, s[0], s[1], s[2], -64, 64) : random_problem(rng, s[0], s[1], s[2]);
      expect_same(p, run_packed(p, path(), &pool), "2 threads");
      if (HasFatalFailure()) return;
    }
  }
}

// Without bias, K = 0 (the output is requantize(0)), and power-of-two multipliers that put many
// results exactly on .5 (ties to even in every path).
TEST_P(QGemmIsaTest, NoBiasEmptyKAndTies) {
  std::mt19937 rng(7);
  for (int64_t k : {0, 1, 3, 8}) {
    Problem p = random_problem(rng, 11, 21, k);
    p.bias.clear();
    for (size_t i = 0; i < p.mult.size(); ++i) p.mult[i] = i % 2 ? 0.5f : 0.125f / 64;
    p.finish();
    expect_same(p, run_packed(p, path()), "ties");
    if (HasFatalFailure()) return;
  }
}

INSTANTIATE_TEST_SUITE_P(QGemm, QGemmIsaTest,
                         ::testing::Values(QGemmPath{Isa::kScalar, Qs8Kernels::kAvx2, "scalar"},
                                           QGemmPath{Isa::kAvx2, Qs8Kernels::kAvx2, "avx2"},
                                           QGemmPath{Isa::kAvx2, Qs8Kernels::kVnni256, "vnni"},
                                           QGemmPath{Isa::kAvx2, Qs8Kernels::kVnni512, "vnni512"}),
                         [](const ::testing::TestParamInfo<QGemmPath>& info) { return std::string(info.param.name); });

// Scalar and AVX2 packings of the same problem agree with each other, byte for byte, also when
// AVX2-packed weights run through the scalar kernels of the same layout.
TEST(QGemmCrossIsa, ScalarAndAvx2AreBitExact) {
  if (!isa_supported(Isa::kAvx2)) GTEST_SKIP() << "avx2 not supported";
  std::mt19937 rng(8);
  for (int i = 0; i < 20; ++i) {
    std::uniform_int_distribution<int64_t> size(1, 70);
    Problem p = (i % 2) ? random_problem(rng, size(rng), size(rng), size(rng) * 3)
                        : random_problem(rng, size(rng), size(rng), size(rng) * 3, -64, 64);
    const std::vector<uint8_t> scalar = run_packed(p, {Isa::kScalar, Qs8Kernels::kAvx2, "scalar"});
    EXPECT_EQ(scalar, run_packed(p, {Isa::kAvx2, Qs8Kernels::kAvx2, "avx2"})) << "problem " << i;
    for (Qs8Kernels f : {Qs8Kernels::kVnni256, Qs8Kernels::kVnni512}) {
      if (qs8_kernels_supported(f)) {
        EXPECT_EQ(scalar, run_packed(p, {Isa::kAvx2, f, "vnni"})) << "problem " << i;
      }
    }
  }
}

TEST(QGemmWeights, MaddubsConditionIsExact) {
  const auto fits = [](std::vector<int8_t> w) {
    return qs8_weights_fit_maddubs(1, static_cast<int64_t>(w.size()), w.data(), static_cast<int64_t>(w.size()));
  };
  EXPECT_TRUE(fits({64, 64, -64, -64}));
  EXPECT_TRUE(fits({127, 1, -128, 0}));
  EXPECT_TRUE(fits({127, -128}));  // one positive and one negative: each side alone fits
  EXPECT_FALSE(fits({127, 2}));    // 255 · 129 > 32767
  EXPECT_FALSE(fits({-128, -1}));  // 255 · −129 < −32768
  EXPECT_FALSE(fits({0, 0, 65, 64}));
  EXPECT_TRUE(fits({0, 64, 65}));  // odd K: the last weight pairs with the zero padding
  EXPECT_TRUE(fits({100}));
  EXPECT_FALSE(fits({-128, -128}));
}

TEST(QGemmWeights, PackingRejectsOverflowableBiasAndBadStrides) {
  const int8_t w[4] = {1, 2, 3, 4};
  const int32_t big[1] = {std::numeric_limits<int32_t>::max() - 1000};
  EXPECT_THROW(PackedQs8Weights(1, 4, w, 4, big, Isa::kScalar), Error);
  EXPECT_THROW(PackedQs8Weights(2, 4, w, 2, nullptr, Isa::kScalar), Error);
  EXPECT_EQ(qs8_gemm_max_depth(0), (int64_t{2147483647}) / (128 * 255));
  const int32_t ok[1] = {1000};
  const PackedQs8Weights packed(1, 4, w, 4, ok, Isa::kScalar);
  EXPECT_EQ(packed.rows(), 1);
  EXPECT_EQ(packed.depth(), 4);
  const uint8_t x[8] = {};
  uint8_t y[2] = {};
  const float mult[1] = {1.0f};
  QRequant rq;
  rq.multiplier = mult;
  EXPECT_THROW(qs8_gemm(packed, 2, x, 1, 0, rq, y, 2, nullptr), Error);  // ldx < n
  const float bad_mult[1] = {0.0f};
  rq.multiplier = bad_mult;
  EXPECT_THROW(qs8_gemm(packed, 2, x, 2, 0, rq, y, 2, nullptr), Error);
}

}  // namespace
}  // namespace xnn::kernels

// ---- int8 GEMV (qgemv.h) ---------------------------------------------------------------------

namespace xnn::kernels {
namespace {

// Every depth around the vector widths (16 AVX2, 32 AVX-512) and row counts around the 4-row
// blocks, extreme weights and activations, a row stride with a gap, 1 and 2 threads: equal to the
// exact int64 sum (wrapped like the kernels' int32 adds) on whichever kernel this CPU / XNN_ISA
// picks (the avx2 ctest runs qgemv_avx2.cpp).
TEST(QGemv, MatchesTheExactSumAtEveryDepthAndRowTail) {
  std::mt19937 rng(91);
  ThreadPool pool(2);
  const std::string name = qs8_gemv_kernel_name();
  const std::string want_name = avx512_enabled() ? "qs8_gemv__avx512"
                                : best_isa() == Isa::kAvx2 ? "qs8_gemv__avx2" : "qs8_gemv__scalar";
  EXPECT_EQ(name, want_name);
  for (int64_t k : {1, 7, 15, 16, 17, 31, 32, 33, 48, 63, 100, 1280}) {
    for (int64_t n : {1, 3, 4, 5, 9, 1000}) {
      const int64_t ldw = k + 5;
      std::vector<int8_t> w = random_weights(rng, n * ldw);
      std::vector<int16_t> x(static_cast<size_t>(k));
      std::uniform_int_distribution<int> dx(-255, 255);
      for (int16_t& v : x) v = static_cast<int16_t>(dx(rng));
      if (k >= 16) {  // the extremes of both operands in one row
        for (int64_t p = 0; p < k; ++p) w[size_t(p)] = -128, x[size_t(p)] = p % 2 ? 255 : -255;
      }
      const std::vector<int32_t> init = random_bias(rng, n, 1 << 30);
      for (bool with_init : {false, true}) {
        for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
          std::vector<int32_t> acc(static_cast<size_t>(n), 12345);
          qs8_gemv(n, k, w.data(), ldw, x.data(), with_init ? init.data() : nullptr, acc.data(), p);
          for (int64_t j = 0; j < n; ++j) {
            int64_t s = with_init ? init[size_t(j)] : 0;
            for (int64_t q = 0; q < k; ++q) s += int64_t{w[size_t(j * ldw + q)]} * x[size_t(q)];
            ASSERT_EQ(acc[size_t(j)], static_cast<int32_t>(static_cast<uint32_t>(s)))
                << name << " k " << k << " n " << n << " row " << j << " init " << with_init;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace xnn::kernels
