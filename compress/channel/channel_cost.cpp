#include "compress/channel/channel_cost.h"

#include <set>
#include <tuple>

#include "engine/runtime/graph_cost.h"

namespace xnn::channel {

ChannelCostModel::ChannelCostModel(const Graph& graph, const ChannelAnalysis& analysis,
                                   const std::map<std::string, Shape>& input_shapes)
    : analysis_(analysis) {
  const GraphCost cost = estimate_graph_cost(graph, input_shapes);
  node_macs_.assign(graph.nodes.size(), 0.0);
  for (const NodeCost& nc : cost.nodes) node_macs_[nc.node_index] += nc.cost.macs;
  for (double m : node_macs_) base_macs_ += m;
  base_params_ = static_cast<double>(graph.parameter_count());
  // Group members by constant and axis; a member listed twice (same group, offset) counts once.
  std::map<int, std::map<int, std::set<std::tuple<int, int64_t, int64_t>>>> by_value;
  for (const ChannelGroup& g : analysis.groups)
    for (const Member& m : g.members) by_value[m.value][m.axis].insert({g.id, m.offset, m.inner});
  for (const auto& [value, axes] : by_value) {
    const Tensor& t = *graph.value(value).data;
    SlicedConstant sc;
    sc.numel = static_cast<double>(t.numel());
    for (const auto& [axis, members] : axes) {
      SlicedAxis sa;
      sa.length = t.dim(axis);
      for (const auto& [group, offset, inner] : members) sa.groups.push_back({group, inner});
      sc.axes.push_back(std::move(sa));
    }
    sliced_.push_back(std::move(sc));
  }
}

double ChannelCostModel::fraction(int value, const KeepCounts& keep) const {
  double total = 0, kept = 0;
  for (const Segment& s : analysis_.layout[static_cast<size_t>(value)]) {
    total += static_cast<double>(s.count * s.inner);
    kept += static_cast<double>(keep[static_cast<size_t>(s.group)] * s.inner);
  }
  return total > 0 ? kept / total : 1.0;
}

double ChannelCostModel::macs(const KeepCounts& keep) const { return weighted(node_macs_, keep); }

double ChannelCostModel::weighted(const std::vector<double>& per_node, const KeepCounts& keep) const {
  double total = 0;
  for (size_t k = 0; k < per_node.size() && k < analysis_.cost_values.size(); ++k) {
    if (per_node[k] == 0) continue;
    double f = 1;
    for (int v : analysis_.cost_values[k]) f *= fraction(v, keep);
    total += per_node[k] * f;
  }
  return total;
}

double ChannelCostModel::params(const KeepCounts& keep) const {
  double total = base_params_;
  for (const SlicedConstant& sc : sliced_) {
    double f = 1;
    for (const SlicedAxis& sa : sc.axes) {
      double removed = 0;
      for (const auto& [group, inner] : sa.groups) {
        const ChannelGroup& g = analysis_.groups[static_cast<size_t>(group)];
        removed += static_cast<double>((g.channels - keep[static_cast<size_t>(group)]) * inner);
      }
      f *= (static_cast<double>(sa.length) - removed) / static_cast<double>(sa.length);
    }
    total -= sc.numel * (1 - f);
  }
  return total;
}

}  // namespace xnn::channel
