#include "harness/sim/sim_target.h"

#include "engine/core/error.h"
#include "engine/runtime/model_io.h"
#include "harness/util/json.h"

namespace xnn::sim {

FloatEmulation sim_float_emulation(const DeviceProfile& device, const SimResult& sim) {
  if (device.numerics != "fp16") return FloatEmulation::kNone;
  for (const SimOpRow& r : sim.ops) {
    if (r.device == device.name && r.bound != "free") return FloatEmulation::kF16;
  }
  return FloatEmulation::kNone;
}

namespace {

class SimTarget : public Target {
 public:
  explicit SimTarget(TargetSettings s) : settings_(std::move(s)) {
    const std::string prefix = "sim:";
    if (settings_.kind.rfind(prefix, 0) != 0 || settings_.kind.size() == prefix.size()) {
      throw Error("target '" + settings_.name + "': kind '" + settings_.kind + "' is not sim:<profile>");
    }
    if (settings_.threads < 1) throw Error("target '" + settings_.name + "': threads must be >= 1");
    if (!settings_.affinity.empty()) {
      throw Error("target '" + settings_.name + "': affinity pins real CPUs; a simulated target (" + settings_.kind +
                  ") has none (use threads to choose how many of the profile's cores to use)");
    }
    try {
      device_ = find_device_profile(settings_.kind.substr(prefix.size()));
      if (!device_.is_cpu()) host_ = find_device_profile(device_.host);
    } catch (const Error& e) {
      throw Error("target '" + settings_.name + "': " + e.what());
    }
  }

  const TargetSettings& settings() const override { return settings_; }
  bool simulated() const override { return true; }

  std::string describe_json() const override {
    json::Writer w;
    w.begin_object().field("kind", settings_.kind).field("simulated", true).field("threads", settings_.threads);
    w.field("cores_used", cores_used(device_));
    w.key("device").raw(device_profile_json(device_));
    w.key("host");
    device_.is_cpu() ? w.null() : w.raw(device_profile_json(host_));
    w.end_object();
    return w.str();
  }

  LatencyMeasurement measure_latency(const std::string& model_path, const LatencySpec&, bool profile) override {
    auto model = load_model(model_path);
    const SimResult sim = run_simulation(*model);
    LatencyMeasurement m;
    // The simulation is deterministic: one sample is the whole distribution, so warm-up and
    // repetitions (spec) would only repeat it. No load time is modelled (init_ms 0).
    m.init_ms = 0;
    m.run.first_run_ms = sim.total_ms;
    m.run.samples_ms = {sim.total_ms};
    estimate_memory(model, m);
    if (profile) {
      for (const SimOpRow& r : sim.ops) {
        OpTiming o;
        o.node_index = r.node_index;
        o.node_name = r.node_name;
        o.op_type = r.op_type;
        o.kernel = r.bound == "free" ? "view"
                   : r.fell_back    ? "fallback:" + r.device
                                    : "sim:" + r.device;
        if (!r.fused_into.empty()) o.kernel += "/fused:" + r.fused_into;
        o.shapes = r.shapes;
        o.macs = r.macs;
        o.bytes = r.bytes;
        o.time_ms = r.time_ms;
        m.ops.push_back(std::move(o));
      }
    }
    return m;
  }

  std::unique_ptr<Session> open_session(const std::string& model_path) override {
    auto model = load_model(model_path);
    const SimResult sim = run_simulation(*model);  // throws for on_unsupported: error
    SessionOptions o;
    o.threads = settings_.threads;
    o.float_emulation = sim_float_emulation(device_, sim);
    return std::make_unique<Session>(model, o);
  }

 private:
  int cores_used(const DeviceProfile& p) const { return p.is_cpu() ? std::min(settings_.threads, p.cores) : p.cores; }

  SimResult run_simulation(const Model& model) const {
    SimOptions opt;
    opt.threads = settings_.threads;
    return simulate(model.graph, {}, device_, device_.is_cpu() ? nullptr : &host_, opt);
  }

  // Memory on the device: the engine's planned activation arena and the weights, at the
  // device's element size for float data (an fp16 device holds half the bytes). Reported as
  // activation_bytes and (weights + activations) as peak_rss_bytes: a simulated device has no
  // process to measure, this is its footprint.
  void estimate_memory(const std::shared_ptr<Model>& model, LatencyMeasurement& m) const {
    Session session(model, SessionOptions{});
    std::map<std::string, Shape> shapes;
    for (const IoInfo& in : session.inputs()) {
      Shape s;
      for (const Dim& d : in.shape) s.push_back(d.known() ? d.value : 1);  // as the simulation does
      shapes[in.name] = s;
    }
    session.prepare(shapes);
    const MemoryStats st = session.memory_stats();
    const double scale = device_.numerics == "fp16" ? 0.5 : 1.0;
    m.activation_bytes = static_cast<int64_t>(static_cast<double>(session.activation_bytes()) * scale);
    m.peak_rss_bytes = m.activation_bytes + static_cast<int64_t>(static_cast<double>(st.weight_bytes) * scale);
  }

  TargetSettings settings_;
  DeviceProfile device_, host_;
};

}  // namespace

std::unique_ptr<Target> make_sim_target(const TargetSettings& settings) {
  return std::make_unique<SimTarget>(settings);
}

}  // namespace xnn::sim
