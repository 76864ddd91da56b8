#include "nas/darts/darts_config.h"

#include <algorithm>
#include <cmath>

#include "harness/config/yaml_section.h"

namespace xnn::nas {

DartsOptions parse_darts_options(const NasConfig& config) {
  const config::YamlSection s(
      config.method_options, "darts", config.file,
      {"width", "resolution", "activation", "relaxation", "tau_start", "tau_end", "epochs", "warmup_epochs",
       "val_fraction", "train_limit", "alpha_lr", "alpha_beta1", "alpha_weight_decay", "lambda"});
  if (!config.hyperparameters.empty()) {
    throw Error(config.file +
                ": 'hyperparameters' are not searched by method darts (its derived architectures are "
                "retrained with the 'train' recipe); remove the section or use method blackbox");
  }
  DartsOptions o;
  o.location = config::yaml_where(config.file, config.method_options);
  const arch::SearchSpace& space = config.space;
  o.width = space.width_multipliers.front();
  o.resolution = space.resolutions.front();
  o.activation = space.stages.front().activations.front();

  s.read("width", o.width, "a number (one of the space's width_multipliers)");
  if (std::none_of(space.width_multipliers.begin(), space.width_multipliers.end(),
                   [&](double w) { return std::abs(w - o.width) < 1e-9; })) {
    s.fail("width", "must be one of the space's width_multipliers");
  }
  s.read("resolution", o.resolution, "an integer (one of the space's resolutions)");
  if (std::find(space.resolutions.begin(), space.resolutions.end(), o.resolution) == space.resolutions.end()) {
    s.fail("resolution", "must be one of the space's resolutions");
  }
  s.read("activation", o.activation, "an activation name");
  for (const arch::StageSpace& st : space.stages) {
    if (std::find(st.activations.begin(), st.activations.end(), o.activation) == st.activations.end()) {
      s.fail("activation", "'" + o.activation + "' is not a choice of every stage (stage at " + st.location + ")");
    }
  }
  s.read("relaxation", o.relaxation, "softmax or gumbel");
  if (o.relaxation != "softmax" && o.relaxation != "gumbel") s.fail("relaxation", "must be softmax or gumbel");
  s.read("tau_start", o.tau_start, "a positive number");
  s.read("tau_end", o.tau_end, "a positive number");
  if (!(o.tau_start > 0)) s.fail("tau_start", "must be > 0");
  if (!(o.tau_end > 0)) s.fail("tau_end", "must be > 0");
  s.read("epochs", o.epochs, "an integer >= 1");
  if (o.epochs < 1) s.fail("epochs", "must be an integer >= 1");
  s.read("warmup_epochs", o.warmup_epochs, "an integer >= 0");
  if (o.warmup_epochs < 0 || o.warmup_epochs >= o.epochs) {
    s.fail(s.has("warmup_epochs") ? "warmup_epochs" : "epochs",
           "must be in [0, epochs): the warm-up epochs train the weights only");
  }
  s.read("val_fraction", o.val_fraction, "a number in (0, 1)");
  if (!(o.val_fraction > 0 && o.val_fraction < 1)) s.fail("val_fraction", "must be in (0, 1)");
  s.read("train_limit", o.train_limit, "an integer >= 0");
  if (o.train_limit < 0) s.fail("train_limit", "must be >= 0 (0: the recipe's data.train_limit)");
  s.read("alpha_lr", o.alpha_lr, "a positive number");
  if (!(o.alpha_lr > 0)) s.fail("alpha_lr", "must be > 0");
  s.read("alpha_beta1", o.alpha_beta1, "a number in [0, 1)");
  if (!(o.alpha_beta1 >= 0 && o.alpha_beta1 < 1)) s.fail("alpha_beta1", "must be in [0, 1)");
  s.read("alpha_weight_decay", o.alpha_weight_decay, "a number >= 0");
  if (!(o.alpha_weight_decay >= 0)) s.fail("alpha_weight_decay", "must be >= 0");
  if (s.has("lambda")) {
    const YAML::Node n = s.get("lambda");
    o.lambdas.clear();
    if (n.IsSequence() && n.size() > 0) {
      for (const YAML::Node& v : n) {
        try {
          o.lambdas.push_back(v.as<double>());
        } catch (const YAML::Exception&) {
          throw Error(config::yaml_where(config.file, v) + ": 'darts.lambda' entries must be numbers >= 0");
        }
      }
    } else {
      double v = 0;
      s.read("lambda", v, "a number >= 0 or a non-empty list of them");
      o.lambdas.push_back(v);
    }
    for (double v : o.lambdas) {
      if (!(v >= 0) || !std::isfinite(v)) s.fail("lambda", "values must be finite numbers >= 0");
    }
  }
  return o;
}

}  // namespace xnn::nas
