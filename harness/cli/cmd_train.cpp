// xnn-lab train CONFIG.yaml [KEY.PATH=VALUE...] [--json] [--db FILE] [--tag T]
// Trains a model (configs/train/README.md), records the result in the results store (experiment
// = the config's name, one job on target "cpu" with test accuracy, train time, step time), and
// writes the trained model as .xnn and .onnx.
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

void add_train_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("train", "Train a model on Fashion-MNIST from a training config (autograd, optimisers, "
                                          "checkpoints), record it, export .xnn and .onnx");
  static std::string config_path, db_path = "xnn-lab.db", tag;
  static std::vector<std::string> overrides;
  static bool as_json = false, no_record = false;
  cmd->add_option("config", config_path, "Training config (YAML), e.g. configs/train/fmnist_small_cnn.yaml")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("overrides", overrides, "KEY.PATH=VALUE overrides, e.g. epochs=2 optimizer.lr=0.05 threads=2");
  cmd->add_option("--db", db_path, "Results store (SQLite)")->capture_default_str();
  cmd->add_option("--tag", tag, "Tag the recorded run");
  cmd->add_flag("--no-record", no_record, "Do not record the result in the store");
  cmd->add_flag("--json", as_json, "Print the result as JSON (progress goes to stderr)");
  std::string ops;  // from the registry, so the help never drifts from what has a backward kernel
  for (const std::string& op : train::GradRegistry::builtin().op_types()) ops += (ops.empty() ? "" : ", ") + op;
  cmd->footer("Ops with a backward kernel (trainable): " + ops +
              ". Conv and pooling: 2-D. SiLU trains as Sigmoid·Mul. A run resumes from its checkpoint "
              "(checkpoint.dir) after an interruption.");
  cmd->callback([&exit_code] {
    train::TrainConfig cfg = train::load_train_config(config_path, overrides);
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
      w.end_array().end_object();
      std::printf("%s\n", w.str().c_str());
    } else {
      std::printf("%s: test accuracy %.2f%% after %zu epochs (%.1f s here), %lld parameters\n  model: %s\n%s%s",
                  cfg.name.c_str(), 100 * r.test_accuracy, r.history.size(), r.train_seconds,
                  static_cast<long long>(r.parameters), r.xnn_path.c_str(),
                  r.onnx_path.empty() ? "" : ("  onnx:  " + r.onnx_path + "\n").c_str(),
                  run_id.empty() ? "" : ("  recorded as run " + run_id + " in " + db_path + "\n").c_str());
    }
    exit_code = 0;
  });
}

}  // namespace xnn::cli
