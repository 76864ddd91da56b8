// Hardware feedback for a search that ranked candidates by predicted latency: the top candidates
// of the exported front are measured on the real target (per-op profiles included), recorded as
// calibration jobs of that target in the results store ("calibration:<key>", the experiment
// `xnn-lab calibrate` fills), and the predictor is refitted on every calibration job the store
// holds — the original calibration set (when the search uses the store `calibrate` wrote) plus
// the searched architectures, which are the models the predictor must get right next time.
//
// Enabled by `latency: {method: predicted, predictor: FILE, feedback: K}`; the refitted
// predictor is written to <output_dir>/predictor_feedback.json, and each measured candidate is
// reported with its latency predicted before, measured, and predicted after the refit.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "harness/store/store.h"
#include "harness/targets/target.h"
#include "nas/blackbox_search.h"
#include "nas/nas_config.h"

namespace xnn::nas {

struct FeedbackPoint {
  std::string name, arch, model;  // the front point and its exported .xnn
  double predicted_before_ms = 0, measured_ms = 0, predicted_after_ms = 0;
};

struct FeedbackResult {
  std::vector<FeedbackPoint> points;
  int calibration_models = 0;     // calibration jobs of the target the refit used
  std::string predictor_path;     // the refitted predictor
  std::string experiment;         // "calibration:<key>"
};

// The candidates feedback measures: the front's points with an architecture of the space, most
// accurate first, at most config.latency.feedback of them.
std::vector<CandidateResult> feedback_candidates(const NasConfig& config, const SearchResult& result);

// Runs the feedback loop. `target` must be the config's latency target kind and threads, named
// predict::target_key(kind, threads) (the name calibration jobs are recorded under). Throws
// when the config does not ask for feedback or no front point has an architecture.
FeedbackResult hardware_feedback(const NasConfig& config, const SearchResult& result, Store& store, Target& target,
                                 const std::function<void(const std::string&)>& log);

}  // namespace xnn::nas
