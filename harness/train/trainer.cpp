#include "harness/train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/core/error.h"
#include "engine/core/sha256.h"
#include "engine/format/xnn_format.h"
#include "engine/onnx/onnx_export.h"
#include "engine/runtime/model_io.h"
#include "engine/runtime/npy.h"
#include "engine/train/training_session.h"
#include "harness/config/experiment_config.h"
#include "harness/config/yaml_section.h"

namespace xnn::train {
namespace fs = std::filesystem;
namespace {

using config::yaml_where;
using Section = config::YamlSection;
std::string where(const std::string& file, const YAML::Node& n) { return yaml_where(file, n); }

std::string fmt(const char* f, double a) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, a);
  return buf;
}

// ---- checkpoints ----------------------------------------------------------------------------
// <dir>/model.xnn (parameters and BatchNorm statistics), <dir>/optimizer/<i>.npy with
// <dir>/optimizer/keys.txt, and <dir>/state.txt (epochs done, steps, config hash, history).
// Written to <dir>.tmp and renamed into place, so an interrupted write leaves the previous one.

struct Checkpoint {
  int epochs_done = 0;
  int64_t steps = 0;
  std::string config_hash;
  std::vector<EpochStats> history;
};

std::string history_line(const EpochStats& e) {
  std::ostringstream s;
  s.precision(17);
  s << e.epoch << ' ' << e.train_loss << ' ' << e.train_accuracy << ' ' << e.test_accuracy << ' ' << e.test_loss << ' '
    << e.lr << ' ' << e.seconds << ' ' << e.images_per_second;
  return s.str();
}

void save_checkpoint(const std::string& dir, const Model& model, const Optimizer& opt, const Checkpoint& ck) {
  const fs::path tmp = dir + ".tmp";
  fs::remove_all(tmp);
  fs::create_directories(tmp / "optimizer");
  save_xnn(model, (tmp / "model.xnn").string(), XnnSaveOptions{{{"step", "train checkpoint"}}});
  std::ofstream keys(tmp / "optimizer" / "keys.txt");
  int i = 0;
  for (const auto& [key, t] : opt.state()) {
    write_npy((tmp / "optimizer" / (std::to_string(i++) + ".npy")).string(), t);
    keys << key << '\n';
  }
  keys.close();
  std::ofstream st(tmp / "state.txt");
  st << "epochs_done " << ck.epochs_done << "\nsteps " << ck.steps << "\nconfig_hash " << ck.config_hash << '\n';
  for (const EpochStats& e : ck.history) st << "epoch " << history_line(e) << '\n';
  st.close();
  if (!st) throw Error("checkpoint: cannot write " + (tmp / "state.txt").string());
  const fs::path old = dir + ".old";
  fs::remove_all(old);
  if (fs::exists(dir)) fs::rename(dir, old);
  fs::rename(tmp, dir);
  fs::remove_all(old);
}

std::optional<Checkpoint> read_checkpoint_state(const std::string& dir) {
  std::ifstream st(fs::path(dir) / "state.txt");
  if (!st) return std::nullopt;
  Checkpoint ck;
  std::string key;
  while (st >> key) {
    if (key == "epochs_done") st >> ck.epochs_done;
    else if (key == "steps") st >> ck.steps;
    else if (key == "config_hash") st >> ck.config_hash;
    else if (key == "epoch") {
      EpochStats e;
      st >> e.epoch >> e.train_loss >> e.train_accuracy >> e.test_accuracy >> e.test_loss >> e.lr >> e.seconds >>
          e.images_per_second;
      ck.history.push_back(e);
    } else {
      throw Error("checkpoint " + dir + "/state.txt: unexpected entry '" + key + "'");
    }
  }
  return ck;
}

OptimizerState read_optimizer_state(const std::string& dir) {
  OptimizerState state;
  std::ifstream keys(fs::path(dir) / "optimizer" / "keys.txt");
  std::string key;
  int i = 0;
  while (std::getline(keys, key)) {
    if (key.empty()) continue;
    state.emplace_back(key, read_npy((fs::path(dir) / "optimizer" / (std::to_string(i++) + ".npy")).string()));
  }
  return state;
}

