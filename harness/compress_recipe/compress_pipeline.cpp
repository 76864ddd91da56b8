#include "harness/compress_recipe/compress_pipeline.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>

#include "compress/prune/prune_schedule.h"
#include "engine/core/error.h"
#include "engine/format/xnn_format.h"
#include "engine/runtime/model_io.h"
#include "engine/runtime/session.h"
#include "harness/channel_prune/channel_prune_job.h"
#include "harness/compress_recipe/shared_centroids.h"
#include "harness/eval/evaluate.h"
#include "harness/quantize/quantize_job.h"
#include "harness/train/trainer.h"
#include "harness/util/json.h"

namespace xnn::compress_recipe {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// The float32 weights (input 1) of Conv / Gemm / MatMul: what pruning zeroes and the coder codes.
template <typename Fn>
void for_each_weight(const Model& model, Fn fn) {
  const Graph& g = model.graph;
  std::vector<bool> seen(g.values.size(), false);
  for (const Node& n : g.nodes) {
    if (n.domain != "" || (n.op_type != "Conv" && n.op_type != "Gemm" && n.op_type != "MatMul")) continue;
    if (n.inputs.size() < 2 || n.inputs[1] < 0 || seen[static_cast<size_t>(n.inputs[1])]) continue;
    const Value& v = g.value(n.inputs[1]);
    if (!v.data || v.data->dtype() != DType::kF32) continue;
    seen[static_cast<size_t>(n.inputs[1])] = true;
    fn(v.name, static_cast<const float*>(v.data->raw()), v.data->numel());
  }
}

// Masks holding today's zeros at zero, so fine-tuning cannot revive what an earlier stage pruned.
prune::PruneMasks zero_masks(const Model& model) {
  prune::PruneMasks masks;
  for_each_weight(model, [&](const std::string& name, const float* w, int64_t n) {
    std::vector<uint8_t> keep(static_cast<size_t>(n));
    bool any_zero = false;
    for (int64_t i = 0; i < n; ++i) {
      keep[static_cast<size_t>(i)] = w[i] != 0.0f ? 1 : 0;
      any_zero = any_zero || w[i] == 0.0f;
    }
    if (any_zero) masks[name] = std::move(keep);
  });
  return masks;
}

double weight_sparsity(const Model& model) {
  int64_t zeros = 0, total = 0;
  for_each_weight(model, [&](const std::string&, const float* w, int64_t n) {
    for (int64_t i = 0; i < n; ++i) zeros += w[i] == 0.0f ? 1 : 0;
    total += n;
  });
  return total ? static_cast<double>(zeros) / static_cast<double>(total) : 0.0;
}

std::string percent(double share) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f%%", 100.0 * share);
  return buf;
}

class Pipeline {
 public:
  Pipeline(const Recipe& recipe, std::shared_ptr<Model>& model, const CompressOptions& o)
      : recipe_(recipe), model_(model), o_(o) {
    if (o.dataset != "fashion-mnist") throw Error("dataset '" + o.dataset + "': unknown; supported: fashion-mnist");
    if (o.eval_limit < 0) throw Error("eval limit must be >= 0 (0 = the whole test split)");
    work_ = o.work_dir.empty() ? fs::temp_directory_path() / "xnn-compress" : fs::path(o.work_dir);
    fs::create_directories(work_);
  }

