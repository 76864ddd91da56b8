// Tree-structured Parzen Estimator (Bergstra et al. 2011) with Optuna 5's TPESampler defaults,
// so that the comparison with Optuna is like for like:
//
// - the first n_startup_trials (10) COMPLETE or PRUNED trials are random;
// - then the told trials are split into "below" (good) and "above": gamma(n) = min(ceil(0.1 n),
//   25) for one objective, ceil(0.1 n) for several. COMPLETE feasible trials first (by value;
//   several objectives: by non-dominated rank, the last rank cut by crowding distance where
//   Optuna solves a hypervolume subset selection), then PRUNED ones (furthest step first, then
//   their value there), then infeasible ones (least violation first). Failed trials are ignored.
// - each group becomes a mixture of Parzen kernels, one per trial plus a prior (weight
//   prior_weight = 1): floats and ints a truncated Gaussian in (log) space centred on the
//   observation, bandwidth = the larger gap to its sorted neighbours (range ends included;
//   the first and last use their inner gap: consider_endpoints = false), clipped to [range /
//   min(100, n + 2), range] ("magic clip"); the prior is centred with sigma = range. Ints are
//   discretised (mass of the step's cell). Categoricals: prior_weight / (n + 1) on every
//   choice plus 1 on the observed one, normalised; the prior kernel is uniform. Kernel weights:
//   1 each up to 25 observations, older ones ramped down beyond (Optuna's default_weights);
//   the below group of a multi-objective study weighs all 1.
// - 24 candidates (n_ei_candidates) are drawn from the below mixture and the one maximising
//   log l(x) - log g(x) is asked.
// - multivariate (default for one objective, like Optuna 5): one kernel index per candidate
//   for all parameters (the product of per-parameter kernels); univariate: each parameter on
//   its own (default for several objectives).
// One addition to Optuna's algorithm (skip_duplicates, on by default): a candidate whose
// parameters equal an already told (COMPLETE or PRUNED) trial's (in the space's canonical form)
// is passed over for the best new one (if all 24 are
// repeats, a uniform draw not yet told is asked), so discrete spaces (NAS decisions) never
// spend a trial twice. Continuous spaces practically never repeat, so nothing changes there.
#pragma once
#include <optional>
#include <set>

#include "nas/search/strategy.h"

namespace xnn::nas {

struct TpeOptions {
  int n_startup_trials = 10;
  int n_ei_candidates = 24;
  double prior_weight = 1.0;
  bool consider_magic_clip = true;
  bool consider_endpoints = false;
  std::optional<bool> multivariate;  // default: true for one objective, false for several
  double gamma_fraction = 0.1;       // gamma(n) = ceil(gamma_fraction * n), capped at gamma_max
  int gamma_max = 25;                // for one objective only (Optuna: no cap for several)
  bool skip_duplicates = true;       // never ask a told trial's parameters again (see above)
};

class Tpe : public Strategy {
 public:
  Tpe(SearchSpace space, std::vector<Direction> directions, uint64_t seed, TpeOptions options = {});
  TrialParams ask(int64_t draw) override;
  void tell(const Trial& trial) override;
  std::string name() const override { return "tpe"; }
  std::string config_json() const override;

  // Exposed for tests: the split of the told trials into (below, above), each by trial number.
  std::pair<std::vector<Trial>, std::vector<Trial>> split() const;

 private:
  TrialParams ask_tpe(std::mt19937_64& rng) const;  // one TPE proposal (may repeat a told trial)
  TpeOptions options_;
  std::vector<Trial> trials_;  // told COMPLETE and PRUNED trials
  std::set<std::vector<double>> told_;  // canonical keys of the told COMPLETE and PRUNED trials
};

// Truncated-normal helpers (exposed for tests): log(Phi(b) - Phi(a)) computed stably, and a draw
// from N(0, 1) truncated to [a, b] by inverting the CDF.
double log_gauss_mass(double a, double b);
double sample_truncated_standard_normal(double a, double b, std::mt19937_64& rng);

}  // namespace xnn::nas
