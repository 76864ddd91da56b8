#include "nas/search/strategy.h"

#include <algorithm>
#include <cmath>

#include "engine/core/error.h"

namespace xnn::nas {

const char* direction_name(Direction d) { return d == Direction::kMaximize ? "maximize" : "minimize"; }

Direction parse_direction(const std::string& text) {
  if (text == "minimize" || text == "min") return Direction::kMinimize;
  if (text == "maximize" || text == "max") return Direction::kMaximize;
  throw Error("unknown objective direction '" + text + "' (expected minimize or maximize)");
}

const char* trial_state_name(TrialState s) {
  switch (s) {
    case TrialState::kRunning: return "RUNNING";
    case TrialState::kComplete: return "COMPLETE";
    case TrialState::kPruned: return "PRUNED";
    case TrialState::kFail: return "FAIL";
  }
  return "FAIL";
}

TrialState parse_trial_state(const std::string& text) {
  for (TrialState s : {TrialState::kRunning, TrialState::kComplete, TrialState::kPruned, TrialState::kFail}) {
    if (text == trial_state_name(s)) return s;
  }
  throw Error("unknown trial state '" + text + "' (expected RUNNING, COMPLETE, PRUNED or FAIL)");
}

bool is_feasible(const Trial& t) {
  return std::all_of(t.constraints.begin(), t.constraints.end(), [](double c) { return c <= 0; });
}

double constraint_violation(const Trial& t) {
  double v = 0;
  for (double c : t.constraints) v += std::max(0.0, c);
  return v;
}

bool better_single(const Trial& a, const Trial& b, Direction d) {
  bool fa = is_feasible(a), fb = is_feasible(b);
  if (fa != fb) return fa;
  if (!fa) return constraint_violation(a) < constraint_violation(b);
  return minimised(a.values.at(0), d) < minimised(b.values.at(0), d);
}

Strategy::Strategy(SearchSpace space, std::vector<Direction> directions, uint64_t seed)
    : space_(std::move(space)), directions_(std::move(directions)), seed_(seed) {
  XNN_CHECK(!space_.empty(), "search strategy: the search space has no parameters");
  XNN_CHECK(!directions_.empty(), "search strategy: expected at least one objective direction");
}

void Strategy::check_told(const Trial& trial) const {
  const std::string who = name() + ": trial " + std::to_string(trial.number);
  XNN_CHECK(trial.state != TrialState::kRunning, who + " told while still RUNNING");
  if (trial.state == TrialState::kComplete) {
    XNN_CHECK(trial.values.size() == directions_.size(),
              who + " has " + std::to_string(trial.values.size()) + " values, expected " +
                  std::to_string(directions_.size()) + " (one per objective)");
    for (double v : trial.values) XNN_CHECK(std::isfinite(v), who + " has a value that is not finite");
    std::string why;
    XNN_CHECK(space_.contains(trial.params, &why), who + ": " + why);
  }
}

}  // namespace xnn::nas