  CompressResult run() {
    CompressResult r;
    r.recipe = recipe_.name;
    say("evaluating on " + std::string(o_.eval_limit ? std::to_string(o_.eval_limit) + " test images" : "the test split"));
    test_ = data::load_fashion_mnist(o_.data_dir, "test", o_.eval_limit);
    r.eval_samples = test_.count;
    StageResult base = measure(0, "baseline", "fp32 dense", Clock::now());
    r.fp32_bytes = base.size_bytes;
    r.stages.push_back(base);
    for (size_t i = 0; i < recipe_.stages.size(); ++i) {
      const RecipeStage& st = recipe_.stages[i];
      const int index = static_cast<int>(i) + 1;
      say("stage " + std::to_string(index) + "/" + std::to_string(recipe_.stages.size()) + ": " + st.kind);
      const auto t0 = Clock::now();
      std::string detail;
      try {
        detail = std::visit([&](const auto& spec) { return apply(spec, index); }, st.spec);
      } catch (const Error& e) {
        // Errors that already point into the recipe (a per_layer key) keep their own position.
        const std::string m = e.what();
        if (m.rfind(recipe_.path + ":", 0) == 0) throw;
        throw Error(st.location + ": stage '" + st.kind + "': " + m);
      }
      r.stages.push_back(measure(index, st.kind, detail, t0));
      const StageResult& s = r.stages.back();
      char buf[160];
      std::snprintf(buf, sizeof(buf), "  %s: %llu bytes (%.1fx), top-1 %.2f%% (%+.2f points)", st.kind.c_str(),
                    static_cast<unsigned long long>(s.size_bytes), static_cast<double>(r.fp32_bytes) / s.size_bytes,
                    100.0 * s.top1, 100.0 * (s.top1 - base.top1));
      say(buf);
    }
    r.final_bytes = r.stages.back().size_bytes;
    r.ratio = r.final_bytes ? static_cast<double>(r.fp32_bytes) / static_cast<double>(r.final_bytes) : 0.0;
    r.coded_weight_bytes_before = coded_before_;
    r.coded_weight_bytes_after = coded_after_;
    return r;
  }

 private:
  void say(const std::string& line) const {
    if (o_.progress) o_.progress(line);
  }

  StageResult measure(int index, const std::string& stage, const std::string& detail, Clock::time_point t0) {
    StageResult s;
    s.index = index;
    s.stage = stage;
    s.detail = detail;
    s.size_bytes = serialize_xnn(*model_).size();
    SessionOptions so;
    so.threads = o_.threads;
    Session session(std::make_shared<Model>(*model_), so);
    s.top1 = eval::evaluate_classifier(session, test_, o_.preprocess).top1;
    s.sparsity = weight_sparsity(*model_);
    s.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    return s;
  }

  std::string stage_dir(int index, const std::string& what) const {
    return (work_ / ("stage" + std::to_string(index) + "_" + what)).string();
  }

  // Fine-tunes the model in place with the spec's training config; `hook` runs after every step.
  std::string finetune(const FinetuneSpec& spec, int index, const train::StepHook& hook) {
    train::TrainConfig c;
    try {
      c = train::load_train_config(spec.config, spec.overrides);
    } catch (const Error& e) {
      throw Error(spec.location + ": finetune: " + e.what());
    }
    c.resume = false;
    c.export_onnx = false;
    c.output_dir = stage_dir(index, "finetune");
    c.checkpoint_dir = c.output_dir + "/checkpoint";
    const train::TrainResult r = train::run_training(c, [this](const std::string& l) { say("  " + l); }, model_, hook);
    return std::to_string(r.epochs_run) + " epochs fine-tuning";
  }

  // A hook that keeps pruned zeros and shared centroids through fine-tuning.
  train::StepHook keep_structure() const {
    auto masks = std::make_shared<prune::PruneMasks>(zero_masks(*model_));
    const std::optional<SharedCentroids>& shared = shared_;
    return [masks, &shared](int64_t, int64_t, std::span<train::Parameter> params) {
      prune::apply_masks(params, *masks);
      if (shared) shared->share(params);
    };
  }

