#include "nas/search/tpe.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "engine/core/error.h"
#include "harness/util/json.h"
#include "nas/search/nsga2.h"

namespace xnn::nas {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kLogSqrt2Pi = 0.91893853320467274178;

double phi_cdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

// Inverse standard normal CDF: Acklam's rational approximation plus one Halley step.
double ndtri(double p) {
  if (p <= 0) return -kInf;
  if (p >= 1) return kInf;
  static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                             1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                             6.680131188771972e+01,  -1.328068155288572e+01};
  static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                             -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                             3.754408661907416e+00};
  double x;
  if (p < 0.02425) {
    double q = std::sqrt(-2 * std::log(p));
    x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  } else if (p > 1 - 0.02425) {
    double q = std::sqrt(-2 * std::log1p(-p));
    x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  } else {
    double q = p - 0.5, r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
  }
  double e = phi_cdf(x) - p;
  double u = e * std::sqrt(2 * M_PI) * std::exp(x * x / 2);
  return x - u / (1 + x * u / 2);
}

// Per-parameter kernels of a Parzen mixture: one per observation plus the prior (last).
struct Kernels {
  bool categorical = false;
  // numeric, in transformed (log where log) space
  std::vector<double> mu, sigma;
  double low = 0, high = 0;  // adapted bounds (ints: +- step / 2), transformed
  double step = 0;           // 0: continuous
  bool log = false;
  double value_low = 0, value_high = 0;  // untransformed range, for rounding ints
  // categorical: weights[k][choice]
  std::vector<std::vector<double>> weights;
};

struct Mixture {
  std::vector<double> weights;  // per kernel, sum 1
  std::vector<Kernels> dims;    // per parameter (of the sub-space the mixture covers)
};

std::vector<double> default_weights(size_t n) {
  if (n == 0) return {};
  if (n < 25) return std::vector<double>(n, 1.0);
  std::vector<double> w;
  size_t ramp = n - 25;
  for (size_t i = 0; i < ramp; ++i)
    w.push_back(ramp == 1 ? 1.0 / n : 1.0 / n + (1.0 - 1.0 / n) * static_cast<double>(i) / static_cast<double>(ramp - 1));
  w.resize(n, 1.0);
  return w;
}

Kernels numeric_kernels(const Param& p, const std::vector<double>& obs, const TpeOptions& o) {
  Kernels k;
  double low, high, step = 0;
  bool log;
  if (const auto* f = std::get_if<FloatDistribution>(&p.distribution)) {
    low = f->low, high = f->high, log = f->log;
  } else {
    const auto& d = std::get<IntDistribution>(p.distribution);
    low = static_cast<double>(d.low), high = static_cast<double>(d.high), log = d.log;
    step = static_cast<double>(d.step);
  }
  k.value_low = low, k.value_high = high, k.step = step, k.log = log;
  low -= step / 2, high += step / 2;
  std::vector<double> mus = obs;
  if (log) {
    low = std::log(low), high = std::log(high);
    for (double& m : mus) m = std::log(m);
  }
  k.low = low, k.high = high;
  const size_t n = mus.size();
  std::vector<double> sig(n);
  if (n > 0) {
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return mus[a] < mus[b]; });
    std::vector<double> s(n + 2);
    s[0] = low, s[n + 1] = high;
    for (size_t i = 0; i < n; ++i) s[i + 1] = mus[order[i]];
    std::vector<double> sorted_sig(n);
    for (size_t i = 0; i < n; ++i) sorted_sig[i] = std::max(s[i + 1] - s[i], s[i + 2] - s[i + 1]);
    if (!o.consider_endpoints && n >= 2) {
      sorted_sig[0] = s[2] - s[1];
      sorted_sig[n - 1] = s[n] - s[n - 1];
    }
    double maxsigma = high - low;
    double minsigma = o.consider_magic_clip ? (high - low) / std::min(100.0, 1.0 + static_cast<double>(n + 1)) : 1e-12;
    for (size_t i = 0; i < n; ++i) sig[order[i]] = std::clamp(sorted_sig[i], minsigma, maxsigma);
  }
  mus.push_back(0.5 * (low + high));
  sig.push_back(high - low);
  k.mu = std::move(mus);
  k.sigma = std::move(sig);
  if (step == 0) {  // a continuous kernel is truncated to the range itself
    k.low = log ? std::log(k.value_low) : k.value_low;
    k.high = log ? std::log(k.value_high) : k.value_high;
  }
  return k;
}