// Copies the trained values of the checkpoint's constants into `model` (same graph).
void restore_constants(Model& model, const Model& saved, const std::string& dir) {
  for (Value& v : model.graph.values) {
    if (!v.is_constant()) continue;
    const int i = saved.graph.find_value(v.name);
    if (i < 0 || !saved.graph.value(i).is_constant() || saved.graph.value(i).data->shape() != v.data->shape()) {
      throw Error("checkpoint " + dir + ": it does not match the model (value '" + v.name + "')");
    }
    v.data = saved.graph.value(i).data->clone();
  }
}

double evaluate(TrainingSession& session, const data::Dataset& test, const TrainConfig& c, double* loss_out) {
  data::LoaderOptions lo;
  lo.batch_size = c.eval_batch_size;
  lo.shuffle = false;
  lo.train = false;
  lo.prefetch = c.prefetch;
  lo.preprocess.mean = {c.mean};
  lo.preprocess.std = {c.std};
  data::BatchLoader loader(test, lo);
  loader.start_epoch(0);
  data::Batch b;
  int64_t correct = 0, count = 0;
  double loss = 0;
  while (loader.next(b)) {
    const Tensor& logits = session.predict(b.images);
    int64_t hits = 0;
    loss += softmax_cross_entropy(logits, b.labels, 0.0f, nullptr, &hits) * static_cast<double>(b.labels.numel());
    correct += hits;
    count += b.labels.numel();
  }
  if (loss_out) *loss_out = count ? loss / static_cast<double>(count) : 0;
  return count ? static_cast<double>(correct) / static_cast<double>(count) : 0;
}

}  // namespace