  std::string apply(const PruneStage& s, int index) {
    if (s.method == "channel") return prune_channels(s, index);
    prune::PruneOptions po = s.options;
    po.global = s.scope == "global";
    const std::vector<prune::PrunableWeight> weights = prune::prunable_weights(*model_, po);
    if (weights.empty()) {
      throw Error("no prunable weights (Conv/Gemm/MatMul weights with >= " + std::to_string(po.min_elements) +
                  " elements, first conv and depthwise excluded)");
    }
    std::string candidates;
    for (const prune::PrunableWeight& w : weights) candidates += (candidates.empty() ? "" : ", ") + w.node + " (" + w.value + ")";
    for (const auto& [name, sparsity] : s.per_layer) {
      bool found = false;
      for (const prune::PrunableWeight& w : weights) found = found || w.value == name || w.node == name;
      if (!found) {
        throw Error(s.per_layer_location.at(name) + ": per_layer: no prunable weight or node named '" + name +
                    "'; candidates: " + candidates);
      }
    }
    std::optional<double> others = s.target_sparsity;
    if (s.target_flops) others = sparsity_for_flops(weights, *s.target_flops);
    // Groups of weights pruned to one sparsity each (per_layer overrides, the rest to the target).
    std::map<double, std::vector<prune::PrunableWeight>> groups;
    for (const prune::PrunableWeight& w : weights) {
      std::optional<double> sp = others;
      if (auto it = s.per_layer.find(w.value); it != s.per_layer.end()) sp = it->second;
      if (auto it = s.per_layer.find(w.node); it != s.per_layer.end()) sp = it->second;
      if (sp) groups[*sp].push_back(w);
    }
    const bool global = po.global;
    if (s.schedule == "oneshot") {
      for (const auto& [sparsity, group] : groups) prune::magnitude_prune(*model_, group, sparsity, global);
      std::string d = "unstructured oneshot " + s.scope;
      if (s.finetune) d += ", " + finetune(*s.finetune, index, keep_structure());
      return d + ", " + percent(prune::sparsity_report(*model_, weights).sparsity()) + " of the prunable weights zero";
    }
    auto earlier = std::make_shared<prune::PruneMasks>(zero_masks(*model_));
    auto pruners = std::make_shared<std::vector<prune::GradualPruner>>();
    for (const auto& [sparsity, group] : groups) {
      prune::GradualSchedule sched;
      sched.final_sparsity = sparsity;
      pruners->emplace_back(group, sched, global);
    }
    const std::optional<SharedCentroids>& shared = shared_;
    const std::string d = finetune(*s.finetune, index, [pruners, earlier, &shared](int64_t step, int64_t total, std::span<train::Parameter> p) {
      for (prune::GradualPruner& g : *pruners) g.on_step(step, total, p);
      prune::apply_masks(p, *earlier);
      if (shared) shared->share(p);
    });
    return "unstructured gradual " + s.scope + ", " + d + ", " + percent(prune::sparsity_report(*model_, weights).sparsity()) +
           " of the prunable weights zero";
  }

  // The uniform sparsity that leaves `flops` × the dense MACs (MACs left = total - s × prunable MACs).
  double sparsity_for_flops(const std::vector<prune::PrunableWeight>& weights, double flops) const {
    const prune::SparsityReport dense = prune::sparsity_report(*model_, weights);
    double prunable = 0;
    for (const prune::LayerSparsity& l : dense.layers) prunable += l.macs;
    if (dense.model_macs <= 0 || prunable <= 0) throw Error("target_flops: the layers' MACs are unknown; use target_sparsity");
    const double s = (dense.model_macs - flops * dense.model_macs) / prunable;
    if (s >= 1.0) throw Error("target_flops " + std::to_string(flops) + ": unreachable by pruning these layers");
    return std::max(0.0, s);
  }

