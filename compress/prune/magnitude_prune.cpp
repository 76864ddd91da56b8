#include "compress/prune/magnitude_prune.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine/core/error.h"
#include "engine/runtime/graph_cost.h"

namespace xnn::prune {
namespace {

bool prunable_op(const Node& n) {
  if (n.domain.empty()) return n.op_type == "Conv" || n.op_type == "Gemm" || n.op_type == "MatMul";
  return n.domain == "ai.xnn" && (n.op_type == "FusedConv" || n.op_type == "FusedGemm");
}

bool is_conv(const Node& n) { return n.op_type == "Conv" || n.op_type == "FusedConv"; }

struct WeightSpan {
  std::string name;
  std::span<float> data;
};

// Zeroes exactly round(sparsity × total) of the weights in `spans` (ranked together), smallest
// |w| first; ties broken by position so the count is exact.
void prune_together(const std::vector<WeightSpan>& spans, double sparsity, PruneMasks& masks) {
  struct Ref {
    float mag;
    uint32_t span, index;
  };
  std::vector<Ref> refs;
  for (size_t s = 0; s < spans.size(); ++s) {
    for (size_t i = 0; i < spans[s].data.size(); ++i) {
      refs.push_back({std::fabs(spans[s].data[i]), static_cast<uint32_t>(s), static_cast<uint32_t>(i)});
    }
  }
  const size_t k = static_cast<size_t>(std::llround(sparsity * static_cast<double>(refs.size())));
  for (const WeightSpan& s : spans) masks[s.name].assign(s.data.size(), 1);
  if (k == 0) return;
  const auto less = [](const Ref& a, const Ref& b) {
    if (a.mag != b.mag) return a.mag < b.mag;
    return a.span != b.span ? a.span < b.span : a.index < b.index;
  };
  std::nth_element(refs.begin(), refs.begin() + static_cast<std::ptrdiff_t>(k - 1), refs.end(), less);
  for (size_t j = 0; j < k; ++j) {
    const Ref& r = refs[j];
    spans[r.span].data[r.index] = 0.0f;
    masks[spans[r.span].name][r.index] = 0;
  }
}

PruneMasks prune_spans(const std::vector<WeightSpan>& spans, double sparsity, bool global) {
  if (!(sparsity >= 0.0 && sparsity < 1.0)) {
    throw Error("magnitude pruning: target sparsity " + std::to_string(sparsity) + " is outside [0, 1)");
  }
  PruneMasks masks;
  if (global) {
    prune_together(spans, sparsity, masks);
  } else {
    for (const WeightSpan& s : spans) prune_together({s}, sparsity, masks);
  }
  return masks;
}

// The weight's tensor, writable: constants that view a read-only mapping are copied first.
Tensor& writable_weight(Model& model, const std::string& value) {
  const int idx = model.graph.find_value(value);
  if (idx < 0 || !model.graph.value(idx).is_constant()) {
    throw Error("magnitude pruning: weight '" + value + "' is not a constant of the model");
  }
  std::optional<Tensor>& data = model.graph.value(idx).data;
  if (data->dtype() != DType::kF32) throw Error("magnitude pruning: weight '" + value + "' is not float32");
  if (!data->buffer()->owns_memory()) data = data->clone();
  return *data;
}

}  // namespace

std::vector<PrunableWeight> prunable_weights(const Model& model, const PruneOptions& options) {
  const Graph& g = model.graph;
  std::map<size_t, double> macs;
  try {
    for (const NodeCost& c : estimate_graph_cost(g).nodes) macs[c.node_index] = c.cost.macs;
  } catch (const Error&) {
    // Shapes that cannot be inferred: MAC figures stay 0, pruning itself does not need them.
  }
  std::vector<PrunableWeight> out;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (!prunable_op(n) || n.inputs.size() < 2 || n.inputs[1] < 0) continue;
    const Value& w = g.value(n.inputs[1]);
    if (!w.is_constant() || w.data->dtype() != DType::kF32 || w.data->numel() < options.min_elements) continue;
    if (n.op_type == "MatMul" && w.data->rank() != 2) continue;
    if (is_conv(n)) {
      const int64_t group = n.attr_int("group", 1);
      const bool depthwise = group > 1 && w.data->rank() == 4 && w.data->dim(1) == 1 && w.data->dim(0) == group;
      if (depthwise && !options.prune_depthwise) continue;
      const bool first = n.inputs[0] >= 0 && std::find(g.inputs.begin(), g.inputs.end(), n.inputs[0]) != g.inputs.end();
      if (first && !options.prune_first_conv) continue;
    }
    out.push_back({n.name, n.op_type, w.name, w.data->numel(), macs.count(i) ? macs[i] : 0.0});
  }
  return out;
}

