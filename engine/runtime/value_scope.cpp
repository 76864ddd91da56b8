#include "engine/runtime/value_scope.h"

#include <algorithm>

#include "engine/passes/pass_utils.h"

namespace xnn {

ValueIndex index_values(const Graph& g) {
  ValueIndex index;
  index.reserve(g.values.size());
  for (size_t i = 0; i < g.values.size(); ++i) index.emplace(g.values[i].name, static_cast<int>(i));
  return index;
}

std::optional<TensorInfo> ValueScope::find_info(const std::string& name) const {
  for (const ValueScope* s = this; s; s = s->parent) {
    if (!s->index) continue;
    auto it = s->index->find(name);
    if (it == s->index->end()) continue;
    const size_t i = static_cast<size_t>(it->second);
    const bool constant = s->graph && s->graph->value(it->second).is_constant();
    if (s->infos && (*s->infos)[i].dtype != DType::kUnknown) {
      const TensorInfo& info = (*s->infos)[i];
      return TensorInfo{info.dtype, info.shape, constant ? info.value : nullptr};
    }
    if (s->tensors && (*s->tensors)[i].defined()) {
      const Tensor& t = (*s->tensors)[i];
      return TensorInfo{t.dtype(), t.shape(), constant ? &t : nullptr};
    }
  }
  return std::nullopt;
}

const Tensor* ValueScope::find_tensor(const std::string& name) const {
  for (const ValueScope* s = this; s; s = s->parent) {
    if (!s->index || !s->tensors) continue;
    auto it = s->index->find(name);
    if (it == s->index->end()) continue;
    const Tensor& t = (*s->tensors)[static_cast<size_t>(it->second)];
    if (t.defined()) return &t;
  }
  return nullptr;
}

std::vector<int> implicit_inputs(const ValueIndex& index, const Node& n) {
  std::vector<int> out;
  for (const std::string& name : passes::node_outer_names(n)) {
    auto it = index.find(name);
    if (it != index.end()) out.push_back(it->second);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace xnn