TrainConfig parse_train_config(const YAML::Node& root, const std::string& file) {
  TrainConfig c;
  c.path = file;
  Section top(root, "", file,
              {"name", "seed", "threads", "epochs", "model", "data", "optimizer", "schedule", "output", "checkpoint",
               "log_every"});
  top.read("name", c.name, "a string");
  top.read("seed", c.seed, "a non-negative integer");
  top.read("threads", c.threads, "an integer >= 1");
  if (c.threads < 1) top.fail("threads", "must be >= 1");
  top.read("epochs", c.epochs, "an integer >= 1");
  if (c.epochs < 1) top.fail("epochs", "must be >= 1");
  top.read("log_every", c.log_every, "an integer >= 0");
  if (c.name.empty()) c.name = fs::path(file).stem().string();
  const fs::path base = fs::path(file).parent_path();

  if (!top.has("model")) top.fail("model", "is required: give model.file (ONNX or .xnn) or model.builder");
  Section model(top.get("model"), "model", file, {"file", "builder"});
  if (model.has("file") == model.has("builder")) {
    throw Error(where(file, top.get("model")) + ": 'model' needs exactly one of 'file' and 'builder'");
  }
  if (model.has("file")) {
    model.read("file", c.model_file, "a path");
    if (fs::path(c.model_file).is_relative()) c.model_file = (base / c.model_file).lexically_normal().string();
  } else {
    c.builder = parse_builder_spec(model.get("builder"), file);
  }

  Section data(top.get("data"), "data", file,
               {"dataset", "path", "train_limit", "test_limit", "batch_size", "eval_batch_size", "mean", "std",
                "augment", "prefetch"});
  std::string dataset = "fashion-mnist";
  data.read("dataset", dataset, "a dataset name");
  if (dataset != "fashion-mnist") data.fail("dataset", "must be 'fashion-mnist' (the one dataset this trainer reads)");
  data.read("path", c.data_path, "a folder");
  data.read("train_limit", c.train_limit, "an integer >= 0");
  data.read("test_limit", c.test_limit, "an integer >= 0");
  data.read("batch_size", c.batch_size, "an integer >= 1");
  if (c.batch_size < 1) data.fail("batch_size", "must be >= 1");
  data.read("eval_batch_size", c.eval_batch_size, "an integer >= 1");
  if (c.eval_batch_size < 1) data.fail("eval_batch_size", "must be >= 1");
  data.read("mean", c.mean, "a number");
  data.read("std", c.std, "a positive number");
  if (!(c.std > 0)) data.fail("std", "must be > 0");
  data.read("prefetch", c.prefetch, "an integer >= 0");
  Section aug(data.get("augment"), "data.augment", file, {"pad_crop", "hflip"});
  aug.read("pad_crop", c.augment.pad_crop, "an integer >= 0");
  if (c.augment.pad_crop < 0) aug.fail("pad_crop", "must be >= 0");
  aug.read("hflip", c.augment.hflip, "true or false");

  Section opt(top.get("optimizer"), "optimizer", file,
              {"type", "lr", "momentum", "nesterov", "weight_decay", "beta1", "beta2", "eps", "clip_grad_norm",
               "label_smoothing"});
  opt.read("type", c.optimizer.type, "sgd or adamw");
  if (c.optimizer.type != "sgd" && c.optimizer.type != "adamw") opt.fail("type", "must be 'sgd' or 'adamw'");
  opt.read("lr", c.schedule.base_lr, "a positive number");
  if (!(c.schedule.base_lr > 0)) opt.fail("lr", "must be > 0");
  opt.read("momentum", c.optimizer.momentum, "a number >= 0");
  opt.read("nesterov", c.optimizer.nesterov, "true or false");
  if (opt.has("weight_decay")) {
    double wd = 0;
    opt.read("weight_decay", wd, "a number >= 0");
    c.optimizer.weight_decay = wd;
  }
  opt.read("beta1", c.optimizer.beta1, "a number in [0, 1)");
  opt.read("beta2", c.optimizer.beta2, "a number in [0, 1)");
  opt.read("eps", c.optimizer.eps, "a number >= 0");
  opt.read("clip_grad_norm", c.clip_grad_norm, "a number >= 0 (0: off)");
  if (c.clip_grad_norm < 0) opt.fail("clip_grad_norm", "must be >= 0");
  opt.read("label_smoothing", c.label_smoothing, "a number in [0, 1)");
  if (c.label_smoothing < 0 || c.label_smoothing >= 1) opt.fail("label_smoothing", "must be in [0, 1)");

  Section sched(top.get("schedule"), "schedule", file,
                {"type", "min_lr", "warmup_epochs", "pct_start", "div_factor", "final_div_factor"});
  sched.read("type", c.schedule.type, "constant, cosine or onecycle");
  if (c.schedule.type != "constant" && c.schedule.type != "cosine" && c.schedule.type != "onecycle") {
    sched.fail("type", "must be constant, cosine or onecycle");
  }
  sched.read("min_lr", c.schedule.min_lr, "a number >= 0");
  sched.read("warmup_epochs", c.warmup_epochs, "a number >= 0");
  sched.read("pct_start", c.schedule.pct_start, "a number in [0, 1]");
  sched.read("div_factor", c.schedule.div_factor, "a positive number");
  sched.read("final_div_factor", c.schedule.final_div_factor, "a positive number");

  Section out(top.get("output"), "output", file, {"dir", "onnx"});
  out.read("dir", c.output_dir, "a folder");
  out.read("onnx", c.export_onnx, "true or false");
  if (c.output_dir.empty()) c.output_dir = (fs::path("train-out") / c.name).string();
  Section ck(top.get("checkpoint"), "checkpoint", file, {"dir", "resume"});
  ck.read("dir", c.checkpoint_dir, "a folder");
  ck.read("resume", c.resume, "true or false");
  if (c.checkpoint_dir.empty()) c.checkpoint_dir = (fs::path(c.output_dir) / "checkpoint").string();

  YAML::Emitter em;
  em << root;
  c.resolved_yaml = em.c_str();
  return c;
}

TrainConfig load_train_config(const std::string& path, const std::vector<std::string>& overrides) {
  if (!fs::exists(path)) throw Error(path + ": no such training config");
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    throw Error(path + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) + ": invalid YAML: " + e.msg);
  }
  if (!root.IsMap()) throw Error(path + ": a training config must be a YAML mapping");
  for (const std::string& o : overrides) config::apply_override(root, config::parse_override(o));
  return parse_train_config(root, path);
}

