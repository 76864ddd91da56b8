#include "engine/runtime/session.h"

#include <algorithm>
#include <chrono>
#include <numeric>
#include <optional>
#include <unordered_map>

#include "engine/backends/cpu/cpu_kernel.h"
#include "engine/kernels/float_rounding.h"
#include "engine/ops/op_helpers.h"
#include "engine/passes/optimize.h"
#include "engine/runtime/executor.h"
#include "engine/runtime/memory_planner.h"
#include "engine/runtime/subgraph_host.h"

namespace xnn {
namespace {

IoInfo io_info(const Value& v) { return IoInfo{v.name, v.dtype, v.has_shape, v.shape}; }

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

// Ops whose output is the input's bytes under another shape: run as views.
bool is_view_op(const Node& n) {
  return n.domain.empty() &&
         (n.op_type == "Reshape" || n.op_type == "Flatten" || n.op_type == "Squeeze" || n.op_type == "Unsqueeze");
}

// Elementwise ops whose kernels (reference and CPU) read element i before writing element i,
// so the output may share the buffer of an input of the same shape that dies here.
bool is_in_place_op(const Node& n) {
  static const char* const kOps[] = {"Relu", "Clip", "LeakyRelu", "HardSwish", "HardSigmoid", "Sigmoid", "Tanh",
                                     "Add",  "Sub",  "Mul",       "Div",       "Neg",         "Abs",     "Exp"};
  if (!n.domain.empty()) return false;
  return std::any_of(std::begin(kOps), std::end(kOps), [&](const char* op) { return n.op_type == op; });
}

// Rounds a float tensor's data to the emulated format (FloatEmulation); other dtypes untouched.
void apply_float_emulation(FloatEmulation fe, Tensor& t) {
  if (fe == FloatEmulation::kNone || !t.defined() || t.dtype() != DType::kF32) return;
  if (fe == FloatEmulation::kF16) kernels::round_to_f16_inplace(t.data<float>(), t.numel());
  else kernels::round_to_bf16_inplace(t.data<float>(), t.numel());
}

// Nodes of `g` and of its subgraphs (at any depth) whose op the registry lacks.
void collect_unsupported(const OpRegistry& registry, const Graph& g, const std::string& where,
                         std::vector<std::string>& missing) {
  for (const Node& n : g.nodes) {
    if (!registry.find(n.op_type, n.domain)) missing.push_back(where + n.describe());
    for (const auto& [key, attr] : n.attrs) {
      const std::string inner = where + "subgraph '" + key + "' of " + n.describe() + ": ";
      if (auto sub = attr.get_if<std::shared_ptr<Graph>>()) {
        if (*sub) collect_unsupported(registry, **sub, inner, missing);
      } else if (auto subs = attr.get_if<std::vector<std::shared_ptr<Graph>>>()) {
        for (const auto& sg : *subs) {
          if (sg) collect_unsupported(registry, *sg, inner, missing);
        }
      }
    }
  }
}

bool is_nondeterministic(const Node& n) { return n.op_type.rfind("Random", 0) == 0 || n.op_type == "Bernoulli"; }

// Outputs up to this size are computed at preparation when all inputs are known.
constexpr int64_t kShapeTimeMaxBytes = int64_t{1} << 20;

// Which values share one arena buffer, and where each sits in it: a union-find whose edges carry
// byte offsets (pos(v) = pos(parent) + offset). Views and in-place outputs sit at their input's
// offset; the inputs of a sliced Concat sit at their slices of its output.
struct PlacementForest {
  std::vector<int> parent;
  std::vector<int64_t> offset;  // relative to parent; relative to the root after find()
  std::vector<int> path;        // find()'s scratch
  explicit PlacementForest(size_t n) : parent(n), offset(n, 0) { std::iota(parent.begin(), parent.end(), 0); }
  int find(int v) {
    int root = v;
    while (parent[static_cast<size_t>(root)] != root) root = parent[static_cast<size_t>(root)];
    // Path compression: re-hang each node of the path on the root, nearest the root first, so
    // that each parent's offset is already root-relative when its child adds it.
    path.clear();
    for (int u = v; u != root; u = parent[static_cast<size_t>(u)]) path.push_back(u);
    for (auto it = path.rbegin(); it != path.rend(); ++it) {
      const size_t i = static_cast<size_t>(*it);
      const int p = parent[i];
      if (p != root) offset[i] += offset[static_cast<size_t>(p)];
      parent[i] = root;
    }
    return root;
  }
  int64_t offset_in_root(int v) {
    find(v);
    return offset[static_cast<size_t>(v)];
  }
  // Places b's buffer so that pos(b) = pos(a) + delta. False (and no change) if they already
  // share a buffer at other relative positions.
  bool unite(int a, int b, int64_t delta) {
    const int ra = find(a), rb = find(b);
    const int64_t oa = offset[static_cast<size_t>(a)], ob = offset[static_cast<size_t>(b)];
    if (ra == rb) return ob == oa + delta;
    parent[static_cast<size_t>(rb)] = ra;
    offset[static_cast<size_t>(rb)] = oa + delta - ob;  // may be negative: normalised when planned
    return true;
  }
};

}  // namespace

// kSlicedConcat: a Concat whose inputs were planned as slices of its output, so their producers
// already wrote it and the step does nothing.
enum class StepKind { kExecute, kShapeTime, kStaticView, kRuntimeView, kSlicedConcat };
// kFusedAway: the output of a kernel that computes its only reader's outputs itself (step 5);
// never stored, no buffer.
enum class ValueKind { kUnused, kConstant, kInput, kShapeTime, kArena, kOutput, kRuntimeView, kFusedAway };

struct Session::Plan {
  std::vector<Shape> input_shapes;  // the signature this plan was prepared for
  std::vector<DType> input_dtypes;
  std::vector<TensorInfo> outer_infos;   // body sessions: outer-scope values (dtype, shape)
  std::vector<TensorInfo> output_infos;  // outputs' dtypes and shapes (when planned)
  bool planned = false;
  std::vector<Tensor> slots;        // one per value of the optimised graph
  std::vector<ValueKind> kinds;
  struct Step {
    StepKind kind = StepKind::kExecute;
    const OpSchema* schema = nullptr;
    std::unique_ptr<CpuKernel> kernel;
    std::vector<const Tensor*> ins;
    std::vector<Tensor*> outs;
    OpCost cost;
    std::string kernel_name;
    std::vector<Shape> in_shapes, out_shapes;  // for plan_summary()
    Shape view_shape;  // kRuntimeView: the output's shape
    int fused_into = -1;  // the step whose kernel computes this step's outputs (fuse_consumers)
  };
  std::vector<Step> steps;  // one per node
  std::shared_ptr<Buffer> arena;
  MemoryStats stats;
};

Session::Session(std::shared_ptr<const Model> model, SessionOptions options)
    : model_(std::move(model)), options_(options), registry_(OpRegistry::builtin()) {
  own_pool_ = std::make_unique<ThreadPool>(options_.threads);
  pool_ = own_pool_.get();
  init();
}

Session::Session(std::shared_ptr<const Model> body, SessionOptions options, ThreadPool* shared_pool)
    : model_(std::move(body)), options_(options), registry_(OpRegistry::builtin()), pool_(shared_pool) {
  init();
}

void Session::init() {
  model_->graph.validate("model");
  optimized_ = std::make_shared<Model>(*model_);
  if (options_.opt_level > 0) optimize_graph(optimized_->graph, options_.opt_level);
  if (options_.float_emulation != FloatEmulation::kNone) {
    // Weights as the emulated target stores them. Copies: the model's constants may be shared
    // with other sessions or mapped read-only from the file.
    for (Value& v : optimized_->graph.values) {
      if (!v.is_constant() || v.data->dtype() != DType::kF32) continue;
      Tensor rounded = v.data->clone();
      apply_float_emulation(options_.float_emulation, rounded);
      v.data = std::move(rounded);
    }
  }
  const Graph& g = optimized_->graph;
  // Unsupported ops are reported all at once, before anything runs (subgraphs' included).
  std::vector<std::string> missing;
  collect_unsupported(registry_, g, "", missing);
  if (!missing.empty()) {
    std::string msg = "unsupported ops:";
    for (const std::string& m : missing) msg += "\n  " + m;
    throw UnsupportedError(msg);
  }
  for (int i : g.inputs) inputs_.push_back(io_info(g.value(i)));
  for (int o : g.outputs) outputs_.push_back(io_info(g.value(o)));
  value_index_ = index_values(g);
  for (size_t v = 0; v < g.values.size(); ++v) {
    if (g.values[v].outer_scope) outer_values_.push_back(static_cast<int>(v));
  }
  implicit_inputs_.resize(g.nodes.size());
  hosts_.resize(g.nodes.size());
  for (size_t ni = 0; ni < g.nodes.size(); ++ni) {
    const OpSchema* schema = registry_.find(g.nodes[ni].op_type, g.nodes[ni].domain);
    if (schema && schema->has_subgraphs) implicit_inputs_[ni] = implicit_inputs(value_index_, g.nodes[ni]);
  }
}

SessionSubgraphHost& Session::host_for(size_t node_index) {
  std::unique_ptr<SessionSubgraphHost>& h = hosts_.at(node_index);
  if (!h) h = std::make_unique<SessionSubgraphHost>(optimized_->opset, options_, pool_);
  return *h;
}

Session::~Session() = default;

void Session::check_inputs(const std::map<std::string, Tensor>& given) const {
  std::string names;
  for (const IoInfo& in : inputs_) names += (names.empty() ? "" : ", ") + in.name;
  for (const auto& [name, t] : given) {
    if (std::none_of(inputs_.begin(), inputs_.end(), [&](const IoInfo& i) { return i.name == name; })) {
      std::string best;
      size_t best_d = 4;
      for (const IoInfo& in : inputs_) {
        const size_t d = edit_distance(name, in.name);
        if (d < best_d) best_d = d, best = in.name;
      }
      throw Error("unknown input '" + name + "'" + (best.empty() ? "" : " (did you mean '" + best + "'?)") +
                  "; the model's inputs are: " + names);
    }
  }
  std::unordered_map<std::string, int64_t> symbols;
  for (const IoInfo& in : inputs_) {
    auto it = given.find(in.name);
    if (it == given.end()) throw Error("missing input '" + in.name + "'; the model's inputs are: " + names);
    const Tensor& t = it->second;
    if (t.dtype() != in.dtype) {
      throw Error("input '" + in.name + "' has dtype " + std::string(dtype_name(t.dtype())) + ", expected " +
                  std::string(dtype_name(in.dtype)));
    }
    if (!in.has_shape) continue;
    bool ok = t.rank() == static_cast<int>(in.shape.size());
    for (size_t d = 0; ok && d < in.shape.size(); ++d) {
      const Dim& dim = in.shape[d];
      if (dim.known()) {
        ok = dim.value == t.shape()[d];
      } else if (!dim.symbol.empty()) {
        auto [sit, fresh] = symbols.emplace(dim.symbol, t.shape()[d]);
        if (!fresh && sit->second != t.shape()[d]) {
          throw Error("input '" + in.name + "' binds dimension '" + dim.symbol + "' to " +
                      std::to_string(t.shape()[d]) + ", but another input bound it to " + std::to_string(sit->second));
        }
      }
    }
    if (!ok) {
      throw Error("input '" + in.name + "' has shape " + shape_str(t.shape()) + ", expected " + dims_str(in.shape));
    }
  }
}

void Session::prepare(const std::map<std::string, Shape>& input_shapes) {
  std::vector<TensorInfo> ins;
  for (const IoInfo& in : inputs_) {
    auto it = input_shapes.find(in.name);
    if (it != input_shapes.end()) {
      ins.push_back(TensorInfo{in.dtype, it->second, nullptr});
      continue;
    }
    Shape s;
    for (const Dim& d : in.shape) {
      if (!in.has_shape || !d.known()) {
        throw Error("prepare: input '" + in.name + "' has no fully known shape " + dims_str(in.shape) +
                    "; give one (e.g. --shape " + in.name + "=1,3,224,224)");
      }
      s.push_back(d.value);
    }
    ins.push_back(TensorInfo{in.dtype, s, nullptr});
  }
  if (!outer_values_.empty()) throw Error("prepare: the graph reads values of an enclosing graph (a subgraph)");
  prepare_plan(ins, {}, nullptr);
}

std::vector<TensorInfo> Session::outer_infos(const ValueScope& outer) const {
  const Graph& g = optimized_->graph;
  std::vector<TensorInfo> infos;
  for (int v : outer_values_) {
    const std::string& name = g.value(v).name;
    std::optional<TensorInfo> info = outer.find_info(name);
    if (!info) {
      throw ValueNeededError("subgraph '" + g.name + "' reads '" + name +
                             "' from an enclosing graph, which does not know it (yet)");
    }
    infos.push_back(*info);
  }
  return infos;
}

std::vector<TensorInfo> Session::prepare_body(std::span<const TensorInfo> inputs, const ValueScope& outer) {
  const Graph& g = optimized_->graph;
  if (inputs.size() != g.inputs.size()) {
    throw Error("subgraph '" + g.name + "' has " + std::to_string(g.inputs.size()) + " inputs, given " +
                std::to_string(inputs.size()));
  }
  prepare_plan(inputs, outer_infos(outer), &outer);
  if (!plan_->planned) {
    throw ValueNeededError("subgraph '" + g.name + "': output shapes depend on values known only at run time");
  }
  return plan_->output_infos;
}

void Session::prepare_plan(std::span<const TensorInfo> inputs, std::span<const TensorInfo> outer_infos,
                           const ValueScope* outer) {
  const Graph& g = optimized_->graph;
  auto plan = std::make_unique<Plan>();
  for (const TensorInfo& in : inputs) {
    plan->input_shapes.push_back(in.shape);
    plan->input_dtypes.push_back(in.dtype);
  }
  for (const TensorInfo& o : outer_infos) plan->outer_infos.push_back(TensorInfo{o.dtype, o.shape, nullptr});
  const size_t nv = g.values.size();
  plan->slots.resize(nv);
  plan->kinds.assign(nv, ValueKind::kUnused);
  plan->steps.resize(g.nodes.size());
  std::vector<TensorInfo> infos(nv);
  for (size_t i = 0; i < nv; ++i) {
    if (g.values[i].is_constant()) {
      plan->slots[i] = *g.values[i].data;
      plan->kinds[i] = ValueKind::kConstant;
      infos[i] = TensorInfo{plan->slots[i].dtype(), plan->slots[i].shape(), &plan->slots[i]};
    }
  }
  for (size_t k = 0; k < g.inputs.size(); ++k) {
    const size_t v = static_cast<size_t>(g.inputs[k]);
    plan->kinds[v] = ValueKind::kInput;
    infos[v] = TensorInfo{inputs[k].dtype, inputs[k].shape, nullptr};
  }
  // Outer-scope values are bound at run time like inputs (never planned, never written).
  for (size_t k = 0; k < outer_values_.size(); ++k) {
    const size_t v = static_cast<size_t>(outer_values_[k]);
    plan->kinds[v] = ValueKind::kInput;
    infos[v] = outer_infos[k];
  }
  std::vector<bool> is_graph_output(nv, false);
  for (int o : g.outputs) is_graph_output[static_cast<size_t>(o)] = true;

  // 1. Shapes of every value; shape-time evaluation of what is already known.
  bool static_plan = options_.memory_planning;
  try {
    std::vector<TensorInfo> ins;
    std::vector<const Tensor*> in_ptrs;
    for (size_t ni = 0; ni < g.nodes.size() && static_plan; ++ni) {
      const Node& n = g.nodes[ni];
      Plan::Step& step = plan->steps[ni];
      step.schema = &schema_for(registry_, n);
      ins.assign(n.inputs.size(), TensorInfo{});
      bool all_known = true;
      for (size_t k = 0; k < n.inputs.size(); ++k) {
        if (n.inputs[k] < 0) continue;
        ins[k] = infos[static_cast<size_t>(n.inputs[k])];
        if (ins[k].dtype == DType::kUnknown) throw Error(n.describe() + ": input " + std::to_string(k) + " unknown");
        if (!ins[k].value) all_known = false;
      }
      if (step.schema->has_subgraphs) {
        // Control flow: its subgraphs are inferred (and their body sessions prepared) by its
        // host; it always runs at run time (its subgraphs may read anything).
        const ValueScope scope{&g, &value_index_, &infos, nullptr, outer};
        SessionSubgraphHost& host = host_for(ni);
        host.set_scope(&scope);
        std::vector<TensorInfo> outs = infer_node(*step.schema, n, ins, static_cast<int>(n.outputs.size()), &host);
        host.set_scope(nullptr);
        step.cost = default_cost(n, ins, outs);
        for (size_t k = 0; k < n.outputs.size(); ++k) {
          const int v = n.outputs[k];
          if (v < 0 || outs[k].dtype == DType::kUnknown) continue;
          infos[static_cast<size_t>(v)] = TensorInfo{outs[k].dtype, outs[k].shape, nullptr};
          plan->kinds[static_cast<size_t>(v)] = is_graph_output[static_cast<size_t>(v)] ? ValueKind::kOutput : ValueKind::kArena;
        }
        continue;
      }
      std::vector<TensorInfo> outs = infer_node(*step.schema, n, ins, static_cast<int>(n.outputs.size()));
      int64_t out_bytes = 0;
      for (const TensorInfo& o : outs) {
        if (o.dtype != DType::kUnknown) out_bytes += shape_numel(o.shape) * static_cast<int64_t>(dtype_size(o.dtype));
      }
      const bool shape_only = n.domain.empty() && (n.op_type == "Shape" || n.op_type == "Size");
      if ((shape_only || all_known) && !is_nondeterministic(n) && out_bytes <= kShapeTimeMaxBytes) {
        // Evaluate now. Shape and Size read only their input's shape, which is known here while
        // its data is not: compute them from the shape directly.
        std::vector<Tensor> results(n.outputs.size());
        if (shape_only) {
          const Shape& s = ins[0].shape;
          if (n.op_type == "Size") {
            results[0] = Tensor::scalar<int64_t>(shape_numel(s));
          } else {
            const int64_t rank = static_cast<int64_t>(s.size());
            int64_t start = n.attr_int("start", 0), end = n.attr_int("end", rank);
            if (start < 0) start += rank;
            if (end < 0) end += rank;
            start = std::clamp<int64_t>(start, 0, rank);
            end = std::clamp<int64_t>(end, start, rank);
            results[0] = Tensor::from_vector<int64_t>(std::vector<int64_t>(s.begin() + start, s.begin() + end),
                                                     {end - start});
          }
        } else {
          in_ptrs.assign(n.inputs.size(), nullptr);
          for (size_t k = 0; k < n.inputs.size(); ++k) in_ptrs[k] = ins[k].value;
          run_node(registry_, n, in_ptrs, results);
        }
        step.kind = StepKind::kShapeTime;
        step.kernel_name = "shape-time";
        for (size_t k = 0; k < n.outputs.size(); ++k) {
          const int v = n.outputs[k];
          if (v < 0 || !results[k].defined()) continue;
          apply_float_emulation(options_.float_emulation, results[k]);
          plan->slots[static_cast<size_t>(v)] = results[k];
          plan->kinds[static_cast<size_t>(v)] = ValueKind::kShapeTime;
          infos[static_cast<size_t>(v)] = TensorInfo{results[k].dtype(), results[k].shape(), &plan->slots[static_cast<size_t>(v)]};
        }
        continue;
      }
      const OpCost cost = step.schema->cost ? step.schema->cost(n, ins, outs) : default_cost(n, ins, outs);
      step.cost = cost;
      for (size_t k = 0; k < n.outputs.size(); ++k) {
        const int v = n.outputs[k];
        if (v < 0 || outs[k].dtype == DType::kUnknown) continue;
        infos[static_cast<size_t>(v)] = TensorInfo{outs[k].dtype, outs[k].shape, nullptr};
        plan->kinds[static_cast<size_t>(v)] = is_graph_output[static_cast<size_t>(v)] ? ValueKind::kOutput : ValueKind::kArena;
      }
    }
  } catch (const ValueNeededError&) {
    static_plan = false;  // data-dependent shapes: no static plan
  }
  if (!static_plan) {
    auto dyn = std::make_unique<Plan>();
    dyn->input_shapes = plan->input_shapes;
    dyn->input_dtypes = plan->input_dtypes;
    dyn->outer_infos = plan->outer_infos;
    dyn->planned = false;
    dyn->slots.assign(g.values.size(), Tensor());
    for (size_t i = 0; i < g.values.size(); ++i) {
      if (g.values[i].is_constant()) dyn->slots[i] = *g.values[i].data;
    }
    plan_ = std::move(dyn);
    return;
  }

  // 2. Buffers shared by several values (a union-find with offsets over values): the inputs of a
  // Concat planned as slices of its output, views, in-place outputs.
  PlacementForest roots(nv);
  std::vector<int> last_use(nv), first_def(nv, -1);
  for (size_t v = 0; v < nv; ++v) last_use[v] = -1;
  for (size_t ni = 0; ni < g.nodes.size(); ++ni) {
    for (int v : g.nodes[ni].inputs) {
      if (v >= 0) last_use[static_cast<size_t>(v)] = static_cast<int>(ni);
    }
    // What a control-flow node's subgraphs read by name lives until the node has run.
    for (int v : implicit_inputs_[ni]) last_use[static_cast<size_t>(v)] = static_cast<int>(ni);
    for (int v : g.nodes[ni].outputs) {
      if (v >= 0) {
        first_def[static_cast<size_t>(v)] = static_cast<int>(ni);
        last_use[static_cast<size_t>(v)] = std::max(last_use[static_cast<size_t>(v)], static_cast<int>(ni));
      }
    }
  }
  // `from`'s buffer joins `into`'s, `delta` bytes after it; false if they cannot (already
  // sharing one buffer at other positions).
  auto merge = [&](int into, int from, int64_t delta) {
    const int a = roots.find(into), b = roots.find(from);
    if (!roots.unite(into, from, delta)) return false;
    if (a != b) last_use[static_cast<size_t>(a)] = std::max(last_use[static_cast<size_t>(a)], last_use[static_cast<size_t>(b)]);
    return true;
  };
  // Byte offsets of a Concat's inputs in its output, or nothing if its producers cannot write
  // their slices in place: every input a distinct, unshared arena tensor written by a kernel
  // (or a Concat sliced in turn; not a control-flow node, which may replace its outputs), the
  // output an arena tensor, each slice contiguous (all dims before the axis 1) and starting
  // arena-aligned (kernels may assume aligned buffers).
  auto concat_slice_offsets = [&](const Node& n) -> std::optional<std::vector<int64_t>> {
    if (!n.domain.empty() || n.op_type != "Concat" || n.outputs.size() != 1 || n.outputs[0] < 0) return std::nullopt;
    const int out = n.outputs[0];
    if (plan->kinds[static_cast<size_t>(out)] != ValueKind::kArena || roots.find(out) != out) return std::nullopt;
    const TensorInfo& o = infos[static_cast<size_t>(out)];
    const int axis = normalize_axis(n.attr_int("axis"), static_cast<int>(o.shape.size()), n);
    for (int d = 0; d < axis; ++d) {
      if (o.shape[static_cast<size_t>(d)] != 1) return std::nullopt;
    }
    std::vector<int64_t> offsets;
    int64_t offset = 0;
    for (int in : n.inputs) {
      if (in < 0 || plan->kinds[static_cast<size_t>(in)] != ValueKind::kArena || roots.find(in) != in) return std::nullopt;
      if (infos[static_cast<size_t>(in)].dtype != o.dtype || offset % kArenaAlignment != 0) return std::nullopt;
      if (std::count(n.inputs.begin(), n.inputs.end(), in) != 1) return std::nullopt;
      const int producer = first_def[static_cast<size_t>(in)];
      if (producer < 0) return std::nullopt;
      const Plan::Step& made_by = plan->steps[static_cast<size_t>(producer)];
      const bool writes_in_place = made_by.kind == StepKind::kSlicedConcat ||
                                   (made_by.kind == StepKind::kExecute && !made_by.schema->has_subgraphs);
      if (!writes_in_place) return std::nullopt;
      offsets.push_back(offset);
      offset += shape_numel(infos[static_cast<size_t>(in)].shape) * static_cast<int64_t>(dtype_size(o.dtype));
    }
    return offsets;
  };
  // Concats first, so that the in-place decisions below see the lifetimes they join. In node
  // order, so a Concat of Concats nests: the inner output, with its slices, becomes a slice.
  for (size_t ni = 0; ni < g.nodes.size(); ++ni) {
    const Node& n = g.nodes[ni];
    if (plan->steps[ni].kind != StepKind::kExecute) continue;
    const auto offsets = concat_slice_offsets(n);
    if (!offsets) continue;
    for (size_t k = 0; k < n.inputs.size(); ++k) merge(n.outputs[0], n.inputs[k], (*offsets)[k]);
    plan->steps[ni].kind = StepKind::kSlicedConcat;
    ++plan->stats.sliced_concats;
    plan->stats.sliced_tensors += static_cast<int>(n.inputs.size());
  }
  for (size_t ni = 0; ni < g.nodes.size(); ++ni) {
    const Node& n = g.nodes[ni];
    Plan::Step& step = plan->steps[ni];
    if (step.kind != StepKind::kExecute || !is_view_op(n) || n.outputs[0] < 0) continue;
    const size_t in = static_cast<size_t>(n.inputs[0]), out = static_cast<size_t>(n.outputs[0]);
    if (plan->kinds[out] != ValueKind::kArena) continue;  // graph outputs own their buffers
    if (plan->kinds[in] == ValueKind::kArena) {
      // Fails only if both already share a buffer elsewhere (slices of one Concat): then copy.
      if (merge(static_cast<int>(in), static_cast<int>(out), 0)) step.kind = StepKind::kStaticView;
    } else if (plan->kinds[in] == ValueKind::kInput && roots.find(static_cast<int>(out)) == static_cast<int>(out)) {
      step.kind = StepKind::kRuntimeView;
      step.view_shape = infos[out].shape;
      plan->kinds[out] = ValueKind::kRuntimeView;
    }
  }
  // Roots' last uses include their views' consumers now; decide in-place in execution order.
  for (size_t ni = 0; ni < g.nodes.size(); ++ni) {
    const Node& n = g.nodes[ni];
    if (plan->steps[ni].kind != StepKind::kExecute || !is_in_place_op(n) || n.outputs.empty() || n.outputs[0] < 0) continue;
    const size_t out = static_cast<size_t>(n.outputs[0]);
    if (plan->kinds[out] != ValueKind::kArena) continue;
    for (int in : n.inputs) {
      if (in < 0 || plan->kinds[static_cast<size_t>(in)] != ValueKind::kArena) continue;
      const TensorInfo& ii = infos[static_cast<size_t>(in)];
      if (ii.dtype != infos[out].dtype || ii.shape != infos[out].shape) continue;
      const int r = roots.find(in);
      if (last_use[static_cast<size_t>(r)] != static_cast<int>(ni)) continue;
      if (!merge(in, static_cast<int>(out), 0)) continue;
      ++plan->stats.in_place_tensors;
      break;
    }
  }

  // 3. Lifetimes of arena buffers (one per root) and the plan. A buffer spans its values'
  // extents; `base` is its lowest value offset (offsets relative to a root may be negative).
  // Run again after producer-consumer fusion (step 5), whose consumers' outputs are then
  // written during the producer's step.
  const auto place_in_arena = [&]() {
    plan->stats.planned_tensors = 0;
    plan->stats.aliased_tensors = 0;
    plan->stats.output_bytes = 0;
    std::vector<int> record_of(nv, -1);
    std::vector<TensorLifetime> lifetimes;
    std::vector<int64_t> base, end;
    for (size_t v = 0; v < nv; ++v) {
      if (plan->kinds[v] != ValueKind::kArena) continue;
      const int r = roots.find(static_cast<int>(v));
      const int64_t at = roots.offset_in_root(static_cast<int>(v));
      const int64_t bytes = shape_numel(infos[v].shape) * static_cast<int64_t>(dtype_size(infos[v].dtype));
      if (record_of[static_cast<size_t>(r)] < 0) {
        record_of[static_cast<size_t>(r)] = static_cast<int>(lifetimes.size());
        lifetimes.push_back(TensorLifetime{0, first_def[static_cast<size_t>(r)], last_use[static_cast<size_t>(r)]});
        base.push_back(at);
        end.push_back(at + bytes);
      }
      const size_t rec = static_cast<size_t>(record_of[static_cast<size_t>(r)]);
      base[rec] = std::min(base[rec], at);
      end[rec] = std::max(end[rec], at + bytes);
      lifetimes[rec].first_step = std::min(lifetimes[rec].first_step, first_def[v]);
      ++plan->stats.planned_tensors;
      if (static_cast<int>(v) != r) ++plan->stats.aliased_tensors;
    }
    for (size_t rec = 0; rec < lifetimes.size(); ++rec) lifetimes[rec].bytes = end[rec] - base[rec];
    plan->stats.aliased_tensors -= plan->stats.in_place_tensors + plan->stats.sliced_tensors;
    const MemoryPlan mp = plan_memory(lifetimes);
    plan->arena = Buffer::allocate(static_cast<size_t>(std::max<int64_t>(mp.arena_bytes, 1)));
    plan->stats.planned = true;
    plan->stats.arena_bytes = mp.arena_bytes;
    plan->stats.lower_bound_bytes = mp.lower_bound_bytes;
    for (size_t v = 0; v < nv; ++v) {
      const TensorInfo& info = infos[v];
      switch (plan->kinds[v]) {
        case ValueKind::kArena: {
          const size_t rec = static_cast<size_t>(record_of[static_cast<size_t>(roots.find(static_cast<int>(v)))]);
          const int64_t at = mp.offsets[rec] + roots.offset_in_root(static_cast<int>(v)) - base[rec];
          plan->slots[v] = Tensor(info.dtype, info.shape, plan->arena, static_cast<size_t>(at));
          break;
        }
        case ValueKind::kOutput:
          plan->slots[v] = Tensor(info.dtype, info.shape);
          plan->stats.output_bytes += static_cast<int64_t>(plan->slots[v].nbytes());
          break;
        default: break;
      }
    }
  };
  place_in_arena();
  for (const Value& v : g.values) {
    if (v.is_constant()) plan->stats.weight_bytes += static_cast<int64_t>(v.data->nbytes());
  }

  // 4. Kernels: a CPU backend kernel where one applies, else the reference kernel.
  const kernels::Isa isa = kernels::best_isa();
  std::vector<TensorInfo> ins, outs;
  for (size_t ni = 0; ni < g.nodes.size(); ++ni) {
    const Node& n = g.nodes[ni];
    Plan::Step& step = plan->steps[ni];
    if (step.kind == StepKind::kShapeTime) continue;
    for (int v : n.inputs) step.in_shapes.push_back(v >= 0 ? infos[static_cast<size_t>(v)].shape : Shape{});
    for (int v : n.outputs) step.out_shapes.push_back(v >= 0 ? infos[static_cast<size_t>(v)].shape : Shape{});
    step.ins.assign(n.inputs.size(), nullptr);
    step.outs.assign(n.outputs.size(), nullptr);
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      if (n.inputs[k] >= 0) step.ins[k] = &plan->slots[static_cast<size_t>(n.inputs[k])];
    }
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      const int v = n.outputs[k];
      if (v >= 0 && infos[static_cast<size_t>(v)].dtype != DType::kUnknown) step.outs[k] = &plan->slots[static_cast<size_t>(v)];
    }
    if (step.kind == StepKind::kStaticView || step.kind == StepKind::kRuntimeView) {
      step.kernel_name = "view";
      continue;
    }
    if (step.kind == StepKind::kSlicedConcat) {
      step.kernel_name = "sliced";
      continue;
    }
    if (step.schema->has_subgraphs) {
      step.kernel_name = "subgraphs";
      continue;
    }
    if (options_.cpu_kernels) {
      ins.assign(n.inputs.size(), TensorInfo{});
      outs.assign(n.outputs.size(), TensorInfo{});
      for (size_t k = 0; k < n.inputs.size(); ++k) {
        if (n.inputs[k] >= 0) ins[k] = infos[static_cast<size_t>(n.inputs[k])];
      }
      for (size_t k = 0; k < n.outputs.size(); ++k) {
        if (n.outputs[k] >= 0) outs[k] = infos[static_cast<size_t>(n.outputs[k])];
      }
      CpuKernelPrepareContext ctx{n, ins, outs, isa, pool_, options_.tune};
      step.kernel = CpuKernelRegistry::builtin().create(ctx);
    }
    step.kernel_name = step.kernel ? step.kernel->name() : "reference";
  }
  // 5. Producer-consumer fusion (fusion level only; emulated formats round every op's output).
  if (options_.cpu_kernels && options_.opt_level >= 2 && options_.float_emulation == FloatEmulation::kNone) {
    fuse_consumers(*plan);
    // The fused consumers' outputs are written during their producers' steps: they must not
    // share memory with anything that step reads. The intermediate tensors are never stored.
    bool fused = false;
    for (size_t ni = 0; ni < g.nodes.size(); ++ni) {
      const int producer = plan->steps[ni].fused_into;
      if (producer < 0) continue;
      fused = true;
      for (int v : g.nodes[static_cast<size_t>(producer)].outputs) {
        if (v < 0) continue;
        plan->kinds[static_cast<size_t>(v)] = ValueKind::kFusedAway;
        plan->slots[static_cast<size_t>(v)] = Tensor();
      }
      for (int v : g.nodes[ni].outputs) {
        if (v >= 0) first_def[static_cast<size_t>(v)] = std::min(first_def[static_cast<size_t>(v)], producer);
      }
    }
    if (fused) place_in_arena();
  }
  for (int o : g.outputs) plan->output_infos.push_back(TensorInfo{infos[static_cast<size_t>(o)].dtype, infos[static_cast<size_t>(o)].shape, nullptr});
  plan->planned = true;
  plan_ = std::move(plan);
}

