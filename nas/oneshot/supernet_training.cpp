#include "nas/format.h"
#include "nas/oneshot/supernet_training.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>

#include "engine/core/error.h"
#include "engine/core/sha256.h"
#include "engine/train/lr_schedule.h"
#include "engine/train/optimizer.h"
#include "engine/train/training_session.h"
#include "harness/data/batch_loader.h"
#include "nas/search/search_space.h"

namespace fs = std::filesystem;

namespace xnn::nas {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// Everything that determines the supernet's weights (not the number of subnets searched, nor
// output paths), hashed so a checkpoint of another configuration is refused.
int64_t fingerprint(const SupernetWeights& w, const train::TrainConfig& r, const OneshotOptions& o, uint64_t seed,
                    int64_t train_count, const std::string& optimizer, const std::string& schedule) {
  std::string s = "spos1 seed " + std::to_string(seed) + " width " + fmt("%.10g", w.width()) + " epochs " +
                  std::to_string(o.epochs) + " spp " + std::to_string(o.steps_per_path) + " batch " +
                  std::to_string(r.batch_size) + " images " + std::to_string(train_count) + " aug " +
                  std::to_string(r.augment.pad_crop) + std::to_string(r.augment.hflip) + " ls " +
                  fmt("%.6g", r.label_smoothing) + " clip " + fmt("%.6g", r.clip_grad_norm) + " mean " +
                  fmt("%.6g", r.mean) + " std " + fmt("%.6g", r.std) + " " + optimizer + " " + schedule;
  // Appended only when on, so the checkpoints of unshared supernets keep their fingerprint.
  if (w.sharing() != WeightSharing::kNone) s += std::string(" sharing ") + weight_sharing_name(w.sharing());
  if (w.split() != SupernetSplit::kNone) s += std::string(" split ") + supernet_split_name(w.split());
  const arch::SearchSpace& sp = w.space();
  s += " space " + std::to_string(sp.in_channels) + "/" + std::to_string(sp.classes) + "/" +
       std::to_string(sp.stem_channels) + sp.stem_activation + "/" + std::to_string(sp.head_channels) + sp.head_activation;
  s += " stem strides";
  for (int64_t v : sp.stem_strides) s += " " + std::to_string(v);
  for (const arch::StageSpace& st : sp.stages) {
    s += "|" + std::to_string(st.channels) + "s" + std::to_string(st.stride) + "d";
    for (int64_t d : st.depths) s += std::to_string(d) + ",";
    s += "k";
    for (int64_t k : st.kernels) s += std::to_string(k) + ",";
    s += "e";
    for (int64_t e : st.expansions) s += std::to_string(e) + ",";
  }
  return static_cast<int64_t>(std::stoull(sha256_hex(s).substr(0, 15), nullptr, 16));
}

Tensor i64_scalar(int64_t v) {
  Tensor t(DType::kI64, {1});
  t.data<int64_t>()[0] = v;
  return t;
}

void save_checkpoint(const std::string& path, const SupernetWeights& w, const train::Optimizer& opt, int64_t print,
                     int epochs_done, int64_t steps) {
  std::vector<std::pair<std::string, Tensor>> all;
  all.emplace_back("meta/fingerprint", i64_scalar(print));
  all.emplace_back("meta/epochs_done", i64_scalar(epochs_done));
  all.emplace_back("meta/steps", i64_scalar(steps));
  for (const auto& [key, t] : w.tensors()) all.emplace_back("weight/" + key, t);
  for (const auto& [key, t] : opt.state()) all.emplace_back("optim/" + key, t);
  save_tensor_file(path, all);
}

}  // namespace

SupernetData load_supernet_data(const train::TrainConfig& recipe, int64_t validation_size) {
  if (validation_size < 1) throw Error("supernet: validation_size must be >= 1");
  const int64_t n = recipe.train_limit;
  const data::Dataset all = data::load_fashion_mnist(recipe.data_path, "train", n > 0 ? n + validation_size : 0);
  const int64_t train_count = n > 0 ? n : all.count - validation_size;
  if (train_count < 1 || all.count - train_count < 1) {
    throw Error("supernet: the training split (" + std::to_string(all.count) + " images in " + recipe.data_path +
                ") leaves no images for validation_size " + std::to_string(validation_size) + " besides train_limit " +
                std::to_string(n));
  }
  SupernetData d;
  d.train = data::slice_dataset(all, 0, train_count);
  d.validation = data::slice_dataset(all, train_count, all.count - train_count);
  return d;
}

arch::Arch sample_path(const SupernetWeights& weights, uint64_t seed, int64_t draw, int64_t stem_stride) {
  arch::SearchSpace space = weights.space();
  space.width_multipliers = {weights.width()};
  if (stem_stride > 0) space.stem_strides = {stem_stride};
  std::mt19937_64 rng = derive_rng(seed, static_cast<uint64_t>(draw), 0x5905);
  arch::Arch a = arch::sample_arch(space, rng);
  if (stem_stride > 0) a.stem_stride = arch::canonical_stem_stride(weights.space(), stem_stride);
  return a;
}

