#include "nas/format.h"
#include "nas/oneshot/oneshot_search.h"

#include <algorithm>
#include <functional>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>

#include "engine/core/error.h"
#include "engine/format/xnn_format.h"
#include "engine/runtime/model_io.h"
#include "harness/util/json.h"
#include "nas/dominance.h"
#include "nas/oneshot/oneshot_config.h"
#include "nas/oneshot/subnet_objective.h"

namespace fs = std::filesystem;

namespace xnn::nas {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string attr(const TrialRecord& r, const std::string& key) {
  const auto it = r.user_attrs.find(key);
  if (it == r.user_attrs.end()) throw Error("oneshot: subnet trial " + std::to_string(r.number) + " lacks '" + key + "'");
  return it->second;
}

// "subnet_<n>" for the main study's trials, "<baseline>_subnet_<n>" for a baseline's study.
std::string subnet_name(int64_t number, const std::string& prefix = "") {
  return prefix + "subnet_" + std::to_string(number);
}

// The scored subnets (COMPLETE trials) with their inherited-weight accuracy and measurements.
std::vector<CandidateResult> scored_subnets(Study& study, const std::string& prefix = "") {
  std::vector<CandidateResult> out;
  for (const TrialRecord& r : study.trial_records()) {
    if (r.state != TrialState::kComplete) continue;
    CandidateResult c;
    c.trial = r.number;
    c.name = subnet_name(r.number, prefix);
    c.top1 = r.values.at(0);
    c.latency_ms = std::stod(attr(r, "latency_ms"));
    c.params = std::stoll(attr(r, "params"));
    c.size_bytes = std::stoll(attr(r, "size_bytes"));
    const std::string a = attr(r, "arch");
    c.arch = a.size() >= 2 ? a.substr(1, a.size() - 2) : a;  // our own JSON string: an encoding, no escapes
    out.push_back(std::move(c));
  }
  return out;
}

// Subnets per "generation" in the progress lines: the evolution's population (a generation's
// worth of asks), else 10.
int generation_size(const NasConfig& config) {
  const YAML::Node& o = config.strategy_options;
  if (o && o.IsMap() && o["population_size"]) return std::max(1, o["population_size"].as<int>());
  return 10;
}

// Scores subnets in `study` until `trials` have finished (a resumed study continues), each with
// inherited weights against `cfg`'s objectives and constraints; a progress line per subnet, and
// per `per_generation` subnets the current front (0: none). With a `relative_probe` (a baseline's
// untrained model), that model is measured right after each subnet and the latency constraint is
// their ratio <= 1 (user attributes baseline_latency_ms, latency_ratio): measured back to back,
// the comparison holds through this VM's slow and fast phases, which move both alike. A
// `band_floor` > 0 (oneshot.retrain_band) adds the constraint ratio >= band_floor: the study
// searches the band its baseline's picks come from.
void run_subnet_study(Study& study, const NasConfig& cfg, int trials, const std::string& prefix, SubnetObjective& scorer,
                      const fs::path& subnet_dir, int per_generation, SearchResult& result,
                      const std::function<void(const std::string&)>& log, const LatencyFn& latency = nullptr,
                      const std::string& relative_probe = "", double band_floor = 0) {
  const Objective objective = [&](TrialContext& ctx) {
    const arch::Arch a = arch_from_params(cfg.space, ctx.params());
    ctx.set_user_attr("arch", json::quote(a.to_string()));
    const CandidateResult c = scorer.score(a, (subnet_dir / (subnet_name(ctx.number(), prefix) + ".xnn")).string());
    ctx.set_user_attr("latency_ms", json::number(c.latency_ms));
    ctx.set_user_attr("params", std::to_string(c.params));
    ctx.set_user_attr("size_bytes", std::to_string(c.size_bytes));
    TrialOutcome o = candidate_outcome(cfg, c);
    if (!relative_probe.empty()) {
      const double base = latency(relative_probe);
      ctx.set_user_attr("baseline_latency_ms", json::number(base));
      ctx.set_user_attr("latency_ratio", json::number(c.latency_ms / base));
      o.constraints.push_back(c.latency_ms / base - 1);
      if (band_floor > 0) o.constraints.push_back(band_floor - c.latency_ms / base);
    }
    return o;
  };
  const auto count = [&] { return count_finished_trials(study, result); };
  int finished = count();
  if (finished > 0) log("resuming subnet study '" + study.name() + "': " + std::to_string(finished) + " subnet(s) scored");
  while (finished < trials) {
    study.optimize(objective, 1);
    finished = count();
    const TrialRecord last = study.trial_records().back();
    std::string outcome = trial_state_name(last.state);
    if (last.state == TrialState::kComplete) {
      outcome = "val top1 " + fmt("%.2f%%", 100 * last.values.at(0)) + ", latency " +
                fmt("%.3f ms", std::stod(attr(last, "latency_ms"))) + " (BN re-calibration " +
                fmt("%.1f s", scorer.recalibrate_seconds()) + ", validation " + fmt("%.1f s", scorer.validate_seconds()) +
                ", latency " + fmt("%.1f s", scorer.latency_seconds()) + ")";
    } else if (!last.error.empty()) {
      outcome += ": " + last.error;
    }
    const auto arch_attr = last.user_attrs.find("arch");
    log(subnet_name(last.number, prefix) + " " + (arch_attr == last.user_attrs.end() ? "?" : arch_attr->second) + ": " +
        outcome);
    if (per_generation > 0 && (finished % per_generation == 0 || finished == trials)) {
      log("generation " + std::to_string((finished + per_generation - 1) / per_generation) + " [" +
          std::to_string(finished) + "/" + std::to_string(trials) +
          " subnets]; front (inherited weights): " + front_text(pareto_results(cfg, scored_subnets(study, prefix))));
    }
  }
}

// A baseline study's warm start: up to `n` subnets of the front search `main` (distinct
// architectures) enqueued as its first trials — the most accurate of those it measured within
// 1.25x the baseline's latency first, then the fastest of the rest. Why: the study otherwise
// starts from random subnets, and in a space spanning 10x in latency few are near LeNet-5's
// cost (2026-12-07: 1 of 100 no slower than it, the evolution reaching its latency only in its
// last 20 trials). Sets the study already ran count towards n (a resumed study queues the same
// seeds and runs only the rest). Returns how many were queued now.
int seed_baseline_study(Study& target, Study& main, double budget_ms, int n) {
  std::vector<CandidateResult> near, rest;
  for (CandidateResult& c : scored_subnets(main)) (c.latency_ms <= 1.25 * budget_ms ? near : rest).push_back(std::move(c));
  std::stable_sort(near.begin(), near.end(), [](const auto& a, const auto& b) { return a.top1 > b.top1; });
  std::stable_sort(rest.begin(), rest.end(), [](const auto& a, const auto& b) { return a.latency_ms < b.latency_ms; });
  near.insert(near.end(), rest.begin(), rest.end());
  std::map<int64_t, TrialParams> params;
  for (Trial& t : main.trials()) params[t.number] = std::move(t.params);
  std::set<std::string> seen;
  int used = 0, queued = 0;
  for (const CandidateResult& c : near) {
    if (used >= n) break;
    if (!seen.insert(c.arch).second) continue;
    ++used;
    queued += target.enqueue(params.at(c.trial));
  }
  return queued;
}

// <output>/baselines/<name>/untrained.xnn: the baseline's untrained model (weights do not change
// the work), written once and kept for the latency measurements that compare subnets with it.
std::string baseline_probe(const NasConfig& config, const BaselineSpec& b) {
  const fs::path dir = fs::path(config.output_dir) / "baselines" / b.name;
  const fs::path probe = dir / "untrained.xnn";
  if (!fs::exists(probe)) {
    fs::create_directories(dir);
    const std::string tmp = probe.string() + ".tmp";
    save_xnn(*baseline_model(config, b, nullptr), tmp);
    fs::rename(tmp, probe);
  }
  return probe.string();
}

// A baseline's latency budget for retrain_at_baselines: its untrained model measured with the
// search's latency source (weights do not change the work), the median of three measurements
// (one noisy reading once made a 1.5x slower subnet pass as "within LeNet-5's latency"); the
// figure is kept in <output>/baselines/<name>/untrained_latency_ms so a resumed search picks the
// same subnets.
double baseline_latency_ms(const NasConfig& config, const BaselineSpec& b, const LatencyFn& latency) {
  const fs::path dir = fs::path(config.output_dir) / "baselines" / b.name;
  const fs::path record = dir / "untrained_latency_ms";
  if (fs::exists(record)) {
    std::ifstream in(record);
    double ms = 0;
    if (in >> ms && ms > 0) return ms;
  }
  const std::string probe = baseline_probe(config, b);
  std::vector<double> readings;
  for (int i = 0; i < 3; ++i) readings.push_back(latency(probe));
  std::sort(readings.begin(), readings.end());
  const double ms = readings[1];
  const std::string tmp = record.string() + ".tmp";
  {
    std::ofstream out(tmp);
    out << fmt("%.17g", ms) << "\n";
    if (!out) throw Error("oneshot: cannot write " + tmp);
  }
  fs::rename(tmp, record);
  return ms;
}

// latency.confirm_rounds for one baseline's picks: a pick's batch-1 model (inherited weights)
// and the baseline's untrained model measured back to back for `rounds` rounds; the pick stays
// when the median ratio is <= 1, and its latency becomes median x budget. Verdicts are kept in
// <output>/baselines/<name>/confirmed_picks.tsv (architecture, rounds, median ratio) so a
// resumed search with the same rounds picks the same subnets without measuring again.
class PickConfirmation {
 public:
  PickConfirmation(const NasConfig& config, const BaselineSpec& b, double budget_ms, SubnetObjective& scorer,
                   const LatencyFn& latency, std::function<void(const std::string&)> log)
      : dir_(fs::path(config.output_dir) / "baselines" / b.name),
        probe_(baseline_probe(config, b)),
        baseline_(b.name),
        budget_ms_(budget_ms),
        rounds_(config.latency.confirm_rounds),
        scorer_(scorer),
        latency_(latency),
        log_(std::move(log)) {
    std::ifstream in(dir_ / "confirmed_picks.tsv");
    std::string arch;
    int rounds = 0;
    double ratio = 0;
    while (std::getline(in, arch, '\t') && in >> rounds >> ratio) {
      if (rounds == rounds_) verdicts_[arch] = ratio;  // another rounds setting measures again
      in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
    }
  }