// Offers each kernel the only reader of its single output (CpuKernel::fuse_consumer). A value
// read by anything else — a second reader, a graph output, a control-flow body — is not offered.
// The caller then places the fused consumers' outputs in the arena again, live from their
// producer's step.
void Session::fuse_consumers(Plan& plan) const {
  const Graph& g = optimized_->graph;
  std::vector<int> readers(g.values.size(), 0), reader(g.values.size(), -1);
  for (size_t ni = 0; ni < g.nodes.size(); ++ni) {
    for (int v : g.nodes[ni].inputs) {
      if (v < 0) continue;
      ++readers[static_cast<size_t>(v)];
      reader[static_cast<size_t>(v)] = static_cast<int>(ni);
    }
    for (int v : implicit_inputs_[ni]) readers[static_cast<size_t>(v)] += 2;
  }
  for (int o : g.outputs) readers[static_cast<size_t>(o)] += 2;
  for (size_t ni = 0; ni < g.nodes.size(); ++ni) {
    Plan::Step& step = plan.steps[ni];
    const Node& n = g.nodes[ni];
    if (!step.kernel || step.fused_into >= 0 || step.kind != StepKind::kExecute || n.outputs.size() != 1 || n.outputs[0] < 0) {
      continue;
    }
    const size_t v = static_cast<size_t>(n.outputs[0]);
    if (readers[v] != 1 || plan.kinds[v] != ValueKind::kArena) continue;
    Plan::Step& next = plan.steps[static_cast<size_t>(reader[v])];
    if (!next.kernel || next.kind != StepKind::kExecute || g.nodes[static_cast<size_t>(reader[v])].inputs[0] != n.outputs[0]) {
      continue;
    }
    if (step.kernel->fuse_consumer(*next.kernel, next.ins, next.outs)) {
      next.fused_into = static_cast<int>(ni);
      next.kernel_name = "fused";
      step.kernel_name = step.kernel->name();
    }
  }
}

