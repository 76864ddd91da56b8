#include "reports/report_data.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>

#include "engine/core/error.h"
#include "harness/gate/policy.h"

#ifndef XNN_LAB_VERSION
#define XNN_LAB_VERSION "unknown"
#endif

namespace fs = std::filesystem;

namespace xnn::reports {

double JobSummary::metric(const std::string& name) const {
  for (const MetricValue& m : metrics) {
    if (m.name == name) return m.value;
  }
  return NAN;
}

std::string JobSummary::label() const { return model + " / " + (variant.empty() ? "-" : variant); }

bool ReportData::has_training() const {
  for (const JobSummary& j : jobs) {
    if (!j.epoch_test_accuracy.empty() || !j.epoch_train_loss.empty()) return true;
  }
  return false;
}

std::vector<bool> pareto_front(const std::vector<double>& latency, const std::vector<double>& accuracy) {
  XNN_CHECK(latency.size() == accuracy.size(), "pareto_front: latency and accuracy differ in length");
  const size_t n = latency.size();
  std::vector<bool> front(n, false);
  for (size_t i = 0; i < n; ++i) {
    if (std::isnan(latency[i]) || std::isnan(accuracy[i])) continue;
    bool dominated = false;
    for (size_t j = 0; j < n && !dominated; ++j) {
      if (j == i || std::isnan(latency[j]) || std::isnan(accuracy[j])) continue;
      const bool no_worse = latency[j] <= latency[i] && accuracy[j] >= accuracy[i];
      const bool better = latency[j] < latency[i] || accuracy[j] > accuracy[i];
      dominated = no_worse && better;
    }
    front[i] = !dominated;
  }
  return front;
}

void compute_scatters(ReportData& data) {
  data.scatters.clear();
  std::vector<std::string> order;  // targets in first-seen order
  std::map<std::string, TargetScatter> by_target;
  for (size_t i = 0; i < data.jobs.size(); ++i) {
    const JobSummary& j = data.jobs[i];
    if (j.status != job_status::kDone) continue;
    const double lat = j.metric("latency_ms_median"), acc = j.metric("top1");
    if (std::isnan(lat) || std::isnan(acc)) continue;
    auto [it, inserted] = by_target.try_emplace(j.target);
    if (inserted) {
      order.push_back(j.target);
      it->second.target = j.target;
      it->second.simulated = j.simulated;
    }
    it->second.points.push_back(ParetoPoint{i, lat, acc, false});
  }
  for (const std::string& t : order) {
    TargetScatter s = std::move(by_target[t]);
    std::vector<double> lat, acc;
    for (const ParetoPoint& p : s.points) {
      lat.push_back(p.latency_ms);
      acc.push_back(p.accuracy);
    }
    const std::vector<bool> front = pareto_front(lat, acc);
    for (size_t k = 0; k < s.points.size(); ++k) s.points[k].on_front = front[k];
    data.scatters.push_back(std::move(s));
  }
}

ReportData gather_run(Store& store, const std::string& db, const RunRecord& run, size_t top_ops) {
  ReportData data;
  data.db = db;
  data.run = run;
  data.run_orphaned = Store::is_run_orphaned(run);
  if (run.environment_id != 0) data.environment = store.get_environment(run.environment_id);
  data.generated_at = utc_now_iso();
  data.xnn_version = XNN_LAB_VERSION;
  std::map<std::string, TargetRecord> targets;
  for (TargetRecord& t : store.list_targets()) targets[t.name] = t;
  for (const RunJob& rj : store.jobs_of_run(run.id)) {
    JobSummary j;
    j.job_id = rj.job.id;
    j.model = rj.job.model;
    j.variant = rj.job.variant;
    j.target = rj.job.target;
    j.status = rj.job.status;
    j.error = rj.job.error;
    j.reused = rj.reused;
    if (auto it = targets.find(j.target); it != targets.end()) {
      j.simulated = it->second.simulated;
      j.target_kind = it->second.kind;
    }
    j.metrics = store.metrics_of_job(j.job_id);
    j.epoch_test_accuracy = store.samples_of_job(j.job_id, "epoch_test_accuracy");
    j.epoch_train_loss = store.samples_of_job(j.job_id, "epoch_train_loss");
    std::vector<OpProfileRow> ops = store.op_profiles_of_job(j.job_id);
    j.op_count = ops.size();
    for (const OpProfileRow& o : ops) j.ops_total_ms += o.time_ms;
    std::stable_sort(ops.begin(), ops.end(),
                     [](const OpProfileRow& a, const OpProfileRow& b) { return a.time_ms > b.time_ms; });
    if (ops.size() > top_ops) ops.resize(top_ops);
    double top_ms = 0;
    for (const OpProfileRow& o : ops) top_ms += o.time_ms;
    // Only ops left out count as "other" (not the rounding left over when every op is shown).
    j.other_ops_ms = j.op_count > ops.size() ? std::max(0.0, j.ops_total_ms - top_ms) : 0.0;
    j.top_ops = std::move(ops);
    data.jobs.push_back(std::move(j));
  }
  compute_scatters(data);
  return data;
}

namespace {

std::string canonical(const std::string& path) {
  std::error_code ec;
  std::string out = fs::weakly_canonical(path, ec).string();
  return ec ? fs::absolute(path).string() : out;
}

}  // namespace

ReportData gather_report(const ReportOptions& o) {
  std::error_code ec;
  if (!fs::is_regular_file(o.db, ec)) {
    throw Error(o.db + ": no results database here (run an experiment first, or pass --db FILE)");
  }
  Store store(o.db, StoreOptions{false});
  const std::optional<std::string> experiment = o.experiment.empty() ? std::nullopt : std::optional<std::string>(o.experiment);
  if (store.list_runs().empty()) {
    throw Error(o.db + ": the results database has no runs yet (record one with xnn-lab run CONFIG --db " + o.db + ")");
  }
  if (experiment) {
    std::string known;
    bool found = false;
    for (const ExperimentRecord& e : store.list_experiments()) {
      found = found || e.name == *experiment;
      known += (known.empty() ? "" : ", ") + e.name;
    }
    if (!found) throw Error("no experiment '" + *experiment + "' in " + o.db + " (experiments: " + known + ")");
  }
  std::optional<RunRecord> run;
  const std::string where = experiment ? " of experiment '" + *experiment + "'" : "";
  if (o.run.empty()) {
    run = store.resolve_run_selector("latest", experiment, std::string(run_status::kFinished));
    if (!run) {
      throw Error("no FINISHED run" + where + " in " + o.db + "; choose one with --run RUN (try: xnn-lab list runs --db " +
                  o.db + ")");
    }
  } else {
    run = store.resolve_run_selector(o.run, experiment);
    if (!run) {
      throw Error("no run" + where + " matches '" + o.run + "' in " + o.db + " (try: xnn-lab list runs --db " + o.db + ")");
    }
  }
  const std::string db = canonical(o.db);
  ReportData data = gather_run(store, db, *run, o.top_ops);
  if (!o.baseline.empty()) {
    const gate::Policy policy = o.policy.empty() ? gate::default_policy() : gate::load_policy(o.policy);
    gate::RunSide base = gate::resolve_run_side(o.baseline, o.db);
    if (base.db == db && base.run.id == run->id) {
      throw Error("--baseline selects the reported run itself (" + run->id + "); choose an earlier run or another database");
    }
    const auto base_jobs = gate::load_jobs(*base.store, base.db, base.run.id);
    const auto cand_jobs = gate::load_jobs(store, db, run->id);
    BaselineComparison cmp;
    cmp.run = base.run;
    cmp.db = base.db;
    cmp.policy_source = policy.source;
    cmp.gate = gate::gate_runs(base_jobs, cand_jobs, policy);
    data.baseline = std::move(cmp);
  }
  return data;
}

}  // namespace xnn::reports

