// The local CPU target: runs the engine in this process, pinned to the configured CPUs.
#include <sched.h>
#include <sys/utsname.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <thread>

#include "engine/runtime/graph_cost.h"
#include "engine/runtime/model_io.h"
#include "harness/targets/target.h"
#include "harness/util/json.h"

namespace xnn {

std::map<std::string, Tensor> random_inputs(const Session& session, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  std::map<std::string, Tensor> inputs;
  for (const IoInfo& in : session.inputs()) {
    Shape s;
    for (const Dim& d : in.shape) s.push_back(d.known() ? d.value : 1);
    Tensor t(in.dtype, s);
    if (in.dtype == DType::kF32) {
      float* p = t.data<float>();
      for (int64_t i = 0; i < t.numel(); ++i) p[i] = uni(rng);
    }
    inputs[in.name] = std::move(t);
  }
  return inputs;
}

namespace {

// Pins the calling thread for the lifetime of the object, restoring the old mask after.
class AffinityScope {
 public:
  explicit AffinityScope(const std::vector<int>& cpus) {
    if (cpus.empty()) return;
    if (sched_getaffinity(0, sizeof(old_), &old_) != 0) return;
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int c : cpus) {
      if (c < 0 || c >= CPU_SETSIZE) throw Error("affinity: CPU id " + std::to_string(c) + " out of range");
      CPU_SET(c, &set);
    }
    if (sched_setaffinity(0, sizeof(set), &set) != 0) {
      throw Error("affinity: cannot pin to the requested CPUs (do they exist? this machine has " +
                  std::to_string(std::thread::hardware_concurrency()) + ")");
    }
    active_ = true;
  }
  ~AffinityScope() {
    if (active_) sched_setaffinity(0, sizeof(old_), &old_);
  }

 private:
  cpu_set_t old_{};
  bool active_ = false;
};

std::string join_shapes(const std::vector<Shape>& shapes) {
  std::string s;
  for (const Shape& x : shapes) {
    if (!s.empty()) s += ';';
    s += shape_str(x);
  }
  return s;
}

class CpuTarget : public Target {
 public:
  explicit CpuTarget(TargetSettings s) : settings_(std::move(s)) {
    if (settings_.threads < 1) throw Error("target '" + settings_.name + "': threads must be >= 1");
  }
  const TargetSettings& settings() const override { return settings_; }
  bool simulated() const override { return false; }

  std::string describe_json() const override {
    json::Writer w;
    w.begin_object().field("kind", settings_.kind).field("threads", settings_.threads);
    w.key("affinity").begin_array();
    for (int c : settings_.affinity) w.value(c);
    w.end_array();
    w.field("hardware_threads", static_cast<int64_t>(std::thread::hardware_concurrency()));
    w.end_object();
    return w.str();
  }

  LatencyMeasurement measure_latency(const std::string& model_path, const LatencySpec& spec, bool profile) override {
    AffinityScope pin(settings_.affinity);
    LatencyMeasurement m;
    reset_peak_rss();
    const auto t0 = std::chrono::steady_clock::now();
    auto model = load_model(model_path);
    Session session(model, SessionOptions{settings_.threads, false});
    m.init_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const auto inputs = random_inputs(session);
    m.run = xnn::measure_latency(spec, [&] { session.run(inputs); });
    m.activation_bytes = session.activation_bytes();
    m.peak_rss_bytes = peak_rss_bytes();
    if (profile) m.ops = profile_ops(model, inputs, spec);
    return m;
  }

  std::unique_ptr<Session> open_session(const std::string& model_path) override {
    return std::make_unique<Session>(load_model(model_path), SessionOptions{settings_.threads, false});
  }

 private:
  // Per-op times: median over a few profiled runs, with each node's static cost.
  std::vector<OpTiming> profile_ops(const std::shared_ptr<Model>& model, const std::map<std::string, Tensor>& inputs,
                                    const LatencySpec& spec) {
    Session session(model, SessionOptions{settings_.threads, true});
    const int runs = std::clamp(spec.min_runs, 3, 20);
    std::vector<std::vector<double>> times;
    std::vector<NodeProfile> last;
    for (int r = 0; r < runs + 1; ++r) {
      session.run(inputs);
      if (r == 0) continue;  // warm-up
      last = session.last_profile();
      times.resize(last.size());
      for (size_t i = 0; i < last.size(); ++i) times[i].push_back(last[i].time_ms);
    }
    std::vector<OpTiming> ops;
    for (size_t i = 0; i < last.size(); ++i) {
      OpTiming o;
      o.node_index = last[i].node_index;
      o.node_name = last[i].name;
      o.op_type = last[i].op_type;
      o.kernel = last[i].kernel;
      o.shapes = join_shapes(last[i].input_shapes) + "->" + join_shapes(last[i].output_shapes);
      // The session's own cost of the optimised node (the original graph's nodes do not line up).
      o.macs = last[i].macs;
      o.bytes = last[i].bytes;
      std::vector<double> t = times[i];
      std::sort(t.begin(), t.end());
      o.time_ms = t.empty() ? 0 : t[t.size() / 2];
      ops.push_back(std::move(o));
    }
    return ops;
  }

  TargetSettings settings_;
};

}  // namespace

std::unique_ptr<Target> make_cpu_target(const TargetSettings& settings) {
  return std::make_unique<CpuTarget>(settings);
}

}  // namespace xnn