void Session::run_unplanned(std::vector<Tensor>& slots, const ValueScope* outer) {
  const Graph& g = optimized_->graph;
  std::vector<const Tensor*> ins;
  std::vector<Tensor> outs;
  if (options_.profile) profile_.assign(g.nodes.size(), NodeProfile{});
  for (size_t node_index = 0; node_index < g.nodes.size(); ++node_index) {
    const Node& n = g.nodes[node_index];
    ins.assign(n.inputs.size(), nullptr);
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      if (n.inputs[k] >= 0) ins[k] = &slots[static_cast<size_t>(n.inputs[k])];
    }
    // Move previous outputs in so their storage is reused, then move them back.
    outs.assign(n.outputs.size(), Tensor());
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      if (n.outputs[k] >= 0) outs[k] = std::move(slots[static_cast<size_t>(n.outputs[k])]);
    }
    const auto t0 = std::chrono::steady_clock::now();
    if (schema_for(registry_, n).has_subgraphs) {
      const ValueScope scope{&g, &value_index_, nullptr, &slots, outer};
      SessionSubgraphHost& host = host_for(node_index);
      host.set_scope(&scope);
      run_node(registry_, n, ins, outs, &host);
      host.set_scope(nullptr);
    } else {
      run_node(registry_, n, ins, outs);
    }
    for (Tensor& t : outs) apply_float_emulation(options_.float_emulation, t);
    if (options_.profile) {
      NodeProfile& p = profile_[node_index];
      p.time_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      p.node_index = node_index;
      p.name = n.name;
      p.op_type = n.op_type;
      p.kernel = "reference";
      for (const Tensor* t : ins) p.input_shapes.push_back(t ? t->shape() : Shape{});
      for (const Tensor& t : outs) p.output_shapes.push_back(t.defined() ? t.shape() : Shape{});
    }
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      if (n.outputs[k] >= 0) slots[static_cast<size_t>(n.outputs[k])] = std::move(outs[k]);
    }
  }
}

