#include "harness/channel_prune/channel_prune_job.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <random>

#include "compress/channel/channel_cost.h"
#include "compress/channel/channel_importance.h"
#include "compress/channel/channel_prune.h"
#include "compress/channel/channel_taylor.h"
#include "engine/core/error.h"
#include "engine/runtime/graph_cost.h"
#include "engine/runtime/session.h"
#include "harness/data/fashion_mnist.h"
#include "harness/eval/evaluate.h"
#include "harness/train/trainer.h"
#include "harness/util/json.h"

namespace xnn::channel_job {

namespace {

using channel::CalibrationData;

// The model's single input: its name and a concrete shape with the batch dim set to `batch`
// when it is symbolic.
struct InputInfo {
  std::string name;
  Shape shape;
  bool batch_fixed = false;
};

InputInfo model_input(const Model& model) {
  const Graph& g = model.graph;
  if (g.inputs.size() != 1) {
    throw Error("channel pruning needs a model with one input; this one has " + std::to_string(g.inputs.size()));
  }
  const Value& v = g.value(g.inputs[0]);
  if (!v.has_shape || v.shape.empty()) throw Error("channel pruning: input '" + v.name + "' has no declared shape");
  InputInfo info;
  info.name = v.name;
  for (size_t i = 0; i < v.shape.size(); ++i) {
    if (!v.shape[i].known() && i != 0) {
      throw Error("channel pruning: input '" + v.name + "' has a symbolic dim " + std::to_string(i) + " " +
                  dims_str(v.shape));
    }
    info.shape.push_back(v.shape[i].known() ? v.shape[i].value : 1);
  }
  info.batch_fixed = v.shape[0].known();
  return info;
}

bool fashion_mnist_shaped(const InputInfo& in) {
  return in.shape.size() == 4 && in.shape[1] == 1 && in.shape[2] == 28 && in.shape[3] == 28;
}

data::Preprocess preprocess_of(const ChannelPruneRequest& r) {
  data::Preprocess p;
  p.scale = r.scale;
  p.mean = {r.mean};
  p.std = {r.std};
  return p;
}

CalibrationData fashion_mnist_calibration(const ChannelPruneRequest& r, const InputInfo& in) {
  const data::Dataset train = data::load_fashion_mnist(r.data_dir, "train", r.calib_images);
  const int64_t batch = in.batch_fixed ? in.shape[0] : std::max<int64_t>(1, r.calib_batch);
  CalibrationData d;
  for (int64_t begin = 0; begin + batch <= train.count; begin += batch) {
    Shape s = in.shape;
    s[0] = batch;
    d.batches.push_back({{in.name, data::make_batch(train, begin, batch, preprocess_of(r), s)}});
    d.labels.emplace_back(train.labels.begin() + begin, train.labels.begin() + begin + batch);
  }
  if (d.batches.empty()) {
    throw Error("--calib-images " + std::to_string(r.calib_images) + ": fewer than one batch of " + std::to_string(batch));
  }
  return d;
}

// Deterministic N(0,1) inputs (what normalised images look like to a torchvision model); at
// most 4 images: a full-size model is run once per group and fraction.
CalibrationData random_calibration(const ChannelPruneRequest& r, const InputInfo& in) {
  const int64_t images = std::min<int64_t>(4, std::max<int64_t>(1, r.calib_images));
  const int64_t batch = in.batch_fixed ? in.shape[0] : images;
  std::mt19937 rng(1234);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  CalibrationData d;
  for (int64_t done = 0; done < images; done += batch) {
    Shape s = in.shape;
    s[0] = batch;
    Tensor t(DType::kF32, s);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng);
    d.batches.push_back({{in.name, t}});
  }
  return d;
}

double top1(const Model& m, const data::Dataset& test, const data::Preprocess& p, int threads) {
  SessionOptions o;
  o.threads = threads;
  Session s(std::make_shared<const Model>(m), o);
  return eval::evaluate_classifier(s, test, p).top1;
}

// Each original node's share of a profiled run (median of 5 after a warm-up): fused nodes keep
// the name of the Conv/Gemm they absorbed, so a BatchNorm or activation folded into a conv counts
// within the conv's time.
std::vector<double> profile_node_times(const Model& m, const std::map<std::string, Tensor>& inputs, int threads) {
  SessionOptions o;
  o.threads = threads;
  o.profile = true;
  Session s(std::make_shared<const Model>(m), o);
  s.run(inputs);
  std::map<std::string, std::vector<double>> times;
  for (int r = 0; r < 5; ++r) {
    s.run(inputs);
    for (const NodeProfile& p : s.last_profile()) times[p.name].push_back(p.time_ms);
  }
  std::vector<double> per_node(m.graph.nodes.size(), 0.0);
  for (size_t k = 0; k < m.graph.nodes.size(); ++k) {
    auto it = times.find(m.graph.nodes[k].name);
    if (it == times.end()) continue;
    std::vector<double>& t = it->second;
    std::sort(t.begin(), t.end());
    per_node[k] = t[t.size() / 2];
  }
  return per_node;
}

}  // namespace

