// Calibration methods on synthetic distributions (compress/quantize/calibration_method.h).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "compress/quantize/calibration_method.h"

namespace xnn::quantize {
namespace {

Histogram histogram_of(const std::vector<float>& x) {
  ObservedRange r;
  r.add(x.data(), static_cast<int64_t>(x.size()));
  Histogram h(r);
  h.add(x.data(), static_cast<int64_t>(x.size()));
  return h;
}

// |Laplace| samples (a ReLU-like long tail) plus a few far outliers.
std::vector<float> long_tailed(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::exponential_distribution<float> e(1.0f);
  std::vector<float> x(n);
  for (float& v : x) v = e(rng);
  for (size_t i = 0; i < n / 2000; ++i) x[i] = 40.0f + static_cast<float>(i);  // 0.05 % outliers
  return x;
}

std::vector<float> gaussian(size_t n, uint32_t seed, float mean = 0, float sd = 1) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(mean, sd);
  std::vector<float> x(n);
  for (float& v : x) v = d(rng);
  return x;
}

// Mean squared error of fake-quantising the samples with the uint8 parameters of r.
double sample_mse(const std::vector<float>& x, Range r) {
  const ActivationParams p = uint8_params(r);
  double e = 0;
  for (float v : x) {
    const double d = v - dequantize_uint8(quantize_uint8(v, p), p);
    e += d * d;
  }
  return e / static_cast<double>(x.size());
}

TEST(Histogram, CoversTheObservedRangeWidenedToZero) {
  const Histogram h = histogram_of({1.0f, 2.0f, 3.0f, NAN});
  EXPECT_EQ(h.lo(), 0.0f);
  EXPECT_EQ(h.hi(), 3.0f);
  EXPECT_EQ(h.total(), 3.0);
  EXPECT_EQ(h.bins(), kHistogramBins);
  EXPECT_EQ(h.counts().back(), 1.0);  // the maximum lands in the last bin
  const Histogram s = histogram_of({-4.0f, 1.0f});
  EXPECT_EQ(s.lo(), -4.0f);
  EXPECT_EQ(s.abs_max(), 4.0f);
  EXPECT_EQ(s.abs_counts().back(), 1.0);
}

TEST(CalibrationMethod, NamesRoundTripAndUnknownNamesAreErrors) {
  for (const std::string& name : calibration_method_names()) {
    EXPECT_EQ(calibration_method_name(calibration_method_from_name(name)), name);
  }
  try {
    calibration_method_from_name("entropy");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("minmax, percentile, kl, mse"), std::string::npos) << e.what();
  }
}

TEST(CalibrationMethod, MinMaxIsTheObservedRange) {
  const Range r = minmax_range(histogram_of({-1.5f, 0.25f, 2.0f}));
  EXPECT_EQ(r.lo, -1.5f);
  EXPECT_EQ(r.hi, 2.0f);
}

TEST(CalibrationMethod, PercentileCutsTheTailMass) {
  // 0..9999 uniformly: the 99th percentile of a non-negative tensor is near 9900.
  std::vector<float> x(10000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i);
  const Range r = percentile_range(histogram_of(x), 99.0);
  EXPECT_EQ(r.lo, 0.0f);
  EXPECT_NEAR(r.hi, 9900.0f, 10.0f);
  // Two-sided: half the tail from each end.
  std::vector<float> y(10000);
  for (size_t i = 0; i < y.size(); ++i) y[i] = static_cast<float>(i) - 5000.0f;
  const Range s = percentile_range(histogram_of(y), 98.0);
  EXPECT_NEAR(s.lo, -4900.0f, 10.0f);
  EXPECT_NEAR(s.hi, 4900.0f, 10.0f);
  EXPECT_THROW(percentile_range(histogram_of(y), 0.0), Error);
  EXPECT_THROW(percentile_range(histogram_of(y), 100.5), Error);
  // 100 keeps everything.
  const Range all = percentile_range(histogram_of(x), 100.0);
  EXPECT_NEAR(all.hi, 9999.0f, 1e-3f);
}

