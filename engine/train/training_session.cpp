#include "engine/train/training_session.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <set>

#include "engine/core/error.h"
#include "engine/core/op_registry.h"
#include "engine/kernels/training_kernels.h"
#include "engine/runtime/executor.h"

namespace xnn::train {
namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// A MaxPool whose 2×2 stride-2 windows tile its input (no padding, dilation or ceil mode): what
// a producer with GradOp::fuses_activation_maxpool runs inside itself.
bool is_tiling_maxpool_2x2(const Node& q) {
  if (q.op_type != "MaxPool" || !q.domain.empty()) return false;
  auto ints_are = [&](const char* name, std::vector<int64_t> want, bool may_be_absent) {
    if (!q.has_attr(name)) return may_be_absent;
    return q.attr_ints(name) == want;
  };
  const std::string auto_pad = q.attr_string("auto_pad", "NOTSET");
  return ints_are("kernel_shape", {2, 2}, false) && ints_are("strides", {2, 2}, false) &&
         ints_are("pads", {0, 0, 0, 0}, true) && ints_are("dilations", {1, 1}, true) && q.attr_int("ceil_mode", 0) == 0 &&
         (auto_pad == "NOTSET" || auto_pad == "VALID");
}

// The activation an elementwise node computes, when a producer can run it inside itself
// (kernels::training_fusable); nullopt otherwise. Clip's bounds must be constants.
std::optional<kernels::Activation> fusable_activation(const Graph& g, const Node& n) {
  if (!n.domain.empty() || n.inputs.empty() || n.inputs[0] < 0 || n.outputs.size() != 1) return std::nullopt;
  kernels::Activation act;
  if (n.op_type == "Relu" && n.inputs.size() == 1) {
    act = kernels::Activation::relu();
  } else if (n.op_type == "LeakyRelu") {
    act = kernels::Activation::leaky_relu(n.attr_float("alpha", 0.01f));
  } else if (n.op_type == "HardSwish") {
    act.kind = kernels::ActKind::kHardSwish;
  } else if (n.op_type == "HardSigmoid") {
    act.kind = kernels::ActKind::kHardSigmoid;
    act.alpha = n.attr_float("alpha", 0.2f);
    act.beta = n.attr_float("beta", 0.5f);
  } else if (n.op_type == "Clip") {
    float bound[2] = {-std::numeric_limits<float>::infinity(), std::numeric_limits<float>::infinity()};
    for (size_t i = 1; i < 3; ++i) {
      if (i >= n.inputs.size() || n.inputs[i] < 0) continue;
      const Value& v = g.value(n.inputs[i]);
      if (!v.is_constant() || v.data->dtype() != DType::kF32 || v.data->numel() != 1) return std::nullopt;
      bound[i - 1] = v.data->data<float>()[0];
    }
    act = kernels::Activation::clip(bound[0], bound[1]);
  } else {
    return std::nullopt;
  }
  if (!kernels::training_fusable(act)) return std::nullopt;
  return act;
}

bool is_view_op(const Node& n) {
  if (!n.domain.empty() || n.inputs.empty() || n.outputs.size() != 1) return false;
  return n.op_type == "Reshape" || n.op_type == "Flatten" || n.op_type == "Squeeze" || n.op_type == "Unsqueeze" ||
         n.op_type == "Identity";
}

bool is_float_param_candidate(const Value& v) {
  return v.is_constant() && v.data->dtype() == DType::kF32 && v.data->rank() >= 1 && v.data->numel() > 0;
}

void add_into(Tensor& dst, const Tensor& src) {
  float* d = dst.data<float>();
  const float* s = src.data<float>();
  const int64_t n = dst.numel();
  for (int64_t i = 0; i < n; ++i) d[i] += s[i];
}

}  // namespace

