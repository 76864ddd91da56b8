// Featurising whole models for the predictor, from the two places op descriptions come from:
// a prepared session's plan (Session::plan_summary: what would execute, without running) for
// new models, and stored per-op profiles (OpProfileRow) for calibration. Both take the fused
// activations from the session's optimised graph, which neither description carries.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/runtime/session.h"
#include "harness/predict/op_features.h"
#include "harness/store/store.h"

namespace xnn::predict {

// Node name -> its fused activation ("Relu", "HardSwish", ...) for every fused node that has one.
std::map<std::string, std::string> fused_activations(const Graph& optimized);

std::vector<OpFeatures> featurize_plan(const std::vector<NodeProfile>& plan,
                                       const std::map<std::string, std::string>& activations);
// Throws xnn::Error naming the row's node when its shapes text is malformed.
std::vector<OpFeatures> featurize_profile(const std::vector<OpProfileRow>& rows,
                                          const std::map<std::string, std::string>& activations);

// A session prepared for the model's declared input shapes (symbolic dims 1), as the CPU
// target would run it with `threads`. Throws for models without a static plan.
std::vector<OpFeatures> featurize_model(std::shared_ptr<const Model> model, int threads);
std::vector<OpFeatures> featurize_model_file(const std::string& path, int threads);
// Only the fused activations of a model file's optimised graph (for its stored profiles).
std::map<std::string, std::string> fused_activations_of_file(const std::string& path);

}  // namespace xnn::predict
