// Synthetic per-op calibration data for the predictor tests: MobileNet-like ops whose "measured"
// time is a known nonlinear function of their shapes, so a fit can be checked against truth.
#pragma once
#include <random>
#include <string>
#include <vector>

#include "harness/predict/latency_predictor.h"

namespace xnn::predict::testing {

// The true time of an op (ms).
inline double true_op_ms(const OpFeatures& f) {
  if (f.kernel.find("conv1x1") != std::string::npos) return f.macs * 1e-8 * (1.0 + 16.0 / f.x[2]);  // x[2] = cin
  if (f.kernel.find("dwconv") != std::string::npos) return 0.002 + f.macs * 4e-8;
  return 0.0005 + f.bytes * 2e-10;
}

inline OpFeatures random_op(std::mt19937_64& rng, int i) {
  std::uniform_int_distribution<int> ch(1, 24), hw(2, 14), kind(0, 2);
  const int64_t c = 8 * ch(rng), h = 4 * hw(rng);
  std::string name = "op";
  name += std::to_string(i);
  switch (kind(rng)) {
    case 0: {
      const int64_t co = 8 * ch(rng);
      return featurize_op(name, "FusedConv", "f32_conv1x1_gemm+f32_gemm_6x16__avx2",
                          OpShapes{{{1, c, h, h}, {co, c, 1, 1}, {co}}, {{1, co, h, h}}}, "Relu");
    }
    case 1:
      return featurize_op(name, "FusedConv", "f32_dwconv3x3s1__avx2", OpShapes{{{1, c, h, h}, {c, 1, 3, 3}, {c}}, {{1, c, h, h}}},
                          "Relu");
    default:
      return featurize_op(name, "Add", "f32_vadd__avx2", OpShapes{{{1, c, h, h}, {1, c, h, h}}, {{1, c, h, h}}});
  }
}

// Models of `ops` random ops; measured = overhead + scale * sum(true op times), op times as given
// (the per-op profile) with multiplicative noise of `noise` (relative sd).
inline std::vector<CalibrationModel> synthetic_models(int count, int ops, uint64_t seed, double overhead = 0.05,
                                                      double scale = 1.1, double noise = 0.0) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n01(0.0, 1.0);
  std::vector<CalibrationModel> models(static_cast<size_t>(count));
  for (int m = 0; m < count; ++m) {
    double total = 0;
    for (int i = 0; i < ops; ++i) {
      OpFeatures f = random_op(rng, i);
      const double t = true_op_ms(f);
      total += t;
      models[static_cast<size_t>(m)].ops.push_back(OpSample{f, t * (1.0 + noise * n01(rng))});
    }
    models[static_cast<size_t>(m)].name = "m";
    models[static_cast<size_t>(m)].name += std::to_string(m);
    models[static_cast<size_t>(m)].measured_ms = overhead + scale * total;
  }
  return models;
}

inline std::vector<OpFeatures> features_of(const CalibrationModel& m) {
  std::vector<OpFeatures> f;
  for (const OpSample& s : m.ops) f.push_back(s.features);
  return f;
}

}  // namespace xnn::predict::testing
