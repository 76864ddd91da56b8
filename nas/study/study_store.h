// Studies and trials of black-box searches in the lab's SQLite results database (the tables of
// migration 2, documented in harness/store/README.md), after Optuna's storage model: a study
// (strategy and its settings, pruner, search space, seed, objective directions), its trials
// (number, draw, state RUNNING/COMPLETE/PRUNED/FAIL, times, error), each trial's parameters
// (internal value and readable text), objective values, constraint values, intermediate values
// by step and user attributes.
//
// Every call is one transaction of the Store it wraps (joining the caller's transaction when
// made inside Store::write_transaction), so a process killed at any point leaves whole trials.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/store/store.h"
#include "nas/search/strategy.h"

namespace xnn::nas {

struct StudyRecord {
  int64_t id = 0;  // filled by the store
  std::string name;
  std::string strategy;  // Strategy::name()
  std::string strategy_config = "{}";
  std::string pruner;  // Pruner::name(); empty: none
  std::string pruner_config = "{}";
  std::string space_json;  // SearchSpace::to_json()
  uint64_t seed = 0;
  std::vector<Direction> directions;
  std::vector<std::string> objective_names;  // empty or one per direction
  std::string created_at;                    // filled by the store
};

struct StoredParam {
  std::string name;
  double internal = 0;  // SearchSpace::to_internal
  std::string text;     // param_value_text
};

struct TrialRecord {
  int64_t id = 0;
  int64_t number = 0;  // 0, 1, 2, ... per study
  // Position among the study's asks that count: the strategy draws from (seed, draw). Trials
  // interrupted by a crash give their draw back, so the retry asks exactly what they asked.
  int64_t draw = 0;
  TrialState state = TrialState::kRunning;
  bool interrupted = false;  // FAIL because the process running it died
  std::string error;
  std::string started_at;
  std::string finished_at;
  std::vector<StoredParam> params;  // by name
  std::vector<double> values;
  std::vector<double> constraints;
  std::map<int64_t, double> intermediate_values;
  std::map<std::string, std::string> user_attrs;  // key -> JSON text
};

class StudyStore {
 public:
  explicit StudyStore(Store& store) : store_(store) {}

  // Inserts a study; an Error when the name is taken or the record is incomplete.
  int64_t create_study(const StudyRecord& study);
  std::optional<StudyRecord> find_study(const std::string& name);
  std::vector<StudyRecord> list_studies();  // by name

  // A new RUNNING trial with the next number and draw (in one transaction).
  TrialRecord create_trial(int64_t study_id);
  void set_trial_params(int64_t trial_id, const std::vector<StoredParam>& params);
  void set_intermediate_value(int64_t trial_id, int64_t step, double value);
  void set_user_attr(int64_t trial_id, const std::string& key, const std::string& json_value);
  // Records the outcome: state (COMPLETE, PRUNED or FAIL), values (COMPLETE), constraints, error.
  // An Error when the trial is not RUNNING.
  void finish_trial(int64_t trial_id, TrialState state, const std::vector<double>& values,
                    const std::vector<double>& constraints, const std::string& error = "");
  // Marks the study's RUNNING trials FAIL + interrupted (their process died); returns how many.
  int fail_running_trials(int64_t study_id, const std::string& why);

  std::vector<TrialRecord> trials(int64_t study_id);  // by number, everything filled
  std::optional<TrialRecord> trial(int64_t study_id, int64_t number);

 private:
  std::vector<TrialRecord> read_trials(int64_t study_id, std::optional<int64_t> number);
  Store& store_;
};

}  // namespace xnn::nas
