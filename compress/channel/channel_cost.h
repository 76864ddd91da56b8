// Analytic cost of a channel-pruned model, without building it: a node's MACs scale with the
// kept fraction of the channels it reads and writes (a Conv or Gemm with both; a depthwise
// conv, BatchNorm or activation with its output's), a constant's size with the kept fraction
// of every axis a group slices. Exact for convs, Gemms and elementwise ops (their MACs are
// products of channel counts), so the ratio search can try thousands of keep-count
// combinations; the final model's MACs are measured on the pruned graph (graph_cost.h).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "compress/channel/channel_groups.h"
#include "compress/channel/channel_prune.h"

namespace xnn::channel {

class ChannelCostModel {
 public:
  ChannelCostModel(const Graph& graph, const ChannelAnalysis& analysis,
                   const std::map<std::string, Shape>& input_shapes = {});
  double macs(const KeepCounts& keep) const;
  // Any per-node quantity that scales like MACs (e.g. each node's measured time in the unpruned
  // model: a latency prediction), indexed by the graph's node index.
  double weighted(const std::vector<double>& per_node, const KeepCounts& keep) const;
  double params(const KeepCounts& keep) const;
  double base_macs() const { return base_macs_; }
  double base_params() const { return base_params_; }

 private:
  double fraction(int value, const KeepCounts& keep) const;
  const ChannelAnalysis& analysis_;
  std::vector<double> node_macs_;
  double base_macs_ = 0, base_params_ = 0;
  struct SlicedAxis {
    int64_t length = 0;
    std::vector<std::pair<int, int64_t>> groups;  // (group, positions per channel), once per member
  };
  struct SlicedConstant {
    double numel = 0;
    std::vector<SlicedAxis> axes;
  };
  std::vector<SlicedConstant> sliced_;
};

}  // namespace xnn::channel