Kernels categorical_kernels(const Param& p, const std::vector<double>& obs, const TpeOptions& o) {
  Kernels k;
  k.categorical = true;
  size_t nc = std::get<CategoricalDistribution>(p.distribution).choices.size();
  if (obs.empty()) {
    k.weights.assign(1, std::vector<double>(nc, 1.0 / static_cast<double>(nc)));
    return k;
  }
  size_t nk = obs.size() + 1;
  k.weights.assign(nk, std::vector<double>(nc, o.prior_weight / static_cast<double>(nk)));
  for (size_t i = 0; i < obs.size(); ++i) k.weights[i][static_cast<size_t>(std::llround(obs[i]))] += 1;
  for (auto& row : k.weights) {
    double s = std::accumulate(row.begin(), row.end(), 0.0);
    if (s > 0) {
      for (double& w : row) w /= s;
    }
  }
  return k;
}

// `obs[j]` holds observation j's internal values for the parameters `dims` (indices into the space).
Mixture build_mixture(const SearchSpace& space, const std::vector<size_t>& dims,
                      const std::vector<std::vector<double>>& obs, std::vector<double> weights, const TpeOptions& o) {
  Mixture m;
  if (obs.empty()) {
    m.weights = {1.0};
  } else {
    weights.push_back(o.prior_weight);
    double s = std::accumulate(weights.begin(), weights.end(), 0.0);
    for (double& w : weights) w /= s;
    m.weights = std::move(weights);
  }
  for (size_t d = 0; d < dims.size(); ++d) {
    const Param& p = space.params()[dims[d]];
    std::vector<double> column;
    for (const auto& row : obs) column.push_back(row[dims[d]]);
    m.dims.push_back(std::holds_alternative<CategoricalDistribution>(p.distribution) ? categorical_kernels(p, column, o)
                                                                                     : numeric_kernels(p, column, o));
  }
  return m;
}

double sample_kernel(const Kernels& k, size_t c, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  if (k.categorical) {
    const auto& w = k.weights[c];
    double u = u01(rng), acc = 0;
    for (size_t i = 0; i + 1 < w.size(); ++i) {
      acc += w[i];
      if (acc >= u) return static_cast<double>(i);
    }
    return static_cast<double>(w.size() - 1);
  }
  double mu = k.mu[c], s = k.sigma[c];
  double z = sample_truncated_standard_normal((k.low - mu) / s, (k.high - mu) / s, rng);
  double v = std::clamp(mu + s * z, k.low, k.high);
  if (k.log) v = std::exp(v);
  if (k.step > 0) v = std::clamp(k.value_low + std::round((v - k.value_low) / k.step) * k.step, k.value_low, k.value_high);
  return std::clamp(v, k.value_low, k.value_high);
}

double log_pdf_kernel(const Kernels& k, size_t c, double x) {
  if (k.categorical) return std::log(k.weights[c][static_cast<size_t>(std::llround(x))]);
  double mu = k.mu[c], s = k.sigma[c];
  double norm = log_gauss_mass((k.low - mu) / s, (k.high - mu) / s);
  if (k.step == 0) {
    double t = k.log ? std::log(x) : x;
    double z = (t - mu) / s;
    return -0.5 * z * z - kLogSqrt2Pi - std::log(s) - norm;
  }
  double left = x - k.step / 2, right = x + k.step / 2;
  if (k.log) left = std::log(left), right = std::log(right);
  return log_gauss_mass((left - mu) / s, (right - mu) / s) - norm;
}

// Draws `n` candidates (rows of values for m.dims) from the mixture.
std::vector<std::vector<double>> sample_mixture(const Mixture& m, size_t n, std::mt19937_64& rng) {
  std::discrete_distribution<size_t> pick(m.weights.begin(), m.weights.end());
  std::vector<std::vector<double>> out(n, std::vector<double>(m.dims.size()));
  for (size_t i = 0; i < n; ++i) {
    size_t c = pick(rng);
    for (size_t d = 0; d < m.dims.size(); ++d) out[i][d] = sample_kernel(m.dims[d], c, rng);
  }
  return out;
}

