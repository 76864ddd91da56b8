// Channel dependency analysis for structured pruning, on the unoptimised (ONNX-level) graph.
//
// A channel group is a set of channels that must be kept or removed together: the output
// channels of a Conv/Gemm, followed through everything that keeps channel identity (BatchNorm,
// activations, pooling, depthwise convs) up to the consumers that read them (the next Conv's
// input channels, Gemm input columns). Residual Add/Mul merge the groups of their inputs (all
// producers feeding one Add share one group; a Squeeze-Excite Mul by [N,C,1,1] ties the SE
// expand conv to the features it scales). Concat along channels lays several groups side by
// side (a consumer reads each at its offset). Flatten (or a provable Reshape to [N,-1]) makes a
// channel span H*W consecutive Gemm input columns.
//
// The channel axis is axis 1 of every tracked value (NCHW, or [N,F] after Flatten/Gemm); values
// of rank < 2 carry no channels. Anything else that touches a channel axis (Shape reading a
// channel count, grouped convs that are not depthwise, Softmax over channels, ops we do not
// know) makes the groups it touches unprunable, with the reason recorded: never silently
// wrong. Graph inputs' and outputs' channels are never pruned.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/core/graph.h"

namespace xnn::channel {

// A run of `count` channels of group `group` inside a value's channel axis; each channel spans
// `inner` consecutive positions (1 on an NCHW channel axis, H*W after Flatten).
struct Segment {
  int group = -1;
  int64_t count = 0;
  int64_t inner = 1;
};

// What a member constant is to its node (importance scores read weights and BN scales).
enum class ParamKind { kWeight, kBias, kBnScale, kBnShift, kBnMean, kBnVar, kPerChannel };
// How the node uses the group's channels: it produces them (Conv/Gemm output), transforms each
// one on its own (BatchNorm, a depthwise conv, a per-channel constant), or reads them all
// (the next Conv's input channels, Gemm input columns).
enum class MemberRole { kProducer, kPerChannel, kDepthwise, kConsumer };

// One constant tensor slice tied to a group: along `axis` of constant value `value`, the
// group's channel c occupies positions [offset + c*inner, offset + (c+1)*inner).
struct Member {
  int node = -1;
  int value = -1;
  int axis = 0;
  int64_t offset = 0;
  int64_t inner = 1;
  MemberRole role = MemberRole::kProducer;
  ParamKind kind = ParamKind::kWeight;
};

struct ChannelGroup {
  int id = 0;
  std::string name;           // the first producing node's name (or the value's) for reports
  int64_t channels = 0;
  bool prunable = true;
  std::vector<std::string> reasons;  // why not prunable (empty when prunable)
  std::vector<Member> members;
  std::vector<int> values;           // values whose channel axis carries (part of) this group
  std::vector<int> depthwise_nodes;  // depthwise Convs whose `group` attribute follows the group
  int producers() const;             // members with role kProducer and kind kWeight
  bool residual = false;             // merged at an Add/Mul/Sum of two computed tensors
};

struct ChannelAnalysis {
  std::vector<ChannelGroup> groups;
  // Per value (graph value index): the segments of its channel axis; empty when untracked.
  std::vector<std::vector<Segment>> layout;
  // Per node: its MACs share follows these values' channel fractions (filled for costing).
  std::vector<std::vector<int>> cost_values;

  int prunable_count() const;
  // Total channels of a value's tracked axis (0 when untracked).
  int64_t channels_of(int value) const;
};

// Analyses `graph` (shapes from the op inference; `input_shapes` bind symbolic input dims,
// unbound symbols count as 1). Throws an Error naming the node only when the graph itself is
// inconsistent; unsupported patterns become unprunable groups.
ChannelAnalysis analyze_channels(const Graph& graph, const std::map<std::string, Shape>& input_shapes = {});

// Multi-line report: one line per group (name, channels, members, residual/depthwise,
// prunable or the reasons it is not).
std::string describe_groups(const Graph& graph, const ChannelAnalysis& analysis);

}  // namespace xnn::channel
