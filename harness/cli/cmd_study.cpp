// xnn-lab study list DB [--json]
// xnn-lab study show DB NAME [--json]
//
// Black-box search studies recorded in a results database (nas/study; the tables of schema
// version 2 in harness/store/README.md): `list` prints each study's strategy, pruner, objective
// directions, trial counts by state and best value; `show` prints one study's settings and every
// trial (number, state, values, constraints, parameters, error).
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "engine/core/error.h"
#include "harness/cli/commands.h"
#include "harness/util/json.h"
#include "nas/study/study_store.h"

namespace xnn::cli {
namespace {

using nas::StudyRecord;
using nas::TrialRecord;
using nas::TrialState;

std::unique_ptr<Store> open_database(const std::string& db) {
  StoreOptions options;
  options.create_if_missing = false;
  return std::make_unique<Store>(db, options);
}

std::string directions_text(const StudyRecord& s) {
  std::string out;
  for (size_t k = 0; k < s.directions.size(); ++k) {
    if (!out.empty()) out += ",";
    if (!s.objective_names.empty()) out += s.objective_names[k] + ":";
    out += nas::direction_name(s.directions[k]);
  }
  return out;
}

nas::Trial as_trial(const TrialRecord& r) {
  nas::Trial t;
  t.number = r.number;
  t.state = r.state;
  t.values = r.values;
  t.constraints = r.constraints;
  return t;
}

// The best COMPLETE trial of a single-objective study (feasible first), or nullptr.
const TrialRecord* best_of(const StudyRecord& s, const std::vector<TrialRecord>& trials) {
  if (s.directions.size() != 1) return nullptr;
  const TrialRecord* best = nullptr;
  for (const TrialRecord& r : trials) {
    if (r.state != TrialState::kComplete || r.values.size() != 1) continue;
    if (!best || nas::better_single(as_trial(r), as_trial(*best), s.directions[0])) best = &r;
  }
  return best;
}

std::string numbers_text(const std::vector<double>& v) {
  std::string out;
  for (double x : v) out += (out.empty() ? "" : ",") + nas::param_value_text(x);
  return out;
}

// Full precision (shortest text that reads back exactly); null when not finite.
std::string number_json(double v) { return std::isfinite(v) ? nas::param_value_text(v) : "null"; }

void write_trial_json(json::Writer& w, const TrialRecord& r) {
  w.begin_object().field("number", r.number).field("draw", r.draw).field("state", nas::trial_state_name(r.state));
  w.field("interrupted", r.interrupted).field("error", r.error).field("started_at", r.started_at);
  w.field("finished_at", r.finished_at).key("values").begin_array();
  for (double v : r.values) w.raw(number_json(v));
  w.end_array().key("constraints").begin_array();
  for (double v : r.constraints) w.raw(number_json(v));
  w.end_array().key("params").begin_object();
  for (const auto& p : r.params) w.field(p.name, p.text);
  w.end_object().key("intermediate_values").begin_object();
  for (const auto& [step, v] : r.intermediate_values) w.key(std::to_string(step)).raw(number_json(v));
  w.end_object().key("user_attrs").begin_object();
  for (const auto& [k, v] : r.user_attrs) w.key(k).raw(v);
  w.end_object().end_object();
}

void write_study_json(json::Writer& w, const StudyRecord& s, const std::vector<TrialRecord>& trials) {
  w.begin_object().field("name", s.name).field("strategy", s.strategy).key("strategy_config").raw(s.strategy_config);
  w.field("pruner", s.pruner).key("pruner_config").raw(s.pruner_config).key("space").raw(s.space_json);
  w.field("seed", static_cast<int64_t>(s.seed)).field("directions", directions_text(s)).field("created_at", s.created_at);
  w.field("trials", trials.size());
  const TrialRecord* best = best_of(s, trials);
  w.key("best_trial");
  if (best) w.value(best->number);
  else w.null();
}

}  // namespace

void add_study_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("study", "Black-box search studies in a results database (list, show)");
  cmd->require_subcommand(1);
  static std::string db, name;
  static bool as_json = false;

