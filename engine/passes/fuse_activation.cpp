#include "engine/passes/fuse_activation.h"

#include <cmath>
#include <limits>
#include <optional>

#include "engine/passes/pass_utils.h"

namespace xnn {
namespace {

using kernels::Activation;
using kernels::ActKind;
using passes::input_at;

// The fused form of a standalone activation node, when it has one.
std::optional<Activation> activation_of_node(const Graph& g, const Node& n) {
  if (!n.domain.empty() && n.domain != "ai.onnx") return std::nullopt;
  if (n.op_type == "Relu") return Activation::relu();
  if (n.op_type == "Sigmoid") return Activation{ActKind::kSigmoid};
  if (n.op_type == "HardSwish") return Activation{ActKind::kHardSwish};
  if (n.op_type == "LeakyRelu") return Activation::leaky_relu(n.attr_float("alpha", 0.01f));
  if (n.op_type == "HardSigmoid") {
    return Activation{ActKind::kHardSigmoid, n.attr_float("alpha", 0.2f), n.attr_float("beta", 0.5f)};
  }
  if (n.op_type == "Clip") {
    float bound[2] = {std::numeric_limits<float>::lowest(), std::numeric_limits<float>::max()};
    for (size_t i = 1; i <= 2; ++i) {
      if (input_at(n, i) < 0) continue;
      const Tensor* t = passes::constant_input(g, n, i);
      if (!t || t->dtype() != DType::kF32 || t->numel() != 1) return std::nullopt;
      bound[i - 1] = t->data<float>()[0];
    }
    if (std::isnan(bound[0]) || std::isnan(bound[1]) || bound[0] > bound[1]) return std::nullopt;
    return Activation::clip(bound[0], bound[1]);
  }
  return std::nullopt;
}

// Sigmoid -> SiLU and HardSigmoid(1/6, 0.5) -> HardSwish once multiplied by their own input.
std::optional<Activation> gated_activation(const Node& gate) {
  if (!gate.domain.empty() && gate.domain != "ai.onnx") return std::nullopt;
  if (gate.op_type == "Sigmoid") return Activation{ActKind::kSilu};
  if (gate.op_type == "HardSigmoid" && std::fabs(gate.attr_float("alpha", 0.2f) - 1.0f / 6.0f) < 1e-6f &&
      gate.attr_float("beta", 0.5f) == 0.5f) {
    return Activation{ActKind::kHardSwish};
  }
  return std::nullopt;
}

class ActivationFuser {
 public:
  explicit ActivationFuser(Graph& g) : g_(g), uses_(g) {}

  int run() {
    remove_.assign(g_.nodes.size(), 0);
    int fused = 0;
    for (size_t k = 0; k < g_.nodes.size(); ++k) {
      const Node& n = g_.nodes[k];
      if (!passes::single_output(n) || input_at(n, 0) < 0) continue;
      if (passes::is_op(n, "Mul")) {
        fused += fuse_gated(k) ? 1 : 0;
        continue;
      }
      const int x = n.inputs[0];
      const std::optional<Activation> act = activation_of_node(g_, n);
      if (!act || !uses_.single_private_use(x)) continue;
      const int p = fusable_producer(x);
      if (p < 0) continue;
      fuse(p, *act, n.outputs[0]);
      remove_[k] = 1;
      ++fused;
    }
    if (fused) passes::erase_nodes(g_, remove_);
    return fused;
  }

 private:
  // The index of x's producer when it can take an activation, else -1.
  int fusable_producer(int x) const {
    const int p = uses_.producer[static_cast<size_t>(x)];
    if (p < 0) return -1;
    const Node& n = g_.nodes[static_cast<size_t>(p)];
    if (!(passes::is_conv_like(n) || passes::is_gemm_like(n)) || passes::has_activation(n)) return -1;
    if (!passes::single_output(n) || passes::known_input_dtype(g_, n) != DType::kF32) return -1;
    return p;
  }

  // Mul(x, gate(x)) or Mul(gate(x), x) at node k.
  bool fuse_gated(size_t k) {
    const Node& mul = g_.nodes[k];
    if (mul.inputs.size() != 2 || mul.inputs[1] < 0 || mul.inputs[0] == mul.inputs[1]) return false;
    for (size_t i = 0; i < 2; ++i) {
      const int gate_out = mul.inputs[i], x = mul.inputs[1 - i];
      const int gk = uses_.producer[static_cast<size_t>(gate_out)];
      if (gk < 0 || !uses_.single_private_use(gate_out)) continue;
      const Node& gate = g_.nodes[static_cast<size_t>(gk)];
      const std::optional<Activation> act = gated_activation(gate);
      if (!act || !passes::single_output(gate) || input_at(gate, 0) != x) continue;
      // x is read by exactly the gate and the Mul.
      const size_t xs = static_cast<size_t>(x);
      if (uses_.uses(x) != 2 || uses_.graph_output[xs] || uses_.pinned[xs]) continue;
      const int p = fusable_producer(x);
      if (p < 0) continue;
      fuse(p, *act, mul.outputs[0]);
      remove_[static_cast<size_t>(gk)] = 1;
      remove_[k] = 1;
      return true;
    }
    return false;
  }

  // Producer p takes `act` and writes `y` in place of its old output.
  void fuse(int p, const Activation& act, int y) {
    Node& prod = g_.nodes[static_cast<size_t>(p)];
    const int x = prod.outputs[0];
    passes::make_fused(prod);
    passes::set_activation(prod, act);
    prod.outputs[0] = y;
    uses_.producer[static_cast<size_t>(y)] = p;
    uses_.producer[static_cast<size_t>(x)] = -1;
    uses_.consumers[static_cast<size_t>(x)].clear();
  }

  Graph& g_;
  passes::UseInfo uses_;
  std::vector<char> remove_;
};

}  // namespace

int fuse_activation(Graph& g) { return ActivationFuser(g).run(); }

}  // namespace xnn
