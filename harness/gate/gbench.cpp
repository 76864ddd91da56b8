#include "harness/gate/gbench.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <sstream>

#include "engine/core/error.h"
#include "harness/measure/latency.h"
#include "harness/util/json.h"

namespace xnn::gate {
namespace {

class Reader {
 public:
  explicit Reader(std::string path) : path_(std::move(path)) {}

  std::string at(const YAML::Node& n) const {
    const YAML::Mark m = n.Mark();
    if (m.is_null()) return path_;
    return path_ + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
  }
  [[noreturn]] void fail(const YAML::Node& n, const std::string& where, const std::string& msg) const {
    throw Error(at(n) + ": " + where + ": " + msg);
  }

  // JSON strings are quoted scalars (yaml-cpp tags them "!"); numbers and literals are plain.
  static bool is_string(const YAML::Node& n) { return n.IsScalar() && n.Tag() == "!"; }

  std::string text(const YAML::Node& map, const char* key, const std::string& where, bool required) const {
    const YAML::Node v = map[key];
    if (!v.IsDefined() || v.IsNull()) {
      if (required) fail(map, where, std::string("missing \"") + key + "\"");
      return "";
    }
    if (!v.IsScalar()) fail(v, where + "." + key, "expected a string");
    return v.Scalar();
  }

  // A JSON number (gbench writes nan/inf for undefined values; those are NaN here).
  double number(const YAML::Node& map, const char* key, const std::string& where, bool required) const {
    const YAML::Node v = map[key];
    if (!v.IsDefined() || v.IsNull()) {
      if (required) fail(map, where, std::string("missing \"") + key + "\"");
      return NAN;
    }
    if (!v.IsScalar() || is_string(v)) fail(v, where + "." + key, "expected a number");
    const std::string& s = v.Scalar();
    char* end = nullptr;
    const double d = std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size()) fail(v, where + "." + key, "expected a number, got '" + s + "'");
    return std::isfinite(d) ? d : NAN;
  }

  bool boolean(const YAML::Node& map, const char* key) const {
    const YAML::Node v = map[key];
    return v.IsDefined() && v.IsScalar() && !is_string(v) && v.Scalar() == "true";
  }

 private:
  std::string path_;
};

// Re-serialises a JSON value read through yaml-cpp.
void write_json(json::Writer& w, const YAML::Node& n) {
  if (n.IsMap()) {
    w.begin_object();
    for (auto it = n.begin(); it != n.end(); ++it) {
      w.key(it->first.Scalar());
      write_json(w, it->second);
    }
    w.end_object();
  } else if (n.IsSequence()) {
    w.begin_array();
    for (const YAML::Node& e : n) write_json(w, e);
    w.end_array();
  } else if (!n.IsDefined() || n.IsNull()) {
    w.null();
  } else if (Reader::is_string(n)) {
    w.value(n.Scalar());
  } else {
    const std::string& s = n.Scalar();
    char* end = nullptr;
    const double d = std::strtod(s.c_str(), &end);
    if (s == "true" || s == "false") w.value(s == "true");
    else if (!s.empty() && end == s.c_str() + s.size()) w.raw(std::isfinite(d) ? s : "null");
    else w.value(s);
  }
}

double to_ms(double v, const std::string& unit) {
  if (unit == "ns") return v * 1e-6;
  if (unit == "us") return v * 1e-3;
  if (unit == "ms") return v;
  return v * 1e3;  // "s"
}

}  // namespace

