// A deterministic stand-in for the CPU target in tests: op times are a fixed function of the
// op's MACs and bytes, so store bookkeeping and fitting can be tested without timing anything.
#pragma once
#include <algorithm>
#include <map>
#include <string>

#include "engine/runtime/model_io.h"
#include "harness/predict/shapes_text.h"
#include "harness/targets/target.h"

namespace xnn::predict::testing {

class FakeTarget : public Target {
 public:
  explicit FakeTarget(TargetSettings s) : settings_(std::move(s)) {}
  const TargetSettings& settings() const override { return settings_; }
  bool simulated() const override { return true; }
  std::string describe_json() const override { return "{\"kind\":\"fake\"}"; }
  std::unique_ptr<Session> open_session(const std::string& path) override {
    return std::make_unique<Session>(load_model(path), SessionOptions{settings_.threads});
  }
  LatencyMeasurement measure_latency(const std::string& path, const LatencySpec&, bool profile) override {
    ++measured;
    Session session(load_model(path), SessionOptions{settings_.threads});
    session.prepare();
    LatencyMeasurement m;
    double total = 0;
    for (const NodeProfile& p : session.plan_summary()) {
      const double t = 0.001 + p.macs * 1e-8 + p.bytes * 1e-9;
      total += t;
      if (profile) {
        m.ops.push_back(OpTiming{p.node_index, p.name, p.op_type, p.kernel, shapes_text(p.input_shapes, p.output_shapes),
                                 p.macs, p.bytes, t});
      }
    }
    // Successive measurements of one model cycle through `slowdowns` (contention stand-in).
    const double slow = slowdowns.empty() ? 1.0 : slowdowns[static_cast<size_t>(calls_[path]++) % slowdowns.size()];
    m.run.samples_ms.assign(5, (0.01 + 1.1 * total) * slow);
    return m;
  }
  int measured = 0;
  std::vector<double> slowdowns;

 private:
  TargetSettings settings_;
  std::map<std::string, int> calls_;
};

}  // namespace xnn::predict::testing
