#include "harness/gate/gate.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>

#include "engine/core/error.h"

namespace xnn::gate {
namespace fs = std::filesystem;
namespace {

template <typename... Args>
std::string fmt(const char* f, Args... args) {
  char buf[512];
  std::snprintf(buf, sizeof(buf), f, args...);
  return buf;
}

double value_of(const std::vector<MetricValue>& metrics, const std::string& name) {
  for (const MetricValue& m : metrics) {
    if (m.name == name) return m.value;
  }
  return NAN;
}

// A threshold is met at equality; the slack absorbs rounding in (a - b) / b and unit scaling.
bool at_least(double change, double threshold) {
  return change > 0 && change >= threshold - 1e-9 * std::max(1.0, std::fabs(threshold));
}

std::string p_text(double p) { return p >= 1e-4 ? fmt("%.4f", p) : fmt("%.1e", p); }

// "+12.3%" or "-0.40 points" / "+0.120 ms": the change in the terms of the rule.
std::string change_text(const Comparison& c, bool absolute, double value) {
  if (!absolute) return fmt("%+.2f%%", value * 100);
  if (c.unit == "%") return fmt("%+.2f points", value);
  return fmt("%+.6g %s", value, c.unit.c_str());
}

// The smallest equal sample size for which the exact test can reach alpha at all.
int samples_to_reach(double alpha, int min_samples) {
  int n = std::max(min_samples, 2);
  while (n < 1000 && min_two_sided_p(static_cast<size_t>(n), static_cast<size_t>(n)) >= alpha) ++n;
  return n;
}

std::string rerun_hint(bool from_gbench, int runs) {
  if (from_gbench) return fmt("re-run the benchmark with --benchmark_repetitions=%d and import it again", runs);
  return fmt("re-run the experiment with more runs, e.g. xnn-lab run CONFIG metrics.latency.runs=%d", runs);
}

void decide_sampled(Comparison& c, const std::vector<double>& xs, const std::vector<double>& ys, const Policy& policy,
                    bool from_gbench) {
  c.sampled = true;
  c.n_baseline = xs.size();
  c.n_candidate = ys.size();
  if (!xs.empty()) {
    c.cv_baseline = coefficient_of_variation(xs);
  }
  if (!ys.empty()) {
    c.cv_candidate = coefficient_of_variation(ys);
  }
  if (!xs.empty() && !ys.empty()) {
    const MannWhitneyResult mw = mann_whitney_u(xs, ys);
    c.p_value = mw.p_value;
    c.exact = mw.exact;
  }
  const size_t n_min = std::min(xs.size(), ys.size());
  const int needed = samples_to_reach(policy.alpha, policy.min_samples);
  if (n_min < static_cast<size_t>(policy.min_samples)) {
    c.verdict = Verdict::kUncertain;
    c.reason = fmt("too few samples: baseline %zu, candidate %zu (policy min_samples %d)", xs.size(), ys.size(),
                   policy.min_samples);
    c.hint = rerun_hint(from_gbench, std::max(needed, from_gbench ? 10 : 20));
    return;
  }
  if (min_two_sided_p(xs.size(), ys.size()) >= policy.alpha) {
    c.verdict = Verdict::kUncertain;
    c.reason = fmt("too few samples: with %zu and %zu even complete separation gives p >= alpha %g", xs.size(), ys.size(),
                   policy.alpha);
    c.hint = rerun_hint(from_gbench, std::max(needed, from_gbench ? 10 : 20));
    return;
  }
  const double cv_max = std::max(c.cv_baseline, c.cv_candidate);
  if (cv_max > policy.max_cv) {
    c.verdict = Verdict::kUncertain;
    c.reason = fmt("too noisy: coefficient of variation baseline %.1f%%, candidate %.1f%% (policy max_cv %.1f%%)",
                   c.cv_baseline * 100, c.cv_candidate * 100, policy.max_cv * 100);
    const int runs = std::max(50, static_cast<int>(2 * std::max(xs.size(), ys.size())));
    c.hint = from_gbench ? rerun_hint(true, std::max(runs / 5, 10)) + " on a quiet machine"
                         : rerun_hint(false, runs) + " on a quiet machine, threads pinned (targets.0.affinity=[0])";
    return;
  }
  const double effect = c.rule.absolute ? c.change_abs : c.change_rel;
  const double worse = c.higher_is_better ? -effect : effect;
  const bool significant = c.p_value < policy.alpha;
  const std::string median_change = "median " + change_text(c, c.rule.absolute, effect);
  const std::string p_part = "p = " + p_text(c.p_value) + (significant ? " < " : " >= ") + fmt("alpha %g", policy.alpha);
  if (significant && at_least(worse, c.rule.regression)) {
    c.verdict = Verdict::kRegression;
    c.reason = median_change + " (regression threshold " +
               change_text(c, c.rule.absolute, c.higher_is_better ? -c.rule.regression : c.rule.regression) + "), " + p_part;
  } else if (significant && at_least(-worse, c.rule.improvement)) {
    c.verdict = Verdict::kImprovement;
    c.reason = median_change + " (improvement threshold " +
               change_text(c, c.rule.absolute, c.higher_is_better ? c.rule.improvement : -c.rule.improvement) + "), " +
               p_part;
  } else if (!significant) {
    c.verdict = Verdict::kPass;
    c.reason = "no significant difference: " + median_change + ", " + p_part;
  } else {
    c.verdict = Verdict::kPass;
    c.reason = "significant but below the thresholds: " + median_change + ", " + p_part;
  }
}

void decide_single(Comparison& c) {
  const double effect = c.rule.absolute ? c.change_abs : c.change_rel;
  const double worse = c.higher_is_better ? -effect : effect;
  const std::string change = change_text(c, c.rule.absolute, effect);
  if (at_least(worse, c.rule.regression)) {
    c.verdict = Verdict::kRegression;
    c.reason = change + " (regression threshold " +
               change_text(c, c.rule.absolute, c.higher_is_better ? -c.rule.regression : c.rule.regression) + ")";
  } else if (at_least(-worse, c.rule.improvement)) {
    c.verdict = Verdict::kImprovement;
    c.reason = change + " (improvement threshold " +
               change_text(c, c.rule.absolute, c.higher_is_better ? c.rule.improvement : -c.rule.improvement) + ")";
  } else {
    c.verdict = Verdict::kPass;
    c.reason = change + " (within the thresholds)";
  }
}

std::string job_key(const JobData& j) { return j.model + '\x1f' + j.variant + '\x1f' + j.target; }

}  // namespace

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::kPass: return "PASS";
    case Verdict::kRegression: return "REGRESSION";
    case Verdict::kImprovement: return "IMPROVEMENT";
    case Verdict::kUncertain: return "UNCERTAIN";
  }
  return "?";
}