float softmax_cross_entropy(const Tensor& logits, const Tensor& labels, float label_smoothing, Tensor* grad,
                            int64_t* correct) {
  if (logits.dtype() != DType::kF32 || logits.rank() != 2) {
    throw Error("softmax cross-entropy: logits must be f32 [N, classes], got " +
                std::string(dtype_name(logits.dtype())) + " " + shape_str(logits.shape()));
  }
  const int64_t n = logits.dim(0), k = logits.dim(1);
  if (labels.numel() != n) {
    throw Error("softmax cross-entropy: " + std::to_string(labels.numel()) + " labels for a batch of " +
                std::to_string(n));
  }
  const float* z = logits.data<float>();
  float* g = grad ? grad->data<float>() : nullptr;
  double total = 0;
  int64_t hits = 0;
  const float smooth_each = label_smoothing / static_cast<float>(k);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t y = labels.scalar_as_int(i);
    if (y < 0 || y >= k) {
      throw Error("softmax cross-entropy: label " + std::to_string(y) + " at batch position " + std::to_string(i) +
                  " is outside [0, " + std::to_string(k) + ")");
    }
    const float* row = z + i * k;
    int64_t arg = 0;
    for (int64_t j = 1; j < k; ++j)
      if (row[j] > row[arg]) arg = j;
    hits += arg == y;
    const double m = row[arg];
    double sum = 0;
    for (int64_t j = 0; j < k; ++j) sum += std::exp(static_cast<double>(row[j]) - m);
    const double log_sum = std::log(sum) + m;
    // loss_i = -sum_j t_j log p_j with t = (1-eps) onehot + eps/K
    double li = (1.0 - label_smoothing) * (log_sum - row[y]);
    if (label_smoothing > 0) {
      double s = 0;
      for (int64_t j = 0; j < k; ++j) s += log_sum - row[j];
      li += smooth_each * s;
    }
    total += li;
    if (g) {
      const double inv_n = 1.0 / static_cast<double>(n);
      for (int64_t j = 0; j < k; ++j) {
        const double p = std::exp(static_cast<double>(row[j]) - log_sum);
        const double t = (j == y ? 1.0 - label_smoothing : 0.0) + smooth_each;
        g[i * k + j] = static_cast<float>((p - t) * inv_n);
      }
    }
  }
  if (correct) *correct = hits;
  return static_cast<float>(total / static_cast<double>(n));
}

// Everything that depends on the input shape: tensors for every value, the gradient buffers of
// the values on the path from the parameters to the loss, and which nodes run backward.
struct TrainingSession::Plan {
  std::vector<Tensor> act;          // per value; constants alias the graph's data
  std::vector<Tensor> grad;         // per value that needs a gradient (parameters: their grad)
  std::vector<char> needs_grad;     // per value
  std::vector<char> grad_written;   // per value, reset every step
  std::vector<std::vector<Tensor>> temp;  // per node, per input slot: accumulation temporaries
  // Per node: a view op (Reshape, Flatten, ...) whose output shares its input's buffer, so its
  // forward does nothing; and whose output gradient also shares the input gradient's buffer
  // (when the input feeds nothing else), so its backward does nothing either.
  std::vector<char> alias_forward, alias_backward;
  std::vector<Tensor> stats;  // per node with a stats_consumer_: [N, C, 3] (ForwardContext::output_stats)
};

TrainingSession::TrainingSession(std::shared_ptr<Model> model, TrainingOptions options)
    : model_(std::move(model)), options_(options) {
  if (!model_) throw Error("training: no model");
  if (options_.threads < 1) throw Error("training: threads must be >= 1, got " + std::to_string(options_.threads));
  pool_ = std::make_unique<ThreadPool>(options_.threads);
  Graph& g = model_->graph;
  if (g.inputs.size() != 1) {
    throw Error("training: the model must have exactly one runtime input (the batch of samples), it has " +
                std::to_string(g.inputs.size()));
  }
  if (g.outputs.empty()) throw Error("training: the model has no outputs");
  input_value_ = g.inputs[0];
  logits_value_ = g.outputs[0];
  last_node_ = static_cast<int>(g.nodes.size()) - 1;
  for (int i = static_cast<int>(g.nodes.size()) - 1; i >= 0; --i) {
    const Node& n = g.nodes[static_cast<size_t>(i)];
    if (!n.outputs.empty() && n.outputs[0] == logits_value_) {
      if ((n.op_type == "Softmax" || n.op_type == "LogSoftmax") && n.domain.empty()) {
        logits_value_ = n.inputs.at(0);
        last_node_ = i - 1;
      }
      break;
    }
  }

  // Training writes parameters and running statistics in place; .xnn weights are mmap'ed
  // read-only, so every constant gets its own storage first.
  for (Value& v : g.values)
    if (v.is_constant() && !v.data->buffer()->owns_memory()) v.data = v.data->clone();

  const GradRegistry& grads = GradRegistry::builtin();
  std::set<int> param_values;
  for (const Node& n : g.nodes) {
    const GradOp* op = grads.find(n);
    if (!op) continue;
    for (int i : op->differentiable_inputs) {
      if (i < static_cast<int>(n.inputs.size()) && n.inputs[static_cast<size_t>(i)] >= 0) {
        const int v = n.inputs[static_cast<size_t>(i)];
        if (is_float_param_candidate(g.value(v))) param_values.insert(v);
      }
    }
  }
  for (int v : param_values) {
    Value& val = g.value(v);
    val.trainable = true;
    Parameter p;
    p.name = val.name;
    p.value = *val.data;
    p.grad = Tensor(DType::kF32, val.data->shape());
    p.weight_decay = val.data->rank() > 1;
    param_of_value_[v] = params_.size();
    params_.push_back(std::move(p));
  }
  node_state_.resize(g.nodes.size());
  plan_relu_fusion();
}

