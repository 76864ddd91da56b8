#include "harness/predict/roofline_fit.h"

#include <array>
#include <cmath>

#include "engine/core/error.h"

namespace xnn::predict {
namespace {

// Weighted least squares over the active columns (Gaussian elimination with partial
// pivoting on the normal equations); inactive or singular columns get 0.
std::array<double, 3> solve(const std::vector<std::array<double, 3>>& x, const std::vector<double>& y,
                            const std::vector<double>& w, const std::array<bool, 3>& active) {
  double a[3][4] = {};
  for (size_t i = 0; i < y.size(); ++i) {
    for (int r = 0; r < 3; ++r) {
      for (int c = 0; c < 3; ++c) a[r][c] += w[i] * x[i][r] * x[i][c];
      a[r][3] += w[i] * x[i][r] * y[i];
    }
  }
  for (int r = 0; r < 3; ++r) {
    if (active[r]) continue;
    for (int c = 0; c < 4; ++c) a[r][c] = 0;
    for (int c = 0; c < 3; ++c) a[c][r] = 0;
    a[r][r] = 1;
  }
  for (int col = 0; col < 3; ++col) {
    int piv = col;
    for (int r = col + 1; r < 3; ++r) {
      if (std::fabs(a[r][col]) > std::fabs(a[piv][col])) piv = r;
    }
    for (int c = 0; c < 4; ++c) std::swap(a[col][c], a[piv][c]);
    if (std::fabs(a[col][col]) < 1e-300) continue;
    for (int r = 0; r < 3; ++r) {
      if (r == col) continue;
      const double f = a[r][col] / a[col][col];
      for (int c = col; c < 4; ++c) a[r][c] -= f * a[col][c];
    }
  }
  std::array<double, 3> beta{};
  for (int r = 0; r < 3; ++r) beta[r] = std::fabs(a[r][r]) < 1e-300 ? 0 : a[r][3] / a[r][r];
  return beta;
}

}  // namespace

RooflineFit RooflineFit::fit(const std::vector<double>& macs, const std::vector<double>& bytes,
                             const std::vector<double>& time_ms) {
  if (time_ms.empty()) throw Error("roofline fit: no samples");
  if (macs.size() != time_ms.size() || bytes.size() != time_ms.size()) throw Error("roofline fit: inputs of different lengths");
  // Columns scaled to comparable magnitudes so the normal equations stay well conditioned.
  double macs_scale = 1, bytes_scale = 1;
  for (size_t i = 0; i < time_ms.size(); ++i) {
    macs_scale = std::max(macs_scale, macs[i]);
    bytes_scale = std::max(bytes_scale, bytes[i]);
  }
  std::vector<std::array<double, 3>> x;
  std::vector<double> y, w;
  for (size_t i = 0; i < time_ms.size(); ++i) {
    if (!(time_ms[i] > 0)) continue;
    x.push_back({1.0, macs[i] / macs_scale, bytes[i] / bytes_scale});
    y.push_back(time_ms[i]);
    w.push_back(1.0 / (time_ms[i] * time_ms[i]));
  }
  if (y.empty()) throw Error("roofline fit: no sample with a positive time");
  // Active set: drop any column whose coefficient comes out negative and refit.
  std::array<bool, 3> active{true, true, true};
  std::array<double, 3> beta{};
  for (int round = 0; round < 3; ++round) {
    beta = solve(x, y, w, active);
    bool changed = false;
    for (int c = 0; c < 3; ++c) {
      if (active[c] && beta[c] < 0) {
        active[c] = false;
        changed = true;
      }
    }
    if (!changed) break;
  }
  RooflineFit f;
  f.c0 = std::max(0.0, beta[0]);
  f.c_macs = std::max(0.0, beta[1]) / macs_scale;
  f.c_bytes = std::max(0.0, beta[2]) / bytes_scale;
  return f;
}

}  // namespace xnn::predict
