// Black-box architecture search over a MobileNet-like space (`xnn-lab nas`): every trial builds
// the architecture its parameters select, trains it with the config's recipe (reporting each
// epoch's test accuracy to the pruner), measures or predicts its latency and counts its
// parameters and bytes; a Study (nas/study) records the trials in the results database, so an
// interrupted search resumes with its finished trials. The hand-designed baselines are trained
// and measured the same way, and the final Pareto front is exported (.xnn and .onnx).
//
// The pieces one-shot searches reuse: LatencyFn, train_and_measure and candidate_outcome.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "harness/store/store.h"
#include "harness/targets/target.h"
#include "nas/nas_config.h"
#include "nas/study/study.h"

namespace xnn::nas {

// Latency in ms of a model file on the config's target (measured or predicted).
using LatencyFn = std::function<double(const std::string& model_path)>;

// Measured: the median of `target`'s timed runs (warmup/runs/min_time from `source`); the
// target must outlive the function. Predicted: the predictor file's estimate at source.threads.
LatencyFn make_latency_fn(const LatencySource& source, Target* target);

struct CandidateResult {
  std::string name;       // "trial_<n>" or the baseline's name
  int64_t trial = -1;     // -1 for baselines
  std::string arch;       // architecture encoding; "" for a builder or file baseline
  double top1 = 0;        // test accuracy after the last epoch (0..1)
  double latency_ms = 0;
  int64_t params = 0;     // Graph::parameter_count of the trained model
  int64_t size_bytes = 0; // bytes of its .xnn file
  std::string xnn_path, onnx_path;
};

// Called after each finished epoch with (epoch, test accuracy); true stops training (pruned).
using EpochFn = std::function<bool(int epoch, double test_accuracy)>;

// Trains `model` with `recipe` into `dir` (model.xnn, model.onnx, checkpoint/), then measures
// it. Throws TrialPruned when `on_epoch` says stop.
CandidateResult train_and_measure(std::shared_ptr<Model> model, train::TrainConfig recipe, const std::string& dir,
                                  const LatencyFn& latency, const train::ProgressFn& progress, const EpochFn& on_epoch);

// The objective values (top1[, latency_ms]) and constraint values (metric - limit) of a result.
TrialOutcome candidate_outcome(const NasConfig& config, const CandidateResult& result);

// Parses the trainer's per-epoch line ("epoch 3/10: ... test acc 91.23%, ..."): true with the
// epoch and accuracy (0..1) when `line` is one.
bool parse_epoch_line(const std::string& line, int* epoch, double* test_accuracy);

struct SearchResult {
  std::string study;
  int complete = 0, pruned = 0, failed = 0;
  std::vector<CandidateResult> front;      // feasible Pareto front (by latency), exported
  std::vector<CandidateResult> baselines;  // in config order
};

// Pieces every search method shares (one-shot searches reuse them):
// the feasible Pareto front of `results` (max top1, min latency_ms), by latency; with a single
// objective (top1), the best feasible one.
std::vector<CandidateResult> pareto_results(const NasConfig& config, const std::vector<CandidateResult>& results);
// Sets result.complete / pruned / failed from the study's trials (a trial interrupted by a
// crash, turned FAIL on resume, is not counted) and returns how many finished.
int count_finished_trials(Study& study, SearchResult& result);
// "trial_3 91.20%@0.412ms; trial_7 ..." (progress lines), or "(none yet)".
std::string front_text(const std::vector<CandidateResult>& front);
// A baseline's untrained model (builder spec, architecture of the space or model file; seeded
// by config.seed) and, for an architecture, its encoding in `*encoding`.
std::shared_ptr<Model> baseline_model(const NasConfig& config, const BaselineSpec& baseline, std::string* encoding);
// Trains and measures the config's baselines with the recipe into <output_dir>/baselines/<name>/
// (a resumed search re-uses a baseline trained to the end), in config order.
std::vector<CandidateResult> train_baselines(const NasConfig& config, const LatencyFn& latency,
                                             const train::ProgressFn& progress);
// Copies each result's .xnn and .onnx to <output_dir>/front/<name>.xnn/.onnx (the folder is
// replaced) and points the result at the copies.
void export_front(const NasConfig& config, std::vector<CandidateResult>& front, const train::ProgressFn& progress);

// Runs (or resumes) the study `config.name` in `store` up to config.trials finished trials,
// trains and measures the baselines, and exports the front to <output_dir>/front/<name>.xnn
// and .onnx. `progress` gets a line per trial with the current front.
SearchResult run_blackbox_search(const NasConfig& config, Store& store, const LatencyFn& latency,
                                 const train::ProgressFn& progress);

// The harness experiment (configs/README.md schema) that measures the front and the baselines
// (latency and accuracy on the recipe's test split) on the config's latency target; written to
// <output_dir>/measure.yaml for `xnn-lab run`. Returns its path.
std::string write_measurement_experiment(const NasConfig& config, const SearchResult& result,
                                         const std::string& store_path);

}  // namespace xnn::nas