std::vector<Tensor> Session::run(const std::map<std::string, Tensor>& given_inputs) {
  check_inputs(given_inputs);
  // Emulated formats see their inputs rounded too; the caller's tensors are not modified.
  std::map<std::string, Tensor> rounded_inputs;
  if (options_.float_emulation != FloatEmulation::kNone) {
    for (const auto& [name, t] : given_inputs) {
      Tensor r = t.dtype() == DType::kF32 ? t.clone() : t;
      apply_float_emulation(options_.float_emulation, r);
      rounded_inputs.emplace(name, std::move(r));
    }
  }
  const std::map<std::string, Tensor>& given =
      options_.float_emulation == FloatEmulation::kNone ? given_inputs : rounded_inputs;
  const Graph& g = optimized_->graph;
  bool same_shapes = plan_ != nullptr;
  for (size_t k = 0; same_shapes && k < inputs_.size(); ++k) {
    same_shapes = given.at(inputs_[k].name).shape() == plan_->input_shapes[k];
  }
  if (!same_shapes) {
    std::map<std::string, Shape> shapes;
    for (const IoInfo& in : inputs_) shapes[in.name] = given.at(in.name).shape();
    prepare(shapes);
  }
  for (int i : g.inputs) plan_->slots[static_cast<size_t>(i)] = given.at(g.value(i).name);
  return execute(nullptr);
}