ChannelPruneOutcome run_channel_pruning(const ChannelPruneRequest& r, std::shared_ptr<Model>& model,
                                        const ProgressFn& progress) {
  const auto say = [&](const std::string& s) {
    if (progress) progress(s);
  };
  if (!(r.ratio > 0 && r.ratio <= 1)) throw Error("--target-flops/--target-params: expected a share in (0, 1], e.g. 0.5");
  if (r.round_to < 1) throw Error("--round-to: expected >= 1");
  if (!(r.max_fraction > 0 && r.max_fraction < 1)) throw Error("--max-prune: expected a share in (0, 1)");
  const channel::Importance importance = channel::parse_importance(r.importance);
  const channel::CostTarget target = channel::parse_cost_target(r.target);
  if (r.rank_by != "flops" && r.rank_by != "latency") throw Error("--rank-by '" + r.rank_by + "': expected flops or latency");
  ChannelPruneRequest req = r;

  std::optional<train::TrainConfig> cfg;
  if (!req.finetune.empty()) {
    cfg = train::load_train_config(req.finetune[0], std::vector<std::string>(req.finetune.begin() + 1, req.finetune.end()));
    // The fine-tuning config's normalisation is the model's when none was given.
    if (req.mean == 0.0f && req.std == 1.0f) req.mean = cfg->mean, req.std = cfg->std;
    if (req.data_dir.empty()) req.data_dir = cfg->data_path;
  }
  if (req.data_dir.empty()) req.data_dir = data::kDefaultFashionMnistDir;

  ChannelPruneOutcome out;
  const InputInfo in = model_input(*model);
  const bool fmnist = fashion_mnist_shaped(in);
  CalibrationData calib = fmnist ? fashion_mnist_calibration(req, in) : random_calibration(req, in);
  int64_t calib_count = 0;
  for (const auto& b : calib.batches) calib_count += b.begin()->second.dim(0);
  out.calibration = std::to_string(calib_count) + (fmnist ? " Fashion-MNIST train images" : " random N(0,1) inputs");
  if (importance == channel::Importance::kTaylor && calib.labels.empty()) {
    throw Error("--importance taylor needs labelled data: only Fashion-MNIST-shaped models have it here");
  }

  const channel::ChannelAnalysis analysis = channel::analyze_channels(model->graph);
  out.prunable_groups = analysis.prunable_count();
  say(std::to_string(analysis.groups.size()) + " channel groups, " + std::to_string(out.prunable_groups) + " prunable");
  if (out.prunable_groups == 0) throw Error(req.model_path + ": no prunable channel group:\n" + channel::describe_groups(model->graph, analysis));

  const channel::ImportanceScores scores =
      importance == channel::Importance::kTaylor ? channel::taylor_importance(*model, analysis, calib, req.threads)
                                                 : channel::weight_importance(model->graph, analysis, importance);
  out.importance_fallbacks = scores.fallbacks;

  std::optional<data::Dataset> test;
  const data::Preprocess pre = preprocess_of(req);
  if (req.evaluate || cfg) {
    if (!fmnist) throw Error("top-1 evaluation needs a Fashion-MNIST-shaped model ([N,1,28,28] input)");
    test = data::load_fashion_mnist(req.data_dir, "test", req.evaluate ? req.eval_limit : cfg->test_limit);
    say("top-1 of the unpruned model on " + std::to_string(test->count) + " test images");
    out.top1_before = top1(*model, *test, pre, req.threads);
    out.eval_samples = test->count;
    out.has_top1 = true;
  }

  channel::SensitivityOptions so;
  so.fractions = req.fractions;
  so.round_to = req.round_to;
  so.threads = req.threads;
  say("sensitivity scan on " + out.calibration);
  const channel::SensitivityResult sens = channel::sensitivity_scan(*model, analysis, scores, calib, so, say);
  const channel::ChannelCostModel cost(model->graph, analysis);
  channel::RatioSearchOptions ro;
  ro.target = target;
  ro.ratio = req.ratio;
  ro.max_fraction = req.max_fraction;
  ro.round_to = req.round_to;
  std::vector<double> node_ms;
  if (req.rank_by == "latency") {
    node_ms = profile_node_times(*model, calib.batches.front(), req.threads);
    ro.rank_cost = [&](const channel::KeepCounts& k) { return cost.weighted(node_ms, k); };
    double total = 0;
    for (double t : node_ms) total += t;
    say("ranking by predicted latency (unpruned profile: " + std::to_string(total) + " ms per batch)");
  }
  const channel::RatioSearchResult rs = channel::search_ratios(analysis, cost, sens, ro);
  out.target_cost = req.ratio * rs.base_cost;
  out.achieved_cost = rs.cost;
  out.target_met = rs.met;
  if (!rs.met) {
    say("target not reachable with --max-prune " + std::to_string(req.max_fraction) + ": stopped at " +
        std::to_string(rs.cost / rs.base_cost) + " of the cost");
  }

  out.macs_before = estimate_graph_cost(model->graph).total.macs;
  out.params_before = static_cast<double>(model->graph.parameter_count());
  auto pruned = std::make_shared<Model>(channel::prune_to_counts(*model, analysis, scores, rs.keep));
  out.macs_after = estimate_graph_cost(pruned->graph).total.macs;
  out.params_after = static_cast<double>(pruned->graph.parameter_count());
  for (const channel::ChannelGroup& g : analysis.groups) {
    GroupResult gr;
    gr.id = g.id;
    gr.name = g.name;
    gr.total = g.channels;
    gr.kept = rs.keep[static_cast<size_t>(g.id)];
    gr.prunable = g.prunable;
    gr.residual = g.residual;
    gr.depthwise = static_cast<int>(g.depthwise_nodes.size());
    gr.reasons = g.reasons;
    out.groups.push_back(gr);
  }
  if (test) out.top1_pruned = top1(*pruned, *test, pre, req.threads);

  if (cfg) {
    train::TrainConfig c = *cfg;
    c.resume = false;
    c.export_onnx = false;
    if (!req.finetune_dir.empty()) c.output_dir = req.finetune_dir;
    c.checkpoint_dir = c.output_dir + "/checkpoint";
    out.finetune_dir = c.output_dir;
    say("fine-tuning the pruned model (" + std::to_string(c.epochs) + " epochs)");
    train::run_training(c, say, pruned);
    out.top1_finetuned = top1(*pruned, *test, pre, req.threads);
  }
  model = pruned;
  return out;
}

