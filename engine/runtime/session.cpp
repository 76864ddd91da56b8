#include "engine/runtime/session.h"

#include <algorithm>
#include <chrono>
#include <unordered_map>

#include "engine/runtime/executor.h"

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

}  // namespace

Session::Session(std::shared_ptr<const Model> model, SessionOptions options)
    : model_(std::move(model)), options_(options), registry_(OpRegistry::builtin()) {
  const Graph& g = model_->graph;
  g.validate("model");
  // Unsupported ops are reported all at once, before anything runs.
  std::vector<std::string> missing;
  for (const Node& n : g.nodes) {
    if (!registry_.find(n.op_type, n.domain)) missing.push_back(n.describe());
  }
  if (!missing.empty()) {
    std::string msg = "unsupported ops:";
    for (const std::string& m : missing) msg += "\n  " + m;
    throw UnsupportedError(msg);
  }
  for (int i : g.inputs) inputs_.push_back(io_info(g.value(i)));
  for (int o : g.outputs) outputs_.push_back(io_info(g.value(o)));
  slots_.resize(g.values.size());
  for (size_t i = 0; i < g.values.size(); ++i) {
    if (g.values[i].is_constant()) slots_[i] = *g.values[i].data;
  }
}

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

std::vector<Tensor> Session::run(const std::map<std::string, Tensor>& given) {
  check_inputs(given);
  const Graph& g = model_->graph;
  for (int i : g.inputs) slots_[static_cast<size_t>(i)] = given.at(g.value(i).name);
  std::vector<const Tensor*> ins;
  std::vector<Tensor> outs;
  if (options_.profile) profile_.assign(g.nodes.size(), NodeProfile{});
  for (size_t node_index = 0; node_index < g.nodes.size(); ++node_index) {
    const Node& n = g.nodes[node_index];
    ins.assign(n.inputs.size(), nullptr);
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      if (n.inputs[k] >= 0) ins[k] = &slots_[static_cast<size_t>(n.inputs[k])];
    }
    // Move previous outputs in so their storage is reused, then move them back.
    outs.assign(n.outputs.size(), Tensor());
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      if (n.outputs[k] >= 0) outs[k] = std::move(slots_[static_cast<size_t>(n.outputs[k])]);
    }
    const auto t0 = std::chrono::steady_clock::now();
    run_node(registry_, n, ins, outs);
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
      if (n.outputs[k] >= 0) slots_[static_cast<size_t>(n.outputs[k])] = std::move(outs[k]);
    }
  }
  std::vector<Tensor> result;
  result.reserve(g.outputs.size());
  for (int o : g.outputs) result.push_back(slots_[static_cast<size_t>(o)]);
  // Graph inputs are the caller's tensors: drop our references so they are not kept alive.
  for (int i : g.inputs) slots_[static_cast<size_t>(i)] = Tensor();
  return result;
}

int64_t Session::activation_bytes() const {
  int64_t total = 0;
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (!model_->graph.values[i].is_constant() && slots_[i].defined()) total += static_cast<int64_t>(slots_[i].nbytes());
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
