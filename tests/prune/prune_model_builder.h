// Test helpers shared by the pruning tests (tests/prune, tests/pattern): a normal(0, 0.5) random
// tensor and a tiny graph builder (inputs, random weights, nodes with one output each).
#pragma once
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/core/graph.h"

namespace xnn::prune::test {

Tensor random_tensor(const Shape& shape, std::mt19937& rng) {
  std::normal_distribution<float> dist(0.0f, 0.5f);
  Tensor t(DType::kF32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng);
  return t;
}

struct Builder {
  std::shared_ptr<Model> model = std::make_shared<Model>();
  std::mt19937 rng;
  explicit Builder(unsigned seed = 42) : rng(seed) {}
  Graph& g() { return model->graph; }
  int input(const std::string& name, const Shape& shape) {
    Value v;
    v.name = name;
    v.dtype = DType::kF32;
    v.has_shape = true;
    for (int64_t d : shape) v.shape.push_back(Dim::fixed(d));
    const int i = g().add_value(v);
    g().inputs.push_back(i);
    return i;
  }
  int weight(const std::string& name, const Shape& shape) { return g().add_constant(name, random_tensor(shape, rng)); }
  int node(const std::string& op, const std::string& name, std::vector<int> inputs,
           std::map<std::string, Attribute> attrs = {}) {
    Node n;
    n.op_type = op;
    n.name = name;
    n.inputs = std::move(inputs);
    n.attrs = std::move(attrs);
    Value v;
    v.name = name + "_out";
    v.dtype = DType::kF32;
    n.outputs = {g().add_value(v)};
    g().nodes.push_back(n);
    return n.outputs[0];
  }
};

}  // namespace xnn::prune::test