void TrainingSession::plan_relu_fusion() {
  const Graph& g = model_->graph;
  const GradRegistry& grads = GradRegistry::builtin();
  fused_act_node_.assign(g.nodes.size(), -1);
  fused_act_.assign(g.nodes.size(), kernels::Activation{});
  fused_pool_of_.assign(g.nodes.size(), -1);
  fused_away_.assign(g.nodes.size(), 0);
  unmaterialised_.assign(g.values.size(), 0);
  std::vector<int>& consumers = consumers_;
  consumers.assign(g.values.size(), 0);
  std::vector<int> producer(g.values.size(), -1);
  for (size_t ni = 0; ni < g.nodes.size(); ++ni) {
    for (int v : g.nodes[ni].inputs)
      if (v >= 0) ++consumers[static_cast<size_t>(v)];
    for (int v : g.nodes[ni].outputs)
      if (v >= 0) producer[static_cast<size_t>(v)] = static_cast<int>(ni);
  }
  for (int v : g.outputs) ++consumers[static_cast<size_t>(v)];  // a graph output must stay
  // Statistics hand-over: a producer whose output 0 feeds nothing but input 0 of a consumer that
  // takes them (Conv → BatchNormalization).
  stats_consumer_.assign(g.nodes.size(), -1);
  stats_producer_.assign(g.nodes.size(), -1);
  for (int ni = 0; ni <= last_node_; ++ni) {
    const Node& cons = g.nodes[static_cast<size_t>(ni)];
    const GradOp* cop = grads.find(cons);
    if (!cop || !cop->takes_input_stats || !cop->forward || cons.inputs.empty() || cons.inputs[0] < 0) continue;
    const int v = cons.inputs[0];
    const int p = producer[static_cast<size_t>(v)];
    if (p < 0 || consumers[static_cast<size_t>(v)] != 1) continue;
    const Node& prod = g.nodes[static_cast<size_t>(p)];
    const GradOp* pop = grads.find(prod);
    if (pop && pop->emits_output_stats && pop->forward && !prod.outputs.empty() && prod.outputs[0] == v) {
      stats_consumer_[static_cast<size_t>(p)] = ni;
      stats_producer_[static_cast<size_t>(ni)] = p;
    }
  }
  for (int ni = 0; ni <= last_node_; ++ni) {
    const Node& relu = g.nodes[static_cast<size_t>(ni)];
    const std::optional<kernels::Activation> act = fusable_activation(g, relu);
    if (!act) continue;
    const int v = relu.inputs[0];
    if (v < 0 || v == logits_value_ || consumers[static_cast<size_t>(v)] != 1) continue;
    const int p = producer[static_cast<size_t>(v)];
    if (p < 0) continue;
    const Node& prod = g.nodes[static_cast<size_t>(p)];
    const GradOp* op = grads.find(prod);
    if (!op || !op->fuses_activation || !op->forward || prod.outputs.empty() || prod.outputs[0] != v ||
        fused_act_node_[static_cast<size_t>(p)] >= 0)
      continue;
    bool other_outputs_used = false;  // e.g. BatchNormalization's optional running-statistics outputs
    for (size_t o = 1; o < prod.outputs.size(); ++o)
      if (prod.outputs[o] >= 0 && consumers[static_cast<size_t>(prod.outputs[o])] > 0) other_outputs_used = true;
    if (other_outputs_used) continue;
    fused_act_node_[static_cast<size_t>(p)] = ni;
    fused_act_[static_cast<size_t>(p)] = *act;
    fused_away_[static_cast<size_t>(ni)] = 1;
    unmaterialised_[static_cast<size_t>(v)] = 1;
    // The pool after it, if the producer fuses one too.
    const int r = relu.outputs[0];
    if (!op->fuses_activation_maxpool || r < 0 || r == logits_value_ || consumers[static_cast<size_t>(r)] != 1) continue;
    for (int qi = ni + 1; qi <= last_node_; ++qi) {
      const Node& q = g.nodes[static_cast<size_t>(qi)];
      if (q.inputs.empty() || q.inputs[0] != r) continue;
      if (is_tiling_maxpool_2x2(q) && (q.outputs.size() == 1 || q.outputs[1] < 0 || consumers[static_cast<size_t>(q.outputs[1])] == 0)) {
        fused_pool_of_[static_cast<size_t>(p)] = qi;
        fused_away_[static_cast<size_t>(qi)] = 1;
        unmaterialised_[static_cast<size_t>(r)] = 1;
      }
      break;
    }
  }
}