  bool operator()(CandidateResult& c) {
    auto it = verdicts_.find(c.arch);
    if (it == verdicts_.end()) {
      const fs::path model = dir_ / "confirm" / (c.name + ".xnn");
      scorer_.save_batch1_model(arch::parse_arch(c.arch), model.string());
      const PairedLatency m = paired_latency(model.string(), probe_, latency_, rounds_);
      fs::remove(model);
      std::string ratios;
      for (double r : m.ratios) ratios += (ratios.empty() ? "" : " ") + fmt("%.3f", r);
      log_("confirm " + c.name + " vs " + baseline_ + ": latency ratio per round " + ratios + ", median " +
           fmt("%.3f", m.median_ratio) + (m.median_ratio <= 1 ? ": kept" : ": slower, dropped"));
      std::ofstream out(dir_ / "confirmed_picks.tsv", std::ios::app);
      out << c.arch << '\t' << rounds_ << '\t' << fmt("%.17g", m.median_ratio) << '\n';
      if (!out) throw Error("oneshot: cannot write " + (dir_ / "confirmed_picks.tsv").string());
      it = verdicts_.emplace(c.arch, m.median_ratio).first;
    }
    c.latency_ms = it->second * budget_ms_;
    return it->second <= 1;
  }

 private:
  fs::path dir_;
  std::string probe_, baseline_;
  double budget_ms_;
  int rounds_;
  SubnetObjective& scorer_;
  LatencyFn latency_;
  std::function<void(const std::string&)> log_;
  std::map<std::string, double> verdicts_;  // architecture -> median ratio
};

// Screening of one baseline's picks: each trained from scratch for options.screen_epochs epochs
// with the recipe (its schedule compressed to them) into <output>/screen/<subnet> (a resumed
// search re-uses a finished screen), its exported model scored on the validation images the
// inherited weights were scored on. `screened` caches scores per architecture: a subnet within
// two baselines' latency is screened once. Returns the options.screen_keep best.
std::vector<CandidateResult> screen_picks(const NasConfig& config, const SubnetObjective& scorer,
                                          const std::vector<CandidateResult>& picks, const LatencyFn& latency,
                                          const train::ProgressFn& progress, std::map<std::string, double>& screened) {
  const OneshotOptions& options = scorer.options();
  const auto log = [&](const std::string& line) {
    if (progress) progress(line);
  };
  for (const CandidateResult& cand : picks) {
    if (screened.count(cand.arch)) continue;
    train::TrainConfig r = config.recipe;
    r.name = config.name + "_screen_" + cand.name;
    r.epochs = options.screen_epochs;
    r.resume = true;
    const auto t0 = Clock::now();
    const CandidateResult t =
        train_and_measure(arch::build_arch_model(config.space, arch::parse_arch(cand.arch), config.seed, 0), r,
                          (fs::path(config.output_dir) / "screen" / cand.name).string(), latency, progress, nullptr);
    const double val = scorer.validation_top1(load_model(t.xnn_path));
    screened[cand.arch] = val;
    log("screen " + cand.name + " (" + cand.arch + "): validation top1 " + fmt("%.2f%%", 100 * val) + " after " +
        std::to_string(options.screen_epochs) + " epoch(s) (inherited " + fmt("%.2f%%", 100 * cand.top1) +
        "), latency " + fmt("%.3f ms", t.latency_ms) + ", " + fmt("%.1f s", seconds_since(t0)));
  }
  return best_screened(picks, screened, options.screen_keep);
}

}  // namespace