std::vector<Tensor> Session::run_body(std::span<const Tensor> inputs, const ValueScope& outer) {
  const Graph& g = optimized_->graph;
  if (inputs.size() != g.inputs.size()) {
    throw Error("subgraph '" + g.name + "' has " + std::to_string(g.inputs.size()) + " inputs, given " +
                std::to_string(inputs.size()));
  }
  bool same = plan_ != nullptr;
  for (size_t k = 0; same && k < inputs.size(); ++k) {
    same = inputs[k].dtype() == plan_->input_dtypes[k] && inputs[k].shape() == plan_->input_shapes[k];
  }
  for (size_t k = 0; same && k < outer_values_.size(); ++k) {
    const Tensor* t = outer.find_tensor(g.value(outer_values_[k]).name);
    same = t && t->dtype() == plan_->outer_infos[k].dtype && t->shape() == plan_->outer_infos[k].shape;
  }
  if (!same) {
    std::vector<TensorInfo> ins;
    for (const Tensor& t : inputs) ins.push_back(TensorInfo{t.dtype(), t.shape(), nullptr});
    prepare_plan(ins, outer_infos(outer), &outer);
  }
  for (size_t k = 0; k < inputs.size(); ++k) plan_->slots[static_cast<size_t>(g.inputs[k])] = inputs[k];
  for (int v : outer_values_) {
    const Tensor* t = outer.find_tensor(g.value(v).name);
    if (!t) throw Error("subgraph '" + g.name + "' reads '" + g.value(v).name + "', which no enclosing graph holds");
    plan_->slots[static_cast<size_t>(v)] = *t;
  }
  return execute(&outer);
}

