#include "engine/passes/remove_identity.h"

#include <algorithm>

#include "engine/passes/pass_utils.h"

namespace xnn {
namespace {

using passes::UseInfo;

// Identity, or a Dropout that is the identity: inference mode and nobody reads the mask.
bool is_identity_like(const Graph& g, const Node& n, const UseInfo& uses) {
  if (n.outputs.empty() || n.outputs[0] < 0 || passes::input_at(n, 0) < 0) return false;
  if (passes::is_op(n, "Identity")) return n.outputs.size() == 1;
  if (!passes::is_op(n, "Dropout")) return false;
  if (passes::input_at(n, 2) >= 0) {
    const Tensor* mode = passes::constant_input(g, n, 2);
    if (!mode || mode->numel() != 1 || mode->scalar_as_double(0) != 0) return false;
  }
  for (size_t i = 1; i < n.outputs.size(); ++i) {
    const int o = n.outputs[i];
    if (o < 0) continue;
    if (uses.uses(o) > 0 || uses.graph_output[static_cast<size_t>(o)] || uses.pinned[static_cast<size_t>(o)]) {
      return false;
    }
  }
  return true;
}

}  // namespace

int remove_identity(Graph& g) {
  UseInfo uses(g);
  std::vector<char> remove(g.nodes.size(), 0);
  int removed = 0;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = g.nodes[k];
    if (!is_identity_like(g, n, uses)) continue;
    const int x = n.inputs[0], y = n.outputs[0];
    const size_t xs = static_cast<size_t>(x), ys = static_cast<size_t>(y);
    if (x == y) continue;
    if (!uses.graph_output[ys] && !uses.pinned[ys]) {
      // y is private to the main graph: its readers read x instead.
      for (int c : uses.consumers[ys]) {
        for (int& i : g.nodes[static_cast<size_t>(c)].inputs) {
          if (i == y) i = x;
        }
        uses.consumers[xs].push_back(c);
      }
      uses.consumers[ys].clear();
      auto& xc = uses.consumers[xs];
      xc.erase(std::find(xc.begin(), xc.end(), static_cast<int>(k)));
    } else {
      // y's name must survive: x's producer produces y, and x's other readers read y (the
      // producer precedes all of them, so the order stays topological).
      const int p = uses.producer[xs];
      if (p < 0 || uses.graph_output[xs] || uses.pinned[xs]) continue;
      for (int& o : g.nodes[static_cast<size_t>(p)].outputs) {
        if (o == x) o = y;
      }
      uses.producer[ys] = p;
      uses.producer[xs] = -1;
      for (int c : uses.consumers[xs]) {
        if (static_cast<size_t>(c) == k) continue;
        for (int& i : g.nodes[static_cast<size_t>(c)].inputs) {
          if (i == x) i = y;
        }
        uses.consumers[ys].push_back(c);
      }
      uses.consumers[xs].clear();
      // x now holds what y held; carry the dtype/shape knowledge across if y lacked it.
      if (g.value(y).dtype == DType::kUnknown) {
        g.value(y).dtype = g.value(x).dtype;
        if (!g.value(y).has_shape) {
          g.value(y).has_shape = g.value(x).has_shape;
          g.value(y).shape = g.value(x).shape;
        }
      }
    }
    remove[k] = 1;
    ++removed;
  }
  if (removed) passes::erase_nodes(g, remove);
  return removed;
}

}  // namespace xnn