namespace {

std::string si(double v) {
  char buf[32];
  if (v >= 1e9) std::snprintf(buf, sizeof(buf), "%.3fG", v / 1e9);
  else if (v >= 1e6) std::snprintf(buf, sizeof(buf), "%.3fM", v / 1e6);
  else if (v >= 1e3) std::snprintf(buf, sizeof(buf), "%.1fk", v / 1e3);
  else std::snprintf(buf, sizeof(buf), "%.0f", v);
  return buf;
}

}  // namespace

void print_channel_text(const ChannelPruneRequest& r, const std::string& output_path, const ChannelPruneOutcome& o) {
  std::printf("pruned %s -> %s (channel, importance %s, target %s %.2f, round to %lld, calibration: %s)\n",
              r.model_path.c_str(), output_path.c_str(), r.importance.c_str(), r.target.c_str(), r.ratio,
              static_cast<long long>(r.round_to), o.calibration.c_str());
  std::printf("  %-5s %-28s %8s %8s  %s\n", "group", "name", "kept", "total", "notes");
  for (const GroupResult& g : o.groups) {
    std::string notes = g.prunable ? "" : "fixed: " + (g.reasons.empty() ? std::string() : g.reasons[0]);
    if (!g.prunable && g.reasons.size() > 1) notes += " (+" + std::to_string(g.reasons.size() - 1) + " more)";
    if (g.residual) notes = "residual" + std::string(notes.empty() ? "" : ", ") + notes;
    if (g.depthwise) notes = std::to_string(g.depthwise) + " depthwise" + std::string(notes.empty() ? "" : ", ") + notes;
    std::printf("  %-5d %-28s %8lld %8lld  %s\n", g.id, g.name.substr(0, 28).c_str(), static_cast<long long>(g.kept),
                static_cast<long long>(g.total), notes.c_str());
  }
  std::printf("  FLOPs (MACs): %s -> %s (%.1f%%)\n", si(o.macs_before).c_str(), si(o.macs_after).c_str(),
              100.0 * o.macs_after / std::max(1.0, o.macs_before));
  std::printf("  params: %s -> %s (%.1f%%)\n", si(o.params_before).c_str(), si(o.params_after).c_str(),
              100.0 * o.params_after / std::max(1.0, o.params_before));
  std::printf("  target %s: %s\n", r.target.c_str(), o.target_met ? "met" : "NOT met (see --max-prune)");
  if (o.importance_fallbacks) std::printf("  %d group(s) without BatchNorm scored by L1\n", o.importance_fallbacks);
  if (o.has_top1) {
    std::printf("  top-1 on %lld test images: before %.2f %%, pruned %.2f %%", static_cast<long long>(o.eval_samples),
                100 * o.top1_before, 100 * o.top1_pruned);
    if (o.top1_finetuned >= 0) std::printf(", fine-tuned %.2f %%", 100 * o.top1_finetuned);
    std::printf("\n");
  }
}

