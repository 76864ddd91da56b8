#include "nas/study/study.h"

#include <cmath>

#include "engine/core/error.h"
#include "nas/search/nsga2.h"

namespace xnn::nas {

// ---------------------------------------------------------------- TrialContext

double TrialContext::number_param(const std::string& name) const {
  auto it = trial_.params.find(name);
  XNN_CHECK(it != trial_.params.end(), "trial " + std::to_string(number()) + ": no parameter '" + name + "'");
  try {
    return param_value_number(it->second);
  } catch (const Error& e) {
    throw Error("trial " + std::to_string(number()) + ": parameter '" + name + "': " + e.what());
  }
}

int64_t TrialContext::int_param(const std::string& name) const {
  double v = number_param(name);
  XNN_CHECK(v == std::floor(v), "trial " + std::to_string(number()) + ": parameter '" + name + "' is not an integer");
  return static_cast<int64_t>(v);
}

std::string TrialContext::text_param(const std::string& name) const {
  auto it = trial_.params.find(name);
  XNN_CHECK(it != trial_.params.end(), "trial " + std::to_string(number()) + ": no parameter '" + name + "'");
  return param_value_text(it->second);
}

bool TrialContext::report(int64_t step, double value) {
  study_->studies_.set_intermediate_value(id_, step, value);
  bool prune = study_->pruner_ && study_->pruner_->should_prune(trial_, step, value);
  trial_.intermediate_values[step] = value;
  return prune;
}

void TrialContext::set_user_attr(const std::string& key, const std::string& json_value) {
  study_->studies_.set_user_attr(id_, key, json_value);
}

// ---------------------------------------------------------------- Study

Study::Study(Store& store, const std::string& name, std::unique_ptr<Strategy> strategy, std::unique_ptr<Pruner> pruner,
             StudyOptions options)
    : studies_(store), name_(name), strategy_(std::move(strategy)), pruner_(std::move(pruner)) {
  XNN_CHECK(strategy_ != nullptr, "study '" + name + "': no strategy");
  StudyRecord want;
  want.name = name;
  want.strategy = strategy_->name();
  want.strategy_config = strategy_->config_json();
  want.pruner = pruner_ ? pruner_->name() : "";
  want.pruner_config = pruner_ ? pruner_->config_json() : "{}";
  want.space_json = strategy_->space().to_json();
  want.seed = strategy_->seed();
  want.directions = strategy_->directions();
  want.objective_names = options.objective_names;

  auto existing = studies_.find_study(name);
  if (!existing) {
    study_id_ = studies_.create_study(want);
    return;
  }
  const StudyRecord& have = *existing;
  auto mismatch = [&](const std::string& what, const std::string& stored, const std::string& given) {
    throw Error(store.path() + ": study '" + name + "' was created with " + what + " " + stored + ", not " + given +
                "; resume it with the same settings or use another study name");
  };
  if (have.strategy != want.strategy) mismatch("strategy", have.strategy, want.strategy);
  if (have.strategy_config != want.strategy_config)
    mismatch("strategy settings", have.strategy_config, want.strategy_config);
  if (have.pruner != want.pruner)
    mismatch("pruner", have.pruner.empty() ? "(none)" : have.pruner, want.pruner.empty() ? "(none)" : want.pruner);
  if (have.pruner_config != want.pruner_config) mismatch("pruner settings", have.pruner_config, want.pruner_config);
  if (have.space_json != want.space_json) mismatch("search space", have.space_json, want.space_json);
  if (have.seed != want.seed) mismatch("seed", std::to_string(have.seed), std::to_string(want.seed));
  auto dirs = [](const std::vector<Direction>& d) {
    std::string s;
    for (Direction x : d) s += std::string(s.empty() ? "" : ",") + direction_name(x);
    return s;
  };
  if (have.directions != want.directions) mismatch("directions", dirs(have.directions), dirs(want.directions));
  study_id_ = have.id;

  studies_.fail_running_trials(study_id_, "interrupted: the process running this trial stopped before it finished");
  for (const TrialRecord& r : studies_.trials(study_id_)) {
    Trial t = decode(r);
    strategy_->tell(t);
    if (pruner_) pruner_->tell(t);
  }
}

Trial Study::decode(const TrialRecord& r) const {
  const SearchSpace& space = strategy_->space();
  Trial t;
  t.number = r.number;
  t.state = r.state;
  t.values = r.values;
  t.constraints = r.constraints;
  t.intermediate_values = r.intermediate_values;
  for (const StoredParam& p : r.params) {
    size_t i = space.index_of(p.name);
    ParamValue v = space.from_internal(i, p.internal);
    XNN_CHECK(param_value_text(v) == p.text, "study '" + name_ + "': trial " + std::to_string(r.number) +
                                                 ": stored parameter '" + p.name + "' = " + p.text +
                                                 " decodes as " + param_value_text(v));
    t.params[p.name] = v;
  }
  return t;
}

bool Study::enqueue(const TrialParams& params, bool skip_if_exists) {
  const SearchSpace& space = strategy_->space();
  std::string why;
  if (!space.contains(params, &why)) throw Error("study '" + name_ + "': enqueued parameters: " + why);
  if (skip_if_exists) {
    const std::vector<double> key = space.canonical_key(params);
    for (const Trial& t : trials()) {
      if (t.state != TrialState::kFail && space.canonical_key(t.params) == key) return false;
    }
    for (const TrialParams& q : queue_) {
      if (space.canonical_key(q) == key) return false;
    }
  }
  queue_.push_back(params);
  return true;
}

TrialContext Study::ask() {
  TrialRecord r = studies_.create_trial(study_id_);
  Trial t;
  t.number = r.number;
  if (!queue_.empty()) {
    t.params = std::move(queue_.front());
    queue_.pop_front();
  } else {
    t.params = strategy_->ask(r.draw);
  }
  const SearchSpace& space = strategy_->space();
  std::vector<StoredParam> stored;
  for (size_t i = 0; i < space.size(); ++i) {
    const std::string& n = space.params()[i].name;
    const ParamValue& v = t.params.at(n);
    stored.push_back({n, space.to_internal(i, v), param_value_text(v)});
  }
  studies_.set_trial_params(r.id, stored);
  return TrialContext(*this, std::move(t), r.id);
}

void Study::finish(TrialContext& trial, TrialState state, const TrialOutcome& outcome, const std::string& error) {
  XNN_CHECK(trial.study_ == this, "study '" + name_ + "': the trial belongs to another study");
  XNN_CHECK(trial.trial_.state == TrialState::kRunning,
            "study '" + name_ + "': trial " + std::to_string(trial.number()) + " was already told");
  studies_.finish_trial(trial.id_, state, state == TrialState::kComplete ? outcome.values : std::vector<double>{},
                        outcome.constraints, error);
  trial.trial_.state = state;
  if (state == TrialState::kComplete) trial.trial_.values = outcome.values;
  trial.trial_.constraints = outcome.constraints;
  strategy_->tell(trial.trial_);
  if (pruner_) pruner_->tell(trial.trial_);
}

void Study::tell(TrialContext& trial, const TrialOutcome& outcome) {
  std::string bad;
  if (outcome.values.size() != strategy_->directions().size()) {
    bad = "the objective returned " + std::to_string(outcome.values.size()) + " values, expected " +
          std::to_string(strategy_->directions().size());
  }
  for (double v : outcome.values) {
    if (bad.empty() && !std::isfinite(v)) bad = "the objective returned a value that is not finite";
  }
  if (!bad.empty()) {
    finish(trial, TrialState::kFail, {{}, outcome.constraints}, bad);
    return;
  }
  finish(trial, TrialState::kComplete, outcome, "");
}

void Study::tell_pruned(TrialContext& trial) { finish(trial, TrialState::kPruned, {}, ""); }

void Study::tell_failed(TrialContext& trial, const std::string& error) { finish(trial, TrialState::kFail, {}, error); }

void Study::optimize(const Objective& objective, int n_trials) {
  for (int i = 0; i < n_trials; ++i) {
    TrialContext trial = ask();
    TrialOutcome outcome;
    try {
      outcome = objective(trial);
    } catch (const TrialPruned&) {
      tell_pruned(trial);
      continue;
    } catch (const std::exception& e) {
      tell_failed(trial, e.what());
      continue;
    }
    tell(trial, outcome);
  }
}

std::vector<Trial> Study::trials() {
  std::vector<Trial> out;
  for (const TrialRecord& r : studies_.trials(study_id_)) out.push_back(decode(r));
  return out;
}

std::optional<Trial> Study::best_trial() {
  XNN_CHECK(strategy_->directions().size() == 1,
            "study '" + name_ + "' has several objectives: use best_trials() (the Pareto front)");
  std::optional<Trial> best;
  for (Trial& t : trials()) {
    if (t.state != TrialState::kComplete) continue;
    if (!best || better_single(t, *best, strategy_->directions()[0])) best = std::move(t);
  }
  return best;
}

std::vector<Trial> Study::best_trials() {
  std::vector<Trial> complete;
  for (Trial& t : trials()) {
    if (t.state == TrialState::kComplete) complete.push_back(std::move(t));
  }
  if (complete.empty()) return {};
  std::vector<Trial> out;
  auto fronts = constrained_non_dominated_sort(complete, strategy_->directions());
  for (size_t i : fronts.front()) out.push_back(complete[i]);
  return out;
}

}  // namespace xnn::nas