int TrainingSession::output_value(int node, size_t output) const {
  const Graph& g = model_->graph;
  const int pool = fused_pool_of_[static_cast<size_t>(node)];
  if (output == 0 && pool >= 0) return g.nodes[static_cast<size_t>(pool)].outputs[0];
  const int fused = fused_act_node_[static_cast<size_t>(node)];
  if (output == 0 && fused >= 0) return g.nodes[static_cast<size_t>(fused)].outputs[0];
  return g.nodes[static_cast<size_t>(node)].outputs[output];
}

TrainingSession::~TrainingSession() = default;

int64_t TrainingSession::parameter_count() const {
  int64_t n = 0;
  for (const Parameter& p : params_) n += p.value.numel();
  return n;
}

const std::string& TrainingSession::logits_value_name() const { return model_->graph.value(logits_value_).name; }

TrainingSession::Plan& TrainingSession::plan_for(const Shape& input_shape) {
  auto it = plans_.find(input_shape);
  if (it != plans_.end()) return *it->second;
  const Graph& g = model_->graph;
  const OpRegistry& ops = OpRegistry::builtin();
  const GradRegistry& grads = GradRegistry::builtin();
  auto plan = std::make_unique<Plan>();
  const size_t nv = g.values.size();
  plan->act.resize(nv);
  plan->grad.resize(nv);
  plan->needs_grad.assign(nv, 0);
  plan->grad_written.assign(nv, 0);
  plan->temp.resize(g.nodes.size());
  plan->alias_forward.assign(g.nodes.size(), 0);
  plan->stats.resize(g.nodes.size());
  plan->alias_backward.assign(g.nodes.size(), 0);

  std::vector<TensorInfo> info(nv);
  for (size_t v = 0; v < nv; ++v) {
    const Value& val = g.values[v];
    if (val.is_constant()) {
      plan->act[v] = *val.data;
      info[v] = TensorInfo{val.data->dtype(), val.data->shape(), &*val.data};
    }
  }
  const Value& in = g.value(input_value_);
  info[static_cast<size_t>(input_value_)] = TensorInfo{in.dtype == DType::kUnknown ? DType::kF32 : in.dtype, input_shape, nullptr};
  plan->act[static_cast<size_t>(input_value_)] = Tensor(info[static_cast<size_t>(input_value_)].dtype, input_shape);
  for (const auto& [v, pi] : param_of_value_) {
    plan->needs_grad[static_cast<size_t>(v)] = 1;
    plan->grad[static_cast<size_t>(v)] = params_[pi].grad;
  }

  std::vector<std::string> no_backward;
  for (size_t ni = 0; ni <= static_cast<size_t>(std::max(last_node_, -1)) && ni < g.nodes.size(); ++ni) {
    const Node& n = g.nodes[ni];
    const OpSchema& schema = schema_for(ops, n);
    if (schema.has_subgraphs) throw UnsupportedError("training: " + n.describe() + ": control flow cannot be trained");
    std::vector<TensorInfo> ins(n.inputs.size());
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (n.inputs[i] >= 0) ins[i] = info[static_cast<size_t>(n.inputs[i])];
    std::vector<TensorInfo> outs;
    try {
      outs = infer_node(schema, n, ins, static_cast<int>(n.outputs.size()));
    } catch (const ValueNeededError& e) {
      throw UnsupportedError(std::string("training: ") + e.what() + " (data-dependent shapes cannot be trained)");
    }
    const GradOp* gop = grads.find(n);
    bool any_input_needs = false;
    if (gop) {
      for (int i : gop->differentiable_inputs)
        if (i < static_cast<int>(n.inputs.size()) && n.inputs[static_cast<size_t>(i)] >= 0 &&
            plan->needs_grad[static_cast<size_t>(n.inputs[static_cast<size_t>(i)])])
          any_input_needs = true;
    } else {
      for (int v : n.inputs)
        if (v >= 0 && plan->needs_grad[static_cast<size_t>(v)]) any_input_needs = true;
    }
    for (size_t o = 0; o < n.outputs.size(); ++o) {
      const int v = n.outputs[o];
      if (v < 0 || outs[o].dtype == DType::kUnknown) continue;
      // Values inside a fused chain are never materialised (the chain's last output is written
      // instead); they still "need a gradient" so that the values after them do too.
      const bool materialise = !unmaterialised_[static_cast<size_t>(v)];
      info[static_cast<size_t>(v)] = TensorInfo{outs[o].dtype, outs[o].shape, nullptr};
      // Uninitialised: every kernel writes all of its outputs, every backward kernel all of its
      // input gradients (zeroing them cost a fifth of a step when a supernet re-plans each path).
      if (materialise) plan->act[static_cast<size_t>(v)] = Tensor::uninitialized(outs[o].dtype, outs[o].shape);
      if (any_input_needs && outs[o].dtype == DType::kF32) {
        if (!gop) {
          no_backward.push_back(n.describe());
          break;
        }
        plan->needs_grad[static_cast<size_t>(v)] = 1;
        if (materialise) plan->grad[static_cast<size_t>(v)] = Tensor::uninitialized(DType::kF32, outs[o].shape);
      }
    }
    if (stats_consumer_[ni] >= 0) {
      const Shape& ys = info[static_cast<size_t>(n.outputs[0])].shape;
      if (ys.size() >= 2) plan->stats[ni] = Tensor(DType::kF32, {ys[0], ys[1], 3});
    }
    if (is_view_op(n)) {
      const int vi = n.inputs[0], vo = n.outputs[0];
      Tensor& in = plan->act[static_cast<size_t>(vi)];
      Tensor& out = plan->act[static_cast<size_t>(vo)];
      if (vi >= 0 && vo >= 0 && in.defined() && out.defined() && !g.value(vi).is_constant() &&
          in.dtype() == out.dtype() && in.numel() == out.numel()) {
        out = in.reshaped(out.shape());
        plan->alias_forward[ni] = 1;
        Tensor& gin = plan->grad[static_cast<size_t>(vi)];
        Tensor& gout = plan->grad[static_cast<size_t>(vo)];
        if (gin.defined() && gout.defined() && consumers_[static_cast<size_t>(vi)] == 1) {
          gout = gin.reshaped(gout.shape());
          plan->alias_backward[ni] = 1;
        }
      }
    }
    // Accumulation temporaries: where this node's gradient lands on a value another node (or
    // another input slot of this one) also contributes to.
    plan->temp[ni].resize(n.inputs.size());
    if (gop && !fused_away_[ni] && !plan->alias_backward[ni]) {
      for (int i : gop->differentiable_inputs) {
        if (i >= static_cast<int>(n.inputs.size())) continue;
        const int v = n.inputs[static_cast<size_t>(i)];
        if (v >= 0 && plan->needs_grad[static_cast<size_t>(v)])
          plan->temp[ni][static_cast<size_t>(i)] = Tensor::uninitialized(DType::kF32, info[static_cast<size_t>(v)].shape);
      }
    }
  }
  if (!no_backward.empty()) {
    std::string list;
    for (const std::string& s : no_backward) list += (list.empty() ? "" : ", ") + s;
    throw UnsupportedError("training: no backward kernel for " + list + " (ops with gradients: see `xnn-lab train --help`)");
  }
  const Tensor& logits = plan->act[static_cast<size_t>(logits_value_)];
  if (logits.dtype() != DType::kF32 || logits.rank() != 2) {
    throw Error("training: the logits '" + g.value(logits_value_).name + "' must be f32 [batch, classes], got " +
                shape_str(logits.shape()));
  }
  if (!plan->needs_grad[static_cast<size_t>(logits_value_)]) {
    throw Error("training: the logits '" + g.value(logits_value_).name + "' do not depend on any trainable parameter");
  }
  auto& slot = plans_[input_shape];
  slot = std::move(plan);
  return *slot;
}