std::vector<Tensor> Session::execute(const ValueScope* outer) {
  const Graph& g = optimized_->graph;
  Plan& plan = *plan_;
  std::vector<Tensor> result;
  result.reserve(g.outputs.size());
  // Inputs and outer-scope values are the caller's: drop our references when done, so they are
  // not kept alive, also when a kernel throws.
  struct Unbind {
    Session& s;
    ~Unbind() {
      Plan& p = *s.plan_;
      for (int i : s.optimized_->graph.inputs) p.slots[static_cast<size_t>(i)] = Tensor();
      for (int v : s.outer_values_) p.slots[static_cast<size_t>(v)] = Tensor();
    }
  } unbind{*this};
  if (!plan.planned) {
    // Dynamic shapes: infer and allocate as we go (slots keep last run's buffers for reuse).
    run_unplanned(plan.slots, outer);
    for (int o : g.outputs) result.push_back(plan.slots[static_cast<size_t>(o)]);
    // Outputs belong to the caller now: do not reuse their buffers next run.
    for (int o : g.outputs) {
      if (!g.value(o).is_constant()) plan.slots[static_cast<size_t>(o)] = Tensor();
    }
    return result;
  }

  // Output buffers still held by the caller from a previous run get replaced, never overwritten.
  for (int o : g.outputs) {
    Tensor& t = plan.slots[static_cast<size_t>(o)];
    if (plan.kinds[static_cast<size_t>(o)] == ValueKind::kOutput && t.buffer().use_count() > 1) {
      t = Tensor(t.dtype(), t.shape());
    }
  }
  if (options_.profile) profile_.assign(g.nodes.size(), NodeProfile{});
  ThreadPool* pool = pool_;
  for (size_t ni = 0; ni < g.nodes.size(); ++ni) {
    Plan::Step& step = plan.steps[ni];
    const Node& n = g.nodes[ni];
    if (step.kind == StepKind::kShapeTime || step.kind == StepKind::kStaticView || step.kind == StepKind::kSlicedConcat) continue;
    if (step.kind == StepKind::kRuntimeView) {
      *step.outs[0] = step.ins[0]->reshaped(step.view_shape);
      continue;
    }
    const auto t0 = options_.profile ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    KernelContext ctx(n, step.ins, step.outs, pool);
    if (step.fused_into >= 0) {
      // Computed by its producer's kernel (profiled with no time of its own).
    } else if (step.kernel) {
      step.kernel->run(ctx);
    } else if (step.schema->has_subgraphs) {
      const ValueScope scope{&g, &value_index_, nullptr, &plan.slots, outer};
      SessionSubgraphHost& host = host_for(ni);
      host.set_scope(&scope);
      ctx.set_subgraphs(&host);
      step.schema->reference(ctx);
      host.set_scope(nullptr);
    } else {
      step.schema->reference(ctx);
    }
    if (options_.float_emulation != FloatEmulation::kNone) {
      for (Tensor* t : step.outs) {
        if (t) apply_float_emulation(options_.float_emulation, *t);
      }
    }
    if (options_.profile) {
      NodeProfile& p = profile_[ni];
      p.time_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      p.node_index = ni;
      p.name = n.name;
      p.op_type = n.op_type;
      p.kernel = step.kernel_name;
      p.macs = step.cost.macs;
      p.bytes = step.cost.bytes_read + step.cost.bytes_written;
      // The plan's shapes: a fused-away intermediate has no tensor.
      p.input_shapes = step.in_shapes;
      p.output_shapes = step.out_shapes;
    }
  }
  if (options_.profile) {
    // Only executed nodes are profiled.
    profile_.erase(std::remove_if(profile_.begin(), profile_.end(), [](const NodeProfile& p) { return p.op_type.empty(); }),
                   profile_.end());
  }
  for (int o : g.outputs) result.push_back(plan.slots[static_cast<size_t>(o)]);
  for (size_t v = 0; v < plan.kinds.size(); ++v) {
    if (plan.kinds[v] == ValueKind::kRuntimeView) plan.slots[v] = Tensor();
  }
  return result;
}

