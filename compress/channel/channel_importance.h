// Per-channel importance scores of each channel group, aggregated over the group's members
// (higher = more important; pruning removes the lowest). Scores are comparable within a group
// only: the ratio search decides how much of each group goes, the scores decide which channels.
//
//   kL1, kL2: the L1/L2 norm of each channel's output filter in every producer (Conv/Gemm
//             weights) and depthwise filter; each member's scores are divided by their mean
//             first so that one producer of a residual group does not dominate by its scale.
//   kBnGamma: |gamma| of the group's BatchNormalizations (network slimming), summed; a group
//             without BatchNorm falls back to kL1 (`fallbacks` counts them).
//   kTaylor:  first-order Taylor |sum over batches and positions of activation * gradient| of
//             the loss, measured on the values of the group (see channel_taylor.h).
#pragma once
#include <string>
#include <vector>

#include "compress/channel/channel_groups.h"

namespace xnn::channel {

enum class Importance { kL1, kL2, kBnGamma, kTaylor };
Importance parse_importance(const std::string& name);  // "l1", "l2", "bn", "taylor"
std::string importance_name(Importance i);

struct ImportanceScores {
  std::vector<std::vector<double>> per_group;  // [group][channel]
  int fallbacks = 0;                           // groups scored by L1 instead (no BatchNorm)
};

// Weight-based scores (kL1, kL2, kBnGamma). kTaylor needs data: channel_taylor.h.
ImportanceScores weight_importance(const Graph& graph, const ChannelAnalysis& analysis, Importance kind);

}  // namespace xnn::channel
