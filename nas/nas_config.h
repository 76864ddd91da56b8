// The YAML config of a black-box architecture search (`xnn-lab nas CONFIG.yaml`; schema in
// configs/nas/README.md): the strategy and pruner, the MobileNet-like architecture space, the
// hyper-parameter ranges, the training recipe every candidate and baseline gets, the
// objectives, constraints and latency source, the baselines and the output folder.
//
// The architecture space maps to a flat nas::SearchSpace, one parameter per decision that has
// more than one choice: "resolution", "width", per stage "s<i>.depth" and, for every block up
// to the stage's largest depth, "s<i>.b<j>.kernel|expansion|se|activation". A candidate with a
// smaller depth uses the first `depth` blocks and ignores the others (conditional decisions
// flattened, as nas/search/search_space.h describes). Hyper-parameters are "hp.<name>".
#pragma once
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "harness/arch/mobilenet_space.h"
#include "harness/train/trainer.h"
#include "nas/search/pruners.h"
#include "nas/search/search_space.h"
#include "nas/search/strategy.h"

namespace xnn::nas {

// Tunable training hyper-parameters and the TrainConfig field each sets.
const std::vector<std::string>& tunable_hyperparameters();  // lr, weight_decay, epochs, batch_size

struct HyperParamSpec {
  std::string name;           // one of tunable_hyperparameters()
  Distribution distribution;  // float range (lr, weight_decay), int range or categorical
};

struct ConstraintSpec {
  std::string metric;  // latency_ms | params | size_bytes
  double limit = 0;    // feasible when metric <= limit
};

struct LatencySource {
  std::string target = "cpu";       // a target kind of the CLI's registry
  std::string method = "measured";  // measured | predicted
  std::string predictor;            // predictor file (method predicted), absolute
  int threads = 1;
  int warmup = 5, runs = 20;
  double min_time = 0.2;            // seconds
  int feedback = 0;                 // predicted: re-measure this many front candidates on the target
                                    // and refit the predictor (nas/hardware_feedback.h); 0 = off
  int confirm_rounds = 0;           // > 0: whether the front dominates a baseline is judged by this many
                                    // rounds of back-to-back measurements on the target (nas/dominance.h)
};

// A hand-designed model trained with the same recipe and measured like the candidates: a
// train-builder spec, an architecture of the search space (its to_string encoding) or a
// model file whose initialisers are trained.
struct BaselineSpec {
  std::string name;
  std::optional<train::BuilderSpec> builder;
  std::optional<arch::Arch> arch;
  std::string model_file;  // absolute
  std::string location;
};

// How the search runs: black-box trials (each candidate trained from scratch), one-shot (a
// weight-sharing supernet trained with single-path sampling, subnets searched with inherited
// weights) or differentiable (DARTS-style architecture weights). One-shot and differentiable
// searches read their own section ("oneshot:" / "darts:"), kept here unparsed with its marks.
const std::vector<std::string>& search_methods();  // blackbox, oneshot, darts

struct NasConfig {
  std::string name;  // study name; default the file's stem
  std::string file;  // absolute path of the config
  std::string method = "blackbox";     // one of search_methods()
  YAML::Node method_options;           // the "oneshot:" or "darts:" section (null when absent)
  uint64_t seed = 0;
  int trials = 20;
  std::string strategy = "evolution";  // random | evolution | tpe | nsga2
  YAML::Node strategy_options;         // validated by make_strategy
  std::string pruner = "none";         // none | median | successive_halving
  YAML::Node pruner_options;
  arch::SearchSpace space;
  std::vector<HyperParamSpec> hyperparameters;
  train::TrainConfig recipe;           // model/output filled per candidate
  std::vector<std::string> objectives{"top1", "latency_ms"};  // top1 first; latency_ms optional
  std::vector<ConstraintSpec> constraints;
  LatencySource latency;
  std::vector<BaselineSpec> baselines;
  std::string output_dir;              // absolute; default <cwd>/nas-out/<name>
  std::string resolved_yaml;           // the config after overrides
};

// Loads `path` with KEY.PATH=VALUE overrides (as `xnn-lab run`'s). Errors are xnn::Error naming
// FILE:LINE:COL, the key and what was expected.
NasConfig load_nas_config(const std::string& path, const std::vector<std::string>& overrides = {});
NasConfig parse_nas_config(const YAML::Node& root, const std::string& file);

// The flat search space: architecture decisions, then "hp.<name>" parameters.
SearchSpace make_search_space(const NasConfig& config);
// The architecture a trial's parameters select (decisions with one choice come from the space).
arch::Arch arch_from_params(const arch::SearchSpace& space, const TrialParams& params);
// Parameters selecting `arch` (its unused deeper blocks get the first choice); the inverse of
// arch_from_params on the active decisions.
TrialParams params_from_arch(const arch::SearchSpace& space, const arch::Arch& arch);
// The recipe with the trial's "hp.*" values applied.
train::TrainConfig recipe_for(const NasConfig& config, const TrialParams& params);

// Directions of the objectives (top1 maximised, latency_ms minimised).
std::vector<Direction> objective_directions(const NasConfig& config);
// The configured strategy and pruner (nullptr for "none"); option errors name the config location.
std::unique_ptr<Strategy> make_strategy(const NasConfig& config);
std::unique_ptr<Pruner> make_pruner(const NasConfig& config);

}  // namespace xnn::nas
