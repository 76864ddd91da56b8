#include "harness/train/train_step.h"

#include <filesystem>

#include "engine/core/error.h"
#include "engine/runtime/model_io.h"
#include "harness/train/trainer.h"

namespace xnn::train {
namespace {
namespace fs = std::filesystem;

// Step keys and the training-config paths they override.
const std::vector<std::pair<std::string, std::string>> kStepOverrides = {
    {"epochs", "epochs"},           {"threads", "threads"},           {"seed", "seed"},
    {"lr", "optimizer.lr"},         {"batch_size", "data.batch_size"}, {"train_limit", "data.train_limit"},
    {"test_limit", "data.test_limit"}};

class TrainStep : public Step {
 public:
  TrainStep(std::string config_path, std::vector<std::string> overrides, std::string location)
      : config_path_(std::move(config_path)), overrides_(std::move(overrides)), location_(std::move(location)) {}

  std::string describe() const override {
    std::string s = "train(config=" + fs::path(config_path_).filename().string();
    for (const auto& o : overrides_) s += "," + o;
    return s + ")";
  }

  std::string apply(const std::string& input, const StepContext& ctx) const override {
    std::vector<std::string> ov = overrides_;
    ov.push_back("output.dir=" + (fs::path(ctx.work_dir) / "train").string());
    ov.push_back("checkpoint.dir=" + (fs::path(ctx.work_dir) / "train" / "checkpoint").string());
    ov.push_back("log_every=0");
    TrainConfig cfg = load_train_config(config_path_, ov);
    const TrainResult r = run_training(cfg, nullptr, load_model(input));
    return r.xnn_path;
  }

 private:
  std::string config_path_;
  std::vector<std::string> overrides_;
  std::string location_;
};

}  // namespace

void register_train_step(StepRegistry& r) {
  r.add("train", "train the model with a training config (configs/train), saved as .xnn",
        [](const YAML::Node& p, const std::string& loc) -> std::unique_ptr<Step> {
          std::vector<std::string> allowed = {"config"};
          for (const auto& [k, path] : kStepOverrides) allowed.push_back(k);
          check_step_params(p, "train", loc, allowed);
          if (!p || !p["config"]) throw Error(loc + ": step 'train' needs 'config' (a training config file)");
          std::string config = p["config"].as<std::string>();
          // Relative to the experiment config's folder, as model paths are.
          const std::string file = loc.substr(0, loc.find(':'));
          if (fs::path(config).is_relative()) config = (fs::path(file).parent_path() / config).lexically_normal().string();
          if (!fs::exists(config)) throw Error(loc + ": step 'train': no such training config '" + config + "'");
          std::vector<std::string> overrides;
          for (const auto& [key, path] : kStepOverrides) {
            if (p[key]) overrides.push_back(path + "=" + p[key].as<std::string>());
          }
          return std::make_unique<TrainStep>(config, overrides, loc);
        });
}

}  // namespace xnn::train
