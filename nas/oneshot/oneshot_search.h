// One-shot architecture search (`method: oneshot`): a weight-sharing supernet over the
// MobileNet-like space trained with single-path uniform sampling (supernet_training.h), then a
// search over its subnets with the config's strategy (aging evolution by default), each scored
// with inherited weights after BatchNorm re-calibration (subnet_scoring.h) on held-out
// validation images, with latency from the config's source (measured on the target or
// predicted); the subnet evaluations are the study "<name>.subnets" in the results database.
// The `oneshot.retrain` best subnets of the inherited-weight Pareto front are then retrained
// from scratch with the recipe (train_and_measure): their test accuracy and measured latency
// are what the result reports, and their Pareto front is exported like the black-box search's.
// With latency.confirm_rounds, each baseline's picks must first stay no slower than it over that
// many back-to-back rounds (a pick chosen by one noisy reading under the budget is the likeliest
// to be slower than that reading: the winner's curse). With oneshot.screen_epochs, each
// baseline's picks are screened next: trained from scratch for
// a few epochs, ranked on the validation images, and only the best go on to the full retrain.
//
// Resuming: the supernet checkpoint (<output_dir>/supernet/supernet.tensors) skips finished
// epochs, the subnet study resumes from the database, retrained subnets and baselines resume
// from their training checkpoints (screening runs too: <output_dir>/screen/<subnet>).
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "harness/store/store.h"
#include "nas/blackbox_search.h"
#include "nas/nas_config.h"

namespace xnn::nas {

SearchResult run_oneshot_search(const NasConfig& config, Store& store, const LatencyFn& latency,
                                const train::ProgressFn& progress);

// The (at most) n subnets of `scored` with floor_ms <= latency_ms <= budget_ms and distinct
// architectures, best inherited top-1 first (ties keep their order in `scored`):
// retrain_at_baselines' picks for one baseline (floor: oneshot.retrain_band x its latency), and
// with an infinite budget the front's `retrain` winners.
//
// `confirm` (optional) is a further test, called in pick order on each candidate that passes the
// budget, the floor and the repeat check, at most `max_confirms` times (0: no limit): the
// back-to-back latency confirmation of latency.confirm_rounds, which may rewrite the candidate's
// latency_ms with the confirmed figure. A candidate it rejects is skipped, and so is its
// architecture under other trial numbers.
using PickConfirm = std::function<bool(CandidateResult&)>;
std::vector<CandidateResult> best_within_latency(std::vector<CandidateResult> scored, double budget_ms, int n,
                                                 double floor_ms = 0, const PickConfirm& confirm = nullptr,
                                                 int max_confirms = 0);

// Appends to the retrain list the picks whose architecture it does not hold yet (a baseline's
// pick may be a front winner, or the same architecture scored under another trial number);
// returns how many it appended.
int append_new_architectures(std::vector<CandidateResult>& chosen, const std::vector<CandidateResult>& picks);

// The screening's choice (oneshot.screen_epochs): the `keep` picks with the best screened
// validation top-1 (`screened`: architecture -> top-1 after the short training), ties in their
// order in `picks` (the inherited ranking). Every pick must have a screened score.
std::vector<CandidateResult> best_screened(const std::vector<CandidateResult>& picks,
                                           const std::map<std::string, double>& screened, int keep);

}  // namespace xnn::nas