size_t GateReport::count(Verdict v) const {
  return static_cast<size_t>(
      std::count_if(comparisons.begin(), comparisons.end(), [v](const Comparison& c) { return c.verdict == v; }));
}

size_t GateReport::errors() const {
  return static_cast<size_t>(
      std::count_if(not_compared.begin(), not_compared.end(), [](const NotCompared& n) { return n.error; }));
}

int GateReport::exit_code() const {
  if (errors() > 0 || comparisons.empty()) return 2;
  return count(Verdict::kRegression) > 0 ? 1 : 0;
}

std::vector<Comparison> compare_jobs(const JobData& b, const JobData& c, const Policy& policy) {
  std::vector<Comparison> out;
  for (const GatedMetric& m : gated_metrics()) {
    const MetricRule& rule = policy.rule(b.model, m.name);
    if (!rule.enabled) continue;
    Comparison cmp;
    cmp.model = b.model;
    cmp.variant = b.variant;
    cmp.target = b.target;
    cmp.metric = m.name;
    cmp.unit = m.display_unit;
    cmp.higher_is_better = m.higher_is_better;
    cmp.rule = rule;
    std::vector<double> xs, ys;
    if (!m.samples.empty()) {
      auto bi = b.samples.find(m.samples);
      auto ci = c.samples.find(m.samples);
      if (bi != b.samples.end()) xs = bi->second;
      if (ci != c.samples.end()) ys = ci->second;
      if (xs.empty() && ys.empty()) continue;  // not measured in either run
      // Raw samples NULL in the store (NaN) carry no timing: drop them.
      for (auto* v : {&xs, &ys}) v->erase(std::remove_if(v->begin(), v->end(), [](double x) { return !std::isfinite(x); }), v->end());
      cmp.baseline = xs.empty() ? value_of(b.metrics, m.metric) : median(xs);
      cmp.candidate = ys.empty() ? value_of(c.metrics, m.metric) : median(ys);
    } else {
      cmp.baseline = value_of(b.metrics, m.metric);
      cmp.candidate = value_of(c.metrics, m.metric);
      if (std::isnan(cmp.baseline) || std::isnan(cmp.candidate)) continue;
    }
    cmp.baseline *= m.display_scale;
    cmp.candidate *= m.display_scale;
    cmp.change_abs = cmp.candidate - cmp.baseline;
    cmp.change_rel = cmp.baseline == cmp.candidate ? 0.0 : cmp.change_abs / cmp.baseline;  // +-inf from a 0 baseline
    if (!m.samples.empty()) {
      decide_sampled(cmp, xs, ys, policy, b.from_gbench || c.from_gbench);
    } else {
      decide_single(cmp);
    }
    out.push_back(std::move(cmp));
  }
  return out;
}

