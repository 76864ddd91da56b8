// xnn-lab prune MODEL -o OUT.xnn --method unstructured (--target-sparsity X | --target-flops X)
//   [--schedule oneshot|gradual] [--scope layer|global] [--prune-first-conv] [--prune-depthwise]
//   [--min-elements N] [--finetune TRAIN_CONFIG.yaml [KEY=VALUE ...]]
//   [--eval-dataset fashion-mnist [--data-dir DIR] [--eval-limit N] [--scale S --mean M --std D]]
//   [--threads N] [--json]
// xnn-lab prune MODEL -o OUT.xnn --method channel (--target-flops X | --target-params X)
//   [--importance l1|l2|bn|taylor] [--rank-by flops|latency] [--round-to N] [--max-prune X] [--calib-images N]
//   [--finetune TRAIN_CONFIG.yaml [KEY=VALUE ...]] [--eval-dataset fashion-mnist ...]
//   (channels physically removed: harness/channel_prune/channel_prune_job.h)
// xnn-lab prune MODEL -o OUT.xnn --method pattern (--target-sparsity X | --target-flops X)
//   [--pattern-taps K] [--pattern-library P] [--schedule oneshot|gradual] [--prune-first-conv]
//   [--min-elements N] [--finetune TRAIN_CONFIG.yaml [KEY=VALUE ...]] [--eval-dataset ...]
//
// Pruning (issue 9). --method unstructured: magnitude pruning of Conv/Gemm/MatMul weights
// (compress/prune/magnitude_prune.h for which weights and the per-layer/global scope), one-shot
// or with the Zhu & Gupta gradual schedule during fine-tuning (--schedule gradual needs
// --finetune). --target-sparsity X: share of zero weights among the prunable ones;
// --target-flops X: share of the dense model's MACs left after skipping zero weights (per-layer
// scope: every pruned layer gets the sparsity that reaches it). The output is a dense .xnn with
// zeros; the CPU backend runs sparse kernels where the zeros pay.
//
// --method pattern: the 3x3 group-1 convolutions get K-of-9 patterns from a library of P learned
// from the weights, plus connectivity pruning of whole kernels (compress/prune/pattern_prune.h);
// --target-sparsity X is the share of zeros in those layers, X = 1 - (1 - c)·K/9 with c the
// share of kernels removed (X >= 1 - K/9); --target-flops as for unstructured. --schedule
// gradual projects onto the patterns at the first step and raises c along the Zhu & Gupta cubic
// during fine-tuning. The CPU backend runs the pattern-sparse kernel where it pays
// (engine/backends/cpu/pattern_conv_cpu.cpp).
//
// Fine-tuning runs the training config (KEY=VALUE overrides as `xnn-lab train`) on the pruned
// model, its model source ignored, with resume off, outputs in OUT.finetune/, and the pruning
// masks re-applied after every optimiser step. Top-1 before/after: on --eval-dataset with the
// --scale/--mean/--std convention of `eval`/`quantize`, or, with --finetune alone, on the
// config's test split and normalisation.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <optional>

#include "compress/prune/magnitude_prune.h"
#include "compress/prune/pattern_prune.h"
#include "compress/prune/prune_schedule.h"
#include "engine/core/error.h"
#include "engine/format/xnn_format.h"
#include "engine/runtime/model_io.h"
#include "engine/runtime/session.h"
#include "harness/cli/commands.h"
#include "harness/data/fashion_mnist.h"
#include "harness/eval/evaluate.h"
#include "harness/train/trainer.h"
#include "harness/util/json.h"
#include "harness/channel_prune/channel_prune_job.h"

