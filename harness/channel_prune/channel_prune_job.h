// A channel-pruning job (`xnn-lab prune --method channel`): dependency analysis, importance,
// sensitivity scan on held-out data, per-group ratios under a FLOPs or parameter target,
// physical pruning, optional fine-tuning with the trainer, top-1 before / after.
//
// Data: for a Fashion-MNIST-shaped model ([N,1,28,28] input) the sensitivity scan (and Taylor
// importance) use the first `calib_images` of the TRAIN split, never the test split that top-1
// is reported on; other models (torchvision at 224) get deterministic random N(0,1) inputs and
// are scanned by the logits' noise-to-signal ratio only (Taylor then is refused: no labels).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "compress/channel/channel_groups.h"
#include "compress/channel/ratio_search.h"
#include "engine/core/graph.h"

namespace xnn::channel_job {

struct ChannelPruneRequest {
  std::string model_path;
  std::string importance = "l1";  // l1 | l2 | bn | taylor
  std::string target = "flops";   // flops | params
  double ratio = 0.5;             // keep this share of the target cost
  int64_t round_to = 8;           // kept channels per group: a multiple of this
  double max_fraction = 0.9;      // at most this share of one group is removed
  // How steps are ranked: "flops" (damage per MAC saved) or "latency" (damage per millisecond
  // saved, predicted from each node's time in a profiled run of the unpruned model).
  std::string rank_by = "flops";
  std::vector<double> fractions = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9};
  // Calibration (sensitivity scan, Taylor).
  std::string data_dir;
  int64_t calib_images = 256, calib_batch = 64;
  // Preprocessing of Fashion-MNIST pixels: x = (pixel * scale - mean) / std.
  float scale = 1.0f / 255.0f, mean = 0.0f, std = 1.0f;
  // Top-1 before / after on the first eval_limit test images (0 = all); with only a fine-tuning
  // config, on its data.test_limit images and with its normalisation.
  bool evaluate = false;
  int64_t eval_limit = 0;
  // Fine-tuning: a training config then KEY=VALUE overrides (empty: none).
  std::vector<std::string> finetune;
  std::string finetune_dir;       // where the trainer writes (checkpoints)
  int threads = 1;
};

struct GroupResult {
  int id = 0;
  std::string name;
  int64_t total = 0, kept = 0;
  bool prunable = false, residual = false;
  int depthwise = 0;
  std::vector<std::string> reasons;
};

struct ChannelPruneOutcome {
  std::vector<GroupResult> groups;
  int prunable_groups = 0;
  double macs_before = 0, macs_after = 0;  // measured on the graphs (graph_cost)
  double params_before = 0, params_after = 0;
  double target_cost = 0, achieved_cost = 0;  // in the target's unit
  bool target_met = false;
  int importance_fallbacks = 0;  // groups scored by L1 for lack of a BatchNorm (importance bn)
  std::string calibration;       // "256 Fashion-MNIST train images" / "random N(0,1) inputs"
  bool has_top1 = false;
  double top1_before = 0, top1_pruned = 0, top1_finetuned = -1;
  int64_t eval_samples = 0;
  std::string finetune_dir;
};

using ProgressFn = std::function<void(const std::string&)>;

// Prunes `model` in place (it becomes the smaller model). Throws an Error naming the option or
// file for bad input.
ChannelPruneOutcome run_channel_pruning(const ChannelPruneRequest& request, std::shared_ptr<Model>& model,
                                        const ProgressFn& progress);

void print_channel_text(const ChannelPruneRequest& request, const std::string& output_path, const ChannelPruneOutcome& o);
std::string channel_json(const ChannelPruneRequest& request, const std::string& output_path, const ChannelPruneOutcome& o);

}  // namespace xnn::channel_job
