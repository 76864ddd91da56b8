// Building small float graphs by name for the quantiser tests.
#pragma once
#include <map>
#include <random>
#include <string>
#include <vector>

#include "engine/core/graph.h"

namespace xnn::quantize::test {

class GraphBuilder {
 public:
  // A float input [batch, dims...] with a symbolic batch dim.
  GraphBuilder& input(const std::string& name, const std::vector<int64_t>& dims) {
    Value v;
    v.name = name;
    v.dtype = DType::kF32;
    v.has_shape = true;
    v.shape.push_back(Dim::named("batch"));
    for (int64_t d : dims) v.shape.push_back(Dim::fixed(d));
    g_.inputs.push_back(g_.add_value(std::move(v)));
    return *this;
  }
  GraphBuilder& constant(const std::string& name, Tensor t) {
    g_.add_constant(name, std::move(t));
    return *this;
  }
  // Uniform random float constant in [-scale, scale].
  GraphBuilder& random_constant(const std::string& name, Shape shape, float scale, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-scale, scale);
    Tensor t(DType::kF32, std::move(shape));
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
    return constant(name, std::move(t));
  }
  GraphBuilder& node(const std::string& op, const std::string& name, const std::vector<std::string>& inputs,
                     const std::vector<std::string>& outputs, std::map<std::string, Attribute> attrs = {}) {
    Node n;
    n.op_type = op;
    n.name = name;
    n.attrs = std::move(attrs);
    for (const std::string& i : inputs) n.inputs.push_back(i.empty() ? -1 : index(i));
    for (const std::string& o : outputs) {
      Value v;
      v.name = o;
      v.dtype = DType::kF32;
      n.outputs.push_back(g_.add_value(std::move(v)));
    }
    g_.nodes.push_back(std::move(n));
    return *this;
  }
  // A graph output [batch, dims...] (ONNX export wants the outputs' shapes).
  GraphBuilder& output(const std::string& name, const std::vector<int64_t>& dims) {
    const int i = index(name);
    Value& v = g_.value(i);
    v.has_shape = true;
    v.shape = {Dim::named("batch")};
    for (int64_t d : dims) v.shape.push_back(Dim::fixed(d));
    g_.outputs.push_back(i);
    return *this;
  }
  Model model() const {
    Model m;
    m.graph = g_;
    m.graph.validate("test graph");
    return m;
  }

 private:
  int index(const std::string& name) const {
    const int i = g_.find_value(name);
    if (i < 0) throw Error("test graph: no value '" + name + "'");
    return i;
  }
  Graph g_;
};

inline Tensor random_tensor(Shape shape, float lo, float hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  Tensor t(DType::kF32, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

// conv(3x3, 1->8) -> relu -> maxpool 2x2 -> [conv(3x3, 8->8, pad 1) -> relu] + pooled -> relu
//   -> global average pool -> flatten -> gemm (8 -> 4): the rewrite tests' small network.
inline Model small_cnn() {
  GraphBuilder b;
  b.input("x", {1, 10, 10})
      .random_constant("w1", {8, 1, 3, 3}, 0.5f, 1)
      .random_constant("b1", {8}, 0.1f, 2)
      .random_constant("w2", {8, 8, 3, 3}, 0.2f, 3)
      .random_constant("b2", {8}, 0.1f, 4)
      .random_constant("wf", {4, 8}, 0.5f, 5)
      .random_constant("bf", {4}, 0.1f, 6)
      .node("Conv", "conv1", {"x", "w1", "b1"}, {"c1"}, {{"kernel_shape", std::vector<int64_t>{3, 3}}})
      .node("Relu", "relu1", {"c1"}, {"r1"})
      .node("MaxPool", "pool1", {"r1"}, {"p1"},
            {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}})
      .node("Conv", "conv2", {"p1", "w2", "b2"}, {"c2"},
            {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}})
      .node("Relu", "relu2", {"c2"}, {"r2"})
      .node("Add", "add", {"r2", "p1"}, {"s"})
      .node("Relu", "relu3", {"s"}, {"r3"})
      .node("GlobalAveragePool", "gap", {"r3"}, {"g"})
      .node("Flatten", "flatten", {"g"}, {"f"})
      .node("Gemm", "fc", {"f", "wf", "bf"}, {"y"}, {{"transB", int64_t{1}}})
      .output("y", {4});
  return b.model();
}

}  // namespace xnn::quantize::test