namespace xnn::cli {
namespace {

namespace fs = std::filesystem;

struct PruneRequest {
  std::string model_path, output_path, method = "unstructured", schedule = "oneshot", scope = "layer";
  std::optional<double> target_sparsity, target_flops;
  prune::PruneOptions options;
  std::vector<std::string> finetune;  // config path, then KEY=VALUE overrides
  std::string eval_dataset, data_dir = data::kDefaultFashionMnistDir;
  int64_t eval_limit = 0;
  float scale = 1.0f / 255.0f, mean = 0.0f, std = 1.0f;
  int threads = 1;
  prune::PatternOptions pattern;  // --method pattern
};

struct PruneOutcome {
  std::string description;  // "unstructured, gradual, per-layer"
  double target_sparsity = 0;
  prune::SparsityReport report;
  bool has_top1 = false;
  double top1_before = 0, top1_after = 0;
  int64_t eval_samples = 0;
  std::string finetune_dir;
  // --method pattern
  std::vector<uint16_t> library;
  double connectivity = -1;
  int64_t kernels = 0, removed_kernels = 0;
};

void say(const std::string& line) { std::fprintf(stderr, "prune: %s\n", line.c_str()); }

double evaluate_top1(const Model& m, const data::Dataset& test, const data::Preprocess& p, int threads) {
  SessionOptions o;
  o.threads = threads;
  Session s(std::make_shared<Model>(m), o);
  return eval::evaluate_classifier(s, test, p).top1;
}

// The data for top-1 before/after: --eval-dataset with its preprocessing, else the fine-tuning
// config's test split and normalisation, else none.
struct EvalSet {
  std::optional<data::Dataset> test;
  data::Preprocess pre;
};

EvalSet eval_set(const PruneRequest& req, const std::optional<train::TrainConfig>& cfg) {
  EvalSet e;
  if (!req.eval_dataset.empty()) {
    if (req.eval_dataset != "fashion-mnist") {
      throw Error("--eval-dataset '" + req.eval_dataset + "': unknown dataset; supported: fashion-mnist");
    }
    e.pre.scale = req.scale, e.pre.mean = {req.mean}, e.pre.std = {req.std};
    e.test = data::load_fashion_mnist(req.data_dir, "test", req.eval_limit);
  } else if (cfg) {
    e.pre.mean = {cfg->mean}, e.pre.std = {cfg->std};
    e.test = data::load_fashion_mnist(cfg->data_path, "test", cfg->test_limit);
  }
  return e;
}

// The fine-tuning run's config: resume off, outputs in OUT.finetune/.
train::TrainConfig finetune_config(const PruneRequest& req, train::TrainConfig c, PruneOutcome& out) {
  c.resume = false, c.export_onnx = false;
  c.output_dir = req.output_path + ".finetune";
  c.checkpoint_dir = c.output_dir + "/checkpoint";
  out.finetune_dir = c.output_dir;
  return c;
}

// The uniform per-layer sparsity that leaves `flops` × the dense MACs: MACs left =
// total - s × (MACs of the prunable layers).
double sparsity_for_flops(const Model& model, const std::vector<prune::PrunableWeight>& weights, double flops) {
  const prune::SparsityReport dense = prune::sparsity_report(model, weights);
  double prunable = 0;
  for (const prune::LayerSparsity& l : dense.layers) prunable += l.macs;
  if (dense.model_macs <= 0 || prunable <= 0) {
    throw Error("--target-flops: the MACs of the model's layers are unknown (shapes not inferable); use --target-sparsity");
  }
  const double s = (dense.model_macs - flops * dense.model_macs) / prunable;
  if (s >= 1.0) {
    throw Error("--target-flops " + std::to_string(flops) + ": unreachable: the prunable layers hold " +
                std::to_string(100.0 * prunable / dense.model_macs) + "% of the MACs, so at most that share can go");
  }
  return std::max(0.0, s);
}

PruneOutcome prune_unstructured(const PruneRequest& req, const std::shared_ptr<Model>& model) {
  if (req.scope != "layer" && req.scope != "global") {
    throw Error("--scope '" + req.scope + "': expected layer or global");
  }
  if (req.schedule != "oneshot" && req.schedule != "gradual") {
    throw Error("--schedule '" + req.schedule + "': expected oneshot or gradual");
  }
  if (req.schedule == "gradual" && req.finetune.empty()) {
    throw Error("--schedule gradual prunes during fine-tuning: give --finetune TRAIN_CONFIG.yaml");
  }
  const bool global = req.scope == "global";
  const std::vector<prune::PrunableWeight> weights = prune::prunable_weights(*model, req.options);
  if (weights.empty()) {
    throw Error(req.model_path + ": no prunable weights (Conv/Gemm/MatMul weights with >= " +
                std::to_string(req.options.min_elements) + " elements, first conv and depthwise excluded)");
  }
  PruneOutcome out;
  if (req.target_flops) {
    if (global) throw Error("--target-flops works with --scope layer (one sparsity for every layer)");
    out.target_sparsity = sparsity_for_flops(*model, weights, *req.target_flops);
  } else {
    out.target_sparsity = *req.target_sparsity;
  }
  out.description = "unstructured, " + req.schedule + ", " + (global ? "global" : "per-layer");

  // Top-1 before pruning, on the requested data.
  std::optional<train::TrainConfig> cfg;
  if (!req.finetune.empty()) {
    cfg = train::load_train_config(req.finetune[0], std::vector<std::string>(req.finetune.begin() + 1, req.finetune.end()));
  }
  const auto [test, pre] = eval_set(req, cfg);
  if (test) {
    say("evaluating the dense model on " + std::to_string(test->count) + " test images");
    out.top1_before = evaluate_top1(*model, *test, pre, req.threads);
  }

  if (req.schedule == "oneshot") {
    const prune::PruneMasks masks = prune::magnitude_prune(*model, weights, out.target_sparsity, global);
    if (cfg) {
      say("fine-tuning with the masks fixed");
      const train::TrainConfig c = finetune_config(req, *cfg, out);
      train::run_training(c, say, model, [&](int64_t, int64_t, std::span<train::Parameter> params) {
        prune::apply_masks(params, masks);
      });
    }
  } else {
    prune::GradualSchedule sched;
    sched.final_sparsity = out.target_sparsity;
    prune::GradualPruner pruner(weights, sched, global);
    const train::TrainConfig c = finetune_config(req, *cfg, out);
    say("gradual pruning to " + std::to_string(out.target_sparsity) + " during fine-tuning (Zhu & Gupta, cubic; " +
        "masks updated over the first 75% of the steps)");
    train::run_training(c, say, model, [&](int64_t step, int64_t total, std::span<train::Parameter> params) {
      pruner.on_step(step, total, params);
    });
  }
  out.report = prune::sparsity_report(*model, weights);
  if (test) {
    out.top1_after = evaluate_top1(*model, *test, pre, req.threads);
    out.eval_samples = test->count;
    out.has_top1 = true;
  }
  return out;
}

// --method pattern: K-of-9 patterns + connectivity on the 3x3 convolutions.
PruneOutcome prune_pattern(const PruneRequest& req, const std::shared_ptr<Model>& model) {
  if (req.scope != "layer") throw Error("--method pattern prunes every layer to the target: --scope must be layer");
  if (req.schedule != "oneshot" && req.schedule != "gradual") {
    throw Error("--schedule '" + req.schedule + "': expected oneshot or gradual");
  }
  if (req.schedule == "gradual" && req.finetune.empty()) {
    throw Error("--schedule gradual prunes during fine-tuning: give --finetune TRAIN_CONFIG.yaml");
  }
  if (req.pattern.taps < 1 || req.pattern.taps > 8) {
    throw Error("--pattern-taps " + std::to_string(req.pattern.taps) + ": expected 1..8 (4 is PatDNN's choice)");
  }
  if (req.pattern.library_size < 1) throw Error("--pattern-library: expected >= 1 patterns");
  const std::vector<prune::PrunableWeight> weights = prune::pattern_prunable_weights(*model, req.options);
  if (weights.empty()) {
    throw Error(req.model_path + ": no pattern-prunable weights (3x3 convolutions with group 1 and >= " +
                std::to_string(req.options.min_elements) + " weights; the first conv only with --prune-first-conv)");
  }
  PruneOutcome out;
  out.target_sparsity = req.target_flops ? sparsity_for_flops(*model, weights, *req.target_flops) : *req.target_sparsity;
  out.connectivity = prune::connectivity_for_sparsity(out.target_sparsity, req.pattern.taps);
  out.description = "pattern " + std::to_string(req.pattern.taps) + "/9, " + std::to_string(req.pattern.library_size) +
                    " patterns, " + req.schedule;

  std::optional<train::TrainConfig> cfg;
  if (!req.finetune.empty()) {
    cfg = train::load_train_config(req.finetune[0], std::vector<std::string>(req.finetune.begin() + 1, req.finetune.end()));
  }
  const auto [test, pre] = eval_set(req, cfg);
  if (test) {
    say("evaluating the dense model on " + std::to_string(test->count) + " test images");
    out.top1_before = evaluate_top1(*model, *test, pre, req.threads);
  }
  if (req.schedule == "oneshot") {
    const prune::PatternPruneResult r = prune::pattern_prune(*model, weights, req.pattern, out.connectivity);
    out.library = r.library;
    if (cfg) {
      say("fine-tuning with the pattern masks fixed");
      train::run_training(finetune_config(req, *cfg, out), say, model,
                          [&](int64_t, int64_t, std::span<train::Parameter> params) { prune::apply_masks(params, r.masks); });
    }
  } else {
    prune::GradualSchedule sched;
    sched.final_sparsity = out.connectivity;
    prune::GradualPatternPruner pruner(weights, req.pattern, sched);
    say("patterns at the first step, then connectivity to " + std::to_string(out.connectivity) +
        " during fine-tuning (Zhu & Gupta, cubic; masks updated over the first 75% of the steps)");
    train::run_training(finetune_config(req, *cfg, out), say, model,
                        [&](int64_t step, int64_t total, std::span<train::Parameter> params) {
                          pruner.on_step(step, total, params);
                        });
    out.library = pruner.library();
  }
  out.report = prune::sparsity_report(*model, weights);
  for (const prune::PrunableWeight& w : weights) {
    const Tensor& t = *model->graph.value(model->graph.find_value(w.value)).data;
    const float* v = t.data<float>();
    for (int64_t k = 0; k < t.numel() / 9; ++k) {
      ++out.kernels;
      out.removed_kernels += std::all_of(v + k * 9, v + k * 9 + 9, [](float x) { return x == 0.0f; });
    }
  }
  if (test) {
    out.top1_after = evaluate_top1(*model, *test, pre, req.threads);
    out.eval_samples = test->count;
    out.has_top1 = true;
  }
  return out;
}

// "0x01b" -> the 3x3 layout "x x . / x x . / . . ." as one line "xx.|xx.|...".
std::string pattern_picture(uint16_t mask) {
  std::string s;
  for (int t = 0; t < 9; ++t) {
    if (t > 0 && t % 3 == 0) s += '|';
    s += (mask & (1u << t)) ? 'x' : '.';
  }
  return s;
}

// --method channel: structured pruning that removes channels (harness/channel_prune): its own
// options and report, the model saved smaller.
void run_channel_method(const PruneRequest& req, channel_job::ChannelPruneRequest c, bool as_json) {
  c.model_path = req.model_path;
  c.finetune = req.finetune;
  c.finetune_dir = req.output_path + ".finetune";
  c.data_dir = req.data_dir;
  c.evaluate = !req.eval_dataset.empty();
  if (c.evaluate && req.eval_dataset != "fashion-mnist") {
    throw Error("--eval-dataset '" + req.eval_dataset + "': unknown dataset; supported: fashion-mnist");
  }
  c.eval_limit = req.eval_limit;
  c.scale = req.scale, c.mean = req.mean, c.std = req.std;
  c.threads = req.threads;
  std::shared_ptr<Model> model = load_model(req.model_path);
  const channel_job::ChannelPruneOutcome o = channel_job::run_channel_pruning(c, model, say);
  model->metadata.producer = "xnn-lab prune";
  XnnSaveOptions save;
  save.extra_options["pruned_from"] = fs::path(req.model_path).filename().string();
  save.extra_options["pruning"] = "channel, " + c.importance + ", " + c.target + " " + std::to_string(c.ratio);
  save_xnn(*model, req.output_path, save);
  if (as_json) {
    std::printf("%s\n", channel_job::channel_json(c, req.output_path, o).c_str());
  } else {
    channel_job::print_channel_text(c, req.output_path, o);
  }
}

// --method NAME -> how it prunes. Methods not written yet say so.
using PruneMethodFn = std::function<PruneOutcome(const PruneRequest&, const std::shared_ptr<Model>&)>;

PruneMethodFn prune_method(const std::string& name) {
  if (name == "unstructured") return prune_unstructured;
  if (name == "pattern") return prune_pattern;
  throw Error("--method '" + name + "': unknown; expected unstructured, channel or pattern");
}

std::string si(double v) {
  char buf[32];
  if (v >= 1e9) {
    std::snprintf(buf, sizeof(buf), "%.2fG", v / 1e9);
  } else if (v >= 1e6) {
    std::snprintf(buf, sizeof(buf), "%.2fM", v / 1e6);
  } else if (v >= 1e3) {
    std::snprintf(buf, sizeof(buf), "%.1fk", v / 1e3);
  } else {
    std::snprintf(buf, sizeof(buf), "%.0f", v);
  }
  return buf;
}

void print_text(const PruneRequest& req, const PruneOutcome& o) {
  std::printf("pruned %s -> %s (%s, target %.1f%% zeros)\n", req.model_path.c_str(), req.output_path.c_str(),
              o.description.c_str(), 100.0 * o.target_sparsity);
  std::printf("  %-24s %-10s %10s %10s %9s %10s %10s\n", "layer", "op", "weights", "zeros", "sparsity", "MACs",
              "eff. MACs");
  for (const prune::LayerSparsity& l : o.report.layers) {
    std::printf("  %-24s %-10s %10lld %10lld %8.2f%% %10s %10s\n", l.node.c_str(), l.op_type.c_str(),
                static_cast<long long>(l.elements), static_cast<long long>(l.zeros), 100.0 * l.sparsity(),
                si(l.macs).c_str(), si(l.effective_macs).c_str());
  }
  const prune::SparsityReport& r = o.report;
  std::printf("  total: %lld of %lld prunable weights zero (%.2f%%); model MACs %s -> %s effective (%.1f%%)\n",
              static_cast<long long>(r.zeros), static_cast<long long>(r.elements), 100.0 * r.sparsity(),
              si(r.model_macs).c_str(), si(r.effective_macs).c_str(),
              r.model_macs > 0 ? 100.0 * r.effective_macs / r.model_macs : 0.0);
  if (o.connectivity >= 0) {
    std::printf("  patterns (%zu):", o.library.size());
    for (uint16_t m : o.library) std::printf(" %s", pattern_picture(m).c_str());
    std::printf("\n  connectivity: %lld of %lld 3x3 kernels removed (%.2f%%, target %.2f%%)\n",
                static_cast<long long>(o.removed_kernels), static_cast<long long>(o.kernels),
                o.kernels ? 100.0 * static_cast<double>(o.removed_kernels) / static_cast<double>(o.kernels) : 0.0,
                100.0 * o.connectivity);
  }
  if (o.has_top1) {
    std::printf("  top-1 on %lld test images: before %.2f %%, after %.2f %% (%+.2f points)\n",
                static_cast<long long>(o.eval_samples), 100.0 * o.top1_before, 100.0 * o.top1_after,
                100.0 * (o.top1_after - o.top1_before));
  }
}

void print_json(const PruneRequest& req, const PruneOutcome& o) {
  json::Writer w;
  w.begin_object()
      .field("model", req.model_path)
      .field("output", req.output_path)
      .field("method", req.method)
      .field("schedule", req.schedule)
      .field("scope", req.scope)
      .field("target_sparsity", o.target_sparsity)
      .field("sparsity", o.report.sparsity())
      .field("weights", o.report.elements)
      .field("zeros", o.report.zeros)
      .field("model_macs", o.report.model_macs)
      .field("effective_macs", o.report.effective_macs);
  w.key("layers").begin_array();
  for (const prune::LayerSparsity& l : o.report.layers) {
    w.begin_object()
        .field("node", l.node)
        .field("op", l.op_type)
        .field("value", l.value)
        .field("weights", l.elements)
        .field("zeros", l.zeros)
        .field("sparsity", l.sparsity())
        .field("macs", l.macs)
        .field("effective_macs", l.effective_macs)
        .end_object();
  }
  w.end_array();
  if (o.has_top1) {
    w.field("top1_before", o.top1_before).field("top1_after", o.top1_after).field("eval_samples", o.eval_samples);
  }
  if (!o.finetune_dir.empty()) w.field("finetune_dir", o.finetune_dir);
  if (o.connectivity >= 0) {
    w.field("pattern_taps", static_cast<int64_t>(req.pattern.taps))
        .field("connectivity", o.connectivity)
        .field("kernels", o.kernels)
        .field("removed_kernels", o.removed_kernels);
    w.key("patterns").begin_array();
    for (uint16_t m : o.library) w.value(pattern_picture(m));
    w.end_array();
  }
  w.end_object();
  std::printf("%s\n", w.str().c_str());
}

}  // namespace

void add_prune_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("prune", "Prune a model's weights (unstructured, 3x3 pattern or channel pruning), optionally fine-tune");
  static PruneRequest req;
  static double sparsity = 0, flops = 0;
  static bool as_json = false;
  cmd->add_option("model", req.model_path, "Model (.onnx or .xnn)")->required()->check(CLI::ExistingFile);
  cmd->add_option("-o,--output", req.output_path, "Output model (.xnn, dense with zeros)")->required();
  cmd->add_option("--method", req.method, "unstructured, pattern (3x3 convs) or channel")->capture_default_str();
  cmd->add_option("--pattern-taps", req.pattern.taps, "--method pattern: weights kept per 3x3 kernel")->capture_default_str();
  cmd->add_option("--pattern-library", req.pattern.library_size, "--method pattern: patterns in the learned library")
      ->capture_default_str();
  auto* s_opt = cmd->add_option("--target-sparsity", sparsity, "Share of zero weights among the prunable ones, in [0, 1)");
  auto* f_opt = cmd->add_option("--target-flops", flops, "Share of the dense model's MACs to keep, in (0, 1]");
  s_opt->excludes(f_opt);
  cmd->add_option("--schedule", req.schedule, "oneshot, or gradual (Zhu & Gupta, during --finetune)")->capture_default_str();
  cmd->add_option("--scope", req.scope, "layer (each layer to the target) or global (one ranking)")->capture_default_str();
  cmd->add_flag("--prune-first-conv", req.options.prune_first_conv, "Also prune the convolution fed by the model input");
  cmd->add_flag("--prune-depthwise", req.options.prune_depthwise, "Also prune depthwise convolutions");
  cmd->add_option("--min-elements", req.options.min_elements, "Leave weight tensors with fewer elements dense")
      ->capture_default_str();
  cmd->add_option("--finetune", req.finetune, "Training config (then KEY=VALUE overrides) to fine-tune the pruned model")
      ->expected(1, -1);
  cmd->add_option("--eval-dataset", req.eval_dataset, "Top-1 before/after on this dataset's test split (fashion-mnist)");
  cmd->add_option("--data-dir", req.data_dir, "Folder with the dataset files")->capture_default_str();
  cmd->add_option("--eval-limit", req.eval_limit, "Test images for top-1 (0 = all)")->capture_default_str();
  cmd->add_option("--scale", req.scale, "x = (pixel * scale - mean) / std; pixel in [0, 255]")->capture_default_str();
  cmd->add_option("--mean", req.mean, "Mean subtracted after scaling")->capture_default_str();
  cmd->add_option("--std", req.std, "Standard deviation divided by")->capture_default_str();
  cmd->add_option("--threads", req.threads, "Threads for evaluation")->capture_default_str();
  cmd->add_flag("--json", as_json, "Print the result as one JSON object");
  static channel_job::ChannelPruneRequest channel_req;
  static double params_share = 0;
  cmd->add_option("--importance", channel_req.importance, "--method channel: l1, l2, bn (BatchNorm gamma) or taylor")
      ->capture_default_str();
  auto* p_opt = cmd->add_option("--target-params", params_share, "--method channel: share of the parameters to keep, in (0, 1]");
  p_opt->excludes(f_opt)->excludes(s_opt);
  cmd->add_option("--round-to", channel_req.round_to, "--method channel: kept channels of a group are a multiple of this")
      ->capture_default_str();
  cmd->add_option("--rank-by", channel_req.rank_by,
                  "--method channel: rank steps by damage per MAC (flops) or per predicted ms (latency) saved")
      ->capture_default_str();
  cmd->add_option("--max-prune", channel_req.max_fraction, "--method channel: at most this share of one group is removed")
      ->capture_default_str();
  cmd->add_option("--calib-images", channel_req.calib_images,
                  "--method channel: Fashion-MNIST train images for the sensitivity scan (other models: <= 4 random inputs)")
      ->capture_default_str();
  cmd->callback([&exit_code, s_opt, f_opt, p_opt] {
    if (req.method == "channel") {
      if (s_opt->count() > 0) throw Error("--method channel takes --target-flops X or --target-params X, not --target-sparsity");
      if (f_opt->count() + p_opt->count() == 0) throw Error("--method channel: give --target-flops X or --target-params X");
      channel_job::ChannelPruneRequest c = channel_req;
      c.target = f_opt->count() > 0 ? "flops" : "params";
      c.ratio = f_opt->count() > 0 ? flops : params_share;
      run_channel_method(req, c, as_json);
      exit_code = 0;
      return;
    }
    req.target_sparsity.reset();
    req.target_flops.reset();
    if (s_opt->count() > 0) {
      if (!(sparsity >= 0.0 && sparsity < 1.0)) {
        throw Error("--target-sparsity " + std::to_string(sparsity) + ": expected a share in [0, 1), e.g. 0.8");
      }
      req.target_sparsity = sparsity;
    } else if (f_opt->count() > 0) {
      if (!(flops > 0.0 && flops <= 1.0)) {
        throw Error("--target-flops " + std::to_string(flops) + ": expected a share of the MACs in (0, 1], e.g. 0.5");
      }
      req.target_flops = flops;
    } else {
      throw Error("give --target-sparsity X or --target-flops X");
    }
    if (req.options.min_elements < 0) throw Error("--min-elements: expected >= 0");
    if (req.eval_limit < 0) throw Error("--eval-limit: expected >= 0 (0 = all)");
    const PruneMethodFn run = prune_method(req.method);
    const std::shared_ptr<Model> model = load_model(req.model_path);
    const PruneOutcome o = run(req, model);
    model->metadata.producer = "xnn-lab prune";
    XnnSaveOptions save;
    save.extra_options["pruned_from"] = fs::path(req.model_path).filename().string();
    save.extra_options["pruning"] = o.description + ", " + std::to_string(o.report.sparsity()) + " zeros";
    save_xnn(*model, req.output_path, save);
    if (as_json) {
      print_json(req, o);
    } else {
      print_text(req, o);
    }
    exit_code = 0;
  });
}

}  // namespace xnn::cli
