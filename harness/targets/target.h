// Targets: where a job's model is measured. The runner only sees this interface; the CLI
// registers the kinds it knows (`cpu` now; `sim:<profile>` and remote device-lab agents
// later) in a TargetRegistry, so adding a target never touches the runner.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/runtime/session.h"
#include "harness/measure/latency.h"

namespace xnn {

struct TargetSettings {
  std::string name;               // display name (unique within an experiment)
  std::string kind;               // "cpu", "sim:<profile>", ...
  int threads = 1;
  std::vector<int> affinity;      // CPU ids to pin to; empty = no pinning
};

struct OpTiming {
  size_t node_index = 0;
  std::string node_name, op_type, kernel, shapes;
  double macs = 0, bytes = 0, time_ms = 0;   // time: median over the profiled runs
};

struct LatencyMeasurement {
  double init_ms = 0;                  // model load + session creation
  LatencyRun run;                      // first run + timed samples
  std::vector<OpTiming> ops;           // per-op profile when requested
  int64_t peak_rss_bytes = 0;
  int64_t activation_bytes = 0;
};

class Target {
 public:
  virtual ~Target() = default;
  virtual const TargetSettings& settings() const = 0;
  virtual bool simulated() const = 0;
  // A JSON object describing the target (recorded with the results).
  virtual std::string describe_json() const = 0;
  // Latency of `model_path` on random inputs; `profile` adds per-op timings.
  virtual LatencyMeasurement measure_latency(const std::string& model_path, const LatencySpec& spec, bool profile) = 0;
  // A session computing what this target computes (its numerics), for accuracy evaluation.
  virtual std::unique_ptr<Session> open_session(const std::string& model_path) = 0;
};

class TargetRegistry {
 public:
  using Factory = std::function<std::unique_ptr<Target>(const TargetSettings&)>;
  // `kind` matches exactly, or as a prefix when it ends in ':' ("sim:" serves "sim:pixel7").
  void add(const std::string& kind, std::string summary, Factory factory);
  bool knows(const std::string& kind) const;
  std::vector<std::string> kinds() const;
  std::unique_ptr<Target> create(const TargetSettings& settings) const;  // throws for an unknown kind

 private:
  struct Entry {
    std::string summary;
    Factory factory;
  };
  const Entry* find(const std::string& kind) const;
  std::map<std::string, Entry> entries_;
};

// The local CPU, measured for real with the engine's Session.
std::unique_ptr<Target> make_cpu_target(const TargetSettings& settings);

// Random inputs for a session's declared inputs (symbolic dims become 1): floats uniform in
// [-1, 1], integers 0, bools false.
std::map<std::string, Tensor> random_inputs(const Session& session, uint32_t seed = 0);

}  // namespace xnn
