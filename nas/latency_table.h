// The per-op latency table of a target for differentiable NAS (FBNet, Wu et al. 2019;
// ProxylessNAS, Cai et al. 2019): for every searchable block position of the MobileNet-like
// space (at one width, resolution and activation) and every candidate block of that position
// (kernel × expansion × squeeze-excitation), the latency of that block alone at its input
// shape, measured on the target (or predicted) through a one-block model. An optional block
// (its stage may be shallower than the position) also has the candidate "skip", cost 0.
//
// The latency of a whole network is then estimated as the stem+head constant plus the sum of
// its blocks' entries. Additivity is FBNet's assumption, not a fact (a measured model shares
// caches and dispatch across blocks); the search reports the table's sum next to the measured
// latency of the derived model.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "harness/arch/mobilenet_space.h"

namespace xnn::nas {

// One searchable block position: block `index` of stage `stage`.
struct BlockPosition {
  size_t stage = 0, index = 0;
  int64_t in_channels = 0, out_channels = 0, stride = 1;
  int64_t in_resolution = 0;  // square side of the block's input
  // True when some depth choice of the stage drops this block (index >= the smallest depth);
  // such a block keeps stride 1 and its channels, so skipping it is the identity.
  bool optional = false;
  std::vector<arch::BlockChoice> candidates;  // kernel × expansion × se, all with the same activation

  // Operations of the position: the candidates, then "skip" when optional.
  size_t op_count() const { return candidates.size() + (optional ? 1 : 0); }
  bool is_skip(size_t op) const { return op == candidates.size(); }
  std::string op_name(size_t op) const;  // "k3e6se", "k5e1" or "skip"
  std::string name() const;              // "s<stage>.b<index>"
};

// Every block position up to each stage's largest depth, at `resolution` and `width`, every
// candidate with `activation`.
std::vector<BlockPosition> block_positions(const arch::SearchSpace& space, int64_t resolution, double width,
                                           const std::string& activation);

// Latency in ms of a model file (nas::LatencyFn has the same signature).
using ModelLatencyFn = std::function<double(const std::string& model_path)>;

struct LatencyTable {
  std::vector<BlockPosition> positions;
  std::vector<std::vector<double>> latency_ms;  // [position][op], skip = 0
  double stem_ms = 0, head_ms = 0;              // the constant part (stem; head + classifier)
  std::string key;                              // what the entries depend on (cache validity)
  bool reused = false;                          // read from the cache file rather than measured

  // stem + head + the chosen op of every position.
  double predict_ms(const std::vector<size_t>& ops) const;
};

// One-block models: block `op` of `position` alone, input [1, in_channels, r, r]; the stem
// alone; the head and classifier alone at the last stage's output.
std::shared_ptr<Model> block_model(const arch::SearchSpace& space, const BlockPosition& position, size_t op);

// Builds the table, measuring each entry with `latency` (models written under
// `dir`/models/), or re-uses `dir`/latency_table.json when it was written for the same
// positions, candidates and `source` (a description of the latency source: target, method,
// threads). Writes the JSON cache after measuring.
LatencyTable build_latency_table(const arch::SearchSpace& space, int64_t resolution, double width,
                                 const std::string& activation, const std::string& source,
                                 const ModelLatencyFn& latency, const std::string& dir,
                                 const std::function<void(const std::string&)>& progress = nullptr);

// The cache file's path in `dir`.
std::string latency_table_path(const std::string& dir);

}  // namespace xnn::nas
