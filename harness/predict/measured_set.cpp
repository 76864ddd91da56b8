#include "harness/predict/measured_set.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>

#include "engine/core/error.h"
#include "engine/core/sha256.h"
#include "harness/util/json.h"

namespace xnn::predict {
namespace fs = std::filesystem;
namespace {

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(path + ": cannot read file");
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// MODELS_DIR/<sha prefix>.xnn holding the same bytes as `path`.
std::string content_addressed_copy(const std::string& path, const std::string& sha, const std::string& models_dir) {
  fs::create_directories(models_dir);
  const fs::path dst = fs::path(models_dir) / (sha.substr(0, 20) + ".xnn");
  if (fs::exists(dst)) return fs::absolute(dst).string();
  const fs::path tmp = dst.string() + ".tmp";
  std::error_code ec;
  fs::remove(tmp, ec);
  fs::create_hard_link(path, tmp, ec);
  if (ec) fs::copy_file(path, tmp, fs::copy_options::overwrite_existing);
  fs::rename(tmp, dst);
  return fs::absolute(dst).string();
}

std::string spec_json(const MeasureSetOptions& o, const TargetSettings& t, const std::string& encoding,
                      const std::string& sha) {
  json::Writer w;
  w.begin_object().field("experiment", o.experiment);
  w.key("model").begin_object().field("encoding", encoding).field("space", o.variant).field("sha256", sha).end_object();
  w.key("target").begin_object().field("name", t.name).field("kind", t.kind).field("threads", t.threads).end_object();
  w.key("latency").begin_object().field("warmup", o.spec.warmup).field("runs", o.spec.min_runs);
  w.field("min_time", o.spec.min_time_s).field("max_runs", o.spec.max_runs).field("profile", true);
  w.field("passes", o.passes).end_object();
  w.end_object();
  return w.str();
}

double metric(const std::vector<MetricValue>& metrics, const std::string& name) {
  for (const MetricValue& m : metrics) {
    if (m.name == name) return m.value;
  }
  return std::nan("");
}

MeasuredModel from_store(Store& store, const JobRecord& job, const std::vector<MetricValue>& metrics) {
  MeasuredModel m;
  m.job_id = job.id;
  m.encoding = job.model;
  m.median_ms = metric(metrics, "latency_ms_median");
  m.ops = store.op_profiles_of_job(job.id);
  for (const ArtifactRecord& a : store.artifacts_of_job(job.id)) {
    if (a.kind == "model") {
      m.model_path = a.path;
      m.model_sha256 = a.sha256;
    }
  }
  m.reused = true;
  return m;
}

}  // namespace

std::vector<MeasuredModel> measure_arch_set(Store& store, Target& target, const std::vector<arch::GeneratedArch>& set,
                                            const std::string& models_dir, const MeasureSetOptions& o) {
  const TargetSettings& ts = target.settings();
  store.ensure_experiment(o.experiment, "");
  store.ensure_target(TargetRecord{0, ts.name, ts.kind, target.simulated(), target.describe_json()});
  RunRecord run;
  run.experiment = o.experiment;
  run.git_commit = o.git_commit;
  run.command = o.command_line;
  run.config_text = "generated architecture set: " + std::to_string(set.size()) + " models of space " + o.variant;
  run.config_hash = sha256_hex(run.config_text).substr(0, 16);
  run.environment_id = store.ensure_environment(Environment::capture(o.git_commit));
  const std::string run_id = store.create_run(run);

  if (o.passes < 1) throw Error("passes must be >= 1, got " + std::to_string(o.passes));
  struct Pending {
    size_t index = 0;
    std::string job_id, encoding, path, sha;
    int64_t size = 0;
    std::optional<LatencyMeasurement> best;
    std::vector<double> op_min_ms;  // per op, the lowest time over the passes
  };
  std::vector<MeasuredModel> out(set.size());
  std::vector<Pending> pending;
  auto tag = [&](size_t i) {
    return "[" + std::to_string(i + 1) + "/" + std::to_string(set.size()) + "] " + set[i].arch.to_string();
  };
  try {
    for (size_t i = 0; i < set.size(); ++i) {
      const arch::GeneratedArch& g = set[i];
      const std::string encoding = g.arch.to_string();
      const std::string bytes = read_bytes(g.path);
      const std::string sha = sha256_hex(bytes);
      const std::string spec = spec_json(o, ts, encoding, sha);
      const std::string job_id = sha256_hex(spec).substr(0, 20);
      if (store.is_job_done(job_id)) {
        store.link_job_to_run(run_id, job_id, true);
        const std::optional<JobRecord> job = store.get_job(job_id);
        out[i] = from_store(store, *job, store.metrics_of_job(job_id));
        if (o.log) o.log(tag(i) + ": recorded earlier");
        continue;
      }
      JobRecord rec;
      rec.id = job_id;
      rec.run_id = run_id;
      rec.experiment = o.experiment;
      rec.model = encoding;
      rec.variant = o.variant;
      rec.target = ts.name;
      rec.spec_json = spec;
      store.start_job(rec);
      pending.push_back(Pending{i, job_id, encoding, content_addressed_copy(g.path, sha, models_dir), sha,
                                static_cast<int64_t>(bytes.size()), std::nullopt, {}});
    }
    for (int pass = 1; pass <= o.passes; ++pass) {
      for (Pending& p : pending) {
        LatencyMeasurement lm;
        try {
          lm = target.measure_latency(p.path, o.spec, true);
          if (lm.run.samples_ms.empty()) throw Error("no timed runs");
        } catch (const std::exception& e) {
          JobResult failed;
          failed.status = job_status::kFailed;
          failed.error = e.what();
          store.finish_job(p.job_id, failed);
          throw Error(p.encoding + " (" + p.path + "): measuring failed: " + e.what());
        }
        const double median = summarize(lm.run.samples_ms).median;
        // Per op, too, the quietest pass is kept (ops of one model come in the same order).
        if (p.op_min_ms.empty()) {
          for (const OpTiming& t : lm.ops) p.op_min_ms.push_back(t.time_ms);
        } else if (p.op_min_ms.size() == lm.ops.size()) {
          for (size_t k = 0; k < lm.ops.size(); ++k) p.op_min_ms[k] = std::min(p.op_min_ms[k], lm.ops[k].time_ms);
        }
        if (!p.best || median < summarize(p.best->run.samples_ms).median) p.best = std::move(lm);
        if (o.log) {
          char buf[96];
          std::snprintf(buf, sizeof(buf), ": median %.3f ms", median);
          std::string line = tag(p.index) + buf;
          if (o.passes > 1) {
            std::snprintf(buf, sizeof(buf), " (pass %d/%d, lowest %.3f ms)", pass, o.passes,
                          summarize(p.best->run.samples_ms).median);
            line += buf;
          }
          o.log(line);
        }
      }
    }
    for (Pending& p : pending) {
      const arch::GeneratedArch& g = set[p.index];
      const LatencyMeasurement& lm = *p.best;
      JobResult r;
      const LatencyStats st = summarize(lm.run.samples_ms);
      r.samples["latency_ms"] = lm.run.samples_ms;
      for (const NamedMetric& nm : latency_metrics(st)) r.metrics.push_back({nm.name, nm.value, nm.unit});
      r.metrics.push_back({"init_ms", lm.init_ms, "ms"});
      r.metrics.push_back({"first_run_ms", lm.run.first_run_ms, "ms"});
      r.metrics.push_back({"measure_passes", static_cast<double>(o.passes), "count"});
      r.metrics.push_back({"size_bytes", static_cast<double>(p.size), "bytes"});
      r.metrics.push_back({"macs", g.macs, "count"});
      r.metrics.push_back({"parameters", static_cast<double>(g.params), "count"});
      for (size_t k = 0; k < lm.ops.size(); ++k) {
        const OpTiming& t = lm.ops[k];
        r.op_profiles.push_back(OpProfileRow{static_cast<int64_t>(t.node_index), t.node_name, t.op_type, t.kernel,
                                             t.shapes, static_cast<int64_t>(t.macs), static_cast<int64_t>(t.bytes),
                                             k < p.op_min_ms.size() ? p.op_min_ms[k] : t.time_ms});
      }
      r.artifacts.push_back(ArtifactRecord{"model", p.path, p.sha, p.size});
      r.status = job_status::kDone;
      store.finish_job(p.job_id, r);
      MeasuredModel& m = out[p.index];
      m.job_id = p.job_id;
      m.encoding = p.encoding;
      m.model_path = p.path;
      m.model_sha256 = p.sha;
      m.median_ms = st.median;
      m.ops = std::move(r.op_profiles);
    }
  } catch (...) {
    store.finish_run(run_id, run_status::kFailed);
    throw;
  }
  store.finish_run(run_id, run_status::kFinished);
  return out;
}

std::vector<MeasuredModel> load_measured_set(Store& store, const std::string& experiment, const std::string& target_name) {
  std::vector<MeasuredModel> out;
  for (const LatestResult& r : store.latest_results()) {
    if (r.job.experiment != experiment || r.job.target != target_name) continue;
    out.push_back(from_store(store, r.job, r.metrics));
  }
  return out;
}

}  // namespace xnn::predict