TrainResult run_training(const TrainConfig& c, const ProgressFn& progress, std::shared_ptr<Model> initial_model,
                         const StepHook& after_step) {
  const auto log = [&](const std::string& s) {
    if (progress) progress(s);
  };
  // Everything that determines the trained weights; output locations and logging do not.
  std::string hash_text = c.resolved_yaml;
  std::shared_ptr<Model> model = initial_model;
  if (!model) model = c.builder ? build_model(*c.builder, c.seed) : load_model(c.model_file);
  hash_text += "\nmodel:" + sha256_hex(serialize_xnn(*model));
  const std::string config_hash = sha256_hex(hash_text).substr(0, 16);

  const data::Dataset train = data::load_fashion_mnist(c.data_path, "train", c.train_limit);
  const data::Dataset test = data::load_fashion_mnist(c.data_path, "test", c.test_limit);

  TrainResult result;
  result.checkpoint_dir = c.checkpoint_dir;
  Checkpoint ck;
  ck.config_hash = config_hash;
  std::unique_ptr<Optimizer> opt = make_optimizer(c.optimizer);
  if (c.resume) {
    if (auto saved = read_checkpoint_state(c.checkpoint_dir)) {
      if (saved->config_hash != config_hash) {
        throw Error("checkpoint " + c.checkpoint_dir + " was written by a different config or model (hash " +
                    saved->config_hash + ", this run " + config_hash +
                    "); remove it, point checkpoint.dir elsewhere, or set checkpoint.resume=false");
      }
      auto saved_model = load_model((fs::path(c.checkpoint_dir) / "model.xnn").string());
      restore_constants(*model, *saved_model, c.checkpoint_dir);
      opt->load_state(read_optimizer_state(c.checkpoint_dir));
      ck = *saved;
      result.resumed_from_epoch = ck.epochs_done;
      log("resuming from " + c.checkpoint_dir + " after epoch " + std::to_string(ck.epochs_done));
    }
  }

  TrainingSession session(model, TrainingOptions{c.threads, c.seed, c.label_smoothing});
  session.set_steps_taken(ck.steps);
  result.parameters = session.parameter_count();

  data::LoaderOptions lo;
  lo.batch_size = c.batch_size;
  lo.shuffle = true;
  lo.drop_last = true;  // equal batches: BatchNorm statistics of a tiny last batch are noise
  lo.seed = c.seed;
  lo.train = true;
  lo.augment = c.augment;
  lo.prefetch = c.prefetch;
  lo.preprocess.mean = {c.mean};
  lo.preprocess.std = {c.std};
  data::BatchLoader loader(train, lo);
  const int64_t per_epoch = loader.batches_per_epoch();

  ScheduleConfig sc = c.schedule;
  if (sc.type != "constant") sc.total_steps = per_epoch * c.epochs;
  if (sc.type == "cosine") sc.warmup_steps = static_cast<int64_t>(std::llround(c.warmup_epochs * static_cast<double>(per_epoch)));
  std::unique_ptr<LrSchedule> schedule = make_schedule(sc);
  log("training '" + c.name + "': " + std::to_string(result.parameters) + " parameters, " +
      std::to_string(train.count) + " training images, " + std::to_string(per_epoch) + " steps/epoch × " +
      std::to_string(c.epochs) + " epochs, " + opt->describe() + ", " + schedule->describe() + ", " +
      std::to_string(c.threads) + " thread(s)");

  std::vector<double> step_ms;
  const int64_t total_steps = per_epoch * c.epochs;
  if (after_step) after_step(ck.steps, total_steps, session.parameters());
  const auto t_all = std::chrono::steady_clock::now();
  for (int epoch = ck.epochs_done; epoch < c.epochs; ++epoch) {
    const auto t0 = std::chrono::steady_clock::now();
    loader.start_epoch(epoch);
    data::Batch b;
    double loss_sum = 0, lr = 0;
    int64_t correct = 0, seen = 0, steps = 0;
    while (loader.next(b)) {
      const auto s0 = std::chrono::steady_clock::now();
      lr = schedule->lr_at(ck.steps);
      // Profile every step after this run's first (which allocates the plan).
      if (c.profile && !session.profiling() && steps + epoch > ck.epochs_done) session.set_profiling(true);
      const StepResult r = session.train_step(b.images, b.labels);
      if (!std::isfinite(r.loss)) {
        throw Error("training diverged: loss is " + std::to_string(r.loss) + " at epoch " + std::to_string(epoch + 1) +
                    " step " + std::to_string(steps + 1) + " (lower optimizer.lr or set optimizer.clip_grad_norm)");
      }
      if (c.clip_grad_norm > 0) clip_grad_norm(session.parameters(), c.clip_grad_norm);
      const auto u0 = std::chrono::steady_clock::now();
      opt->step(session.parameters(), lr);
      if (session.profiling())
        result.profile_optimizer_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - u0).count();
      if (after_step) after_step(ck.steps + 1, total_steps, session.parameters());
      step_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s0).count());
      ++ck.steps;
      ++steps;
      loss_sum += r.loss * static_cast<double>(r.count);
      correct += r.correct;
      seen += r.count;
      if (c.log_every > 0 && steps % c.log_every == 0) {
        const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        log("epoch " + std::to_string(epoch + 1) + "/" + std::to_string(c.epochs) + " step " + std::to_string(steps) + "/" +
            std::to_string(per_epoch) + "  loss " + fmt("%.4f", loss_sum / static_cast<double>(seen)) + "  acc " +
            fmt("%.2f%%", 100.0 * static_cast<double>(correct) / static_cast<double>(seen)) + "  lr " + fmt("%.4g", lr) +
            "  " + fmt("%.0f img/s", static_cast<double>(seen) / secs));
      }
    }
    EpochStats e;
    e.epoch = epoch + 1;
    e.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    e.train_loss = seen ? loss_sum / static_cast<double>(seen) : 0;
    e.train_accuracy = seen ? static_cast<double>(correct) / static_cast<double>(seen) : 0;
    e.images_per_second = e.seconds > 0 ? static_cast<double>(seen) / e.seconds : 0;
    e.lr = lr;
    e.test_accuracy = evaluate(session, test, c, &e.test_loss);
    ck.history.push_back(e);
    ck.epochs_done = epoch + 1;
    ++result.epochs_run;
    save_checkpoint(c.checkpoint_dir, *model, *opt, ck);
    log("epoch " + std::to_string(e.epoch) + "/" + std::to_string(c.epochs) + ": train loss " + fmt("%.4f", e.train_loss) +
        ", train acc " + fmt("%.2f%%", 100 * e.train_accuracy) + ", test acc " + fmt("%.2f%%", 100 * e.test_accuracy) +
        ", test loss " + fmt("%.4f", e.test_loss) + ", " + fmt("%.1f s", e.seconds) + ", " +
        fmt("%.0f img/s", e.images_per_second));
  }
  result.train_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_all).count();
  if (!step_ms.empty()) {
    std::nth_element(step_ms.begin(), step_ms.begin() + static_cast<std::ptrdiff_t>(step_ms.size() / 2), step_ms.end());
    result.step_ms_median = step_ms[step_ms.size() / 2];
  }
  result.history = ck.history;
  if (session.profiling()) {
    result.profile = session.profile();
    result.profile_loss_ms = session.profile_loss_ms();
    result.profiled_steps = session.profiled_steps();
  }
  if (result.epochs_run == 0) {  // everything came from the checkpoint: measure the model as it is
    EpochStats e;
    result.test_accuracy = evaluate(session, test, c, &result.test_loss);
  } else {
    result.test_accuracy = ck.history.back().test_accuracy;
    result.test_loss = ck.history.back().test_loss;
  }

  fs::create_directories(c.output_dir);
  result.xnn_path = (fs::path(c.output_dir) / "model.xnn").string();
  model->metadata.producer = "xnn-lab train";
  save_xnn(*model, result.xnn_path,
           XnnSaveOptions{{{"step", "train"}, {"train_config", c.name}, {"test_accuracy", fmt("%.4f", result.test_accuracy)}}});
  if (c.export_onnx) {
    result.onnx_path = (fs::path(c.output_dir) / "model.onnx").string();
    export_onnx_file(*model, result.onnx_path);
  }
  log("test accuracy " + fmt("%.2f%%", 100 * result.test_accuracy) + "; wrote " + result.xnn_path +
      (result.onnx_path.empty() ? "" : " and " + result.onnx_path));
  return result;
}

}  // namespace xnn::train
