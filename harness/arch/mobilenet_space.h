// A MobileNet-like architecture space (YAML), one architecture in it (`Arch`: one choice per
// decision), random sampling and mutation, a stable string encoding, and the builder that turns
// an architecture into an engine model (inverted residual blocks, optional squeeze-excitation).
// The latency predictor draws its calibration and held-out sets from it (generate_arch_models);
// NAS reuses the space, sample_arch, mutate_arch and the encoding.
//
// The space (configs/arch/mobilenet_space.yaml documents every key):
//
//   input: [3, 224, 224]                 # C, H, W (H == W: resolutions are square sides)
//   resolutions: [96, 128, 160, 192, 224] # optional; default [H]
//   classes: 1000
//   width_multipliers: [0.35, 0.5, 0.75, 1.0]   # optional; default [1.0]
//   channel_divisor: 8                   # optional; channels rounded as MobileNetV2's make_divisible
//   stem: {channels: 16, stride: 2, activation: hardswish}   # 3x3 conv + BN + act
//                                        # stride: [1, 2] makes the stem's stride a decision
//   head: {channels: 1280, activation: hardswish}            # 1x1 conv + BN + act, GAP, Gemm
//   block_choices:                       # optional defaults for every stage
//     {kernels: [3, 5, 7], expansions: [1, 3, 6], se: [false, true], activations: [relu, hardswish]}
//   stages:
//     - {depths: [1, 2, 3], channels: 24, stride: 2}   # may override any block_choices key
//
// Decisions of an architecture: the resolution, the width multiplier, the stem's stride (when
// the space lists several), per stage the depth, per block its kernel, expansion,
// squeeze-excitation on/off and activation.
#pragma once
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "engine/core/graph.h"
#include "harness/util/json.h"

namespace xnn::arch {

// Activations a block, the stem or the head may use.
const std::vector<std::string>& supported_activations();  // relu, relu6, hardswish, silu

struct StageSpace {
  std::vector<int64_t> depths;     // number of blocks, choices (each >= 1)
  int64_t channels = 0;            // output channels at width 1.0
  int64_t stride = 1;              // stride of the stage's first block (1 or 2)
  std::vector<int64_t> kernels;    // depthwise kernel sizes (odd)
  std::vector<int64_t> expansions; // expansion ratios (1: no expand conv)
  std::vector<bool> se;            // squeeze-excitation off/on
  std::vector<std::string> activations;
  std::string location;            // FILE:LINE:COL of the stage, for errors
};

struct SearchSpace {
  int64_t in_channels = 3;
  std::vector<int64_t> resolutions;       // square input sides, choices
  int64_t classes = 1000;
  std::vector<double> width_multipliers;  // choices
  int64_t channel_divisor = 8;
  int64_t stem_channels = 16;
  int64_t stem_stride = 2;                // the default: stem_strides[0]
  std::vector<int64_t> stem_strides{2};   // choices (`stem.stride` a list); one when fixed
  std::string stem_activation = "hardswish";
  int64_t head_channels = 1280;
  std::string head_activation = "hardswish";
  std::vector<StageSpace> stages;
  std::string source;                     // the file it came from ("" when built in code)
};

// Parses a space mapping. Errors name `file`:LINE:COL, the key and what was expected.
SearchSpace parse_search_space(const YAML::Node& node, const std::string& file);
// Reads and parses a YAML file (a missing or malformed file is an Error naming it).
SearchSpace load_search_space(const std::string& path);

// MobileNetV2's _make_divisible: the nearest multiple of `divisor` (at least `divisor`), but
// never more than 10% below `value`.
int64_t make_divisible(double value, int64_t divisor);

struct BlockChoice {
  int64_t kernel = 3;
  int64_t expansion = 1;
  bool se = false;
  std::string activation = "relu";
  bool operator==(const BlockChoice&) const = default;
};

struct Arch {
  int64_t resolution = 0;
  double width = 1.0;
  // 0: the space's default stem stride (spaces with a fixed stem, and every architecture
  // written before the stem's stride became a decision); otherwise a stride other than the
  // default. Keeping the default implicit keeps those architectures' encodings unchanged.
  int64_t stem_stride = 0;
  std::vector<std::vector<BlockChoice>> stages;  // stages[s].size() is the stage's depth
  bool operator==(const Arch&) const = default;

