#include "compress/channel/channel_prune.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <numeric>

#include "engine/core/error.h"
#include "engine/runtime/graph_cost.h"

namespace xnn::channel {

int64_t round_keep(int64_t channels, double keep_fraction, int64_t multiple) {
  multiple = std::max<int64_t>(1, multiple);
  const double want = std::clamp(keep_fraction, 0.0, 1.0) * static_cast<double>(channels);
  int64_t k = static_cast<int64_t>(std::llround(want / static_cast<double>(multiple))) * multiple;
  k = std::max(k, std::min(multiple, channels));
  return std::clamp<int64_t>(k, 1, channels);
}

KeepCounts keep_all(const ChannelAnalysis& analysis) {
  KeepCounts k;
  for (const ChannelGroup& g : analysis.groups) k.push_back(g.channels);
  return k;
}

std::vector<std::vector<int64_t>> select_channels(const ChannelAnalysis& analysis, const ImportanceScores& scores,
                                                  const KeepCounts& keep) {
  XNN_CHECK(keep.size() == analysis.groups.size() && scores.per_group.size() == analysis.groups.size(),
            "select_channels: one keep count and one score vector per group expected");
  std::vector<std::vector<int64_t>> kept;
  for (size_t g = 0; g < analysis.groups.size(); ++g) {
    const int64_t n = analysis.groups[g].channels;
    std::vector<int64_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    const std::vector<double>& s = scores.per_group[g];
    // Stable: equal scores keep the lower channel index (deterministic).
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return s[static_cast<size_t>(a)] > s[static_cast<size_t>(b)];
    });
    order.resize(static_cast<size_t>(std::clamp<int64_t>(keep[g], 1, n)));
    std::sort(order.begin(), order.end());
    kept.push_back(std::move(order));
  }
  return kept;
}

namespace {

// The positions `keep` of `t` along `axis` (a copy).
Tensor take_along(const Tensor& t, int axis, const std::vector<int64_t>& keep) {
  Shape s = t.shape();
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= s[static_cast<size_t>(i)];
  for (size_t i = static_cast<size_t>(axis) + 1; i < s.size(); ++i) inner *= s[i];
  const int64_t len = s[static_cast<size_t>(axis)];
  s[static_cast<size_t>(axis)] = static_cast<int64_t>(keep.size());
  Tensor out(t.dtype(), s);
  const size_t row = static_cast<size_t>(inner) * dtype_size(t.dtype());
  const char* src = static_cast<const char*>(t.raw());
  char* dst = static_cast<char*>(out.raw());
  for (int64_t o = 0; o < outer; ++o)
    for (size_t i = 0; i < keep.size(); ++i)
      std::memcpy(dst + (static_cast<size_t>(o) * keep.size() + i) * row,
                  src + static_cast<size_t>(o * len + keep[i]) * row, row);
  return out;
}

}  // namespace

Model prune_channels(const Model& model, const ChannelAnalysis& analysis, const std::vector<std::vector<int64_t>>& kept) {
  XNN_CHECK(kept.size() == analysis.groups.size(), "prune_channels: one kept list per group expected");
  Model out = model;
  Graph& g = out.graph;
  // Per group: kept mask (empty when the group is untouched).
  std::vector<std::vector<char>> mask(analysis.groups.size());
  for (size_t gi = 0; gi < analysis.groups.size(); ++gi) {
    const ChannelGroup& grp = analysis.groups[gi];
    if (static_cast<int64_t>(kept[gi].size()) == grp.channels) continue;
    if (!grp.prunable) throw Error("channel group " + std::to_string(grp.id) + " '" + grp.name + "' is not prunable");
    XNN_CHECK(!kept[gi].empty(), "channel group '" + grp.name + "': at least one channel must be kept");
    mask[gi].assign(static_cast<size_t>(grp.channels), 0);
    for (int64_t c : kept[gi]) {
      XNN_CHECK(c >= 0 && c < grp.channels, "channel group '" + grp.name + "': channel " + std::to_string(c) + " out of range");
      mask[gi][static_cast<size_t>(c)] = 1;
    }
  }
  // Per (constant value, axis): which positions survive.
  std::map<std::pair<int, int>, std::vector<char>> positions;
  for (size_t gi = 0; gi < analysis.groups.size(); ++gi) {
    if (mask[gi].empty()) continue;
    for (const Member& m : analysis.groups[gi].members) {
      const Tensor& t = *model.graph.value(m.value).data;
      std::vector<char>& pos = positions[{m.value, m.axis}];
      if (pos.empty()) pos.assign(static_cast<size_t>(t.dim(m.axis)), 1);
      for (size_t c = 0; c < mask[gi].size(); ++c) {
        if (mask[gi][c]) continue;
        for (int64_t j = 0; j < m.inner; ++j) pos.at(static_cast<size_t>(m.offset + static_cast<int64_t>(c) * m.inner + j)) = 0;
      }
    }
  }
  for (const auto& [key, pos] : positions) {
    Value& v = g.value(key.first);
    std::vector<int64_t> keep;
    for (size_t i = 0; i < pos.size(); ++i)
      if (pos[i]) keep.push_back(static_cast<int64_t>(i));
    v.data = take_along(*v.data, key.second, keep);
    v.has_shape = true;
    v.shape.clear();
    for (int64_t d : v.data->shape()) v.shape.push_back(Dim::fixed(d));
  }
  // Channel dims of the values that carry pruned groups.
  auto new_channels = [&](int v) {
    int64_t c = 0;
    for (const Segment& s : analysis.layout[static_cast<size_t>(v)])
      c += (mask[static_cast<size_t>(s.group)].empty() ? s.count : static_cast<int64_t>(kept[static_cast<size_t>(s.group)].size())) * s.inner;
    return c;
  };
  for (size_t v = 0; v < g.values.size(); ++v) {
    if (analysis.layout[v].empty() || g.values[v].is_constant()) continue;
    Value& val = g.values[v];
    if (val.has_shape && val.shape.size() >= 2 && val.shape[1].known()) val.shape[1] = Dim::fixed(new_channels(static_cast<int>(v)));
  }
  for (size_t gi = 0; gi < analysis.groups.size(); ++gi) {
    if (mask[gi].empty()) continue;
    for (int k : analysis.groups[gi].depthwise_nodes) {
      Node& n = g.nodes[static_cast<size_t>(k)];
      n.attrs["group"] = Attribute(new_channels(n.outputs.at(0)));
    }
  }
  g.validate("channel-pruned model");
  // Shape inference over every node: a slicing mistake shows up here, naming the node.
  (void)estimate_graph_cost(g);
  return out;
}

Model prune_to_counts(const Model& model, const ChannelAnalysis& analysis, const ImportanceScores& scores,
                      const KeepCounts& keep) {
  return prune_channels(model, analysis, select_channels(analysis, scores, keep));
}

}  // namespace xnn::channel
