#include "engine/core/op_registry.h"

namespace xnn {

const TensorInfo& InferContext::input(int i) const {
  if (!has_input(i)) fail("input " + std::to_string(i) + " is required but missing");
  return inputs_[static_cast<size_t>(i)];
}

const Tensor& InferContext::input_value(int i) const {
  const TensorInfo& t = input(i);
  if (!t.value) {
    throw ValueNeededError(node_.describe() + ": input " + std::to_string(i) +
                           " must be a constant (its value decides the output shape)");
  }
  return *t.value;
}

void InferContext::set_output(int i, DType dtype, Shape shape) {
  if (i < 0 || i >= num_outputs()) return;  // optional output not requested
  for (int64_t d : shape) {
    if (d < 0) fail("inferred a negative dimension for output " + std::to_string(i) + ": " + shape_str(shape));
  }
  outputs_[static_cast<size_t>(i)] = TensorInfo{dtype, std::move(shape), nullptr};
}

void InferContext::fail(const std::string& msg) const { throw Error(node_.describe() + ": " + msg); }
void InferContext::unsupported(const std::string& msg) const {
  throw UnsupportedError(node_.describe() + ": " + msg);
}

const Tensor& KernelContext::input(int i) const {
  if (!has_input(i)) fail("input " + std::to_string(i) + " is required but missing");
  return *inputs_[static_cast<size_t>(i)];
}

Tensor& KernelContext::output(int i) const {
  if (!has_output(i)) fail("output " + std::to_string(i) + " is not available");
  return *outputs_[static_cast<size_t>(i)];
}

void KernelContext::fail(const std::string& msg) const { throw Error(node_.describe() + ": " + msg); }
void KernelContext::unsupported(const std::string& msg) const {
  throw UnsupportedError(node_.describe() + ": " + msg);
}

OpCost default_cost(const Node&, std::span<const TensorInfo> inputs, std::span<const TensorInfo> outputs) {
  OpCost c;
  for (const TensorInfo& t : inputs) {
    if (t.dtype != DType::kUnknown) c.bytes_read += static_cast<double>(shape_numel(t.shape) * dtype_size(t.dtype));
  }
  for (const TensorInfo& t : outputs) {
    if (t.dtype == DType::kUnknown) continue;
    c.bytes_written += static_cast<double>(shape_numel(t.shape) * dtype_size(t.dtype));
    c.macs += static_cast<double>(shape_numel(t.shape));
  }
  return c;
}

const OpRegistry& OpRegistry::builtin() {
  static const OpRegistry reg = [] {
    OpRegistry r;
    register_elementwise_ops(r);
    register_nn_ops(r);
    register_tensor_ops(r);
    register_reduce_ops(r);
    register_fused_ops(r);
    register_control_flow_ops(r);
    return r;
  }();
  return reg;
}

void OpRegistry::add(OpSchema schema) {
  const std::string key = schema.domain + ":" + schema.type;
  if (!schema.infer) throw Error("op " + schema.type + " registered without shape inference");
  if (!schema.reference && !schema.has_subgraphs)
    throw Error("op " + schema.type + " registered without a reference kernel");
  if (!ops_.emplace(key, std::move(schema)).second) throw Error("op " + key + " registered twice");
}

const OpSchema* OpRegistry::find(const std::string& type, const std::string& domain) const {
  const std::string d = domain == "ai.onnx" ? "" : domain;
  auto it = ops_.find(d + ":" + type);
  return it == ops_.end() ? nullptr : &it->second;
}

std::vector<std::string> OpRegistry::op_types() const {
  std::vector<std::string> out;
  for (const auto& [k, s] : ops_) out.push_back(s.domain.empty() ? s.type : s.domain + "." + s.type);
  return out;
}

std::vector<TensorInfo> infer_node(const OpSchema& schema, const Node& node,
                                   std::span<const TensorInfo> inputs, int num_outputs, SubgraphHost* subgraphs) {
  int present = 0;
  for (size_t i = 0; i < node.inputs.size(); ++i) present = node.inputs[i] >= 0 ? static_cast<int>(i) + 1 : present;
  if (present < schema.min_inputs || static_cast<int>(node.inputs.size()) > schema.max_inputs) {
    throw Error(node.describe() + ": takes " + std::to_string(schema.min_inputs) + ".." +
                (schema.max_inputs == OpSchema::kVariadic ? std::string("n") : std::to_string(schema.max_inputs)) +
                " inputs, got " + std::to_string(node.inputs.size()));
  }
  if (num_outputs < schema.min_outputs || num_outputs > schema.max_outputs) {
    throw Error(node.describe() + ": produces " + std::to_string(schema.min_outputs) + ".." +
                std::to_string(schema.max_outputs) + " outputs, graph asks for " + std::to_string(num_outputs));
  }
  std::vector<TensorInfo> outs(static_cast<size_t>(num_outputs));
  InferContext ctx(node, inputs, outs);
  ctx.set_subgraphs(subgraphs);
  schema.infer(ctx);
  for (size_t i = 0; i < outs.size(); ++i) {
    if (i < node.outputs.size() && node.outputs[i] >= 0 && outs[i].dtype == DType::kUnknown) {
      throw Error(node.describe() + ": shape inference produced no output " + std::to_string(i));
    }
  }
  return outs;
}

}  // namespace xnn
