// A compression recipe (configs/compress/README.md): the Deep Compression pipeline as an
// ordered list of stages any model can go through —
//
//   name: deep_compression_mlp
//   stages:
//     - prune: {method: unstructured, target_sparsity: 0.92, per_layer: {fc1.weight: 0.96},
//               schedule: gradual, finetune: {config: ../train/lenet_300_100.yaml, epochs: 6}}
//     - finetune: {config: ../train/lenet_300_100.yaml, epochs: 2}
//     - cluster: {bits: 5, bits_per_layer: {...}, finetune: {config: ..., epochs: 2}}
//     - quantize: {calib_samples: 100}
//     - encode: {coder: rans}
//
// Every stage is a mapping with exactly one key (its kind). Parsing is strict: an unknown key,
// a value of the wrong type or range, or a missing required key is an xnn::Error naming
// FILE:LINE:COL, the stage and the key. Relative file paths resolve from the recipe's folder.
#pragma once
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "compress/encode/weight_encoder.h"
#include "compress/prune/magnitude_prune.h"

namespace xnn::compress_recipe {

// A training run on the stage's model: a training config (configs/train) and KEY=VALUE
// overrides (any dotted key of the config, e.g. epochs: 3, optimizer.lr: 0.01).
struct FinetuneSpec {
  std::string config;                  // resolved path
  std::vector<std::string> overrides;  // "epochs=3"
  std::string location;                // FILE:LINE:COL of the mapping
};

struct PruneStage {
  std::string method = "unstructured";  // unstructured | channel
  std::optional<double> target_sparsity;  // unstructured: share of zero weights
  std::optional<double> target_flops;     // share of the dense MACs kept
  std::optional<double> target_params;    // channel: share of the parameters kept
  std::string schedule = "oneshot";       // unstructured: oneshot | gradual (needs finetune)
  std::string scope = "layer";            // unstructured: layer | global
  std::map<std::string, double> per_layer;  // unstructured: weight value or node name -> sparsity
  std::map<std::string, std::string> per_layer_location;
  prune::PruneOptions options;            // min_elements, prune_first_conv, prune_depthwise
  std::string importance = "l1";          // channel: l1 | l2 | bn | taylor
  int64_t round_to = 8;                   // channel
  std::optional<FinetuneSpec> finetune;
};

struct FinetuneStage {
  FinetuneSpec spec;
};

// Trained quantisation (Deep Compression stage 2): k-means codebooks, then optionally
// fine-tuning of the shared centroids (harness/compress_recipe/shared_centroids.h).
struct ClusterStage {
  int bits = 5;
  std::map<std::string, int> bits_per_layer;  // weight value or node name -> bits
  std::map<std::string, std::string> bits_per_layer_location;
  int64_t min_elements = 256;
  std::optional<FinetuneSpec> finetune;
};

// int8 post-training quantisation (compress/quantize), calibrated on Fashion-MNIST train images.
struct QuantizeStage {
  int64_t calib_samples = 100;
  bool per_tensor = false;
  std::vector<std::string> exclude;
};

// Entropy-coded storage (compress/encode). After a cluster stage the default is to keep its
// codebooks (cluster: false, the weights' distinct values are the codebook) and its
// min_elements; `cluster: true` re-clusters with `bits`.
struct EncodeStage {
  encode::EncodeOptions options;
  bool cluster_given = false;
  bool min_elements_given = false;
};

using StageSpec = std::variant<PruneStage, FinetuneStage, ClusterStage, QuantizeStage, EncodeStage>;

struct RecipeStage {
  std::string kind;      // prune | finetune | cluster | quantize | encode
  std::string location;  // FILE:LINE:COL of the stage
  StageSpec spec;
};

struct Recipe {
  std::string name;  // default: the file name without extension
  std::string path;
  std::string text;  // the file's content (recorded with the run)
  std::vector<RecipeStage> stages;
};

// The stage kinds, in the order the README lists them.
const std::vector<std::string>& stage_kinds();

Recipe load_recipe(const std::string& path);
// `file` names the source in errors and is the base of relative paths.
Recipe parse_recipe(const YAML::Node& root, const std::string& file);
// One stage's body (the mapping under `prune:` etc.); `what` prefixes errors ("stages[0].prune").
PruneStage parse_prune_stage(const YAML::Node& body, const std::string& file, const std::string& what);

// "FILE:LINE:COL" of a node (FILE alone when the node has no position).
std::string where(const std::string& file, const YAML::Node& node);

}  // namespace xnn::compress_recipe