namespace xnn::reports {

std::vector<SummaryColumn> summary_columns(const std::vector<JobSummary>& jobs) {
  static const SummaryColumn all[] = {{"median ms", "latency_ms_median", "ms"}, {"p90 ms", "latency_ms_p90", "ms"},
                                      {"size", "size_bytes", "bytes"},          {"params", "parameters", "count"},
                                      {"MACs", "macs", "count"},                {"top-1", "top1", "pct"},
                                      {"top-5", "top5", "pct"},                 {"peak RSS", "peak_rss_bytes", "bytes"}};
  std::vector<SummaryColumn> out;
  for (const SummaryColumn& c : all) {
    bool any = false;
    for (const JobSummary& j : jobs) any = any || !std::isnan(j.metric(c.metric));
    if (any) out.push_back(c);
  }
  return out;
}

namespace {
std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), f, v);
  return buf;
}
}  // namespace

std::string format_value(double v, const std::string& kind) {
  if (std::isnan(v)) return "-";
  if (kind == "ms") return v >= 100 ? fmt("%.1f", v) : fmt("%.4g", v);
  if (kind == "pct") return fmt("%.2f%%", v * 100);
  if (kind == "bytes") {
    if (v >= 1 << 20) return fmt("%.2f MiB", v / (1 << 20));
    if (v >= 1 << 10) return fmt("%.1f KiB", v / (1 << 10));
    return fmt("%.0f B", v);
  }
  if (kind == "count") {
    if (v >= 1e9) return fmt("%.2fG", v / 1e9);
    if (v >= 1e6) return fmt("%.2fM", v / 1e6);
    if (v >= 1e4) return fmt("%.1fk", v / 1e3);
    return fmt("%.0f", v);
  }
  return fmt("%.6g", v);
}

std::string gate_value_text(double v, const std::string& unit) {
  if (std::isnan(v)) return "-";
  if (unit == "ms") return fmt("%.4g ms", v);
  if (unit == "bytes") return fmt("%.0f B", v);
  if (unit == "%") return fmt("%.2f %%", v);
  return fmt("%.6g", v) + " " + unit;
}

std::string gate_change_text(const gate::Comparison& c) {
  if (c.unit == "%") return std::isnan(c.change_abs) ? "-" : fmt("%+.2f pt", c.change_abs);
  if (std::isnan(c.change_rel)) return "-";
  if (std::isinf(c.change_rel)) return c.change_rel > 0 ? "+inf" : "-inf";
  return fmt("%+.2f%%", c.change_rel * 100);
}

std::string gate_p_text(const gate::Comparison& c) {
  if (!c.sampled || std::isnan(c.p_value)) return "-";
  return c.p_value >= 1e-4 ? fmt("%.4f", c.p_value) : fmt("%.1e", c.p_value);
}

std::string gate_counts_text(const gate::GateReport& rep) {
  using gate::Verdict;
  char buf[256];
  std::snprintf(buf, sizeof(buf), "%zu compared: %zu PASS, %zu REGRESSION, %zu IMPROVEMENT, %zu UNCERTAIN", rep.comparisons.size(),
                rep.count(Verdict::kPass), rep.count(Verdict::kRegression), rep.count(Verdict::kImprovement),
                rep.count(Verdict::kUncertain));
  return buf;
}

std::string gate_overall(const gate::GateReport& rep) {
  const int code = rep.exit_code();
  return code == 2 ? "ERROR" : code == 1 ? "FAIL" : "PASS";
}

}  // namespace xnn::reports
