#include "harness/sim/efficiency_fit.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>

#include "engine/core/error.h"
#include "harness/sim/cost_model.h"
#include "harness/sim/op_support.h"

namespace xnn::sim {

OpClass measured_op_class(const MeasuredOp& op) {
  Node n;
  n.op_type = op.op_type;
  if (op.op_type == "FusedConv" || op.op_type == "FusedGemm") n.domain = "ai.xnn";
  const OpClass c = classify_op(n, NodeCost{});
  if (c == OpClass::kConv && op.kernel.find("dwconv") != std::string::npos) return OpClass::kDepthwise;
  return c;
}

namespace {

using Params = std::array<double, 2>;

double logit(double p) { return std::log(p / (1.0 - p)); }
double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// (logit max, ln half) <-> curve; max is kept in (1e-4, 1 - 1e-9), half in [1e-3, 1e15].
EfficiencyCurve to_curve(const Params& p) {
  EfficiencyCurve c;
  c.max = std::clamp(sigmoid(p[0]), 1e-4, 1.0 - 1e-9);
  c.half = std::clamp(std::exp(p[1]), 1e-3, 1e15);
  return c;
}
Params from_curve(const EfficiencyCurve& c) {
  return {logit(std::clamp(c.max, 1e-4, 1.0 - 1e-9)), std::log(std::max(c.half, 1e-3))};
}

// Nelder-Mead on 2 parameters (standard coefficients: reflection 1, expansion 2, contraction 0.5,
// shrink 0.5).
Params nelder_mead(const std::function<double(const Params&)>& f, Params start, Params step, int iterations) {
  std::array<Params, 3> x{start, start, start};
  x[1][0] += step[0];
  x[2][1] += step[1];
  std::array<double, 3> fx{f(x[0]), f(x[1]), f(x[2])};
  for (int it = 0; it < iterations; ++it) {
    std::array<int, 3> idx{0, 1, 2};
    std::sort(idx.begin(), idx.end(), [&](int a, int b) { return fx[a] < fx[b]; });
    const int best = idx[0], mid = idx[1], worst = idx[2];
    if (std::abs(fx[worst] - fx[best]) < 1e-14 * (1 + std::abs(fx[best]))) break;
    Params c{(x[best][0] + x[mid][0]) / 2, (x[best][1] + x[mid][1]) / 2};
    auto along = [&](double t) { return Params{c[0] + t * (x[worst][0] - c[0]), c[1] + t * (x[worst][1] - c[1])}; };
    const Params r = along(-1.0);
    const double fr = f(r);
    if (fr < fx[best]) {
      const Params e = along(-2.0);
      const double fe = f(e);
      if (fe < fr) x[worst] = e, fx[worst] = fe;
      else x[worst] = r, fx[worst] = fr;
    } else if (fr < fx[mid]) {
      x[worst] = r, fx[worst] = fr;
    } else {
      const Params k = fr < fx[worst] ? along(-0.5) : along(0.5);
      const double fk = f(k);
      if (fk < std::min(fr, fx[worst])) {
        x[worst] = k, fx[worst] = fk;
      } else {
        for (int i : {mid, worst}) {
          x[i] = Params{(x[i][0] + x[best][0]) / 2, (x[i][1] + x[best][1]) / 2};
          fx[i] = f(x[i]);
        }
      }
    }
  }
  int b = 0;
  for (int i = 1; i < 3; ++i) {
    if (fx[i] < fx[b]) b = i;
  }
  return x[b];
}

// Coarse grid over max in [0.02, 0.99] and half over the span of the data's work (+- 3 decades),
// then Nelder-Mead from the best point.
Params fit_curve(const std::function<double(const Params&)>& f, Params start, double work_lo, double work_hi) {
  Params best = start;
  double fbest = f(start);
  const double lo = std::log(std::max(work_lo, 1.0)) - 3 * std::log(10.0);
  const double hi = std::log(std::max(work_hi, 1.0)) + 3 * std::log(10.0);
  for (int i = 0; i < 12; ++i) {
    const double m = 0.02 + (0.99 - 0.02) * i / 11.0;
    for (int j = 0; j < 25; ++j) {
      const Params p{logit(m), lo + (hi - lo) * j / 24.0};
      const double fp = f(p);
      if (fp < fbest) best = p, fbest = fp;
    }
  }
  return nelder_mead(f, best, {0.5, 1.0}, 400);
}

struct Prepared {
  OpClass cls;
  std::string dtype;
  double flops, bytes, time_ms;
};

double predict(const DeviceProfile& d, const Prepared& o, int cores) {
  return kernel_time(d, o.cls, compute_dtype(d, o.dtype), o.flops, o.bytes, cores).total_ms();
}

double sq_log_error(const DeviceProfile& d, const std::vector<Prepared>& ops, int cores, const OpClass* only) {
  double s = 0;
  for (const Prepared& o : ops) {
    if (only && o.cls != *only) continue;
    const double e = std::log(predict(d, o, cores)) - std::log(o.time_ms);
    s += e * e;
  }
  return s;
}

void errors(const DeviceProfile& d, const std::vector<Prepared>& ops, int cores, double& rms, double& median_pct) {
  std::vector<double> pct;
  double s = 0;
  for (const Prepared& o : ops) {
    const double p = predict(d, o, cores);
    const double e = std::log(p) - std::log(o.time_ms);
    s += e * e;
    pct.push_back(std::abs(p / o.time_ms - 1.0) * 100.0);
  }
  rms = std::sqrt(s / static_cast<double>(ops.size()));
  std::sort(pct.begin(), pct.end());
  const size_t m = pct.size() / 2;
  median_pct = pct.size() % 2 ? pct[m] : (pct[m - 1] + pct[m]) / 2;
}

}  // namespace

FitResult fit_efficiency_curves(const DeviceProfile& profile, const std::vector<MeasuredOp>& measured,
                                const FitOptions& opt) {
  const int cores = profile.is_cpu() && opt.threads > 0 ? std::min(opt.threads, profile.cores) : profile.cores;
  std::vector<Prepared> ops;
  for (const MeasuredOp& m : measured) {
    if (!(m.time_ms > 0) || !std::isfinite(m.time_ms)) continue;
    const OpClass c = measured_op_class(m);
    ops.push_back(Prepared{c, m.dtype.empty() ? "fp32" : m.dtype, op_flops(c, m.macs), m.bytes, m.time_ms});
  }
  if (ops.empty()) throw Error("fit_efficiency_curves: no measured op with a positive time to fit '" + profile.name + "' to");

  FitResult r;
  r.profile = profile;
  r.ops_used = static_cast<int>(ops.size());
  errors(profile, ops, cores, r.rms_log_error_before, r.median_abs_pct_error_before);

  std::map<OpClass, std::pair<double, double>> work_span;  // min/max FLOP per class
  double bytes_lo = 1e300, bytes_hi = 0;
  for (const Prepared& o : ops) {
    r.ops_per_class[op_class_name(o.cls)]++;
    auto [it, fresh] = work_span.try_emplace(o.cls, o.flops, o.flops);
    if (!fresh) it->second = {std::min(it->second.first, o.flops), std::max(it->second.second, o.flops)};
    if (o.bytes > 0) bytes_lo = std::min(bytes_lo, o.bytes), bytes_hi = std::max(bytes_hi, o.bytes);
  }

  DeviceProfile& d = r.profile;
  // Memory curve first: memory-bound ops (elementwise, pooling) are then explained by bandwidth
  // rather than by a collapsed compute curve of their class, which could fit them equally well.
  for (int round = 0; round < std::max(1, opt.rounds); ++round) {
    if (bytes_hi > 0 && ops.size() >= 2) {
      auto f = [&](const Params& p) {
        d.memory_efficiency = to_curve(p);
        return sq_log_error(d, ops, cores, nullptr);
      };
      d.memory_efficiency = to_curve(fit_curve(f, from_curve(d.memory_efficiency), bytes_lo, bytes_hi));
    }
    for (OpClass c : all_op_classes()) {
      if (r.ops_per_class[op_class_name(c)] < 2) continue;
      auto f = [&](const Params& p) {
        d.efficiency[c] = to_curve(p);
        return sq_log_error(d, ops, cores, &c);
      };
      const Params best = fit_curve(f, from_curve(d.curve(c)), work_span[c].first, work_span[c].second);
      d.efficiency[c] = to_curve(best);
    }
  }
  for (auto it = r.ops_per_class.begin(); it != r.ops_per_class.end();) {
    it = it->second == 0 ? r.ops_per_class.erase(it) : std::next(it);
  }
  errors(d, ops, cores, r.rms_log_error_after, r.median_abs_pct_error_after);
  return r;
}

}  // namespace xnn::sim