void TrainingSession::forward(Plan& plan, const Tensor& input, bool training, bool timed) {
  const Graph& g = model_->graph;
  Tensor& in = plan.act[static_cast<size_t>(input_value_)];
  if (input.dtype() != in.dtype()) {
    throw Error("training: input '" + g.value(input_value_).name + "' has dtype " + std::string(dtype_name(input.dtype())) +
                ", expected " + std::string(dtype_name(in.dtype())));
  }
  std::memcpy(in.raw(), input.raw(), in.nbytes());
  const OpRegistry& ops = OpRegistry::builtin();
  const GradRegistry& grads = GradRegistry::builtin();
  const uint64_t step_seed = splitmix64(options_.seed ^ splitmix64(static_cast<uint64_t>(steps_)));
  std::vector<const Tensor*> ins;
  std::vector<Tensor*> outs;
  for (int ni = 0; ni <= last_node_; ++ni) {
    if (fused_away_[static_cast<size_t>(ni)]) continue;  // a Relu run by its producer
    if (plan.alias_forward[static_cast<size_t>(ni)]) continue;  // a view: its output is its input
    const Node& n = g.nodes[static_cast<size_t>(ni)];
    ins.assign(n.inputs.size(), nullptr);
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (n.inputs[i] >= 0) ins[i] = &plan.act[static_cast<size_t>(n.inputs[i])];
    outs.assign(n.outputs.size(), nullptr);
    for (size_t o = 0; o < n.outputs.size(); ++o) {
      const int v = output_value(ni, o);
      if (v >= 0 && plan.act[static_cast<size_t>(v)].defined()) outs[o] = &plan.act[static_cast<size_t>(v)];
    }
    const kernels::Activation* fused_act =
        fused_act_node_[static_cast<size_t>(ni)] >= 0 ? &fused_act_[static_cast<size_t>(ni)] : nullptr;
    const GradOp* gop = grads.find(n);
    const auto t0 = timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    if (gop && gop->forward) {
      ForwardContext ctx{n, ins, outs, training, step_seed ^ static_cast<uint64_t>(ni), node_state_[static_cast<size_t>(ni)],
                         pool_.get(), fused_act, fused_pool_of_[static_cast<size_t>(ni)] >= 0};
      if (training) {
        Tensor& out_stats = plan.stats[static_cast<size_t>(ni)];
        if (out_stats.defined()) ctx.output_stats = out_stats.data<float>();
        const int producer = stats_producer_[static_cast<size_t>(ni)];
        if (producer >= 0 && plan.stats[static_cast<size_t>(producer)].defined())
          ctx.input_stats = plan.stats[static_cast<size_t>(producer)].data<float>();
      }
      gop->forward(ctx);
    } else {
      KernelContext ctx(n, ins, outs, pool_.get());
      schema_for(ops, n).reference(ctx);
    }
    if (timed) profile_[static_cast<size_t>(ni)].forward_ms += ms_since(t0);
  }
}

