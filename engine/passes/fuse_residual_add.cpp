#include "engine/passes/fuse_residual_add.h"

#include <algorithm>

#include "engine/passes/pass_utils.h"

namespace xnn {
namespace {

class ResidualAddFuser {
 public:
  explicit ResidualAddFuser(Graph& g) : g_(g), uses_(g) {}

  int run() {
    std::vector<char> remove(g_.nodes.size(), 0);
    int fused = 0;
    for (size_t k = 0; k < g_.nodes.size(); ++k) {
      const Node& add = g_.nodes[k];
      if (remove[k] || !passes::is_op(add, "Add") || add.inputs.size() != 2 || !passes::single_output(add)) continue;
      const int a = add.inputs[0], b = add.inputs[1];
      if (a < 0 || b < 0 || a == b) continue;
      const bool a_ok = qualifies(a, b), b_ok = qualifies(b, a);
      if (!a_ok && !b_ok) continue;
      // Both convs qualify: take the one whose Z is produced earlier (graph inputs and constants
      // first), so the fused node rarely has to wait for its Z.
      const bool pick_a = a_ok && (!b_ok || producer(b) <= producer(a));
      const int conv_out = pick_a ? a : b, z = pick_a ? b : a;
      const size_t p = static_cast<size_t>(producer(conv_out));
      Node node = std::move(g_.nodes[p]);
      passes::make_fused(node);
      if (node.inputs.size() < 4) node.inputs.resize(4, -1);
      node.inputs[3] = z;
      node.outputs[0] = add.outputs[0];
      const size_t slot = producer(z) < static_cast<int>(p) ? p : k;
      const size_t gone = slot == p ? k : p;
      relocate(node, gone, slot);
      uses_.producer[static_cast<size_t>(node.outputs[0])] = static_cast<int>(slot);
      uses_.producer[static_cast<size_t>(conv_out)] = -1;
      uses_.consumers[static_cast<size_t>(conv_out)].clear();
      g_.nodes[slot] = std::move(node);
      remove[gone] = 1;
      ++fused;
    }
    if (fused) passes::erase_nodes(g_, remove);
    return fused;
  }

 private:
  int producer(int v) const { return uses_.producer[static_cast<size_t>(v)]; }

  // `conv_out` (an Add operand) comes from a conv that can take `other` as Z.
  bool qualifies(int conv_out, int other) const {
    const int p = producer(conv_out);
    if (p < 0 || !uses_.single_private_use(conv_out)) return false;
    const Node& conv = g_.nodes[static_cast<size_t>(p)];
    if (!passes::is_conv_like(conv) || passes::has_activation(conv) || passes::has_residual(conv)) return false;
    if (!passes::single_output(conv) || passes::known_input_dtype(g_, conv) != DType::kF32) return false;
    const Value& a = g_.value(conv_out);
    const Value& b = g_.value(other);
    const DType b_dtype = b.is_constant() ? b.data->dtype() : b.dtype;
    if (b_dtype != DType::kF32 || !a.shape_fully_known() || !b.shape_fully_known()) return false;
    return a.static_shape() == b.static_shape();
  }

  // The node moving from slot `from` to slot `to` is recorded as its inputs' reader there.
  void relocate(const Node& n, size_t from, size_t to) {
    for (int i : n.inputs) {
      if (i < 0) continue;
      for (int& c : uses_.consumers[static_cast<size_t>(i)]) {
        if (c == static_cast<int>(from)) c = static_cast<int>(to);
      }
    }
  }

  Graph& g_;
  passes::UseInfo uses_;
};

}  // namespace

int fuse_residual_add(Graph& g) { return ResidualAddFuser(g).run(); }

}  // namespace xnn