std::vector<CandidateResult> best_screened(const std::vector<CandidateResult>& picks,
                                           const std::map<std::string, double>& screened, int keep) {
  for (const CandidateResult& c : picks) {
    if (!screened.count(c.arch)) throw Error("oneshot: " + c.name + " (" + c.arch + ") was not screened");
  }
  std::vector<CandidateResult> ranked = picks;
  std::stable_sort(ranked.begin(), ranked.end(),
                   [&](const auto& a, const auto& b) { return screened.at(a.arch) > screened.at(b.arch); });
  if (static_cast<int>(ranked.size()) > keep) ranked.resize(keep);
  return ranked;
}

std::vector<CandidateResult> best_within_latency(std::vector<CandidateResult> scored, double budget_ms, int n,
                                                 double floor_ms, const PickConfirm& confirm, int max_confirms) {
  std::stable_sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) { return a.top1 > b.top1; });
  std::vector<CandidateResult> picks;
  std::set<std::string> rejected;
  int confirms = 0;
  for (CandidateResult& c : scored) {
    if (static_cast<int>(picks.size()) >= n) break;
    // Evolution can score one architecture under several trial numbers: retrain it once.
    const bool seen = std::any_of(picks.begin(), picks.end(), [&](const auto& p) { return p.arch == c.arch; });
    if (c.latency_ms > budget_ms || c.latency_ms < floor_ms || seen || rejected.count(c.arch)) continue;
    if (confirm) {
      if (max_confirms > 0 && confirms >= max_confirms) break;
      ++confirms;
      if (!confirm(c)) {
        rejected.insert(c.arch);
        continue;
      }
    }
    picks.push_back(std::move(c));
  }
  return picks;
}

