// The pipeline file of `xnn-lab chain`: which models, the bundle's inputs, the steps that wire
// them (plain calls, an If on a scalar condition, a loop over the slices of a tensor) and the
// bundle's outputs. Schema and examples: configs/chain/README.md.
//
// Parsing is strict: an unknown or misplaced key, a wrong type or a malformed condition is an
// xnn::Error naming "FILE:LINE:COLUMN" and what was expected. Each parsed item keeps where it
// was written, so errors found later (at composition: an unknown value, a shape mismatch) name
// the line too.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/tensor.h"

namespace xnn::chain {

// A model input wired to a value of the pipeline (a bundle input or an earlier step's output).
struct Binding {
  std::string model_input;
  std::string value;
  std::string where;  // "FILE:LINE:COLUMN"
};

// One application of a model: `model`'s inputs read the bound values.
struct Call {
  std::string model;
  std::vector<Binding> inputs;
  std::string where;
};

struct ModelRef {
  std::string name;
  std::string path;  // resolved against the pipeline file's folder
  std::string where;
};

struct PipelineInput {
  std::string name;
  std::string from_model, from_input;  // `from: MODEL.INPUT`: dtype and shape of that input
  DType dtype = DType::kUnknown;       // or given with `dtype:` ...
  std::optional<Shape> shape;          // ... and `shape:` (also overrides the dims of `from`)
  std::string where;
};

// `if: VALUE OP NUMBER`: a one-element value compared with a constant.
struct Condition {
  std::string value;
  std::string op;  // >, >=, <, <=, ==, !=
  double threshold = 0;
  std::string where;
};

struct Step {
  enum class Kind { kRun, kIf, kLoop };
  enum class Else { kZeros, kRun, kValues };
  Kind kind = Kind::kRun;
  int index = 0;       // 1-based position in `steps`
  std::string where;
  std::string as;      // outputs are named `<as>.<model output>`; default: the model's name
  Call call;           // run: the model; if: the then-branch; loop: the model per slice
  // if
  Condition cond;
  Else else_kind = Else::kZeros;
  Call else_call;                        // Else::kRun
  std::vector<std::string> else_values;  // Else::kValues: one value per then-output
  std::string else_where;
  // loop
  std::string over;    // the value whose slices the model runs on
  int64_t axis = 0;
  std::string into;    // the model input fed each slice ("" = its only unbound input)

  // "step 2 (if)" — how errors refer to a step.
  std::string describe() const;
};

struct PipelineOutput {
  std::string name;
  std::string from;
  std::string where;
};

struct PipelineSpec {
  std::string path;
  std::vector<ModelRef> models;
  std::vector<PipelineInput> inputs;
  std::vector<Step> steps;
  std::vector<PipelineOutput> outputs;
};

// Reads and validates the pipeline file. Throws xnn::Error naming FILE:LINE:COLUMN.
PipelineSpec load_pipeline(const std::string& path);
// Same, from text (`path` names it in errors and is where model paths are resolved from).
PipelineSpec parse_pipeline(const std::string& yaml_text, const std::string& path);

}  // namespace xnn::chain