std::vector<NodeProfile> Session::plan_summary() const {
  std::vector<NodeProfile> nodes;
  if (!plan_ || !plan_->planned) return nodes;
  const Graph& g = optimized_->graph;
  for (size_t ni = 0; ni < plan_->steps.size(); ++ni) {
    const Plan::Step& step = plan_->steps[ni];
    if (step.kind != StepKind::kExecute) continue;
    NodeProfile p;
    p.node_index = ni;
    p.name = g.nodes[ni].name;
    p.op_type = g.nodes[ni].op_type;
    p.kernel = step.kernel_name;
    p.input_shapes = step.in_shapes;
    p.output_shapes = step.out_shapes;
    p.macs = step.cost.macs;
    p.bytes = step.cost.bytes_read + step.cost.bytes_written;
    nodes.push_back(std::move(p));
  }
  return nodes;
}

std::vector<std::string> Session::kernel_names() const {
  std::vector<std::string> names;
  if (!plan_) return names;
  for (const auto& s : plan_->steps) names.push_back(plan_->planned ? s.kernel_name : "reference");
  return names;
}

std::vector<TensorInfo> Session::output_infos() const {
  if (!plan_ || !plan_->planned) return {};
  return plan_->output_infos;
}

MemoryStats Session::memory_stats() const { return plan_ ? plan_->stats : MemoryStats{}; }

int64_t Session::activation_bytes() const {
  if (!plan_) return 0;
  if (plan_->planned) return plan_->stats.arena_bytes;
  int64_t total = 0;
  const Graph& g = optimized_->graph;
  for (size_t i = 0; i < plan_->slots.size(); ++i) {
    if (!g.values[i].is_constant() && plan_->slots[i].defined()) total += static_cast<int64_t>(plan_->slots[i].nbytes());
  }
  return total;
}

std::map<std::string, Tensor> Session::run_named(const std::map<std::string, Tensor>& inputs) {
  std::vector<Tensor> outs = run(inputs);
  std::map<std::string, Tensor> named;
  for (size_t i = 0; i < outs.size(); ++i) named[outputs_[i].name] = std::move(outs[i]);
  return named;
}

}  // namespace xnn
