// Experiment configs: the YAML file `xnn-lab run` reads (schema: configs/README.md).
//
// Loading = parse (yaml-cpp) -> apply command-line overrides to the YAML tree -> validate
// strictly into ExperimentConfig. Every error is an xnn::Error whose text starts with where the
// fault is ("FILE:LINE:COLUMN", or "override 'KEY=VALUE'" for a value set on the command line,
// or just "FILE" when there is no better place), then the key path ("targets.0.threads") and
// what was expected; unknown keys and enum values get a did-you-mean.
//
// Steps and targets are open sets: the config keeps a step's parameters as YAML for the step
// registry to validate, and asks ParseOptions which target kinds exist.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace xnn::config {

// How dataset images become model inputs: x = (pixel * scale - mean[c]) / std[c].
// (The member `std` hides namespace std inside the struct, hence the `::std::`.)
struct Preprocess {
  double scale = 1.0;
  ::std::string layout = "NCHW";    // "NCHW" or "NHWC"
  ::std::vector<float> mean{0.0f};  // 1 value (all channels) or 3 (one per channel)
  ::std::vector<float> std{1.0f};   // the same; every value > 0
};

struct ModelSpec {
  std::string name;      // default: the file name without extension
  std::string path;      // absolute; relative paths in the file are resolved from the config's folder
  Preprocess preprocess;
  std::string location;  // where the model was declared ("FILE:LINE:COL" or "override '...'")
};

// One step of a variant's pipeline. The type is looked up in the step registry, which also
// validates the parameters.
struct StepSpec {
  std::string type;      // "convert", "optimize", ... (`- convert` is short for `- {type: convert}`)
  YAML::Node params;     // a map of the step's other keys, as written (empty map when none)
  std::string location;  // where the step was declared, for the registry's errors
  std::map<std::string, std::string> param_locations;  // param key -> where its value was set

  // yaml-cpp's Node::operator= overwrites the node that the left-hand handle refers to (and so
  // every StepSpec sharing it); these assignments rebind the handle instead.
  StepSpec() = default;
  StepSpec(const StepSpec&) = default;
  StepSpec(StepSpec&&) = default;
  StepSpec& operator=(const StepSpec& o) {
    if (this != &o) {
      type = o.type;
      params.reset(o.params);
      location = o.location;
      param_locations = o.param_locations;
    }
    return *this;
  }
  StepSpec& operator=(StepSpec&& o) { return *this = static_cast<const StepSpec&>(o); }
};

struct VariantSpec {
  std::string name;
  std::vector<StepSpec> steps;  // empty: the model as given
  std::string location;
};

struct TargetSpec {
  std::string name;          // default: the kind
  std::string kind;          // "cpu" or "sim:<profile>"; checked with ParseOptions::is_known_target
  int threads = 1;           // >= 1
  std::vector<int> affinity; // CPU ids to pin threads to; empty: no pinning
  std::string location;
};

struct LatencyMetric {
  bool enabled = true;
  int warmup = 5;          // untimed runs first
  int runs = 20;           // at least this many timed runs ...
  double min_time = 0.5;   // ... and at least this many seconds (stop when both are met)
  int max_runs = 10000;    // hard cap (>= runs)
  bool profile = false;    // per-op timing
};
struct SizeMetric {
  bool enabled = true;     // bytes on disk, parameters, MACs
};
struct AccuracyMetric {
  bool enabled = false;
  std::string dataset = "fashion-mnist";
  std::string split = "test";  // "test" or "train"
  int64_t limit = 0;           // first N images; 0 = all
  std::string path = "/usr/share/datasets/fashion-mnist";  // absolute
};
struct MemoryMetric {
  bool enabled = true;     // arena bytes and peak RSS
};
struct Metrics {
  LatencyMetric latency;
  SizeMetric size;
  AccuracyMetric accuracy;
  MemoryMetric memory;
};

struct ExperimentConfig {
  std::string name;
  std::string description;
  std::string file;  // absolute path of the config file
  std::vector<ModelSpec> models;
  std::vector<VariantSpec> variants;  // default: one variant "fp32" with no steps
  std::vector<TargetSpec> targets;    // default: one "cpu" target
  Metrics metrics;
  std::string store;  // absolute SQLite path; default "<config folder>/xnn-lab.db"

  // Canonical YAML of everything that defines the experiment, every default filled in, paths
  // absolute, step parameters with sorted keys, disabled metrics as `false`. Leaves out `file`
  // and `store` (where results go does not change them). It is itself a valid config that
  // loads back to the same resolved_yaml(). Used for config_hash().
  std::string resolved_yaml() const;
};

struct ParseOptions {
  // The target registry: which kinds exist, and their names for did-you-mean.
  std::function<bool(const std::string&)> is_known_target = [](const std::string& kind) { return kind == "cpu"; };
  std::vector<std::string> known_targets{"cpu"};
  // The step registry; when is_known_step is empty, any step type is accepted here.
  std::function<bool(const std::string&)> is_known_step;
  std::vector<std::string> known_steps;
  // Check that model files (and an explicit accuracy dataset folder) exist.
  bool check_paths_exist = true;
};

// Loads, overrides and validates `path`. Errors name the file as `path` is written.
ExperimentConfig load_experiment_config(const std::string& path, const std::vector<std::string>& overrides = {},
                                        const ParseOptions& options = {});

// The same for YAML text already in memory; `path` is where it claims to live (used in
// messages, for `file`, and to resolve relative paths). The file itself need not exist.
ExperimentConfig parse_experiment_config(const std::string& yaml_text, const std::string& path,
                                         const std::vector<std::string>& overrides = {},
                                         const ParseOptions& options = {});

// Hex SHA-256 of config.resolved_yaml().
std::string config_hash(const ExperimentConfig& config);

// ---- Command-line overrides, Hydra style: KEY.PATH=VALUE -------------------------------------

struct Override {
  std::string text;               // as given, for messages
  std::vector<std::string> path;  // map keys and list indices ("targets", "0", "threads")
  YAML::Node value;               // the value parsed as YAML (so `=[1,2]` is a list)
};

// Parses "a.b.0.c=value"; throws xnn::Error naming the override when it is malformed.
Override parse_override(const std::string& text);

// Sets the value in the tree. Map keys that do not exist are created (as are maps under them);
// list indices must exist. Throws xnn::Error naming the override.
void apply_override(YAML::Node& root, const Override& override_);

// ---- Helpers also used by the registries ----------------------------------------------------

// Optimal-string-alignment (Damerau-Levenshtein) distance, case-sensitive.
size_t edit_distance(const std::string& a, const std::string& b);

// The candidate closest to `word` (compared without case) if it is close enough to be a likely
// typo: distance <= 1 for words of up to 3 letters, else <= max(2, length / 3). "" if none.
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace xnn::config