GateReport gate_runs(const std::vector<JobData>& baseline, const std::vector<JobData>& candidate, const Policy& policy) {
  GateReport report;
  std::map<std::string, const JobData*> cand;
  for (const JobData& j : candidate) cand.emplace(job_key(j), &j);
  std::set<std::string> seen;
  for (const JobData& b : baseline) {
    const std::string key = job_key(b);
    if (!seen.insert(key).second) continue;
    auto it = cand.find(key);
    NotCompared nc{b.model, b.variant, b.target, "", false};
    if (it == cand.end()) {
      nc.reason = "only in the baseline run";
      report.not_compared.push_back(nc);
      continue;
    }
    const JobData& c = *it->second;
    if (c.status != job_status::kDone) {
      nc.error = b.status == job_status::kDone;
      nc.reason = "the candidate's job is " + c.status + (c.error.empty() ? "" : ": " + c.error) +
                  (nc.error ? "" : " (in the baseline too)");
      report.not_compared.push_back(nc);
      continue;
    }
    if (b.status != job_status::kDone) {
      nc.reason = "the baseline's job is " + b.status + (b.error.empty() ? "" : ": " + b.error) + "; nothing to compare with";
      report.not_compared.push_back(nc);
      continue;
    }
    if (b.db == c.db && b.job_id == c.job_id) {
      nc.error = true;
      nc.reason = "both runs show the same recorded job " + b.job_id + " (measured by run " + b.producing_run +
                  "): in one database a later run of the same job reuses or overwrites it. Record the candidate in its "
                  "own database (--db cand.db) and gate with --baseline base.db:RUN";
      report.not_compared.push_back(nc);
      continue;
    }
    for (Comparison& cmp : compare_jobs(b, c, policy)) report.comparisons.push_back(std::move(cmp));
  }
  for (const JobData& c : candidate) {
    if (seen.count(job_key(c))) continue;
    seen.insert(job_key(c));
    report.not_compared.push_back({c.model, c.variant, c.target, "only in the candidate run (a new job)", false});
  }
  return report;
}

RunSide resolve_run_side(const std::string& sel, const std::string& default_db) {
  XNN_CHECK(!sel.empty(), "empty run selector; expected a run id, commit:<sha>, tag:<name> or <file.db>:<run>");
  std::string db = default_db, rest = sel;
  const bool local = sel.rfind("commit:", 0) == 0 || sel.rfind("tag:", 0) == 0 || sel.find(':') == std::string::npos;
  if (!local) {
    bool found = false;
    std::error_code ec;
    for (size_t p = sel.find(':'); p != std::string::npos; p = sel.find(':', p + 1)) {
      if (fs::is_regular_file(sel.substr(0, p), ec)) {
        db = sel.substr(0, p);
        rest = sel.substr(p + 1);
        found = true;
        break;
      }
    }
    if (!found) {
      throw Error("run selector '" + sel + "': no database file '" + sel.substr(0, sel.find(':')) +
                  "' (expected a run id, commit:<sha>, tag:<name> or <file.db>:<run>)");
    }
    XNN_CHECK(!rest.empty(), "run selector '" + sel + "' names database " + db + " but no run");
  }
  std::error_code ec;
  if (!fs::exists(db, ec)) throw Error(db + ": no results database here (run an experiment first, or pass --db FILE)");
  RunSide side;
  side.store = std::make_unique<Store>(db, StoreOptions{false});
  side.db = fs::weakly_canonical(db, ec).string();
  if (ec) side.db = fs::absolute(db).string();
  auto run = side.store->resolve_run_selector(rest, std::nullopt, std::string(run_status::kFinished));
  if (!run) {
    const bool by_id = rest.find(':') == std::string::npos && rest != "latest";
    throw Error("no " + std::string(by_id ? "" : "FINISHED ") + "run matches '" + rest + "' in " + db +
                " (try: xnn-lab list runs --db " + db + ")");
  }
  if (run->status == run_status::kRunning) {
    throw Error("run " + run->id + " in " + db + " is " +
                (Store::is_run_orphaned(*run) ? "an interrupted run (its process is gone)" : "still RUNNING") +
                "; gate a finished run");
  }
  side.run = std::move(*run);
  return side;
}

std::vector<JobData> load_jobs(Store& store, const std::string& db, const std::string& run_id) {
  std::vector<JobData> out;
  for (const RunJob& rj : store.jobs_of_run(run_id)) {
    JobData j;
    j.db = db;
    j.job_id = rj.job.id;
    j.model = rj.job.model;
    j.variant = rj.job.variant;
    j.target = rj.job.target;
    j.status = rj.job.status;
    j.error = rj.job.error;
    j.producing_run = rj.job.run_id;
    j.from_gbench = rj.job.spec_json.find("\"source\":\"google-benchmark\"") != std::string::npos;
    j.metrics = store.metrics_of_job(rj.job.id);
    j.samples = store.samples_of_job(rj.job.id);
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace xnn::gate