  std::string prune_channels(const PruneStage& s, int index) {
    if (shared_) throw Error("channel pruning after a cluster stage would break its codebooks; prune first");
    channel_job::ChannelPruneRequest c;
    c.model_path = stage_dir(index, "input.xnn");
    save_xnn(*model_, c.model_path);
    c.importance = s.importance;
    c.target = s.target_flops ? "flops" : "params";
    c.ratio = s.target_flops ? *s.target_flops : *s.target_params;
    c.round_to = s.round_to;
    c.data_dir = o_.data_dir;
    c.scale = o_.preprocess.scale, c.mean = o_.preprocess.mean[0], c.std = o_.preprocess.std[0];
    c.evaluate = false;
    if (s.finetune) {
      c.finetune = {s.finetune->config};
      c.finetune.insert(c.finetune.end(), s.finetune->overrides.begin(), s.finetune->overrides.end());
      c.finetune_dir = stage_dir(index, "finetune");
    }
    c.threads = o_.threads;
    const channel_job::ChannelPruneOutcome out = channel_job::run_channel_pruning(c, model_, [this](const std::string& l) { say("  " + l); });
    char buf[160];
    std::snprintf(buf, sizeof(buf), "channel %s, MACs %.0f -> %.0f, params %.0f -> %.0f", s.importance.c_str(), out.macs_before,
                  out.macs_after, out.params_before, out.params_after);
    return std::string(buf) + (s.finetune ? ", fine-tuned" : "");
  }

  std::string apply(const FinetuneStage& s, int index) { return finetune(s.spec, index, keep_structure()); }

  std::string apply(const ClusterStage& s, int index) {
    shared_ = SharedCentroids::cluster(*model_, s.bits, s.bits_per_layer, s.min_elements);
    cluster_min_elements_ = s.min_elements;
    std::string d = std::to_string(shared_->tensors().size()) + " tensors clustered (";
    for (size_t i = 0; i < shared_->tensors().size(); ++i) {
      const ClusteredTensor& t = shared_->tensors()[i];
      d += (i ? ", " : "") + t.value + " " + std::to_string(t.bits) + " bits";
    }
    d += ")";
    if (s.finetune) {
      const std::optional<SharedCentroids>& shared = shared_;
      d += ", centroids " + finetune(*s.finetune, index, [&shared](int64_t, int64_t, std::span<train::Parameter> p) {
             shared->share(p);
           });
    }
    return d;
  }

  std::string apply(const QuantizeStage& s, int index) {
    ptq::QuantizeJob job;
    job.model_path = stage_dir(index, "fp32.xnn");
    job.output_path = stage_dir(index, "int8.xnn");
    save_xnn(*model_, job.model_path);
    job.calib_dataset = o_.dataset;
    job.data_dir = o_.data_dir;
    job.preprocess = o_.preprocess;
    job.calib_samples = s.calib_samples;
    job.per_tensor = s.per_tensor;
    job.exclude = s.exclude;
    job.eval_limit = -1;  // top-1 is measured by the pipeline, on the same images as every stage
    job.threads = o_.threads;
    const ptq::QuantizeJobResult r = ptq::run_quantize_job(job, [this](const std::string& l) { say("  " + l); });
    model_ = load_model(job.output_path);
    shared_.reset();  // int8 weights are no longer the float codebooks
    return "int8 " + r.method + (s.per_tensor ? " per-tensor" : " per-channel") + ", " + std::to_string(r.calib_samples) +
           " calibration images";
  }

  std::string apply(const EncodeStage& s, int) {
    encode::EncodeOptions eo = s.options;
    std::string how = "k-means " + std::to_string(eo.bits) + " bits";
    if (shared_ && !s.cluster_given) {
      // Keep the cluster stage's (fine-tuned) codebooks: the weights' distinct values.
      eo.cluster = false;
      eo.bits = 8;
      eo.bits_per_layer.clear();
      if (!s.min_elements_given) eo.min_elements = cluster_min_elements_;
      how = "the cluster stage's codebooks";
    }
    const encode::EncodeReport r = encode::encode_weights(*model_, eo);
    coded_before_ = r.total.bytes_before;
    coded_after_ = r.total.bytes_after;
    return std::to_string(r.tensors.size()) + " tensors coded (" + r.coder + ", " + how + "), weights " +
           std::to_string(r.total.bytes_before) + " -> " + std::to_string(r.total.bytes_after) + " bytes";
  }

