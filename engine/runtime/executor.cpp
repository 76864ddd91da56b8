#include "engine/runtime/executor.h"

namespace xnn {

const OpSchema& schema_for(const OpRegistry& registry, const Node& node) {
  const OpSchema* s = registry.find(node.op_type, node.domain);
  if (!s) throw UnsupportedError(node.describe() + ": op type '" + node.op_type + "' is not supported");
  return *s;
}

void run_node(const OpRegistry& registry, const Node& node, std::span<const Tensor* const> inputs,
              std::vector<Tensor>& outputs, SubgraphHost* subgraphs) {
  const OpSchema& schema = schema_for(registry, node);
  if (schema.has_subgraphs) {
    if (!subgraphs) throw UnsupportedError(node.describe() + ": control flow needs a runtime that runs its subgraphs");
    const size_t nout = node.outputs.size();
    outputs.assign(nout, Tensor());
    std::vector<Tensor*> out_ptrs(nout, nullptr);
    for (size_t i = 0; i < nout; ++i) {
      if (node.outputs[i] >= 0) out_ptrs[i] = &outputs[i];
    }
    KernelContext ctx(node, inputs, out_ptrs);
    ctx.set_subgraphs(subgraphs);
    schema.reference(ctx);
    for (size_t i = 0; i < nout; ++i) {
      if (out_ptrs[i] && !outputs[i].defined()) throw Error(node.describe() + ": produced no output " + std::to_string(i));
    }
    return;
  }
  std::vector<TensorInfo> infos(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i] && inputs[i]->defined()) infos[i] = TensorInfo{inputs[i]->dtype(), inputs[i]->shape(), inputs[i]};
  }
  const int nout = static_cast<int>(node.outputs.size());
  std::vector<TensorInfo> out_infos = infer_node(schema, node, infos, nout);
  outputs.resize(static_cast<size_t>(nout));
  std::vector<Tensor*> out_ptrs(static_cast<size_t>(nout), nullptr);
  for (size_t i = 0; i < out_infos.size(); ++i) {
    if (node.outputs[i] < 0 || out_infos[i].dtype == DType::kUnknown) continue;
    Tensor& t = outputs[i];
    const bool reusable = t.defined() && t.dtype() == out_infos[i].dtype && t.shape() == out_infos[i].shape &&
                          t.buffer().use_count() == 1 && t.buffer()->owns_memory();
    if (!reusable) t = Tensor(out_infos[i].dtype, out_infos[i].shape);
    out_ptrs[i] = &t;
  }
  KernelContext ctx(node, inputs, out_ptrs);
  schema.reference(ctx);
}

}  // namespace xnn