double log_pdf_mixture(const Mixture& m, const std::vector<double>& x) {
  std::vector<double> terms(m.weights.size());
  double mx = -kInf;
  for (size_t c = 0; c < m.weights.size(); ++c) {
    double t = std::log(m.weights[c]);
    for (size_t d = 0; d < m.dims.size(); ++d) t += log_pdf_kernel(m.dims[d], c, x[d]);
    terms[c] = t;
    mx = std::max(mx, t);
  }
  if (mx == -kInf) return -kInf;
  double s = 0;
  for (double t : terms) s += std::exp(t - mx);
  return mx + std::log(s);
}

// Optuna's _get_pruned_trial_score: furthest step first, then the value there (NaN last).
std::pair<double, double> pruned_score(const Trial& t, Direction d) {
  if (t.intermediate_values.empty()) return {1.0, 0.0};
  auto [step, v] = *t.intermediate_values.rbegin();
  if (std::isnan(v)) return {-static_cast<double>(step), kInf};
  return {-static_cast<double>(step), minimised(v, d)};
}

}  // namespace

double log_gauss_mass(double a, double b) {
  if (!(a < b)) return -kInf;
  const double r2 = std::sqrt(2.0);
  if (b <= 0) {  // left tail: Phi(b) - Phi(a), both small and precise
    return std::log(0.5 * std::erfc(-b / r2) - 0.5 * std::erfc(-a / r2));
  }
  if (a >= 0) {  // right tail, by symmetry
    return std::log(0.5 * std::erfc(a / r2) - 0.5 * std::erfc(b / r2));
  }
  return std::log1p(-0.5 * std::erfc(-a / r2) - 0.5 * std::erfc(b / r2));
}

double sample_truncated_standard_normal(double a, double b, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  if (a >= 0) return -sample_truncated_standard_normal(-b, -a, rng);  // keep to the precise (left) side
  double pa = phi_cdf(a), pb = phi_cdf(b);
  double u = pa + u01(rng) * (pb - pa);
  double x = ndtri(u);
  if (!std::isfinite(x)) x = std::isfinite(a) ? a : b;
  return std::clamp(x, a, b);
}

Tpe::Tpe(SearchSpace space, std::vector<Direction> directions, uint64_t seed, TpeOptions options)
    : Strategy(std::move(space), std::move(directions), seed), options_(options) {
  XNN_CHECK(options_.n_startup_trials >= 0, "tpe: n_startup_trials must be >= 0");
  XNN_CHECK(options_.n_ei_candidates >= 1, "tpe: n_ei_candidates must be >= 1");
  XNN_CHECK(options_.prior_weight > 0, "tpe: prior_weight must be > 0");
  XNN_CHECK(options_.gamma_fraction > 0 && options_.gamma_fraction <= 1, "tpe: gamma_fraction must be in (0, 1]");
  XNN_CHECK(options_.gamma_max >= 1, "tpe: gamma_max must be >= 1");
  if (!options_.multivariate) options_.multivariate = directions_.size() == 1;
}

std::string Tpe::config_json() const {
  return json::Writer()
      .begin_object()
      .field("n_startup_trials", options_.n_startup_trials)
      .field("n_ei_candidates", options_.n_ei_candidates)
      .field("prior_weight", options_.prior_weight)
      .field("consider_magic_clip", options_.consider_magic_clip)
      .field("consider_endpoints", options_.consider_endpoints)
      .field("multivariate", *options_.multivariate)
      .field("gamma_fraction", options_.gamma_fraction)
      .field("gamma_max", options_.gamma_max)
      .field("skip_duplicates", options_.skip_duplicates)
      .end_object()
      .str();
}

void Tpe::tell(const Trial& trial) {
  check_told(trial);
  // Failed trials teach nothing (as in Optuna) and may be retried: a trial interrupted by a crash
  // must be asked again for a resumed study to continue as an uninterrupted one.
  if (trial.state != TrialState::kComplete && trial.state != TrialState::kPruned) return;
  trials_.push_back(trial);
  told_.insert(space_.canonical_key(trial.params));
}