  auto* list = cmd->add_subcommand("list", "List the studies: strategy, objectives, trials by state, best value");
  list->add_option("db", db, "Results database")->required();
  list->add_flag("--json", as_json, "Print JSON");
  list->callback([&exit_code] {
    auto store = open_database(db);
    nas::StudyStore studies(*store);
    json::Writer w;
    w.begin_array();
    for (const StudyRecord& s : studies.list_studies()) {
      auto trials = studies.trials(s.id);
      std::map<TrialState, int> count;
      for (const TrialRecord& r : trials) ++count[r.state];
      const TrialRecord* best = best_of(s, trials);
      if (as_json) {
        write_study_json(w, s, trials);
        w.key("states").begin_object();
        for (TrialState st : {TrialState::kRunning, TrialState::kComplete, TrialState::kPruned, TrialState::kFail})
          w.field(nas::trial_state_name(st), count[st]);
        w.end_object().key("best_value");
        if (best) w.raw(number_json(best->values[0]));
        else w.null();
        w.end_object();
        continue;
      }
      std::printf("%-24s %-10s %-10s %-20s %4zu trials (%d complete, %d pruned, %d fail, %d running)  best %s\n",
                  s.name.c_str(), s.strategy.c_str(), s.pruner.empty() ? "-" : s.pruner.c_str(),
                  directions_text(s).c_str(), trials.size(), count[TrialState::kComplete],
                  count[TrialState::kPruned], count[TrialState::kFail], count[TrialState::kRunning],
                  best ? (nas::param_value_text(best->values[0]) + " (trial " + std::to_string(best->number) + ")").c_str()
                       : "-");
    }
    w.end_array();
    if (as_json) std::printf("%s\n", w.str().c_str());
    exit_code = 0;
  });

  auto* show = cmd->add_subcommand("show", "Show one study's settings and every trial");
  show->add_option("db", db, "Results database")->required();
  show->add_option("name", name, "Study name")->required();
  show->add_flag("--json", as_json, "Print JSON");
  show->callback([&exit_code] {
    auto store = open_database(db);
    nas::StudyStore studies(*store);
    auto s = studies.find_study(name);
    if (!s) {
      std::string known;
      for (const StudyRecord& r : studies.list_studies()) known += (known.empty() ? "" : ", ") + r.name;
      throw Error(db + ": no study named '" + name + "' (studies: " + (known.empty() ? "none" : known) + ")");
    }
    auto trials = studies.trials(s->id);
    if (as_json) {
      json::Writer w;
      write_study_json(w, *s, trials);
      w.key("trial_list").begin_array();
      for (const TrialRecord& r : trials) write_trial_json(w, r);
      w.end_array().end_object();
      std::printf("%s\n", w.str().c_str());
      exit_code = 0;
      return;
    }
    std::printf("study %s: strategy %s %s, pruner %s, seed %llu, objectives %s, created %s\n", s->name.c_str(),
                s->strategy.c_str(), s->strategy_config.c_str(), s->pruner.empty() ? "-" : s->pruner.c_str(),
                static_cast<unsigned long long>(s->seed), directions_text(*s).c_str(), s->created_at.c_str());
    std::printf("space %s\n", s->space_json.c_str());
    const TrialRecord* best = best_of(*s, trials);
    for (const TrialRecord& r : trials) {
      std::string params;
      for (const auto& p : r.params) params += (params.empty() ? "" : " ") + p.name + "=" + p.text;
      std::printf("%c%4lld %-8s %-14s %s%s%s%s\n", best == &r ? '*' : ' ', static_cast<long long>(r.number),
                  nas::trial_state_name(r.state), r.values.empty() ? "-" : numbers_text(r.values).c_str(),
                  params.c_str(), r.constraints.empty() ? "" : ("  constraints " + numbers_text(r.constraints)).c_str(),
                  r.error.empty() ? "" : "  error: ", r.error.c_str());
    }
    exit_code = 0;
  });
}

}  // namespace xnn::cli