std::string channel_json(const ChannelPruneRequest& r, const std::string& output_path, const ChannelPruneOutcome& o) {
  json::Writer w;
  w.begin_object()
      .field("model", r.model_path)
      .field("output", output_path)
      .field("method", std::string("channel"))
      .field("importance", r.importance)
      .field("target", r.target)
      .field("ratio", r.ratio)
      .field("round_to", r.round_to)
      .field("calibration", o.calibration)
      .field("target_met", o.target_met)
      .field("macs_before", o.macs_before)
      .field("macs_after", o.macs_after)
      .field("params_before", o.params_before)
      .field("params_after", o.params_after)
      .field("prunable_groups", o.prunable_groups);
  w.key("groups").begin_array();
  for (const GroupResult& g : o.groups) {
    w.begin_object()
        .field("id", g.id)
        .field("name", g.name)
        .field("total", g.total)
        .field("kept", g.kept)
        .field("prunable", g.prunable)
        .field("residual", g.residual)
        .field("depthwise", g.depthwise);
    w.key("reasons").begin_array();
    for (const std::string& s : g.reasons) w.value(s);
    w.end_array().end_object();
  }
  w.end_array();
  if (o.has_top1) {
    w.field("top1_before", o.top1_before).field("top1_pruned", o.top1_pruned).field("eval_samples", o.eval_samples);
    if (o.top1_finetuned >= 0) w.field("top1_finetuned", o.top1_finetuned);
  }
  if (!o.finetune_dir.empty()) w.field("finetune_dir", o.finetune_dir);
  w.end_object();
  return w.str();
}

}  // namespace xnn::channel_job
