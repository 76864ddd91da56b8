#include "engine/runtime/fold_constants.h"

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "engine/runtime/executor.h"

namespace xnn {
namespace {

// Shapes with more elements than this are not propagated: they come from corrupt files, and
// kernels' shape arithmetic on them could overflow.
constexpr int64_t kMaxPropagatedElements = int64_t{1} << 40;
// Folding is load-time work; a node costing more than this runs at run time instead.
constexpr double kMaxFoldedMacs = 1e9;
// All folded outputs together may take this much memory beyond the graph's own constants, so a
// small (possibly hostile) file cannot expand into gigabytes of ConstantOfShape/Expand output.
constexpr int64_t kFoldedBytesAllowance = int64_t{256} << 20;

// Ops whose result differs between runs must never be evaluated once at load time.
bool is_nondeterministic(const Node& n) {
  static const std::unordered_set<std::string> ops = {"RandomNormal", "RandomUniform", "RandomNormalLike",
                                                      "RandomUniformLike", "Multinomial", "Bernoulli", "Dropout"};
  return n.domain.empty() && ops.count(n.op_type) != 0;
}

bool has_subgraphs(const Node& n) {
  return std::any_of(n.attrs.begin(), n.attrs.end(), [](const auto& kv) {
    const auto kind = kv.second.kind();
    return kind == Attribute::Kind::kGraph || kind == Attribute::Kind::kGraphs;
  });
}

// Element count of `s`, or -1 when a dim is negative or the count exceeds the limit.
int64_t bounded_numel(const Shape& s) {
  int64_t n = 1;
  bool empty = false;
  for (int64_t d : s) {
    if (d < 0 || d > kMaxPropagatedElements) return -1;
    if (d == 0) {
      empty = true;
      continue;
    }
    if (n > kMaxPropagatedElements / d) return -1;
    n *= d;
  }
  return empty ? 0 : n;
}

void set_static_shape(Value& v, DType dtype, const Shape& shape) {
  v.dtype = dtype;
  v.has_shape = true;
  v.shape.clear();
  for (int64_t d : shape) v.shape.push_back(Dim::fixed(d));
}

void make_constant(Value& v, Tensor t) {
  set_static_shape(v, t.dtype(), t.shape());
  v.data = std::move(t);
  v.trainable = false;  // derived data, not a parameter
}

// Names that `g`'s subgraphs (at any depth) read from enclosing graphs.
void collect_outer_references(const Graph& g, std::unordered_set<std::string>& names) {
  for (const Value& v : g.values) {
    if (v.outer_scope) names.insert(v.name);
  }
  for (const Node& n : g.nodes) {
    for (const auto& [key, attr] : n.attrs) {
      if (auto sub = attr.get_if<std::shared_ptr<Graph>>()) {
        if (*sub) collect_outer_references(**sub, names);
      } else if (auto subs = attr.get_if<std::vector<std::shared_ptr<Graph>>>()) {
        for (const auto& s : *subs) {
          if (s) collect_outer_references(*s, names);
        }
      }
    }
  }
}

std::unordered_set<std::string> subgraph_outer_references(const Node& n) {
  std::unordered_set<std::string> names;
  for (const auto& [key, attr] : n.attrs) {
    if (auto sub = attr.get_if<std::shared_ptr<Graph>>()) {
      if (*sub) collect_outer_references(**sub, names);
    } else if (auto subs = attr.get_if<std::vector<std::shared_ptr<Graph>>>()) {
      for (const auto& s : *subs) {
        if (s) collect_outer_references(*s, names);
      }
    }
  }
  return names;
}

// What shape inference on concrete shapes says about a node's outputs.
struct StaticInference {
  const OpSchema* schema = nullptr;
  std::vector<TensorInfo> inputs;   // constants carry their value
  std::vector<TensorInfo> outputs;
  bool all_inputs_constant = true;
};

// Runs the op's inference when every present input is a constant or has a static shape of
// sane size; nullopt otherwise (unknown op, control flow, dynamic shapes, inference error).
// `trusted` (when given) marks the values whose static shapes may be relied on.
std::optional<StaticInference> infer_static(const Graph& g, const Node& n, const OpRegistry& registry,
                                            const std::vector<char>* trusted) {
  if (has_subgraphs(n)) return std::nullopt;
  StaticInference r;
  r.schema = registry.find(n.op_type, n.domain);
  if (!r.schema || r.schema->has_subgraphs) return std::nullopt;
  r.inputs.resize(n.inputs.size());
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    if (n.inputs[i] < 0) continue;  // optional input left out
    const Value& v = g.value(n.inputs[i]);
    if (v.is_constant()) {
      r.inputs[i] = TensorInfo{v.data->dtype(), v.data->shape(), &*v.data};
      continue;
    }
    r.all_inputs_constant = false;
    if (v.dtype == DType::kUnknown || !v.shape_fully_known()) return std::nullopt;
    if (trusted && !(*trusted)[static_cast<size_t>(n.inputs[i])]) return std::nullopt;
    Shape shape = v.static_shape();
    if (bounded_numel(shape) < 0) return std::nullopt;
    r.inputs[i] = TensorInfo{v.dtype, std::move(shape), nullptr};
  }
  try {
    r.outputs = infer_node(*r.schema, n, r.inputs, static_cast<int>(n.outputs.size()));
  } catch (const std::exception&) {
    return std::nullopt;  // inference errors are reported when the graph runs
  }
  for (const TensorInfo& out : r.outputs) {
    if (out.dtype != DType::kUnknown && bounded_numel(out.shape) < 0) return std::nullopt;
  }
  return r;
}

void record_static_outputs(Graph& g, const Node& n, const std::vector<TensorInfo>& outputs) {
  for (size_t i = 0; i < outputs.size() && i < n.outputs.size(); ++i) {
    if (n.outputs[i] >= 0 && outputs[i].dtype != DType::kUnknown) {
      set_static_shape(g.value(n.outputs[i]), outputs[i].dtype, outputs[i].shape);
    }
  }
}

// Shape(x) (with opset 15's start/end) when x's shape is static and trusted; needs no kernel,
// and works before any Shape op is registered.
bool fold_static_shape(Graph& g, const Node& n, const std::vector<char>& trusted) {
  if (n.op_type != "Shape" || !n.domain.empty() || n.inputs.size() != 1 || n.inputs[0] < 0 ||
      n.outputs.size() != 1 || n.outputs[0] < 0) {
    return false;
  }
  const Value& x = g.value(n.inputs[0]);
  if (!x.shape_fully_known() || !trusted[static_cast<size_t>(n.inputs[0])]) return false;
  const Shape shape = x.static_shape();
  const int64_t rank = static_cast<int64_t>(shape.size());
  int64_t start = n.attr_int("start", 0);
  int64_t end = n.attr_int("end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, start, rank);
  Tensor dims(DType::kI64, {end - start});  // may be empty: no from_vector (memcpy from null)
  std::copy(shape.begin() + start, shape.begin() + end, dims.data<int64_t>());
  make_constant(g.value(n.outputs[0]), std::move(dims));
  return true;
}

class ConstantFolder {
 public:
  explicit ConstantFolder(Graph& g) : g_(g), registry_(OpRegistry::builtin()) {}

  FoldStats run() {
    g_.topological_sort();
    budget_bytes_ = kFoldedBytesAllowance;
    for (const Value& v : g_.values) {
      if (v.is_constant()) budget_bytes_ += static_cast<int64_t>(v.data->nbytes());
    }
    // Static shapes to rely on: a folded constant must equal the run-time value, so shapes only
    // declared in the file's value_info (not checked at run time) do not count. Graph inputs'
    // shapes are checked by the session; constants and shapes inferred here are exact.
    trusted_.assign(g_.values.size(), 0);
    for (int i : g_.inputs) trusted_[static_cast<size_t>(i)] = 1;
    for (size_t i = 0; i < g_.values.size(); ++i) {
      if (g_.values[i].is_constant()) trusted_[i] = 1;
    }
    folded_.assign(g_.nodes.size(), 0);
    for (size_t k = 0; k < g_.nodes.size(); ++k) visit(k);
    remove_dead_nodes();
    remove_unused_values();
    return stats_;
  }

 private:
  void visit(size_t k) {
    const Node& n = g_.nodes[k];
    try {
      if (fold_static_shape(g_, n, trusted_)) {
        trust_outputs(n);
        mark_folded(k);
        return;
      }
    } catch (const Error&) {
      return;  // e.g. a malformed start/end attribute: the kernel reports it at run time
    }
    const std::optional<StaticInference> inferred = infer_static(g_, n, registry_, &trusted_);
    if (!inferred) return;
    trust_outputs(n);
    if (inferred->all_inputs_constant && try_fold(k, *inferred)) return;
    record_static_outputs(g_, n, inferred->outputs);
  }

  void trust_outputs(const Node& n) {
    for (int o : n.outputs) {
      if (o >= 0) trusted_[static_cast<size_t>(o)] = 1;
    }
  }

  bool try_fold(size_t k, const StaticInference& inferred) {
    const Node& n = g_.nodes[k];
    const OpSchema& schema = *inferred.schema;
    const std::vector<TensorInfo>& inputs = inferred.inputs;
    const std::vector<TensorInfo>& outputs = inferred.outputs;
    if (is_nondeterministic(n)) return false;
    int64_t total_bytes = 0;
    for (const TensorInfo& out : outputs) {
      if (out.dtype == DType::kUnknown) continue;
      const int64_t bytes = bounded_numel(out.shape) * static_cast<int64_t>(dtype_size(out.dtype));
      if (bytes > kMaxFoldedBytes) return false;
      total_bytes += bytes;
    }
    if (total_bytes > budget_bytes_) return false;
    try {
      const OpCost cost = schema.cost ? schema.cost(n, inputs, outputs) : default_cost(n, inputs, outputs);
      if (cost.macs > kMaxFoldedMacs) return false;
      std::vector<const Tensor*> in_tensors(n.inputs.size(), nullptr);
      for (size_t i = 0; i < n.inputs.size(); ++i) {
        if (n.inputs[i] >= 0) in_tensors[i] = &*g_.value(n.inputs[i]).data;
      }
      std::vector<Tensor> results;
      run_node(registry_, n, in_tensors, results);
      for (size_t i = 0; i < n.outputs.size(); ++i) {
        if (n.outputs[i] >= 0 && (i >= results.size() || !results[i].defined())) return false;
      }
      for (size_t i = 0; i < n.outputs.size(); ++i) {
        if (n.outputs[i] >= 0) make_constant(g_.value(n.outputs[i]), std::move(results[i]));
      }
    } catch (const std::exception&) {
      return false;  // the kernel rejects these inputs: let the session report it at run time
    }
    budget_bytes_ -= total_bytes;
    mark_folded(k);
    return true;
  }

  void mark_folded(size_t k) {
    folded_[k] = 1;
    ++stats_.folded_nodes;
  }

  // Backwards: a node is live when a graph output, a live node or a subgraph of a live node
  // reads one of its outputs. Folded nodes are gone: their outputs are constants now.
  void remove_dead_nodes() {
    std::unordered_map<std::string, int> index;
    for (size_t i = 0; i < g_.values.size(); ++i) index.emplace(g_.values[i].name, static_cast<int>(i));
    live_.assign(g_.values.size(), 0);
    for (int o : g_.outputs) live_[static_cast<size_t>(o)] = 1;
    std::vector<char> keep(g_.nodes.size(), 0);
    for (size_t k = g_.nodes.size(); k-- > 0;) {
      const Node& n = g_.nodes[k];
      if (folded_[k]) continue;
      const bool used = std::any_of(n.outputs.begin(), n.outputs.end(),
                                    [&](int o) { return o >= 0 && live_[static_cast<size_t>(o)]; });
      if (!used) continue;
      keep[k] = 1;
      for (int i : n.inputs) {
        if (i >= 0) live_[static_cast<size_t>(i)] = 1;
      }
      for (const std::string& name : subgraph_outer_references(n)) {
        auto it = index.find(name);
        if (it != index.end()) live_[static_cast<size_t>(it->second)] = 1;
      }
    }
    std::vector<Node> kept;
    kept.reserve(g_.nodes.size());
    for (size_t k = 0; k < g_.nodes.size(); ++k) {
      if (keep[k]) kept.push_back(std::move(g_.nodes[k]));
    }
    stats_.removed_nodes = static_cast<int>(g_.nodes.size() - kept.size());
    g_.nodes = std::move(kept);
  }

  // Drops values nothing refers to and renumbers the rest.
  void remove_unused_values() {
    std::vector<char> used = live_;
    for (int i : g_.inputs) used[static_cast<size_t>(i)] = 1;
    for (const Node& n : g_.nodes) {
      for (int i : n.inputs) {
        if (i >= 0) used[static_cast<size_t>(i)] = 1;
      }
      for (int o : n.outputs) {
        if (o >= 0) used[static_cast<size_t>(o)] = 1;
      }
    }
    std::vector<int> remap(g_.values.size(), -1);
    std::vector<Value> kept;
    for (size_t i = 0; i < g_.values.size(); ++i) {
      if (!used[i]) continue;
      remap[i] = static_cast<int>(kept.size());
      kept.push_back(std::move(g_.values[i]));
    }
    stats_.removed_values = static_cast<int>(g_.values.size() - kept.size());
    g_.values = std::move(kept);
    auto renumber = [&](std::vector<int>& indices) {
      for (int& i : indices) {
        if (i >= 0) i = remap[static_cast<size_t>(i)];
      }
    };
    renumber(g_.inputs);
    renumber(g_.outputs);
    for (Node& n : g_.nodes) {
      renumber(n.inputs);
      renumber(n.outputs);
    }
  }

  Graph& g_;
  const OpRegistry& registry_;
  std::vector<char> folded_;
  std::vector<char> trusted_;  // per value: its static shape is exact (see run())
  std::vector<char> live_;     // per value: read by a kept node, a graph output or a subgraph
  int64_t budget_bytes_ = 0;  // folded bytes still allowed
  FoldStats stats_;
};

}  // namespace

FoldStats fold_constants(Graph& g) { return ConstantFolder(g).run(); }

bool propagate_static_shapes(Graph& g, const Node& node) {
  const std::optional<StaticInference> inferred = infer_static(g, node, OpRegistry::builtin(), nullptr);
  if (!inferred) return false;
  record_static_outputs(g, node, inferred->outputs);
  return true;
}

}  // namespace xnn