void TrainingSession::backward(Plan& plan) {
  const Graph& g = model_->graph;
  const GradRegistry& grads = GradRegistry::builtin();
  std::vector<const Tensor*> ins, outs, gouts;
  std::vector<Tensor*> gins;
  std::vector<std::pair<int, Tensor*>> to_accumulate;
  for (int ni = last_node_; ni >= 0; --ni) {
    if (fused_away_[static_cast<size_t>(ni)]) continue;  // its producer's backward covers it
    const Node& n = g.nodes[static_cast<size_t>(ni)];
    if (plan.alias_backward[static_cast<size_t>(ni)]) {  // a view: the gradient is already in place
      if (plan.grad_written[static_cast<size_t>(n.outputs[0])]) plan.grad_written[static_cast<size_t>(n.inputs[0])] = 1;
      continue;
    }
    bool has_gout = false;
    gouts.assign(n.outputs.size(), nullptr);
    for (size_t o = 0; o < n.outputs.size(); ++o) {
      const int v = output_value(ni, o);
      if (v >= 0 && plan.grad_written[static_cast<size_t>(v)]) {
        gouts[o] = &plan.grad[static_cast<size_t>(v)];
        has_gout = true;
      }
    }
    if (!has_gout) continue;
    const GradOp* gop = grads.find(n);
    if (!gop) continue;  // plan_for rejected graphs where this would lose a gradient
    gins.assign(n.inputs.size(), nullptr);
    to_accumulate.clear();
    bool any = false;
    for (int i : gop->differentiable_inputs) {
      if (i >= static_cast<int>(n.inputs.size())) continue;
      const int v = n.inputs[static_cast<size_t>(i)];
      if (v < 0 || !plan.needs_grad[static_cast<size_t>(v)]) continue;
      bool seen_in_node = false;
      for (int j = 0; j < i; ++j)
        if (n.inputs[static_cast<size_t>(j)] == v && gins[static_cast<size_t>(j)]) seen_in_node = true;
      if (!plan.grad_written[static_cast<size_t>(v)] && !seen_in_node) {
        gins[static_cast<size_t>(i)] = &plan.grad[static_cast<size_t>(v)];
      } else {
        gins[static_cast<size_t>(i)] = &plan.temp[static_cast<size_t>(ni)][static_cast<size_t>(i)];
        to_accumulate.emplace_back(v, gins[static_cast<size_t>(i)]);
      }
      any = true;
    }
    if (!any) continue;
    ins.assign(n.inputs.size(), nullptr);
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (n.inputs[i] >= 0) ins[i] = &plan.act[static_cast<size_t>(n.inputs[i])];
    outs.assign(n.outputs.size(), nullptr);
    for (size_t o = 0; o < n.outputs.size(); ++o) {
      const int v = output_value(ni, o);
      if (v >= 0) outs[o] = &plan.act[static_cast<size_t>(v)];
    }
    BackwardContext ctx{n, ins, outs, gouts, gins, node_state_[static_cast<size_t>(ni)], pool_.get(),
                        fused_act_node_[static_cast<size_t>(ni)] >= 0 ? &fused_act_[static_cast<size_t>(ni)] : nullptr,
                        fused_pool_of_[static_cast<size_t>(ni)] >= 0};
    const auto t0 = profiling_ ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    gop->backward(ctx);
    for (size_t i = 0; i < gins.size(); ++i) {
      if (!gins[i]) continue;
      const int v = n.inputs[i];
      if (gins[i] == &plan.grad[static_cast<size_t>(v)]) plan.grad_written[static_cast<size_t>(v)] = 1;
    }
    for (auto& [v, t] : to_accumulate) add_into(plan.grad[static_cast<size_t>(v)], *t);
    if (profiling_) profile_[static_cast<size_t>(ni)].backward_ms += ms_since(t0);
  }
  for (auto& [v, pi] : param_of_value_) {
    if (!plan.grad_written[static_cast<size_t>(v)]) {
      Tensor& gr = params_[pi].grad;
      std::memset(gr.raw(), 0, gr.nbytes());
    }
  }
}

