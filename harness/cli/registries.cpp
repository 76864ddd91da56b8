#include "harness/cli/registries.h"

#include "harness/train/train_step.h"
#include "harness/quantize/quantize_step.h"
#include "harness/encode/encode_step.h"
#include "harness/compress_recipe/compress_steps.h"
#include "harness/sim/sim_target.h"

namespace xnn::cli {

const StepRegistry& step_registry() {
  static const StepRegistry r = [] {
    StepRegistry reg;
    register_builtin_steps(reg);
    train::register_train_step(reg);
    ptq::register_quantize_step(reg);
    encode::register_encode_step(reg);
    compress_recipe::register_compress_steps(reg);
    return reg;
  }();
  return r;
}

const TargetRegistry& target_registry() {
  static const TargetRegistry r = [] {
    TargetRegistry reg;
    reg.add("cpu", "this machine's CPU, measured for real", make_cpu_target);
    reg.add("sim:", "a simulated device: configs/devices/<profile>.yaml and the cost model", sim::make_sim_target);
    return reg;
  }();
  return r;
}

config::ParseOptions config_parse_options() {
  config::ParseOptions o;
  o.is_known_target = [](const std::string& k) { return target_registry().knows(k); };
  o.known_targets = target_registry().kinds();
  o.is_known_step = [](const std::string& s) { return step_registry().knows(s); };
  o.known_steps = step_registry().types();
  return o;
}

std::string build_commit() {
#ifdef XNN_GIT_COMMIT
  return XNN_GIT_COMMIT;
#else
  return "";
#endif
}

}  // namespace xnn::cli
