// xnn-lab bench MODEL [--threads N] [--warmup W] [--runs R] [--min-time S] [--profile] [--json]
//                     [--opt-level 0|1|2] [--tune] [--reference] [--shape NAME=D,D,...]
//
// Times one model on this CPU the way an app would use it: load + session creation +
// preparation (init), the first run, then warm-ups and timed runs (MLPerf-style stopping: at
// least --runs samples and --min-time seconds). Inputs are seeded uniform random data.
// --profile adds per-op time averaged over the timed runs (TFLite op-profiler style).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <numeric>

#include "engine/kernels/cpu_features.h"
#include "engine/runtime/model_io.h"
#include "engine/runtime/session.h"
#include "harness/cli/commands.h"
#include "harness/cli/key_option.h"
#include "harness/measure/latency.h"
#include "harness/targets/target.h"
#include "harness/util/json.h"

namespace xnn::cli {
namespace {

struct BenchArgs {
  std::string model;
  int threads = 1, warmup = 5, runs = 50, opt_level = 2;
  double min_time = 0;
  bool profile = false, json = false, tune = false, reference = false;
  std::vector<std::string> shapes;
  std::string key_file;  // protected models
};

struct OpTotals {
  NodeProfile first;  // name, type, kernel, shapes, cost
  double total_ms = 0;
};

Shape parse_dims(const std::string& text, const std::string& arg) {
  Shape s;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = text.find(',', pos);
    const std::string part = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    try {
      size_t used = 0;
      const long long v = std::stoll(part, &used);
      if (used != part.size() || v < 0) throw std::invalid_argument(part);
      s.push_back(v);
    } catch (const std::exception&) {
      throw Error("--shape " + arg + ": '" + part + "' is not a non-negative integer (expected NAME=D,D,...)");
    }
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return s;
}

std::string shapes_str(const std::vector<Shape>& shapes) {
  std::string out;
  for (const Shape& s : shapes) out += (out.empty() ? "" : " ") + shape_str(s);
  return out;
}

void write_stats(json::Writer& w, const LatencyStats& s) {
  w.begin_object();
  w.field("min", s.min).field("median", s.median).field("mean", s.mean).field("p90", s.p90).field("p99", s.p99);
  w.field("max", s.max).field("stddev", s.stddev).field("cv", s.cv);
  w.end_object();
}

int run_bench(const BenchArgs& a) {
  using clock = std::chrono::steady_clock;
  reset_peak_rss();
  const auto t_init = clock::now();
  SessionOptions opts;
  opts.threads = a.threads;
  opts.profile = a.profile;
  opts.opt_level = a.opt_level;
  opts.tune = a.tune;
  opts.cpu_kernels = !a.reference;
  Session session(load_model(a.model, load_options_for(a.key_file)), opts);
  std::map<std::string, Tensor> inputs = random_inputs(session, 0);
  for (const std::string& arg : a.shapes) {
    const size_t eq = arg.find('=');
    if (eq == std::string::npos) throw Error("--shape " + arg + ": expected NAME=D,D,...");
    const std::string name = arg.substr(0, eq);
    auto it = inputs.find(name);
    if (it == inputs.end()) throw Error("--shape " + arg + ": the model has no input '" + name + "'");
    it->second = Tensor(it->second.dtype(), parse_dims(arg.substr(eq + 1), arg));
  }
  session.check_inputs(inputs);
  std::map<std::string, Shape> shapes;
  for (const auto& [name, t] : inputs) shapes[name] = t.shape();
  session.prepare(shapes);
  const double init_ms = std::chrono::duration<double, std::milli>(clock::now() - t_init).count();

  std::map<size_t, OpTotals> ops;
  int profiled_runs = 0;
  bool timed_phase = false;
  LatencySpec spec;
  spec.warmup = std::max(a.warmup, 1);  // the first run is always a warm-up and reported apart
  spec.min_runs = std::max(a.runs, 1);
  spec.min_time_s = a.min_time;
  spec.max_runs = a.min_time > 0 ? 1000000 : spec.min_runs;
  int calls = 0;
  std::vector<Tensor> outs;
  const LatencyRun run = measure_latency(spec, [&] {
    outs.clear();  // release last outputs so their buffers are reused, not reallocated
    outs = session.run(inputs);
    timed_phase = ++calls > spec.warmup;
    if (a.profile && timed_phase) {
      ++profiled_runs;
      for (const NodeProfile& p : session.last_profile()) {
        OpTotals& t = ops[p.node_index];
        if (t.first.name.empty() && t.first.op_type.empty()) t.first = p;
        t.total_ms += p.time_ms;
      }
    }
  });
  const LatencyStats stats = summarize(run.samples_ms);
  const MemoryStats mem = session.memory_stats();
  const int64_t peak_rss = peak_rss_bytes();
  const Graph& g = session.optimized_graph();
  double total_macs = 0;
  // MACs of the optimised graph come from the op cost model (the same numbers --profile shows).
  std::vector<OpTotals> op_list;
  for (auto& [idx, t] : ops) op_list.push_back(t);

  if (a.json) {
    json::Writer w;
    w.begin_object();
    w.field("model", a.model).field("threads", a.threads).field("opt_level", a.opt_level).field("tune", a.tune);
    w.field("kernels", a.reference ? "reference" : std::string(kernels::isa_name(kernels::best_isa())));
    std::vector<Shape> in_shapes;
    for (const auto& [n, t] : inputs) in_shapes.push_back(t.shape());
    w.field("input_shapes", shapes_str(in_shapes));
    w.field("init_ms", init_ms).field("first_run_ms", run.first_run_ms).field("warmup", spec.warmup);
    w.field("runs", static_cast<int64_t>(run.samples_ms.size()));
    w.key("latency_ms");
    write_stats(w, stats);
    w.key("samples_ms").begin_array();
    for (double s : run.samples_ms) w.value(s);
    w.end_array();
    w.field("arena_bytes", mem.arena_bytes).field("arena_lower_bound_bytes", mem.lower_bound_bytes);
    w.field("memory_planned", mem.planned).field("output_bytes", mem.output_bytes);
    w.field("weight_bytes", mem.weight_bytes).field("peak_rss_bytes", peak_rss);
    w.field("nodes", static_cast<int64_t>(g.nodes.size()));
    if (a.profile) {
      double sum = 0;
      for (const OpTotals& t : op_list) sum += t.total_ms;
      w.key("ops").begin_array();
      for (const OpTotals& t : op_list) {
        const NodeProfile& p = t.first;
        const double ms = t.total_ms / std::max(profiled_runs, 1);
        total_macs += p.macs;
        w.begin_object();
        w.field("name", p.name).field("type", p.op_type).field("kernel", p.kernel);
        w.key("input_shapes").begin_array();
        for (const Shape& s : p.input_shapes) w.value(s);
        w.end_array();
        w.key("output_shapes").begin_array();
        for (const Shape& s : p.output_shapes) w.value(s);
        w.end_array();
        w.field("macs", p.macs).field("bytes", p.bytes).field("time_ms", ms);
        w.field("percent", sum > 0 ? 100.0 * t.total_ms / sum : 0.0);
        w.end_object();
      }
      w.end_array();
      w.field("total_macs", total_macs);
    }
    w.end_object();
    std::printf("%s\n", w.str().c_str());
    return 0;
  }

  std::printf("model          %s\n", a.model.c_str());
  std::printf("threads        %d   opt-level %d   kernels %s%s\n", a.threads, a.opt_level,
              a.reference ? "reference" : std::string(kernels::isa_name(kernels::best_isa())).c_str(),
              a.tune ? " (tuned)" : "");
  std::printf("init           %.2f ms (load, optimise, prepare)\n", init_ms);
  std::printf("first run      %.3f ms\n", run.first_run_ms);
  std::printf("latency (ms)   min %.3f  median %.3f  mean %.3f  p90 %.3f  p99 %.3f  stddev %.3f  (%zu runs)\n",
              stats.min, stats.median, stats.mean, stats.p90, stats.p99, stats.stddev, run.samples_ms.size());
  if (mem.planned) {
    std::printf("arena          %.2f MiB planned, liveness lower bound %.2f MiB (%.3fx)\n", mem.arena_bytes / 1048576.0,
                mem.lower_bound_bytes / 1048576.0,
                mem.lower_bound_bytes > 0 ? static_cast<double>(mem.arena_bytes) / mem.lower_bound_bytes : 1.0);
  } else {
    std::printf("arena          not planned (data-dependent shapes or control flow)\n");
  }
  std::printf("peak RSS       %.1f MiB\n", peak_rss / 1048576.0);
  if (a.profile) {
    double sum = 0;
    for (const OpTotals& t : op_list) sum += t.total_ms;
    std::vector<const OpTotals*> sorted;
    for (const OpTotals& t : op_list) sorted.push_back(&t);
    std::sort(sorted.begin(), sorted.end(), [](auto* x, auto* y) { return x->total_ms > y->total_ms; });
    std::printf("\nper-op profile (average over %d runs, sorted by time)\n", profiled_runs);
    std::printf("%-28s %-14s %-40s %9s %7s %7s %9s\n", "node", "type", "kernel", "ms", "%", "cum %", "GFLOP/s");
    double cum = 0;
    for (const OpTotals* t : sorted) {
      const double ms = t->total_ms / std::max(profiled_runs, 1);
      const double pct = sum > 0 ? 100.0 * t->total_ms / sum : 0;
      cum += pct;
      // A step computed by its producer's kernel ("fused") has no time of its own to divide by.
      char gflops[32] = "-";
      if (ms > 0 && t->first.kernel != "fused") std::snprintf(gflops, sizeof gflops, "%.2f", 2.0 * t->first.macs / (ms * 1e6));
      std::printf("%-28.28s %-14.14s %-40.40s %9.4f %7.2f %7.2f %9s\n", t->first.name.c_str(), t->first.op_type.c_str(),
                  t->first.kernel.c_str(), ms, pct, cum, gflops);
    }
  }
  return 0;
}

}  // namespace

void add_bench_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("bench", "Time a model on this CPU: init, first run, latency percentiles, memory");
  static BenchArgs a;
  cmd->add_option("model", a.model, "Model (.onnx or .xnn)")->required()->check(CLI::ExistingFile);
  cmd->add_option("--threads", a.threads, "Threads (exactly this many run the kernels)")->check(CLI::Range(1, 256));
  cmd->add_option("--warmup", a.warmup, "Untimed runs before timing (the first run is reported apart)")
      ->check(CLI::Range(0, 100000));
  cmd->add_option("--runs", a.runs, "Timed runs (at least)")->check(CLI::Range(1, 10000000));
  cmd->add_option("--min-time", a.min_time, "Keep timing until this many seconds have passed")->check(CLI::Range(0.0, 86400.0));
  cmd->add_option("--opt-level", a.opt_level, "Graph optimisation level: 0 none, 1 fold/cleanup, 2 fusion")
      ->check(CLI::Range(0, 2));
  cmd->add_option("--shape", a.shapes, "Input shape NAME=D,D,... (default: declared shape, symbolic dims = 1)");
  cmd->add_flag("--profile", a.profile, "Per-op time, percent and cumulative percent");
  cmd->add_flag("--json", a.json, "One JSON object on stdout");
  cmd->add_flag("--tune", a.tune, "Choose conv algorithms by timing them at preparation");
  cmd->add_flag("--reference", a.reference, "Reference kernels only (what the optimised kernels are tested against)");
  add_key_file_option(cmd, a.key_file);
  cmd->callback([&exit_code] { exit_code = run_bench(a); });
}

}  // namespace xnn::cli
