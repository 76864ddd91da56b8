// xnn-lab train CONFIG.yaml [KEY.PATH=VALUE...] [--json] [--db FILE] [--tag T]
// Trains a model (configs/train/README.md), records the result in the results store (experiment
// = the config's name, one job on target "cpu" with test accuracy, train time, step time), and
// writes the trained model as .xnn and .onnx.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/core/error.h"
#include "engine/core/sha256.h"
#include "harness/cli/commands.h"
#include "engine/train/autograd.h"
#include "harness/cli/registries.h"
#include "harness/store/store.h"
#include "harness/train/trainer.h"
#include "harness/util/json.h"

namespace xnn::cli {
namespace fs = std::filesystem;

namespace {

// Per step: node rows, then the loss and the optimiser update, in milliseconds.
struct ProfileRow {
  std::string name, type;
  double forward_ms, backward_ms;
};

std::vector<ProfileRow> profile_rows(const train::TrainResult& r) {
  const double steps = static_cast<double>(std::max<int64_t>(r.profiled_steps, 1));
  std::vector<ProfileRow> rows;
  for (const train::TrainNodeProfile& p : r.profile)
    rows.push_back({p.name, p.op_type, p.forward_ms / steps, p.backward_ms / steps});
  rows.push_back({"(loss)", "SoftmaxCrossEntropy", r.profile_loss_ms / steps, 0});
  rows.push_back({"(optimizer)", "update", 0, r.profile_optimizer_ms / steps});
  return rows;
}

void print_profile(const train::TrainResult& r) {
  std::vector<ProfileRow> rows = profile_rows(r);
  double total = 0;
  for (const ProfileRow& p : rows) total += p.forward_ms + p.backward_ms;
  std::printf("\nper-node training profile (mean per step over %lld steps, sorted by time)\n",
              static_cast<long long>(r.profiled_steps));
  std::printf("%-28s %-20s %10s %10s %10s %7s %7s\n", "node", "type", "fwd ms", "bwd ms", "total ms", "%", "cum %");
  std::sort(rows.begin(), rows.end(),
            [](const ProfileRow& a, const ProfileRow& b) { return a.forward_ms + a.backward_ms > b.forward_ms + b.backward_ms; });
  double cum = 0;
  for (const ProfileRow& p : rows) {
    const double t = p.forward_ms + p.backward_ms, pct = total > 0 ? 100 * t / total : 0;
    cum += pct;
    std::printf("%-28.28s %-20.20s %10.3f %10.3f %10.3f %7.2f %7.2f\n", p.name.c_str(), p.type.c_str(), p.forward_ms,
                p.backward_ms, t, pct, cum);
  }
  std::printf("%-28s %-20s %10s %10s %10.3f\n", "total", "", "", "", total);
}

void write_profile_json(json::Writer& w, const train::TrainResult& r) {
  w.field("profiled_steps", r.profiled_steps);
  w.key("profile").begin_array();
  for (const ProfileRow& p : profile_rows(r)) {
    w.begin_object()
        .field("name", p.name)
        .field("type", p.type)
        .field("forward_ms", p.forward_ms)
        .field("backward_ms", p.backward_ms)
        .end_object();
  }
  w.end_array();
}

}  // namespace

void add_train_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("train", "Train a model on Fashion-MNIST from a training config (autograd, optimisers, "
                                          "checkpoints), record it, export .xnn and .onnx");
  static std::string config_path, db_path = "xnn-lab.db", tag;
  static std::vector<std::string> overrides;
  static bool as_json = false, no_record = false, profile = false;
  cmd->add_option("config", config_path, "Training config (YAML), e.g. configs/train/fmnist_small_cnn.yaml")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("overrides", overrides, "KEY.PATH=VALUE overrides, e.g. epochs=2 optimizer.lr=0.05 threads=2");
  cmd->add_option("--db", db_path, "Results store (SQLite)")->capture_default_str();
  cmd->add_option("--tag", tag, "Tag the recorded run");
  cmd->add_flag("--no-record", no_record, "Do not record the result in the store");
  cmd->add_flag("--json", as_json, "Print the result as JSON (progress goes to stderr)");
  cmd->add_flag("--profile", profile,
                "Time every node's forward and backward pass, the loss and the optimiser update (per step, "
                "every step after the first); printed as a table, or as `profile` in --json");
  std::string ops;  // from the registry, so the help never drifts from what has a backward kernel
  for (const std::string& op : train::GradRegistry::builtin().op_types()) ops += (ops.empty() ? "" : ", ") + op;
  cmd->footer("Ops with a backward kernel (trainable): " + ops +
              ". Conv and pooling: 2-D. SiLU trains as Sigmoid·Mul. A run resumes from its checkpoint "
              "(checkpoint.dir) after an interruption.");
  cmd->callback([&exit_code] {
    train::TrainConfig cfg = train::load_train_config(config_path, overrides);
    cfg.profile = profile;
    std::unique_ptr<Store> store;
    std::string run_id, job_id;
    if (!no_record) {
      store = std::make_unique<Store>(db_path);
      store->ensure_experiment(cfg.name, fs::absolute(config_path).string());
      store->ensure_target(TargetRecord{0, "cpu", "cpu", false, "{\"threads\":" + std::to_string(cfg.threads) + "}"});
      RunRecord run;
      run.experiment = cfg.name;
      run.config_path = fs::absolute(config_path).string();
      run.config_hash = sha256_hex(cfg.resolved_yaml);
      run.config_text = cfg.resolved_yaml;
      run.git_commit = build_commit();
      if (!tag.empty()) run.tag = tag;
      run.environment_id = store->ensure_environment(Environment::capture(build_commit()));
      run.command = "xnn-lab train " + config_path;
      for (const auto& o : overrides) run.command += " " + o;
      run_id = store->create_run(run);
      JobRecord job;
      job.id = sha256_hex("train\n" + cfg.resolved_yaml + "\n" + run_id).substr(0, 16);
      job_id = job.id;
      job.run_id = run_id;
      job.experiment = cfg.name;
      job.model = cfg.name;
      job.variant = "trained";
      job.target = "cpu";
      store->start_job(job);
      store->link_job_to_run(run_id, job.id, false);
    }
    train::TrainResult r;
    try {
      r = train::run_training(cfg, [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); });
    } catch (const std::exception& e) {
      if (store) {
        JobResult failed;
        failed.status = job_status::kFailed;
        failed.error = e.what();
        store->finish_job(job_id, failed);
        store->finish_run(run_id, run_status::kFailed);
      }
      throw;
    }
    if (store) {
      JobResult jr;
      jr.metrics = {{"test_accuracy", r.test_accuracy, "ratio"},
                    {"top1", r.test_accuracy, "ratio"},
                    {"test_loss", r.test_loss, ""},
                    {"train_seconds", r.train_seconds, "s"},
                    {"train_step_ms_median", r.step_ms_median, "ms"},
                    {"parameters", static_cast<double>(r.parameters), "count"},
                    {"epochs", static_cast<double>(r.history.size()), "count"}};
      for (const auto& e : r.history) {
        jr.samples["epoch_test_accuracy"].push_back(e.test_accuracy);
        jr.samples["epoch_train_loss"].push_back(e.train_loss);
        jr.samples["epoch_seconds"].push_back(e.seconds);
      }
      for (const std::string& path : {r.xnn_path, r.onnx_path}) {
        if (path.empty()) continue;
        std::ifstream in(path, std::ios::binary);
        std::stringstream ss;
        ss << in.rdbuf();
        jr.artifacts.push_back(ArtifactRecord{"model", fs::absolute(path).string(), sha256_hex(ss.str()),
                                              static_cast<int64_t>(fs::file_size(path))});
      }
      store->finish_job(job_id, jr);
      store->finish_run(run_id, run_status::kFinished);
    }
    if (as_json) {
      json::Writer w;
      w.begin_object()
          .field("name", cfg.name)
          .field("test_accuracy", r.test_accuracy)
          .field("test_loss", r.test_loss)
          .field("train_seconds", r.train_seconds)
          .field("train_step_ms_median", r.step_ms_median)
          .field("parameters", r.parameters)
          .field("epochs_run", r.epochs_run)
          .field("resumed_from_epoch", r.resumed_from_epoch)
          .field("xnn_path", r.xnn_path)
          .field("onnx_path", r.onnx_path)
          .field("checkpoint_dir", r.checkpoint_dir)
          .field("run_id", run_id);
      w.key("history").begin_array();
      for (const auto& e : r.history) {
        w.begin_object()
            .field("epoch", e.epoch)
            .field("train_loss", e.train_loss)
            .field("train_accuracy", e.train_accuracy)
            .field("test_accuracy", e.test_accuracy)
            .field("seconds", e.seconds)
            .end_object();
      }
      w.end_array();
      if (profile) write_profile_json(w, r);
      w.end_object();
      std::printf("%s\n", w.str().c_str());
    } else {
      std::printf("%s: test accuracy %.2f%% after %zu epochs (%.1f s here), %lld parameters\n  model: %s\n%s%s",
                  cfg.name.c_str(), 100 * r.test_accuracy, r.history.size(), r.train_seconds,
                  static_cast<long long>(r.parameters), r.xnn_path.c_str(),
                  r.onnx_path.empty() ? "" : ("  onnx:  " + r.onnx_path + "\n").c_str(),
                  run_id.empty() ? "" : ("  recorded as run " + run_id + " in " + db_path + "\n").c_str());
      if (profile) print_profile(r);
    }
    exit_code = 0;
  });
}

}  // namespace xnn::cli