StepResult TrainingSession::train_step(const Tensor& input, const Tensor& labels) {
  Plan& plan = plan_for(input.shape());
  forward(plan, input, /*training=*/true, /*timed=*/profiling_);
  std::fill(plan.grad_written.begin(), plan.grad_written.end(), 0);
  StepResult r;
  const size_t lv = static_cast<size_t>(logits_value_);
  const auto t0 = profiling_ ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
  r.loss = softmax_cross_entropy(plan.act[lv], labels, options_.label_smoothing, &plan.grad[lv], &r.correct);
  if (profiling_) profile_loss_ms_ += ms_since(t0);
  r.count = plan.act[lv].dim(0);
  plan.grad_written[lv] = 1;
  backward(plan);
  ++steps_;
  if (profiling_) ++profiled_steps_;
  return r;
}

void TrainingSession::set_profiling(bool on) {
  profiling_ = on;
  profile_.clear();
  profile_loss_ms_ = 0;
  profiled_steps_ = 0;
  if (!on) return;
  for (const Node& n : model_->graph.nodes) profile_.push_back(TrainNodeProfile{n.name, n.op_type, 0, 0});
}

float TrainingSession::training_loss(const Tensor& input, const Tensor& labels) {
  Plan& plan = plan_for(input.shape());
  forward(plan, input, /*training=*/true);
  return softmax_cross_entropy(plan.act[static_cast<size_t>(logits_value_)], labels, options_.label_smoothing, nullptr,
                               nullptr);
}

const Tensor& TrainingSession::predict(const Tensor& input) {
  Plan& plan = plan_for(input.shape());
  forward(plan, input, /*training=*/false);
  return plan.act[static_cast<size_t>(logits_value_)];
}

}  // namespace xnn::train