  const Recipe& recipe_;
  std::shared_ptr<Model>& model_;
  const CompressOptions& o_;
  fs::path work_;
  data::Dataset test_;
  std::optional<SharedCentroids> shared_;
  int64_t cluster_min_elements_ = 256;
  uint64_t coded_before_ = 0, coded_after_ = 0;
};

}  // namespace

CompressResult run_recipe(const Recipe& recipe, std::shared_ptr<Model>& model, const CompressOptions& options) {
  Pipeline p(recipe, model, options);
  return p.run();
}

std::string to_json(const CompressResult& r, const std::string& model_path) {
  json::Writer w;
  w.begin_object().field("recipe", r.recipe);
  w.key("stages").begin_array();
  for (const StageResult& s : r.stages) {
    w.begin_object()
        .field("index", s.index)
        .field("stage", s.stage)
        .field("detail", s.detail)
        .field("size_bytes", static_cast<int64_t>(s.size_bytes))
        .field("top1", s.top1)
        .field("sparsity", s.sparsity)
        .field("seconds", s.seconds)
        .end_object();
  }
  w.end_array();
  if (!model_path.empty()) w.field("model", model_path);
  w.field("fp32_bytes", static_cast<int64_t>(r.fp32_bytes))
      .field("final_bytes", static_cast<int64_t>(r.final_bytes))
      .field("ratio", r.ratio);
  if (r.coded_weight_bytes_after > 0) {
    w.field("coded_weight_bytes_before", static_cast<int64_t>(r.coded_weight_bytes_before))
        .field("coded_weight_bytes_after", static_cast<int64_t>(r.coded_weight_bytes_after))
        .field("weights_ratio", static_cast<double>(r.coded_weight_bytes_before) / r.coded_weight_bytes_after);
  }
  if (!r.stages.empty()) w.field("top1_change", r.stages.back().top1 - r.stages.front().top1);
  w.field("eval_samples", r.eval_samples);
  w.end_object();
  return w.str();
}

std::string to_text(const CompressResult& r) {
  std::string out = "recipe " + r.recipe + " (top-1 on " + std::to_string(r.eval_samples) + " test images)\n";
  char buf[512];
  std::snprintf(buf, sizeof(buf), "  %-3s %-9s %12s %8s %8s %9s  %s\n", "#", "stage", "size bytes", "ratio", "top-1", "change",
                "detail");
  out += buf;
  const double base = r.stages.empty() ? 0.0 : r.stages.front().top1;
  for (const StageResult& s : r.stages) {
    std::snprintf(buf, sizeof(buf), "  %-3d %-9s %12llu %7.1fx %7.2f%% %+8.2f  %s\n", s.index, s.stage.c_str(),
                  static_cast<unsigned long long>(s.size_bytes), s.size_bytes ? static_cast<double>(r.fp32_bytes) / s.size_bytes : 0.0,
                  100.0 * s.top1, 100.0 * (s.top1 - base), s.detail.c_str());
    out += buf;
  }
  std::snprintf(buf, sizeof(buf), "  fp32 %llu bytes -> %llu bytes: %.1fx smaller", static_cast<unsigned long long>(r.fp32_bytes),
                static_cast<unsigned long long>(r.final_bytes), r.ratio);
  out += buf;
  if (r.coded_weight_bytes_after > 0) {
    std::snprintf(buf, sizeof(buf), "; coded weights %llu -> %llu bytes (%.1fx)",
                  static_cast<unsigned long long>(r.coded_weight_bytes_before),
                  static_cast<unsigned long long>(r.coded_weight_bytes_after),
                  static_cast<double>(r.coded_weight_bytes_before) / r.coded_weight_bytes_after);
    out += buf;
  }
  return out + "\n";
}

}  // namespace xnn::compress_recipe