int append_new_architectures(std::vector<CandidateResult>& chosen, const std::vector<CandidateResult>& picks) {
  int appended = 0;
  for (const CandidateResult& c : picks) {
    const bool known = std::any_of(chosen.begin(), chosen.end(), [&](const auto& x) { return x.arch == c.arch; });
    if (!known) {
      chosen.push_back(c);
      ++appended;
    }
  }
  return appended;
}

SearchResult run_oneshot_search(const NasConfig& config, Store& store, const LatencyFn& latency,
                                const train::ProgressFn& progress) {
  const auto log = [&](const std::string& line) {
    if (progress) progress(line);
  };
  const train::TrainConfig& recipe = config.recipe;

  // 1. The supernet (trained, or read from its checkpoint).
  SubnetObjective scorer(config, latency, progress);
  const OneshotOptions& options = scorer.options();
  const SupernetTrainResult& trained = scorer.trained();
  const double supernet_s = scorer.supernet_seconds();
  log("supernet: " + std::to_string(trained.steps) + " steps, " + fmt("%.1f s", supernet_s) +
      (trained.resumed_from_epoch > 0 ? " (" + std::to_string(trained.resumed_from_epoch) + " epoch(s) from the checkpoint)"
                                      : std::string()));

  // 2. The subnet search: the space at the supernet's width; scores are inherited-weight top-1
  // on the validation images and latency from the config's source.
  const auto t_search = Clock::now();
  const NasConfig& sub = scorer.search_config();
  StudyOptions study_options;
  study_options.objective_names = config.objectives;
  Study study(store, config.name + ".subnets", make_strategy(sub), nullptr, study_options);
  const fs::path subnet_dir = fs::path(config.output_dir) / "subnets";

  SearchResult result;
  result.study = study.name();
  run_subnet_study(study, sub, config.trials, "", scorer, subnet_dir, generation_size(config), result, log);
  const int finished = count_finished_trials(study, result);
  std::vector<CandidateResult> candidates = pareto_results(sub, scored_subnets(study));
  log("search: " + std::to_string(finished) + " subnets scored, " + fmt("%.1f s", seconds_since(t_search)) +
      "; front: " + front_text(candidates));
  if (candidates.empty()) throw Error("oneshot: no feasible subnet was found (" + std::to_string(finished) + " scored)");

  // 2b. Per baseline (oneshot.trials_per_baseline): a study of its own, top-1 under the
  // baseline's latency (and, with oneshot.retrain_band, above that fraction of it: the band the
  // picks come from), so the subnets near each baseline's cost are many whatever part of the
  // front the search above covered (a front search over a space from 0.015 to 0.25 ms can leave
  // the fastest end empty). Its subnets join the pool the per-baseline picks come from. It starts
  // from the front search's subnets nearest the baseline's cost (seed_baseline_study: up to half
  // its trials, at most a generation).
  std::vector<CandidateResult> scored = scored_subnets(study);
  if (options.retrain_at_baselines && options.trials_per_baseline > 0) {
    for (const BaselineSpec& b : config.baselines) {
      const double budget = baseline_latency_ms(config, b, latency);
      // Top-1 alone; the latency constraint is the ratio to the baseline measured back to back
      // (run_subnet_study), the config's other constraints stay.
      NasConfig target = sub;
      target.objectives = {"top1"};
      target.constraints.erase(std::remove_if(target.constraints.begin(), target.constraints.end(),
                                              [](const ConstraintSpec& c) { return c.metric == "latency_ms"; }),
                               target.constraints.end());
      StudyOptions target_options;
      target_options.objective_names = target.objectives;
      Study target_study(store, config.name + ".subnets." + b.name, make_strategy(target), nullptr, target_options);
      // A study that has run all its trials queues nothing (one run before seeding existed
      // would otherwise be said to start from seeds it never runs).
      SearchResult before;
      const bool runs_more = count_finished_trials(target_study, before) < options.trials_per_baseline;
      const int seeds =
          runs_more ? seed_baseline_study(target_study, study, budget,
                                          std::min(generation_size(config), options.trials_per_baseline / 2))
                    : 0;
      if (seeds > 0) {
        log("baseline " + b.name + ": its study starts from " + std::to_string(seeds) +
            " subnet(s) of the front search nearest its latency");
      }
      SearchResult counts;
      const std::string prefix = b.name + "_";
      run_subnet_study(target_study, target, options.trials_per_baseline, prefix, scorer, subnet_dir, 0, counts, log,
                       latency, baseline_probe(config, b), options.retrain_band);
      // In the pool, their latency in the budget's terms: ratio x budget (the picks compare it
      // with the budget and its band).
      std::vector<CandidateResult> more = scored_subnets(target_study, prefix);
      std::map<int64_t, double> ratio;
      for (const TrialRecord& r : target_study.trial_records()) {
        if (r.state == TrialState::kComplete) ratio[r.number] = std::stod(attr(r, "latency_ratio"));
      }
      for (CandidateResult& c : more) c.latency_ms = budget * ratio.at(c.trial);
      const auto within = std::count_if(more.begin(), more.end(), [&](const auto& c) { return c.latency_ms <= budget; });
      const double floor = options.retrain_band * budget;
      const auto in_band = std::count_if(more.begin(), more.end(),
                                         [&](const auto& c) { return c.latency_ms <= budget && c.latency_ms >= floor; });
      log("baseline " + b.name + " (" + fmt("%.3f ms", budget) + " untrained): its study scored " +
          std::to_string(more.size()) + " subnets, " + std::to_string(within) + " no slower than it (measured back to back)" +
          (options.retrain_band > 0 ? ", " + std::to_string(in_band) + " of them at least " +
                                          fmt("%.2f", options.retrain_band) + "x its latency (retrain_band)"
                                    : std::string()));
      scored.insert(scored.end(), more.begin(), more.end());
    }
  }
  const double search_s = seconds_since(t_search);

  // 3. Retrain the best of the front from scratch: their test accuracy is the true one. Each
  // architecture once, whatever trial numbers it was scored under.
  const auto t_retrain = Clock::now();
  std::vector<CandidateResult> chosen =
      best_within_latency(candidates, std::numeric_limits<double>::infinity(), options.retrain);
  if (options.retrain_at_baselines) {
    // Every scored subnet (the front search's and the baselines' studies'): the best within a
    // budget need not be on the front.
    std::map<std::string, double> screened;  // architecture -> validation top-1 after the screen
    for (const BaselineSpec& b : config.baselines) {
      const double budget = baseline_latency_ms(config, b, latency);
      const double floor = options.retrain_band * budget;
      // latency.confirm_rounds: each candidate confirmed back to back with the baseline, at most
      // 3 x retrain_per_baseline of them (each costs 2 x rounds measurements).
      PickConfirm confirm;
      const int rounds = config.latency.confirm_rounds;
      if (rounds > 0) confirm = PickConfirmation(config, b, budget, scorer, latency, log);
      const int max_confirms = 3 * options.retrain_per_baseline;
      std::vector<CandidateResult> picks =
          best_within_latency(scored, budget, options.retrain_per_baseline, floor, confirm, max_confirms);
      if (picks.empty()) {
        log("baseline " + b.name + " (" + fmt("%.3f ms", budget) + " untrained): no subnet within it" +
            (floor > 0 ? " and above " + fmt("%.3f ms", floor) + " (retrain_band)" : std::string()) +
            (rounds > 0 ? " confirmed by " + std::to_string(rounds) + " back-to-back rounds (at most " +
                              std::to_string(max_confirms) + " tried)"
                        : std::string()));
      }
      for (size_t i = 0; i < picks.size(); ++i) {
        const CandidateResult& c = picks[i];
        log("baseline " + b.name + " (" + fmt("%.3f ms", budget) + " untrained): its " +
            (i == 0 ? std::string("best") : "#" + std::to_string(i + 1)) + " subnet within it is " + c.name + " (" +
            fmt("%.3f ms", c.latency_ms) + ", inherited " + fmt("%.2f%%", 100 * c.top1) + ")");
      }
      if (options.screen_epochs > 0 && static_cast<int>(picks.size()) > options.screen_keep) {
        picks = screen_picks(config, scorer, picks, latency, progress, screened);
        std::string kept;
        for (const CandidateResult& c : picks) kept += (kept.empty() ? "" : ", ") + c.name;
        log("baseline " + b.name + ": screening keeps " + kept);
      }
      append_new_architectures(chosen, picks);
    }
  }
  if (chosen.empty()) {
    throw Error("oneshot: nothing to retrain: oneshot.retrain is 0 and no scored subnet is within a baseline's "
                "latency");
  }
  std::vector<CandidateResult> retrained;
  for (const CandidateResult& cand : chosen) {
    const arch::Arch a = arch::parse_arch(cand.arch);
    train::TrainConfig r = recipe;
    r.name = config.name + "_" + cand.name;
    r.resume = true;  // a resumed search re-uses a winner trained to the end
    log("retrain " + cand.name + " (" + cand.arch + ", inherited " + fmt("%.2f%%", 100 * cand.top1) + "): training");
    CandidateResult c = train_and_measure(arch::build_arch_model(config.space, a, config.seed, 0), r,
                                          (fs::path(config.output_dir) / "retrain" / cand.name).string(), latency,
                                          progress, nullptr);
    c.name = cand.name;
    c.trial = cand.trial;
    c.arch = cand.arch;
    log("retrained " + c.name + ": test top1 " + fmt("%.2f%%", 100 * c.top1) + " (inherited " +
        fmt("%.2f%%", 100 * cand.top1) + " on validation), latency " + fmt("%.3f ms", c.latency_ms) + ", " +
        std::to_string(c.params) + " params");
    retrained.push_back(std::move(c));
  }
  const double retrain_s = seconds_since(t_retrain);

  result.baselines = train_baselines(config, latency, progress);
  result.front = pareto_results(config, retrained);
  export_front(config, result.front, progress);
  log("oneshot: supernet " + fmt("%.1f s", supernet_s) + ", search " + fmt("%.1f s", search_s) + ", retraining " +
      fmt("%.1f s", retrain_s));
  return result;
}

}  // namespace xnn::nas
