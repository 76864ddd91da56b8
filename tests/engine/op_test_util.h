// Running one op node outside a graph, for the op-family tests (ops_*_test.cpp).
#pragma once
#include <map>
#include <string>
#include <vector>

#include "engine/runtime/executor.h"

namespace xnn::op_test {

using Attrs = std::map<std::string, Attribute>;

// Runs one node through the registry's reference kernel. Undefined tensors in `inputs` are
// absent optional inputs. Errors name the node "node_under_test" unless `name` says otherwise.
inline std::vector<Tensor> run_op(const std::string& op, const std::vector<Tensor>& inputs, const Attrs& attrs = {},
                                  int num_outputs = 1, const std::string& domain = "",
                                  const std::string& name = "node_under_test") {
  Node node;
  node.op_type = op;
  node.domain = domain;
  node.name = name;
  node.attrs = attrs;
  std::vector<const Tensor*> ptrs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    node.inputs.push_back(inputs[i].defined() ? static_cast<int>(i) : -1);
    ptrs.push_back(inputs[i].defined() ? &inputs[i] : nullptr);
  }
  for (int i = 0; i < num_outputs; ++i) node.outputs.push_back(100 + i);
  std::vector<Tensor> outputs;
  run_node(OpRegistry::builtin(), node, ptrs, outputs);
  return outputs;
}

}  // namespace xnn::op_test