SupernetTrainResult train_supernet(SupernetWeights& weights, const data::Dataset& train, const train::TrainConfig& recipe,
                                   const OneshotOptions& options, uint64_t seed, const std::string& checkpoint_path,
                                   const train::ProgressFn& progress) {
  const auto log = [&](const std::string& s) {
    if (progress) progress(s);
  };
  for (int64_t r : weights.space().resolutions) {
    if (r != train.rows || r != train.cols) {
      throw Error("supernet: the space's resolution " + std::to_string(r) + " differs from the images' " +
                  std::to_string(train.rows) + "x" + std::to_string(train.cols) + " (the data are not resized)");
    }
  }
  data::LoaderOptions lo;
  lo.batch_size = recipe.batch_size;
  lo.shuffle = true;
  lo.drop_last = true;  // equal batches: BatchNorm statistics of a tiny last batch are noise
  lo.seed = recipe.seed;
  lo.train = true;
  lo.augment = recipe.augment;
  lo.prefetch = recipe.prefetch;
  lo.preprocess.mean = {recipe.mean};
  lo.preprocess.std = {recipe.std};
  data::BatchLoader loader(train, lo);
  const int64_t per_epoch = loader.batches_per_epoch();

  std::unique_ptr<train::Optimizer> opt = train::make_optimizer(recipe.optimizer);
  train::ScheduleConfig sc = recipe.schedule;
  if (sc.type != "constant") sc.total_steps = per_epoch * options.epochs;
  if (sc.type == "cosine") sc.warmup_steps = static_cast<int64_t>(std::llround(recipe.warmup_epochs * static_cast<double>(per_epoch)));
  std::unique_ptr<train::LrSchedule> schedule = train::make_schedule(sc);
  if (weights.sharing() != options.sharing) {
    throw Error(std::string("supernet: the weight store shares '") + weight_sharing_name(weights.sharing()) +
                "', the options ask for '" + weight_sharing_name(options.sharing) + "'");
  }
  if (weights.split() != options.split) {
    throw Error(std::string("supernet: the weight store is split by '") + supernet_split_name(weights.split()) +
                "', the options ask for '" + supernet_split_name(options.split) + "'");
  }
  const int64_t print = fingerprint(weights, recipe, options, seed, train.count, opt->describe(), schedule->describe());

  SupernetTrainResult result;
  int epochs_done = 0;
  int64_t step = 0;
  if (fs::exists(checkpoint_path)) {
    std::map<std::string, Tensor> w;
    train::OptimizerState st;
    std::map<std::string, int64_t> meta;
    for (auto& [key, t] : load_tensor_file(checkpoint_path)) {
      if (key.rfind("weight/", 0) == 0) w.emplace(key.substr(7), std::move(t));
      else if (key.rfind("optim/", 0) == 0) st.emplace_back(key.substr(6), std::move(t));
      else if (key.rfind("meta/", 0) == 0 && t.dtype() == DType::kI64 && t.numel() == 1) meta[key.substr(5)] = t.data<int64_t>()[0];
      else throw Error(checkpoint_path + ": unexpected entry '" + key + "' in the supernet checkpoint");
    }
    if (meta.count("fingerprint") == 0 || meta.count("epochs_done") == 0 || meta.count("steps") == 0) {
      throw Error(checkpoint_path + ": the supernet checkpoint lacks its meta entries");
    }
    if (meta["fingerprint"] != print) {
      throw Error(checkpoint_path + ": the supernet checkpoint was written by another configuration (recipe, " +
                  "oneshot options or space); remove it or change output.dir");
    }
    weights.load(w);
    opt->load_state(st);
    epochs_done = static_cast<int>(meta["epochs_done"]);
    step = meta["steps"];
    result.resumed_from_epoch = epochs_done;
    log("supernet: resuming from " + checkpoint_path + " after epoch " + std::to_string(epochs_done) + " of " +
        std::to_string(options.epochs) + " (" + std::to_string(weights.size()) + " tensors)");
  }
  if (epochs_done < options.epochs) {
    log("supernet: " + std::to_string(train.count) + " training images, " + std::to_string(per_epoch) + " steps/epoch x " +
        std::to_string(options.epochs) + " epochs, a new path every " + std::to_string(options.steps_per_path) +
        " step(s), width " + fmt("%.10g", weights.width()) + ", block weights shared: " +
        weight_sharing_name(weights.sharing()) +
        (weights.split() == SupernetSplit::kNone ? std::string()
                                                 : ", one sub-supernet per stem stride (" +
                                                       std::to_string(weights.groups().size()) + ", each every batch)") +
        ", " + opt->describe() + ", " + schedule->describe() + ", " +
        std::to_string(recipe.threads) + " thread(s)");
  }

  // One session per sub-supernet (one in all unless split), each on its current path.
  const std::vector<int64_t> groups = weights.groups();
  const int64_t group_count = static_cast<int64_t>(groups.size());
  std::vector<std::unique_ptr<train::TrainingSession>> sessions(groups.size());
  // A path's first step also prepares its session's plan (shapes, allocation): timed apart.
  std::vector<double> switch_ms, first_step_ms, step_ms;
  const auto t_all = Clock::now();
  for (int epoch = epochs_done; epoch < options.epochs; ++epoch) {
    const auto t0 = Clock::now();
    loader.start_epoch(epoch);
    data::Batch b;
    double loss_sum = 0;
    int64_t correct = 0, seen = 0, steps = 0;
    std::vector<int64_t> group_correct(groups.size(), 0), group_seen(groups.size(), 0);
    while (loader.next(b)) {
      const bool new_path = !sessions[0] || step % options.steps_per_path == 0;
      const double lr = schedule->lr_at(step);
      for (size_t g = 0; g < groups.size(); ++g) {
        std::unique_ptr<train::TrainingSession>& session = sessions[g];
        if (new_path) {
          const auto s0 = Clock::now();
          session.reset();  // its model's tensors alias the store: nothing to copy back
          const int64_t draw = (step / options.steps_per_path) * group_count + static_cast<int64_t>(g);
          const arch::Arch path = sample_path(weights, seed, draw, groups[g]);
          session = std::make_unique<train::TrainingSession>(
              weights.realize(path, true, 0), train::TrainingOptions{recipe.threads, seed + static_cast<uint64_t>(step * group_count) + g,
                                                                     recipe.label_smoothing});
          switch_ms.push_back(ms_since(s0));
          ++result.paths;
        }
        const auto s0 = Clock::now();
        const train::StepResult r = session->train_step(b.images, b.labels);
        if (!std::isfinite(r.loss)) {
          throw Error("supernet training diverged: loss is " + std::to_string(r.loss) + " at step " +
                      std::to_string(step) + " (lower the lr or set optimizer.clip_grad_norm)");
        }
        if (recipe.clip_grad_norm > 0) train::clip_grad_norm(session->parameters(), recipe.clip_grad_norm);
        opt->step(session->parameters(), lr);
        (new_path ? first_step_ms : step_ms).push_back(ms_since(s0));
        loss_sum += r.loss * static_cast<double>(r.count);
        correct += r.correct;
        seen += r.count;
        group_correct[g] += r.correct;
        group_seen[g] += r.count;
      }
      ++step;
      ++steps;
      if (recipe.log_every > 0 && steps % recipe.log_every == 0) {
        log("supernet epoch " + std::to_string(epoch + 1) + "/" + std::to_string(options.epochs) + " step " +
            std::to_string(steps) + "/" + std::to_string(per_epoch) + "  loss " +
            fmt("%.4f", loss_sum / static_cast<double>(seen)) + "  acc " +
            fmt("%.2f%%", 100.0 * static_cast<double>(correct) / static_cast<double>(seen)) + "  " +
            fmt("%.0f img/s", static_cast<double>(seen) / (ms_since(t0) / 1000.0)));
      }
    }
    for (auto& session : sessions) session.reset();
    save_checkpoint(checkpoint_path, weights, *opt, print, epoch + 1, step);
    ++result.epochs_run;
    const double secs = ms_since(t0) / 1000.0;
    std::string per_group;
    if (group_count > 1) {
      for (size_t g = 0; g < groups.size(); ++g) {
        per_group += std::string(g == 0 ? "; " : ", ") + "stem stride " + std::to_string(groups[g]) + ": " +
                     fmt("%.2f%%", group_seen[g] ? 100.0 * static_cast<double>(group_correct[g]) /
                                                       static_cast<double>(group_seen[g])
                                                 : 0.0);
      }
    }
    log("supernet epoch " + std::to_string(epoch + 1) + "/" + std::to_string(options.epochs) + ": train loss " +
        fmt("%.4f", seen ? loss_sum / static_cast<double>(seen) : 0.0) + ", train acc " +
        fmt("%.2f%%", seen ? 100.0 * static_cast<double>(correct) / static_cast<double>(seen) : 0.0) + " (sampled paths" +
        per_group + "), " + fmt("%.1f s", secs) + ", " + fmt("%.0f img/s", static_cast<double>(seen) / secs) +
        "; medians: path switch " + fmt("%.1f ms", median(switch_ms)) + ", its first step " +
        fmt("%.1f ms", median(first_step_ms)) +
        (step_ms.empty() ? std::string() : ", later steps " + fmt("%.1f ms", median(step_ms))));
  }
  result.seconds = std::chrono::duration<double>(Clock::now() - t_all).count();
  result.steps = step;
  result.switch_ms_median = median(switch_ms);
  result.first_step_ms_median = median(first_step_ms);
  result.step_ms_median = median(step_ms);
  return result;
}

}  // namespace xnn::nas
