// Physically removes channels: every member constant of a pruned group is sliced (Conv output
// filters and biases, the next Conv's input channels, BatchNorm parameters, depthwise filters
// and their `group` attribute, Gemm columns after Flatten, per-channel constants), the channel
// dims of the values that carry the group shrink, and the result is validated and its shapes
// re-inferred. The result is an ordinary, smaller model: no masks.
#pragma once
#include <cstdint>
#include <vector>

#include "compress/channel/channel_groups.h"
#include "compress/channel/channel_importance.h"

namespace xnn::channel {

// Channels to keep when keeping `keep_fraction` of `channels`, rounded to a multiple of
// `multiple` (our AVX2 kernels prefer multiples of 8), at least min(multiple, channels) and at
// most `channels`.
int64_t round_keep(int64_t channels, double keep_fraction, int64_t multiple);

// Per group, how many channels to keep (unprunable groups must keep all).
using KeepCounts = std::vector<int64_t>;
KeepCounts keep_all(const ChannelAnalysis& analysis);

// The `keep[g]` most important channels of each group, in ascending channel order.
std::vector<std::vector<int64_t>> select_channels(const ChannelAnalysis& analysis, const ImportanceScores& scores,
                                                  const KeepCounts& keep);

// The model with only the listed channels of each group (`kept[g]` ascending; all channels for
// groups left alone). Throws an Error when asked to prune an unprunable group, or when the
// pruned graph does not validate (naming what failed).
Model prune_channels(const Model& model, const ChannelAnalysis& analysis,
                     const std::vector<std::vector<int64_t>>& kept);

// Convenience: select by `scores` and prune to `keep`.
Model prune_to_counts(const Model& model, const ChannelAnalysis& analysis, const ImportanceScores& scores,
                      const KeepCounts& keep);

}  // namespace xnn::channel
