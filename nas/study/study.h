// A Study ties a search strategy (and optionally a pruner) to a study in the results database:
// every trial is recorded as it goes (RUNNING with its parameters, each intermediate value, the
// outcome), so a study survives interruption.
//
// Resuming: constructing a Study for a name that exists re-opens it. The strategy's name and
// settings, the pruner's, the search space, the seed and the objective directions must match
// what is stored (an Error names the first difference). Trials left RUNNING by a process that
// died become FAIL (interrupted); then every finished trial is told to the strategy and the
// pruner in trial-number order, which for a sequential study is the order they finished.
//
// Reproducibility: each ask draws from (seed, draw) only, draw being the trial's position
// among asks that were not interrupted, so a seed plus the trial history fully determine the
// next ask, and a study resumed after a crash continues exactly as an uninterrupted one (the
// interrupted trial is asked again, as the next trial).
#pragma once
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>

#include "nas/search/strategy.h"
#include "nas/study/study_store.h"

namespace xnn::nas {

// Thrown by an objective (after TrialContext::report said so) to end its trial as PRUNED.
class TrialPruned : public std::runtime_error {
 public:
  TrialPruned() : std::runtime_error("trial pruned") {}
};

// What an objective returns: one value per objective, optional constraint values (<= 0 means
// satisfied; an infeasible trial ranks below every feasible one).
struct TrialOutcome {
  std::vector<double> values;
  std::vector<double> constraints;
};

class Study;

// A running trial, handed to the objective.
class TrialContext {
 public:
  int64_t number() const { return trial_.number; }
  const TrialParams& params() const { return trial_.params; }
  // Typed accessors (an Error names the parameter when it is missing or of another type).
  double number_param(const std::string& name) const;  // an int or float value
  int64_t int_param(const std::string& name) const;
  std::string text_param(const std::string& name) const;  // any value as text

  // Records an intermediate value (learning curve) and asks the pruner: true means the trial
  // should stop (throw TrialPruned). Without a pruner, always false.
  bool report(int64_t step, double value);
  // Stores a user attribute (`json_value` is JSON text, e.g. "12.5" or "\"r160-w0.75|...\"").
  void set_user_attr(const std::string& key, const std::string& json_value);

  const Trial& trial() const { return trial_; }
  int64_t id() const { return id_; }

 private:
  friend class Study;
  TrialContext(Study& study, Trial trial, int64_t id) : study_(&study), trial_(std::move(trial)), id_(id) {}
  Study* study_;
  Trial trial_;
  int64_t id_;
};

using Objective = std::function<TrialOutcome(TrialContext&)>;

struct StudyOptions {
  std::vector<std::string> objective_names;  // optional, one per direction
};

class Study {
 public:
  // Creates the study `name` in `store`, or re-opens and resumes it (see above). The study's
  // seed is the strategy's.
  Study(Store& store, const std::string& name, std::unique_ptr<Strategy> strategy,
        std::unique_ptr<Pruner> pruner = nullptr, StudyOptions options = {});

  // Ask/tell for callers that run trials themselves: ask records a RUNNING trial with the
  // strategy's parameters; tell / tell_pruned / tell_failed finish it.
  TrialContext ask();
  void tell(TrialContext& trial, const TrialOutcome& outcome);
  void tell_pruned(TrialContext& trial);
  void tell_failed(TrialContext& trial, const std::string& error);

  // Queues parameters for the next asks (Optuna's enqueue_trial): ask() takes the oldest queued
  // set instead of the strategy's (the draw is used all the same), and the strategy is told the
  // outcome like any other — a warm start from points known elsewhere. An Error names a
  // parameter outside the space. With skip_if_exists, a set whose canonical form a trial of the
  // study already has (one that did not fail) is not queued: the queue is not stored, so a
  // resumed study is given the same sets again and takes only those it has not run. Returns
  // whether the set was queued.
  bool enqueue(const TrialParams& params, bool skip_if_exists = true);
  size_t queued() const { return queue_.size(); }

  // Runs `n_trials` more trials one after another. An objective that throws TrialPruned ends
  // its trial PRUNED; any other exception, or values that are not finite or not one per
  // objective, end it FAIL with the message recorded, and the study goes on.
  void optimize(const Objective& objective, int n_trials);

  const std::string& name() const { return name_; }
  int64_t id() const { return study_id_; }
  const Strategy& strategy() const { return *strategy_; }
  // Every trial, by number (RUNNING ones included), decoded with the search space.
  std::vector<Trial> trials();
  std::vector<TrialRecord> trial_records() { return studies_.trials(study_id_); }
  // Single objective: the best COMPLETE trial (feasible first); nullopt when there is none.
  std::optional<Trial> best_trial();
  // The Pareto front of the COMPLETE trials (constrained domination), by number.
  std::vector<Trial> best_trials();

 private:
  friend class TrialContext;
  Trial decode(const TrialRecord& r) const;
  void finish(TrialContext& trial, TrialState state, const TrialOutcome& outcome, const std::string& error);

  StudyStore studies_;
  std::string name_;
  std::unique_ptr<Strategy> strategy_;
  std::unique_ptr<Pruner> pruner_;
  int64_t study_id_ = 0;
  std::deque<TrialParams> queue_;  // enqueue()d, asked first
};

}  // namespace xnn::nas