std::pair<std::vector<Trial>, std::vector<Trial>> Tpe::split() const {
  const size_t n = trials_.size();
  const bool multi = directions_.size() > 1;
  size_t n_below = static_cast<size_t>(std::ceil(options_.gamma_fraction * static_cast<double>(n) - 1e-12));
  if (!multi) n_below = std::min(n_below, static_cast<size_t>(options_.gamma_max));

  std::vector<Trial> complete, pruned, infeasible;
  for (const Trial& t : trials_) {
    if (!is_feasible(t)) infeasible.push_back(t);
    else if (t.state == TrialState::kComplete) complete.push_back(t);
    else pruned.push_back(t);
  }
  std::vector<Trial> below, above;
  auto take = [&](std::vector<Trial>& group, const std::vector<size_t>& order) {
    size_t k = std::min(n_below, group.size());
    for (size_t i = 0; i < order.size(); ++i) (i < k ? below : above).push_back(group[order[i]]);
    n_below -= k;
  };
  std::vector<size_t> order(complete.size());
  std::iota(order.begin(), order.end(), 0);
  if (!multi) {
    Direction d = directions_[0];
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return minimised(complete[a].values[0], d) < minimised(complete[b].values[0], d);
    });
  } else {
    order = select_elite(complete, directions_, complete.size());
  }
  take(complete, order);
  order.resize(pruned.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return pruned_score(pruned[a], directions_[0]) < pruned_score(pruned[b], directions_[0]);
  });
  take(pruned, order);
  order.resize(infeasible.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return constraint_violation(infeasible[a]) < constraint_violation(infeasible[b]);
  });
  take(infeasible, order);
  auto by_number = [](const Trial& a, const Trial& b) { return a.number < b.number; };
  std::sort(below.begin(), below.end(), by_number);
  std::sort(above.begin(), above.end(), by_number);
  return {std::move(below), std::move(above)};
}

TrialParams Tpe::ask(int64_t draw) {
  auto rng = derive_rng(seed_, static_cast<uint64_t>(draw));
  if (trials_.size() < static_cast<size_t>(options_.n_startup_trials)) return space_.sample(rng);
  TrialParams chosen = ask_tpe(rng);
  if (!options_.skip_duplicates || !told_.count(space_.canonical_key(chosen))) return chosen;
  // Every candidate repeated a told trial: a uniform draw not told yet (the space may be spent).
  for (int tries = 0; tries < 1000; ++tries) {
    TrialParams p = space_.sample(rng);
    if (!told_.count(space_.canonical_key(p))) return p;
  }
  return chosen;
}

TrialParams Tpe::ask_tpe(std::mt19937_64& rng) const {
  auto [below, above] = split();
  auto encode_all = [&](const std::vector<Trial>& ts) {
    std::vector<std::vector<double>> rows;
    for (const Trial& t : ts) rows.push_back(space_.encode(t.params));
    return rows;
  };
  auto obs_below = encode_all(below), obs_above = encode_all(above);
  std::vector<double> w_below = directions_.size() > 1 ? std::vector<double>(obs_below.size(), 1.0)
                                                       : default_weights(obs_below.size());
  std::vector<double> w_above = default_weights(obs_above.size());

  std::vector<std::vector<size_t>> groups;  // parameters sampled jointly
  if (*options_.multivariate) {
    groups.emplace_back(space_.size());
    std::iota(groups[0].begin(), groups[0].end(), 0);
  } else {
    for (size_t i = 0; i < space_.size(); ++i) groups.push_back({i});
  }
  std::vector<double> chosen(space_.size());
  for (const auto& dims : groups) {
    Mixture l = build_mixture(space_, dims, obs_below, w_below, options_);
    Mixture g = build_mixture(space_, dims, obs_above, w_above, options_);
    auto candidates = sample_mixture(l, static_cast<size_t>(options_.n_ei_candidates), rng);
    size_t best = 0;
    double best_score = -kInf;
    // With several groups (univariate), a repeat can only be judged once all are chosen.
    const bool dedupe = options_.skip_duplicates && groups.size() == 1;
    bool found = false;
    for (size_t c = 0; c < candidates.size(); ++c) {
      if (dedupe && told_.count(space_.canonical_key(space_.decode(candidates[c])))) continue;
      double score = log_pdf_mixture(l, candidates[c]) - log_pdf_mixture(g, candidates[c]);
      if (!found || score > best_score) best = c, best_score = score, found = true;
    }
    for (size_t d = 0; d < dims.size(); ++d) chosen[dims[d]] = candidates[best][d];
  }
  return space_.decode(chosen);
}

}  // namespace xnn::nas
