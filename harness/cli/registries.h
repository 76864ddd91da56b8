// The CLI wires what each layer offers into the registries the harness runs on. Adding a
// step (quantize, prune, ...) or a target kind (sim:<profile>, a remote device) happens here.
#pragma once
#include "harness/config/experiment_config.h"
#include "harness/steps/step.h"
#include "harness/targets/target.h"

namespace xnn::cli {

const StepRegistry& step_registry();
const TargetRegistry& target_registry();
// Parse options that check step types and target kinds against the registries.
config::ParseOptions config_parse_options();

// The git commit xnn-lab was built from ("" when unknown).
std::string build_commit();

}  // namespace xnn::cli