GbenchResult parse_gbench_json(const std::string& text, const std::string& path) {
  YAML::Node root;
  try {
    root.reset(YAML::Load(text));
  } catch (const YAML::ParserException& e) {
    throw Error(path + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                ": not valid Google Benchmark JSON: " + e.msg);
  } catch (const YAML::Exception& e) {
    throw Error(path + ": not valid Google Benchmark JSON: " + e.msg);
  }
  const Reader rd(path);
  if (!root.IsMap() || !root["benchmarks"].IsDefined()) {
    throw Error(path + ": not a Google Benchmark JSON result (expected an object with \"context\" and \"benchmarks\"; "
                "run the benchmark with --benchmark_format=json or --benchmark_out=FILE)");
  }
  GbenchResult r;
  const YAML::Node ctx = root["context"];
  if (ctx.IsDefined() && ctx.IsMap()) {
    json::Writer w;
    write_json(w, ctx);
    r.context_json = w.str();
    r.executable = rd.text(ctx, "executable", "context", false);
    r.host_name = rd.text(ctx, "host_name", "context", false);
    r.library_build_type = rd.text(ctx, "library_build_type", "context", false);
    r.date = rd.text(ctx, "date", "context", false);
    const double cpus = rd.number(ctx, "num_cpus", "context", false);
    r.num_cpus = std::isnan(cpus) ? 0 : static_cast<int>(cpus);
    const double mhz = rd.number(ctx, "mhz_per_cpu", "context", false);
    r.mhz_per_cpu = std::isnan(mhz) ? 0 : mhz;
    const YAML::Node load = ctx["load_avg"];
    if (load.IsSequence() && load.size() > 0 && load[0].IsScalar()) r.load_avg_1m = std::strtod(load[0].Scalar().c_str(), nullptr);
    const YAML::Node caches = ctx["caches"];
    if (caches.IsSequence()) {
      for (const YAML::Node& c : caches) {
        if (!c.IsMap()) continue;
        const double size = rd.number(c, "size", "context.caches", false);
        const double sharing = rd.number(c, "num_sharing", "context.caches", false);
        if (!r.caches.empty()) r.caches += ", ";
        r.caches += "L" + rd.text(c, "level", "context.caches", false) + " " + rd.text(c, "type", "context.caches", false) +
                    " " + std::to_string(static_cast<int64_t>(std::isnan(size) ? 0 : size) / 1024) + " KiB";
        if (!std::isnan(sharing)) r.caches += " x" + std::to_string(static_cast<int>(sharing));
      }
    }
  }
  const YAML::Node list = root["benchmarks"];
  if (!list.IsSequence()) throw Error(rd.at(list) + ": benchmarks: expected a list");

  struct Rep {
    int64_t index;
    double real_ms, cpu_ms;
    int64_t iterations;
  };
  std::map<std::string, size_t> by_name;
  std::vector<std::vector<Rep>> reps;
  for (size_t i = 0; i < list.size(); ++i) {
    const YAML::Node e = list[i];
    const std::string where = "benchmarks." + std::to_string(i);
    if (!e.IsMap()) rd.fail(e, where, "expected an object");
    const std::string name = rd.text(e, "name", where, true);
    std::string run_name = rd.text(e, "run_name", where, false);
    if (run_name.empty()) run_name = name;
    std::string run_type = rd.text(e, "run_type", where, false);
    const std::string aggregate = rd.text(e, "aggregate_name", where, false);
    if (run_type.empty()) run_type = aggregate.empty() ? "iteration" : "aggregate";
    if (run_type != "iteration" && run_type != "aggregate")
      rd.fail(e["run_type"], where + ".run_type", "expected \"iteration\" or \"aggregate\", got '" + run_type + "'");

    auto it = by_name.find(run_name);
    if (it == by_name.end()) {
      it = by_name.emplace(run_name, r.benchmarks.size()).first;
      GbenchBenchmark b;
      b.name = run_name;
      const size_t slash = run_name.find('/');
      b.model = run_name.substr(0, slash);
      b.variant = slash == std::string::npos ? "" : run_name.substr(slash + 1);
      r.benchmarks.push_back(std::move(b));
      reps.emplace_back();
    }
    GbenchBenchmark& b = r.benchmarks[it->second];
    if (rd.boolean(e, "error_occurred")) {
      const std::string msg = rd.text(e, "error_message", where, false);
      b.error = msg.empty() ? "the benchmark reported an error" : msg;
      continue;
    }
    const double threads = rd.number(e, "threads", where, false);
    if (!std::isnan(threads)) b.threads = static_cast<int>(threads);

    if (run_type == "aggregate") {
      // Complexity rows (BigO, RMS) carry coefficients, not times: skip what has no real_time.
      const YAML::Node rt = e["real_time"];
      if (!rt.IsDefined() || aggregate.empty()) continue;
      const std::string unit_kind = rd.text(e, "aggregate_unit", where, false);
      const double v = rd.number(e, "real_time", where, true);
      if (unit_kind == "percentage") {
        b.aggregates.push_back({"gbench_" + aggregate, v, "ratio"});
      } else {
        const std::string tu = rd.text(e, "time_unit", where, true);
        if (tu != "ns" && tu != "us" && tu != "ms" && tu != "s")
          rd.fail(e["time_unit"], where + ".time_unit", "expected ns, us, ms or s, got '" + tu + "'");
        b.aggregates.push_back({"gbench_" + aggregate + "_ms", to_ms(v, tu), "ms"});
      }
      continue;
    }
    const std::string tu = rd.text(e, "time_unit", where, true);
    if (tu != "ns" && tu != "us" && tu != "ms" && tu != "s")
      rd.fail(e["time_unit"], where + ".time_unit", "expected ns, us, ms or s, got '" + tu + "'");
    if (!b.time_unit.empty() && b.time_unit != tu)
      rd.fail(e["time_unit"], where + ".time_unit", "'" + tu + "' differs from the earlier repetitions' '" + b.time_unit + "'");
    b.time_unit = tu;
    const double real = rd.number(e, "real_time", where, true);
    const double cpu = rd.number(e, "cpu_time", where, false);
    if (std::isnan(real) || real < 0) rd.fail(e["real_time"], where + ".real_time", "expected a time >= 0");
    const double rep_index = rd.number(e, "repetition_index", where, false);
    const double iters = rd.number(e, "iterations", where, false);
    std::vector<Rep>& rs = reps[it->second];
    rs.push_back({std::isnan(rep_index) ? static_cast<int64_t>(rs.size()) : static_cast<int64_t>(rep_index), to_ms(real, tu),
                  std::isnan(cpu) ? NAN : to_ms(cpu, tu), std::isnan(iters) ? 0 : static_cast<int64_t>(iters)});
  }
  for (size_t i = 0; i < r.benchmarks.size(); ++i) {
    std::vector<Rep>& rs = reps[i];
    std::stable_sort(rs.begin(), rs.end(), [](const Rep& a, const Rep& b) { return a.index < b.index; });
    GbenchBenchmark& b = r.benchmarks[i];
    for (const Rep& rep : rs) {
      b.real_time_ms.push_back(rep.real_ms);
      b.cpu_time_ms.push_back(rep.cpu_ms);
      b.iterations.push_back(rep.iterations);
    }
    if (b.real_time_ms.empty() && b.error.empty()) {
      throw Error(path + ": benchmark '" + b.name +
                  "' has only aggregate rows; record the repetitions too (do not pass --benchmark_report_aggregates_only)");
    }
  }
  if (r.benchmarks.empty()) throw Error(path + ": no benchmarks in the file");
  return r;
}