  // "r160-w0.75|k3e6.relu-k5e3se.hardswish|k7e1.silu": resolution and width (then "-s<stride>"
  // when stem_stride is set, e.g. "r28-w0.75-s2"), then one '|'-separated group per stage of
  // '-'-separated blocks "k<kernel>e<expansion>[se].<act>".
  // Stable (NAS and the predictor key results on it) and parsed back by parse_arch.
  std::string to_string() const;
};

// Inverse of Arch::to_string; a malformed string is an Error quoting it and the bad part.
Arch parse_arch(const std::string& text);

// Writes the architecture as a JSON object {"encoding", "resolution", "width", "stages":
// [[{"kernel", "expansion", "se", "activation"}, ...], ...]} into `w` (to embed it), or alone.
void write_arch_json(json::Writer& w, const Arch& arch);
std::string arch_to_json(const Arch& arch);

// True when every decision of `arch` is one of the space's choices; otherwise false with the
// first offending decision described in `*why` (when given).
bool arch_in_space(const SearchSpace& space, const Arch& arch, std::string* why = nullptr);

// One architecture drawn uniformly per decision (the blocks of a stage independently).
Arch sample_arch(const SearchSpace& space, std::mt19937_64& rng);

// Like sample_arch, but every ordered decision (resolution, width, depth, kernel, expansion, SE
// off < on; not the activation) favours the choices whose rank among its sorted values is near
// `size` in [0, 1]: 0 leans to the cheapest corner of the space, 1 to the costliest.
Arch sample_arch_sized(const SearchSpace& space, double size, std::mt19937_64& rng);

// Each decision is redrawn with probability `prob` to a different choice; at least one decision
// always changes. A deeper stage gets newly sampled blocks, a shallower one drops its last ones.
// Throws when the space has only one architecture or `arch` is not in the space.
Arch mutate_arch(const SearchSpace& space, const Arch& arch, std::mt19937_64& rng, double prob);

// The stride the stem of `arch` uses in `space` (its own, or the space's default).
int64_t stem_stride(const SearchSpace& space, const Arch& arch);
// `stride` as an Arch stores it: 0 for the space's default.
int64_t canonical_stem_stride(const SearchSpace& space, int64_t stride);

// Output channels of stage `s` (and the stem/head) for a width multiplier, after rounding.
int64_t stage_channels(const SearchSpace& space, size_t s, double width);
int64_t stem_channels(const SearchSpace& space, double width);
int64_t head_channels(const SearchSpace& space, double width);  // never below the base (V2 rule)

// The graph-building steps of build_arch_model, public for models made of the same pieces
// (NAS supernets, the one-block models of a per-op latency table). Value names follow
// build_arch_model's ("<name>.conv.weight", "<name>.bn.running_mean", ...).
class GraphBuilder {
 public:
  explicit GraphBuilder(uint64_t seed);  // weights drawn from `seed`, in call order
  Graph& g() { return model_->graph; }
  std::shared_ptr<Model> model() { return model_; }

  // A node with one f32 output "<name>_out"; returns the output's value index.
  int node(const std::string& op, const std::string& name, std::vector<int> inputs,
           std::map<std::string, Attribute> attrs = {});
  int uniform(const std::string& name, const Shape& shape, float bound);  // U(-bound, bound) initialiser
  int filled(const std::string& name, const Shape& shape, float v);
  int conv(const std::string& name, int x, int64_t cin, int64_t cout, int64_t k, int64_t stride, int64_t group,
           bool bias);
  int batch_norm(const std::string& name, int x, int64_t c);
  int activation(const std::string& act, const std::string& name, int x);
  int conv_bn_act(const std::string& name, int x, int64_t cin, int64_t cout, int64_t k, int64_t stride,
                  int64_t group, const std::string& act);
  // The graph input "input" [batch, C, r, r] (a symbolic "batch" dim when batch <= 0).
  int input(int64_t batch, int64_t channels, int64_t resolution);
  // One inverted-residual block (build_arch_model's; residual Add when stride 1 and cin == cout).
  int block(const std::string& name, int x, int64_t cin, int64_t cout, int64_t stride, const BlockChoice& choice,
            int64_t channel_divisor);
  // Head 1x1 conv + BN + act, GlobalAveragePool, Flatten, Gemm to the classes: the logits.
  int classifier(const SearchSpace& space, int x, int64_t cin, double width);

 private:
  std::mt19937_64 rng_;
  std::shared_ptr<Model> model_;
};

// The model: input "input" [batch, C, r, r] (a symbolic "batch" dim when batch <= 0), output
// "logits" [batch, classes]. Stem 3x3 conv + BN + act; per block: 1x1 expand + BN + act (when
// expansion > 1), depthwise kxk (stride) + BN + act, optional SE (GAP -> 1x1 conv to
// make_divisible(mid/4) -> Relu -> 1x1 conv -> HardSigmoid -> Mul), 1x1 project + BN, and a
// residual Add when the block keeps stride 1 and its channel count; head 1x1 conv + BN + act,
// GlobalAveragePool, Flatten, Gemm. Weights use PyTorch's default initialisation from `seed`.
// Throws when `arch` is not in the space.
std::shared_ptr<Model> build_arch_model(const SearchSpace& space, const Arch& arch, uint64_t seed,
                                        int64_t batch = 1);

struct GeneratedArch {
  Arch arch;
  std::string path;    // OUT_DIR/arch_<i>.xnn
  double macs = 0;     // estimate_graph_cost at batch 1
  int64_t params = 0;  // Graph::parameter_count (float initialisers, BN statistics included)
};

// How generate_arch_models draws: kSpread (the default, for latency calibration and test sets)
// draws a size uniformly in [0, 1] per architecture and then sample_arch_sized, so the set
// spans the space from its smallest to its largest models (uniform draws cluster in the middle:
// every decision is independent); kUniform uses sample_arch.
enum class Sampling { kSpread, kUniform };

// Samples `count` distinct architectures (by to_string, skipping those in `exclude`) from
// `seed`, builds each (batch 1) and writes OUT_DIR/arch_<i>.xnn atomically; a file that already
// holds the same bytes is left untouched. Deterministic in the seed. Two seeds give disjoint
// sets with overwhelming probability in a large space; pass the other set's encodings as
// `exclude` to guarantee it (held-out evaluation). Throws when the space cannot supply `count`.
std::vector<GeneratedArch> generate_arch_models(const SearchSpace& space, int count, uint64_t seed,
                                                const std::string& out_dir,
                                                const std::set<std::string>& exclude = {},
                                                Sampling sampling = Sampling::kSpread);

}  // namespace xnn::arch
