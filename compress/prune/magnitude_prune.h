// Unstructured ("synapse") magnitude pruning of the weights of Conv / FusedConv, Gemm /
// FusedGemm and MatMul: the weights of smallest |w| are set to exactly 0 and a mask remembers
// them, so fine-tuning can keep them 0 (compress/prune/prune_schedule.h). A pruned model stays a
// dense model with zeros; the CPU backend detects the zeros and runs sparse kernels where they
// pay (engine/kernels/spmm.h), and the .xnn coder can store them compactly.
//
// Which weights are prunable (PruneOptions): the constant weight input (input 1) of those ops,
// with at least `min_elements` elements (small tensors save nothing and are sensitive), except
//   - depthwise convolutions (group == C_in == C_out > 1): 9 weights per channel, no sparse
//     kernel, and pruning them costs much accuracy (unless prune_depthwise);
//   - the first convolution, whose input is a graph input (few weights, sees raw pixels; unless
//     prune_first_conv).
// Biases are never pruned.
//
// Scope: per layer (default; Zhu & Gupta) prunes every tensor to the target on its own, so each
// layer gets the same sparsity; global ranks all prunable weights together and zeroes the
// smallest across layers (layers with small weights end up sparser). Either way exactly
// round(target × elements) weights are zero afterwards (weights that are already zero count
// first, so masks only grow).
#pragma once
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "engine/core/graph.h"
#include "engine/train/parameter.h"

namespace xnn::prune {

struct PruneOptions {
  bool global = false;            // one ranking across layers (false: each layer to the target)
  bool prune_first_conv = false;
  bool prune_depthwise = false;
  int64_t min_elements = 256;     // smaller weight tensors are left dense
};

struct PrunableWeight {
  std::string node;      // node name
  std::string op_type;
  std::string value;     // the weight value's name
  int64_t elements = 0;
  double macs = 0;       // the node's dense MACs (engine/runtime/graph_cost.h)
};

// The prunable weights of `model`, in node order.
std::vector<PrunableWeight> prunable_weights(const Model& model, const PruneOptions& options);

// keep[i] == 1: weight i of the value is kept; 0: pruned (held at zero).
using PruneMasks = std::map<std::string, std::vector<uint8_t>>;  // key: value name

// Zeroes weights of `model` (in place; mmap'ed constants are copied first) so that exactly
// round(sparsity × elements) of each weight (per layer) or of all of them (global) are zero,
// the smallest |w| first. Returns the masks. Throws if sparsity is outside [0, 1).
PruneMasks magnitude_prune(Model& model, const std::vector<PrunableWeight>& weights, double sparsity, bool global);
// The same on training parameters (by value name; names not among the parameters are skipped).
PruneMasks magnitude_prune(std::span<train::Parameter> params, const std::vector<PrunableWeight>& weights,
                           double sparsity, bool global);

// Sets masked weights to zero again (after an optimiser step moved them).
void apply_masks(std::span<train::Parameter> params, const PruneMasks& masks);
void apply_masks(Model& model, const PruneMasks& masks);

struct LayerSparsity {
  std::string node, op_type, value;
  int64_t elements = 0, zeros = 0;
  double macs = 0;            // dense
  double effective_macs = 0;  // macs × share of nonzero weights
  double sparsity() const { return elements ? static_cast<double>(zeros) / static_cast<double>(elements) : 0.0; }
};

struct SparsityReport {
  std::vector<LayerSparsity> layers;
  int64_t elements = 0, zeros = 0;  // over the listed weights
  double model_macs = 0;            // the whole model, dense
  double effective_macs = 0;        // the whole model with the listed layers' zeros skipped
  double sparsity() const { return elements ? static_cast<double>(zeros) / static_cast<double>(elements) : 0.0; }
};

// Zeros of the listed weights as they are in `model` now.
SparsityReport sparsity_report(const Model& model, const std::vector<PrunableWeight>& weights);

}  // namespace xnn::prune