TEST(CalibrationMethod, KlClipsTheLongTailBelowTheMaximum) {
  const std::vector<float> x = long_tailed(200000, 1);
  const Histogram h = histogram_of(x);
  const Range r = kl_range(h);
  EXPECT_EQ(r.lo, 0.0f);
  EXPECT_LT(r.hi, 0.5f * h.hi()) << "KL threshold " << r.hi << " of max " << h.hi();
  EXPECT_GT(r.hi, 5.0f);  // keeps the bulk of an Exp(1) distribution (P(x > 5) < 1 %)
  // Clipping the outliers lowers the quantisation error of the bulk (everything but them).
  const std::vector<float> bulk(x.begin() + 100, x.end());
  EXPECT_LT(sample_mse(bulk, r) * 4, sample_mse(bulk, minmax_range(h)));
}

TEST(CalibrationMethod, KlKeepsTheRangeOfAUniformDistribution) {
  std::vector<float> x(100000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 1000) / 100.0f;
  const Histogram h = histogram_of(x);
  EXPECT_GT(kl_range(h).hi, 0.95f * h.hi());
}

TEST(CalibrationMethod, KlThresholdIsABinEdge) {
  std::vector<double> counts(512, 1.0);
  const float t = kl_threshold(counts, 0.5f, 128);
  EXPECT_FLOAT_EQ(std::fmod(t, 0.5f), 0.0f);
  EXPECT_GE(t, 128 * 0.5f);
  EXPECT_LE(t, 512 * 0.5f);
}

TEST(CalibrationMethod, MseRangeMinimisesTheExpectedError) {
  for (const std::vector<float>& x : {long_tailed(100000, 2), gaussian(100000, 3, 0.5f, 2.0f)}) {
    const Histogram h = histogram_of(x);
    const Range best = mse_range(h);
    const double e = expected_quantization_mse(h, best);
    // Against the observed range and scaled versions of the chosen one.
    EXPECT_LE(e, expected_quantization_mse(h, minmax_range(h)));
    for (float f : {0.5f, 0.8f, 0.9f, 1.1f, 1.25f, 2.0f}) {
      const Range other{std::max(h.lo(), best.lo * f), std::min(h.hi(), best.hi * f)};
      EXPECT_LE(e, expected_quantization_mse(h, other) * (1 + 1e-9)) << "factor " << f;
    }
    // The histogram model tracks the error on the samples themselves.
    EXPECT_LT(sample_mse(x, best), sample_mse(x, minmax_range(h)));
    EXPECT_NEAR(sample_mse(x, best), e, 0.25 * e);
  }
}

TEST(CalibrationMethod, EveryMethodKeepsZeroInsideTheRange) {
  const std::vector<float> x = gaussian(50000, 4, 3.0f, 0.5f);  // all positive, far from 0
  const Histogram h = histogram_of(x);
  for (const std::string& name : calibration_method_names()) {
    CalibrationSettings s;
    s.method = calibration_method_from_name(name);
    const Range r = choose_range(h, s);
    EXPECT_LE(r.lo, 0.0f) << name;
    EXPECT_GE(r.hi, 0.0f) << name;
    EXPECT_GT(r.hi, 3.0f) << name;
  }
}

TEST(CalibrationMethod, EmptyHistogramGivesAUsableRange) {
  const Histogram h(ObservedRange{});
  for (const std::string& name : calibration_method_names()) {
    CalibrationSettings s;
    s.method = calibration_method_from_name(name);
    const Range r = choose_range(h, s);
    EXPECT_EQ(r.lo, 0.0f);
    EXPECT_EQ(r.hi, 0.0f);
    EXPECT_EQ(uint8_params(r).scale, 1.0f);
  }
}

}  // namespace
}  // namespace xnn::quantize
