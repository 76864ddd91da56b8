// Variant steps: each transforms a model file into another (convert, optimize; later
// quantize, prune, encode, train ...). The runner applies a variant's steps in order through
// this registry, so a new step is one registration in the CLI, never a runner change.
#pragma once
#include <yaml-cpp/yaml.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace xnn {

// Where a step reports figures of its own (an encoder's bits per weight, a pruner's sparsity):
// the runner stores them with the job's metrics. Name them "<step>.<figure>".
using StepMetricSink = std::function<void(const std::string& name, double value, const std::string& unit)>;

struct StepContext {
  std::string work_dir;   // a folder owned by this job for the step's outputs
  std::string location;   // where the step is declared ("exp.yaml:12:7"), for error messages
  StepMetricSink record_metric;  // may be empty (a caller that keeps no metrics)

  void record(const std::string& name, double value, const std::string& unit) const {
    if (record_metric) record_metric(name, value, unit);
  }
};

class Step {
 public:
  virtual ~Step() = default;
  // Canonical description of the step and its parameters (part of the job id).
  virtual std::string describe() const = 0;
  // Transforms the model at `input_path`; returns the path of the new model.
  virtual std::string apply(const std::string& input_path, const StepContext& ctx) const = 0;
};

class StepRegistry {
 public:
  // `params` is the step's YAML mapping (may be null); `location` names it for errors.
  using Factory = std::function<std::unique_ptr<Step>(const YAML::Node& params, const std::string& location)>;
  void add(const std::string& type, std::string summary, Factory factory);
  bool knows(const std::string& type) const { return entries_.count(type) != 0; }
  std::vector<std::string> types() const;
  std::unique_ptr<Step> create(const std::string& type, const YAML::Node& params, const std::string& location) const;

 private:
  struct Entry {
    std::string summary;
    Factory factory;
  };
  std::map<std::string, Entry> entries_;
};

// Checks that `params` is a mapping (or null) with only the allowed keys; throws an Error
// naming `location`, the step and the allowed keys otherwise.
void check_step_params(const YAML::Node& params, const std::string& step, const std::string& location,
                       const std::vector<std::string>& allowed);

// Built-in steps of the engine stage.
void register_builtin_steps(StepRegistry& registry);

}  // namespace xnn
