#include "nas/oneshot/oneshot_config.h"

#include <algorithm>

#include "engine/core/error.h"
#include "harness/config/yaml_section.h"

namespace xnn::nas {

OneshotOptions parse_oneshot_options(const NasConfig& config) {
  if (config.method != "oneshot") throw Error(config.file + ": the one-shot search needs 'method: oneshot'");
  if (config.pruner != "none") {
    throw Error(config.file + ": 'pruner' must be none with method oneshot (subnets are scored, not trained)");
  }
  if (!config.hyperparameters.empty()) {
    throw Error(config.file + ": 'hyperparameters' are not searched with method oneshot (the supernet has one recipe)");
  }
  const config::YamlSection s(config.method_options, "oneshot", config.file,
                              {"width", "epochs", "steps_per_path", "sharing", "split", "validation_size", "bn_batches", "retrain",
                               "retrain_at_baselines", "retrain_per_baseline", "retrain_band", "trials_per_baseline",
                               "screen_epochs", "screen_keep"});
  OneshotOptions o;
  o.width = *std::max_element(config.space.width_multipliers.begin(), config.space.width_multipliers.end());
  o.epochs = config.recipe.epochs;
  s.read("width", o.width, "a number (one of the space's width_multipliers)");
  if (std::find(config.space.width_multipliers.begin(), config.space.width_multipliers.end(), o.width) ==
      config.space.width_multipliers.end()) {
    s.fail("width", "must be one of the space's width_multipliers");
  }
  s.read("epochs", o.epochs, "an integer >= 1");
  if (o.epochs < 1) s.fail("epochs", "must be >= 1");
  s.read("steps_per_path", o.steps_per_path, "an integer >= 1");
  if (o.steps_per_path < 1) s.fail("steps_per_path", "must be >= 1");
  std::string sharing = weight_sharing_name(o.sharing);
  s.read("sharing", sharing, "none, se or pointwise");
  if (!parse_weight_sharing(sharing, &o.sharing)) s.fail("sharing", "must be none, se or pointwise, got '" + sharing + "'");
  std::string split = supernet_split_name(o.split);
  s.read("split", split, "none or stem_stride");
  if (!parse_supernet_split(split, &o.split)) s.fail("split", "must be none or stem_stride, got '" + split + "'");
  if (o.split == SupernetSplit::kStemStride && config.space.stem_strides.size() < 2) {
    s.fail("split", "stem_stride needs a space whose stem stride is a decision (stem: {stride: [1, 2]})");
  }
  s.read("validation_size", o.validation_size, "an integer >= 1 (training images held out)");
  if (o.validation_size < 1) s.fail("validation_size", "must be >= 1");
  s.read("bn_batches", o.bn_batches, "an integer >= 1");
  if (o.bn_batches < 1) s.fail("bn_batches", "must be >= 1");
  s.read("retrain_at_baselines", o.retrain_at_baselines, "true or false");
  if (o.retrain_at_baselines && config.baselines.empty()) {
    s.fail("retrain_at_baselines", "needs 'baselines' in the config");
  }
  s.read("retrain_per_baseline", o.retrain_per_baseline, "an integer >= 1");
  if (o.retrain_per_baseline < 1) s.fail("retrain_per_baseline", "must be >= 1");
  s.read("retrain_band", o.retrain_band, "a number in [0, 1)");
  if (!(o.retrain_band >= 0 && o.retrain_band < 1)) s.fail("retrain_band", "must be in [0, 1)");
  if (o.retrain_band > 0 && !o.retrain_at_baselines) {
    s.fail("retrain_band", "bounds the per-baseline picks: it needs retrain_at_baselines: true");
  }
  // 0: only the per-baseline picks (the best-accuracy subnets of a large space can take an hour
  // each to retrain, the picks within a small baseline's latency minutes).
  s.read("retrain", o.retrain, "an integer >= 1 (or 0 with retrain_at_baselines: true)");
  if (o.retrain < 0 || (o.retrain == 0 && !o.retrain_at_baselines)) {
    s.fail("retrain", "must be >= 1 (or 0 with retrain_at_baselines: true)");
  }
  s.read("trials_per_baseline", o.trials_per_baseline, "an integer >= 0");
  if (o.trials_per_baseline < 0) s.fail("trials_per_baseline", "must be >= 0");
  if (o.trials_per_baseline > 0 && !o.retrain_at_baselines) {
    s.fail("trials_per_baseline", "searches for the per-baseline picks: it needs retrain_at_baselines: true");
  }
  s.read("screen_epochs", o.screen_epochs, "an integer >= 0 (0: no screening)");
  if (o.screen_epochs < 0) s.fail("screen_epochs", "must be >= 0");
  if (o.screen_epochs > 0 && !o.retrain_at_baselines) {
    s.fail("screen_epochs", "screens the per-baseline picks: it needs retrain_at_baselines: true");
  }
  if (o.screen_epochs >= config.recipe.epochs) {
    s.fail("screen_epochs", "must be below train.epochs (" + std::to_string(config.recipe.epochs) +
                                "): a screen is a shorter training than the retrain");
  }
  s.read("screen_keep", o.screen_keep, "an integer >= 1");
  if (o.screen_keep < 1) s.fail("screen_keep", "must be >= 1");
  if (o.screen_epochs > 0 && o.screen_keep >= o.retrain_per_baseline) {
    s.fail("screen_keep", "must be below retrain_per_baseline (" + std::to_string(o.retrain_per_baseline) +
                              "): screening that keeps every pick only costs time");
  }
  return o;
}

}  // namespace xnn::nas
