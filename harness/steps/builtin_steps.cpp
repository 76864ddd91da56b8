// The engine-stage steps: `convert` (any model -> .xnn) and `optimize` (graph passes, then .xnn).
#include <filesystem>

#include "engine/core/error.h"
#include "engine/format/xnn_format.h"
#include "engine/passes/optimize.h"
#include "engine/runtime/model_io.h"
#include "harness/steps/step.h"

namespace xnn {
namespace {

class ConvertStep : public Step {
 public:
  std::string describe() const override { return "convert"; }
  std::string apply(const std::string& input, const StepContext& ctx) const override {
    auto model = load_model(input);
    const std::string out = (std::filesystem::path(ctx.work_dir) / "converted.xnn").string();
    save_xnn(*model, out, XnnSaveOptions{{{"step", "convert"}}});
    return out;
  }
};

// Graph optimisation with the engine's pass pipeline (engine/passes/optimize.h): level 0 keeps
// the graph as imported, 1 folds constants/BatchNorm and removes Identity/Dropout/dead code,
// 2 also fuses activations and residual adds into conv/gemm epilogues.
class OptimizeStep : public Step {
 public:
  explicit OptimizeStep(int level) : level_(level) {}
  std::string describe() const override { return "optimize(level=" + std::to_string(level_) + ")"; }
  std::string apply(const std::string& input, const StepContext& ctx) const override {
    auto model = load_model(input);
    optimize_graph(model->graph, level_);
    const std::string out = (std::filesystem::path(ctx.work_dir) / ("optimized_o" + std::to_string(level_) + ".xnn")).string();
    save_xnn(*model, out, XnnSaveOptions{{{"step", describe()}}});
    return out;
  }

 private:
  int level_;
};

}  // namespace

void register_builtin_steps(StepRegistry& r) {
  r.add("convert", "convert the model to .xnn", [](const YAML::Node& p, const std::string& loc) {
    check_step_params(p, "convert", loc, {});
    return std::make_unique<ConvertStep>();
  });
  r.add("optimize", "graph optimisation passes (level 0-2), saved as .xnn", [](const YAML::Node& p, const std::string& loc) {
    check_step_params(p, "optimize", loc, {"level"});
    int level = 2;
    if (p && p["level"]) {
      try {
        level = p["level"].as<int>();
      } catch (const YAML::Exception&) {
        throw Error(loc + ": step 'optimize': level must be 0, 1 or 2");
      }
    }
    if (level < 0 || level > 2) throw Error(loc + ": step 'optimize': level must be 0, 1 or 2, got " + std::to_string(level));
    return std::make_unique<OptimizeStep>(level);
  });
}

}  // namespace xnn