GbenchResult load_gbench_json(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(path + ": cannot read the Google Benchmark result");
  std::stringstream text;
  text << f.rdbuf();
  return parse_gbench_json(text.str(), path);
}

JobResult gbench_job_result(const GbenchBenchmark& b) {
  JobResult r;
  if (!b.error.empty()) {
    r.status = job_status::kFailed;
    r.error = b.error;
    return r;
  }
  r.status = job_status::kDone;
  r.samples["latency_ms"] = b.real_time_ms;
  if (std::none_of(b.cpu_time_ms.begin(), b.cpu_time_ms.end(), [](double v) { return std::isnan(v); }))
    r.samples["cpu_time_ms"] = b.cpu_time_ms;
  const LatencyStats st = summarize(b.real_time_ms);
  auto add = [&r](const std::string& name, double v, const std::string& unit) { r.metrics.push_back({name, v, unit}); };
  for (const NamedMetric& m : latency_metrics(st)) add(m.name, m.value, m.unit);
  if (!b.iterations.empty()) {
    const double total = static_cast<double>(std::accumulate(b.iterations.begin(), b.iterations.end(), int64_t{0}));
    add("gbench_iterations", total / static_cast<double>(b.iterations.size()), "count");
  }
  add("gbench_threads", b.threads, "count");
  for (const MetricValue& m : b.aggregates) {
    if (std::none_of(r.metrics.begin(), r.metrics.end(), [&m](const MetricValue& x) { return x.name == m.name; }))
      r.metrics.push_back(m);
  }
  return r;
}

}  // namespace xnn::gate
