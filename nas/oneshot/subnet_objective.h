// The one-shot search's objective, shared by `run_oneshot_search` and the objective server: the
// trained supernet (trained now, or resumed from its checkpoint under the config's output
// folder) and a scorer for one subnet — inherited weights, BatchNorm re-calibrated on fixed
// training batches, top-1 on the held-out validation images, latency and size of the batch-1
// model from the config's latency source.
#pragma once
#include <memory>
#include <string>

#include "harness/arch/mobilenet_space.h"
#include "nas/blackbox_search.h"
#include "nas/nas_config.h"
#include "nas/oneshot/oneshot_config.h"
#include "nas/oneshot/supernet_training.h"

namespace xnn::nas {

class SubnetObjective {
 public:
  // Loads the data and trains (or resumes) the supernet; progress lines go to `progress`.
  SubnetObjective(const NasConfig& config, const LatencyFn& latency, const train::ProgressFn& progress);
  ~SubnetObjective();

  // The config as the subnet search sees it: the space at the supernet's single width.
  const NasConfig& search_config() const { return sub_; }
  const OneshotOptions& options() const { return options_; }
  const SupernetTrainResult& trained() const { return trained_; }
  double supernet_seconds() const { return supernet_s_; }

  // Scores `arch` (in search_config().space). The batch-1 model is written to `model_path` for
  // the latency source and removed afterwards. Deterministic but for the measured latency.
  CandidateResult score(const arch::Arch& arch, const std::string& model_path);
  // Writes the batch-1 model of `arch` with its inherited weights to `model_path` (the model
  // score() measures), for later latency comparisons.
  void save_batch1_model(const arch::Arch& arch, const std::string& model_path);
  // Top-1 (0..1) of a trained model on the same held-out validation images score() uses (the
  // screening of short retrains ranks on them, never on the test set).
  double validation_top1(const std::shared_ptr<Model>& model) const;
  // Seconds the last score() spent in each phase, for progress lines.
  double recalibrate_seconds() const { return recalibrate_s_; }
  double validate_seconds() const { return validate_s_; }
  double latency_seconds() const { return latency_s_; }

 private:
  struct State;
  NasConfig sub_;
  OneshotOptions options_;
  LatencyFn latency_;
  std::unique_ptr<State> state_;
  SupernetTrainResult trained_;
  double supernet_s_ = 0, recalibrate_s_ = 0, validate_s_ = 0, latency_s_ = 0;
};

}  // namespace xnn::nas
