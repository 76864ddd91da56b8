#include "nas/oneshot/subnet_objective.h"

#include <chrono>
#include <filesystem>

#include "engine/format/xnn_format.h"
#include "nas/format.h"
#include "nas/oneshot/subnet_scoring.h"
#include "nas/oneshot/supernet_weights.h"

namespace fs = std::filesystem;

namespace xnn::nas {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Writes the batch-1 subnet with its inherited weights to `path`; returns its parameter count.
int64_t save_model(SupernetWeights& weights, const arch::Arch& a, const std::string& path) {
  const std::shared_ptr<Model> one = weights.realize(a, false, 1);
  const fs::path dir = fs::path(path).parent_path();
  if (!dir.empty()) fs::create_directories(dir);
  save_xnn(*one, path);
  return one->graph.parameter_count();
}

}  // namespace

struct SubnetObjective::State {
  SupernetWeights weights;
  std::vector<data::Batch> calibration, validation;
  State(const arch::SearchSpace& space, double width, uint64_t seed, WeightSharing sharing, SupernetSplit split)
      : weights(space, width, seed, sharing, split) {}
};

SubnetObjective::SubnetObjective(const NasConfig& config, const LatencyFn& latency, const train::ProgressFn& progress)
    : sub_(config), options_(parse_oneshot_options(config)), latency_(latency) {
  const train::TrainConfig& recipe = config.recipe;
  const auto t0 = Clock::now();
  const SupernetData data = load_supernet_data(recipe, options_.validation_size);
  state_ = std::make_unique<State>(config.space, options_.width, config.seed, options_.sharing,
                                   options_.split);
  const std::string checkpoint = (fs::path(config.output_dir) / "supernet" / "supernet.tensors").string();
  trained_ = train_supernet(state_->weights, data.train, recipe, options_, config.seed, checkpoint, progress);
  supernet_s_ = seconds_since(t0);
  sub_.space.width_multipliers = {options_.width};
  state_->calibration =
      fixed_batches(data.train, recipe.batch_size, options_.bn_batches, true, config.seed, recipe.mean, recipe.std);
  state_->validation = fixed_batches(data.validation, recipe.batch_size, 0, false, 0, recipe.mean, recipe.std);
}

SubnetObjective::~SubnetObjective() = default;

CandidateResult SubnetObjective::score(const arch::Arch& a, const std::string& model_path) {
  const int threads = sub_.recipe.threads;
  const auto t0 = Clock::now();
  CandidateResult c;
  c.arch = a.to_string();
  const std::shared_ptr<Model> model = state_->weights.realize(a, false, 0);
  recalibrate_batchnorm(model, state_->calibration, threads);
  recalibrate_s_ = seconds_since(t0);
  const auto t_val = Clock::now();
  c.top1 = top1_accuracy(model, state_->validation, threads);
  validate_s_ = seconds_since(t_val);
  const auto t1 = Clock::now();
  // Latency and size of the batch-1 subnet with its inherited weights, as it would ship.
  c.params = save_model(state_->weights, a, model_path);
  c.latency_ms = latency_(model_path);
  c.size_bytes = static_cast<int64_t>(fs::file_size(model_path));
  fs::remove(model_path);
  latency_s_ = seconds_since(t1);
  return c;
}

void SubnetObjective::save_batch1_model(const arch::Arch& a, const std::string& model_path) {
  save_model(state_->weights, a, model_path);
}

double SubnetObjective::validation_top1(const std::shared_ptr<Model>& model) const {
  return top1_accuracy(model, state_->validation, sub_.recipe.threads);
}

}  // namespace xnn::nas