PruneMasks magnitude_prune(Model& model, const std::vector<PrunableWeight>& weights, double sparsity, bool global) {
  std::vector<WeightSpan> spans;
  for (const PrunableWeight& w : weights) {
    Tensor& t = writable_weight(model, w.value);
    spans.push_back({w.value, std::span<float>(t.data<float>(), static_cast<size_t>(t.numel()))});
  }
  return prune_spans(spans, sparsity, global);
}

PruneMasks magnitude_prune(std::span<train::Parameter> params, const std::vector<PrunableWeight>& weights,
                           double sparsity, bool global) {
  std::vector<WeightSpan> spans;
  for (const PrunableWeight& w : weights) {
    for (train::Parameter& p : params) {
      if (p.name != w.value) continue;
      spans.push_back({w.value, std::span<float>(p.value.data<float>(), static_cast<size_t>(p.value.numel()))});
    }
  }
  return prune_spans(spans, sparsity, global);
}

void apply_masks(std::span<train::Parameter> params, const PruneMasks& masks) {
  for (train::Parameter& p : params) {
    auto it = masks.find(p.name);
    if (it == masks.end()) continue;
    float* v = p.value.data<float>();
    const std::vector<uint8_t>& keep = it->second;
    XNN_CHECK(keep.size() == static_cast<size_t>(p.value.numel()), "apply_masks: mask size differs from parameter");
    for (size_t i = 0; i < keep.size(); ++i) {
      if (!keep[i]) v[i] = 0.0f;
    }
  }
}

void apply_masks(Model& model, const PruneMasks& masks) {
  for (const auto& [name, keep] : masks) {
    Tensor& t = writable_weight(model, name);
    XNN_CHECK(keep.size() == static_cast<size_t>(t.numel()), "apply_masks: mask size differs from weight");
    float* v = t.data<float>();
    for (size_t i = 0; i < keep.size(); ++i) {
      if (!keep[i]) v[i] = 0.0f;
    }
  }
}

SparsityReport sparsity_report(const Model& model, const std::vector<PrunableWeight>& weights) {
  SparsityReport r;
  try {
    r.model_macs = estimate_graph_cost(model.graph).total.macs;
  } catch (const Error&) {
    r.model_macs = 0;
  }
  r.effective_macs = r.model_macs;
  for (const PrunableWeight& w : weights) {
    const int idx = model.graph.find_value(w.value);
    if (idx < 0 || !model.graph.value(idx).is_constant()) {
      throw Error("sparsity report: weight '" + w.value + "' is not a constant of the model");
    }
    const Tensor& t = *model.graph.value(idx).data;
    LayerSparsity l;
    l.node = w.node, l.op_type = w.op_type, l.value = w.value;
    l.elements = t.numel();
    const float* v = t.data<float>();
    for (int64_t i = 0; i < l.elements; ++i) l.zeros += v[i] == 0.0f;
    l.macs = w.macs;
    l.effective_macs = w.macs * (1.0 - l.sparsity());
    r.elements += l.elements;
    r.zeros += l.zeros;
    r.effective_macs -= l.macs - l.effective_macs;
    r.layers.push_back(l);
  }
  return r;
}

}  // namespace xnn::prune
