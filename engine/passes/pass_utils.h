// Helpers shared by the graph passes (one pass per file in engine/passes/): who produces and who
// reads each value, which values must keep their identity (graph outputs, names read by
// subgraphs), fresh names, and the attributes of the fused ops.
//
// Every pass works on the main graph only and leaves it valid and topologically sorted.
// Subgraphs (If/Loop bodies) read outer values by name, so a value they name is "pinned": it is
// never renamed, rewired or removed.
#pragma once
#include <string>
#include <unordered_set>
#include <vector>

#include "engine/core/graph.h"
#include "engine/kernels/activation.h"

namespace xnn::passes {

constexpr const char* kFusedDomain = "ai.xnn";

// A snapshot of the graph's def-use structure; rebuild it (or keep it updated) after edits.
struct UseInfo {
  std::vector<int> producer;                 // per value: index of the producing node, -1 if none
  std::vector<std::vector<int>> consumers;   // per value: consuming node indices (repeated per use)
  std::vector<char> graph_output;            // per value: listed in g.outputs
  std::vector<char> pinned;                  // per value: named by a subgraph (outer-scope read)

  explicit UseInfo(const Graph& g);
  // The value has exactly one use, by one node, and is neither a graph output nor pinned: its
  // producer may be rewritten to produce something else in its place.
  bool single_private_use(int v) const;
  int uses(int v) const { return static_cast<int>(consumers[static_cast<size_t>(v)].size()); }
};

// Names that subgraphs of `g`'s nodes / of one node (at any depth) read from enclosing scopes.
std::unordered_set<std::string> subgraph_outer_names(const Graph& g);
std::unordered_set<std::string> node_outer_names(const Node& n);

bool is_op(const Node& n, const char* type, const char* domain = "");
// The node's input at slot i, or -1 when absent.
int input_at(const Node& n, size_t i);
// The node has exactly one produced output (further output slots all absent).
bool single_output(const Node& n);
// The constant tensor behind input slot i, or null (absent or not a constant).
const Tensor* constant_input(const Graph& g, const Node& n, size_t i);

// The dtype the node computes in when known: the first input whose dtype is known (Conv/Gemm
// require all inputs to share it), else kUnknown.
DType known_input_dtype(const Graph& g, const Node& n);

// A value name not used in `g` yet, derived from `base`; `taken` caches the graph's names.
std::string fresh_name(const std::string& base, std::unordered_set<std::string>& taken);
std::unordered_set<std::string> value_names(const Graph& g);

// Conv or FusedConv / Gemm or FusedGemm, and whether a fused one already has an activation or Z.
bool is_conv_like(const Node& n);
bool is_gemm_like(const Node& n);
bool has_activation(const Node& n);
bool has_residual(const Node& n);  // FusedConv with Z
// Turns a Conv/Gemm (or fused one) into FusedConv/FusedGemm, keeping its name and attributes.
void make_fused(Node& n);
// Sets the `activation` / `activation_params` attributes.
void set_activation(Node& n, const kernels::Activation& act);

// Removes the nodes with `remove[k]` set, keeping the others' order.
void erase_nodes(Graph& g, const std::vector<char>& remove);

}  // namespace xnn::passes
