// `xnn-lab train`: a training run described by a YAML config (schema: configs/train/README.md).
// The trainer wires the engine's autograd (engine/train) to the data pipeline (harness/data),
// runs epochs with an optimiser and LR schedule, evaluates on the test split after each epoch,
// checkpoints after each epoch (a resumed run continues exactly: the data order, augmentation
// and dropout draws depend only on the seed, epoch and step), and exports the trained model to
// .xnn and .onnx.
#pragma once
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/core/graph.h"
#include "engine/train/lr_schedule.h"
#include "engine/train/optimizer.h"
#include "engine/train/parameter.h"
#include "engine/train/training_session.h"
#include "harness/data/batch_loader.h"
#include "harness/train/model_builder.h"

namespace xnn::train {

struct TrainConfig {
  std::string name;                 // default: the config file name without extension
  std::string path;                 // the config file (relative paths resolve from its folder)
  uint64_t seed = 0;
  int threads = 1;
  int epochs = 10;
  // model: exactly one of file (ONNX or .xnn; its initialisers become trainable) and builder.
  std::string model_file;
  std::optional<BuilderSpec> builder;
  // data
  std::string data_path = data::kDefaultFashionMnistDir;
  int64_t train_limit = 0, test_limit = 0;  // 0: the whole split
  int64_t batch_size = 128;
  int64_t eval_batch_size = 1000;
  float mean = 0.2860f, std = 0.3530f;  // Fashion-MNIST pixel statistics (scale 1/255)
  data::Augment augment;
  int prefetch = 2;
  // optimisation
  OptimizerConfig optimizer;
  ScheduleConfig schedule;              // total_steps filled from epochs × batches per epoch
  double warmup_epochs = 0;             // cosine warmup, in epochs
  double clip_grad_norm = 0;            // 0: off
  float label_smoothing = 0;
  // outputs
  std::string output_dir;               // default: train-out/<name> (relative to the working dir)
  std::string checkpoint_dir;           // default: <output_dir>/checkpoint
  bool resume = true;                   // continue from the checkpoint when it matches this config
  bool export_onnx = true;
  int log_every = 50;                   // progress line every N steps (0: epoch lines only)
  bool profile = false;                 // per-node forward/backward times (CLI --profile; not in YAML)
  std::string resolved_yaml;            // the config after overrides (hashed for resume checks)
};

// Loads and validates `path` with KEY.PATH=VALUE overrides. Errors name the file, the line and
// the key, and what was expected.
TrainConfig load_train_config(const std::string& path, const std::vector<std::string>& overrides = {});
// The same from a YAML node (the `train` experiment step passes its mapping); `file` names it.
TrainConfig parse_train_config(const YAML::Node& root, const std::string& file);

struct EpochStats {
  int epoch = 0;
  double train_loss = 0, train_accuracy = 0, test_accuracy = 0, test_loss = 0;
  double lr = 0, seconds = 0, images_per_second = 0;
};

struct TrainResult {
  double test_accuracy = 0;   // after the last epoch, on the whole test split (or test_limit)
  double test_loss = 0;
  double train_seconds = 0;   // wall time of the epochs run by this process (not resumed ones)
  double step_ms_median = 0;  // median time of one optimiser step (forward, backward, update)
  int64_t parameters = 0;
  int epochs_run = 0;         // by this process
  int resumed_from_epoch = 0; // 0: started fresh
  std::vector<EpochStats> history;  // every epoch so far (including resumed ones)
  // With config.profile: per-node time summed over the profiled steps (every step of this run
  // but the first, which allocates), the loss and the optimiser update.
  std::vector<TrainNodeProfile> profile;
  double profile_loss_ms = 0, profile_optimizer_ms = 0;
  int64_t profiled_steps = 0;
  std::string xnn_path, onnx_path, checkpoint_dir;
};

using ProgressFn = std::function<void(const std::string& line)>;

// Called before the first optimiser step of this run (with the steps already taken: 0 unless
// resumed) and after every optimiser step, with the number of steps taken so far (total_steps: epochs × steps per epoch). It may
// change the parameters in place, e.g. pruning re-applies its masks (compress/prune).
using StepHook = std::function<void(int64_t step, int64_t total_steps, std::span<Parameter> parameters)>;

// Runs training. When `initial_model` is given it replaces the config's model source (the
// experiment step trains the variant's model). Progress lines go to `progress`.
TrainResult run_training(const TrainConfig& config, const ProgressFn& progress,
                         std::shared_ptr<Model> initial_model = nullptr, const StepHook& after_step = nullptr);

}  // namespace xnn::train
