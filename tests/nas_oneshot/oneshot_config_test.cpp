// The `oneshot:` section: defaults, values, and errors naming FILE:LINE:COL and the key; the
// rest of a one-shot config (no pruner, no searched hyper-parameters) is checked too.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>

#include "engine/core/error.h"
#include "nas/oneshot/oneshot_config.h"

using namespace xnn;
using namespace xnn::nas;

namespace {

const std::string kFile = "/configs/oneshot_test.yaml";

NasConfig config_with(const std::string& oneshot_section, const std::string& extra = "") {
  const std::string text = "method: oneshot\n"
                           "space: {file: " + std::string(XNN_SOURCE_DIR) + "/configs/arch/mobilenet_space_tiny.yaml}\n"
                           "train: {epochs: 3}\n" +
                           extra + oneshot_section;
  return parse_nas_config(YAML::Load(text), kFile);
}

std::string error_of(const std::string& section, const std::string& extra = "") {
  try {
    parse_oneshot_options(config_with(section, extra));
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(OneshotConfig, DefaultsComeFromTheSpaceAndRecipe) {
  const OneshotOptions o = parse_oneshot_options(config_with(""));
  EXPECT_EQ(o.width, 1.0);  // the space's largest
  EXPECT_EQ(o.epochs, 3);   // the recipe's
  EXPECT_EQ(o.steps_per_path, 1);
  EXPECT_EQ(o.validation_size, 5000);
  EXPECT_EQ(o.bn_batches, 8);
  EXPECT_EQ(o.retrain, 2);
  EXPECT_FALSE(o.retrain_at_baselines);
  EXPECT_EQ(o.sharing, WeightSharing::kNone);  // SPOS: one weight set per choice
  EXPECT_EQ(o.split, SupernetSplit::kNone);     // one supernet
}

TEST(OneshotConfig, ReadsEveryKey) {
  const OneshotOptions o = parse_oneshot_options(config_with(
      "oneshot: {width: 0.5, epochs: 2, steps_per_path: 4, validation_size: 100, bn_batches: 3, retrain: 1}\n"));
  EXPECT_EQ(o.width, 0.5);
  EXPECT_EQ(o.epochs, 2);
  EXPECT_EQ(o.steps_per_path, 4);
  EXPECT_EQ(o.validation_size, 100);
  EXPECT_EQ(o.bn_batches, 3);
  EXPECT_EQ(o.retrain, 1);
  const OneshotOptions b = parse_oneshot_options(
      config_with("oneshot: {retrain_at_baselines: true}\n", "baselines: [{name: tiny, arch: 'r28-w1.0|k3e1.relu|k3e1.relu|k3e1.relu'}]\n"));
  EXPECT_TRUE(b.retrain_at_baselines);
  const OneshotOptions z = parse_oneshot_options(config_with(
      "oneshot: {retrain: 0, retrain_at_baselines: true}\n", "baselines: [{name: tiny, arch: 'r28-w1.0|k3e1.relu|k3e1.relu|k3e1.relu'}]\n"));
  EXPECT_EQ(z.retrain, 0);  // only the per-baseline picks
  EXPECT_EQ(z.retrain_per_baseline, 1);
  const OneshotOptions three = parse_oneshot_options(config_with(
      "oneshot: {retrain_at_baselines: true, retrain_per_baseline: 3}\n", "baselines: [{name: tiny, arch: 'r28-w1.0|k3e1.relu|k3e1.relu|k3e1.relu'}]\n"));
  EXPECT_EQ(three.retrain_per_baseline, 3);
  EXPECT_EQ(three.screen_epochs, 0);  // no screening unless asked
  const OneshotOptions screened = parse_oneshot_options(config_with(
      "oneshot: {retrain_at_baselines: true, retrain_per_baseline: 4, screen_epochs: 2, screen_keep: 2}\n",
      "baselines: [{name: tiny, arch: 'r28-w1.0|k3e1.relu|k3e1.relu|k3e1.relu'}]\n"));
  EXPECT_EQ(screened.screen_epochs, 2);
  EXPECT_EQ(screened.screen_keep, 2);
  EXPECT_EQ(screened.retrain_band, 0.0);
  const OneshotOptions band = parse_oneshot_options(config_with(
      "oneshot: {retrain_at_baselines: true, retrain_band: 0.5}\n",
      "baselines: [{name: tiny, arch: 'r28-w1.0|k3e1.relu|k3e1.relu|k3e1.relu'}]\n"));
  EXPECT_EQ(band.retrain_band, 0.5);
  EXPECT_EQ(band.trials_per_baseline, 0);
  const OneshotOptions per = parse_oneshot_options(config_with(
      "oneshot: {retrain_at_baselines: true, trials_per_baseline: 40}\n",
      "baselines: [{name: tiny, arch: 'r28-w1.0|k3e1.relu|k3e1.relu|k3e1.relu'}]\n"));
  EXPECT_EQ(per.trials_per_baseline, 40);
  EXPECT_EQ(parse_oneshot_options(config_with("oneshot: {sharing: pointwise}\n")).sharing, WeightSharing::kPointwise);
  EXPECT_EQ(parse_oneshot_options(config_with("oneshot: {sharing: se}\n")).sharing, WeightSharing::kSe);
}

TEST(OneshotConfig, ErrorsNameFileLineColumnAndKey) {
  // Line 4 is the oneshot section; its values start at the columns below.
  std::string e = error_of("oneshot:\n  epochs: 0\n");
  EXPECT_NE(e.find(kFile + ":5:11: 'oneshot.epochs' must be >= 1"), std::string::npos) << e;
  e = error_of("oneshot:\n  steps_per_path: many\n");
  EXPECT_NE(e.find(kFile + ":5:19: 'oneshot.steps_per_path' must be an integer >= 1"), std::string::npos) << e;
  e = error_of("oneshot:\n  width: 0.75\n");
  EXPECT_NE(e.find(kFile + ":5:10: 'oneshot.width' must be one of the space's width_multipliers"), std::string::npos) << e;
  e = error_of("oneshot:\n  retrian: 2\n");
  EXPECT_NE(e.find(kFile + ":5:"), std::string::npos) << e;
  EXPECT_NE(e.find("retrian"), std::string::npos) << e;
  EXPECT_NE(e.find("retrain"), std::string::npos) << e;  // the allowed keys / the likely typo
  e = error_of("oneshot:\n  retrain_at_baselines: true\n");  // no baselines to measure
  EXPECT_NE(e.find(kFile + ":5:25: 'oneshot.retrain_at_baselines' needs 'baselines'"), std::string::npos) << e;
  e = error_of("oneshot: {retrain: 0}\n");  // nothing would be retrained
  EXPECT_NE(e.find(kFile + ":4:20: 'oneshot.retrain' must be >= 1 (or 0 with retrain_at_baselines: true)"),
            std::string::npos) << e;
  e = error_of("oneshot: {retrain_per_baseline: 0}\n");
  EXPECT_NE(e.find(kFile + ":4:33: 'oneshot.retrain_per_baseline' must be >= 1"), std::string::npos) << e;
  const std::string baseline = "baselines: [{name: tiny, arch: 'r28-w1.0|k3e1.relu|k3e1.relu|k3e1.relu'}]\n";
  e = error_of("oneshot: {screen_epochs: 1}\n");  // screening picks needs the per-baseline picks
  EXPECT_NE(e.find(kFile + ":4:26: 'oneshot.screen_epochs' screens the per-baseline picks"), std::string::npos) << e;
  e = error_of("oneshot: {retrain_at_baselines: true, retrain_per_baseline: 3, screen_epochs: 3}\n", baseline);
  EXPECT_NE(e.find("'oneshot.screen_epochs' must be below train.epochs (3)"), std::string::npos) << e;
  e = error_of("oneshot: {retrain_at_baselines: true, retrain_per_baseline: 2, screen_epochs: 1, screen_keep: 2}\n",
               baseline);
  EXPECT_NE(e.find("'oneshot.screen_keep' must be below retrain_per_baseline (2)"), std::string::npos) << e;
  e = error_of("oneshot: {retrain_at_baselines: true, retrain_band: 1}\n", baseline);
  EXPECT_NE(e.find("'oneshot.retrain_band' must be in [0, 1)"), std::string::npos) << e;
  e = error_of("oneshot: {retrain_band: 0.5}\n");
  EXPECT_NE(e.find("'oneshot.retrain_band' bounds the per-baseline picks"), std::string::npos) << e;
  e = error_of("oneshot: {trials_per_baseline: 10}\n");
  EXPECT_NE(e.find("'oneshot.trials_per_baseline' searches for the per-baseline picks"), std::string::npos) << e;
  e = error_of("oneshot: {retrain_at_baselines: true, trials_per_baseline: -1}\n", baseline);
  EXPECT_NE(e.find("'oneshot.trials_per_baseline' must be >= 0"), std::string::npos) << e;
  e = error_of("oneshot: {screen_epochs: -1}\n");
  EXPECT_NE(e.find("'oneshot.screen_epochs' must be >= 0"), std::string::npos) << e;
  e = error_of("oneshot: {sharing: kernels}\n");
  EXPECT_NE(e.find(kFile + ":4:20: 'oneshot.sharing' must be none, se or pointwise, got 'kernels'"), std::string::npos) << e;
  e = error_of("oneshot: {split: stages}\n");
  EXPECT_NE(e.find(kFile + ":4:18: 'oneshot.split' must be none or stem_stride, got 'stages'"), std::string::npos) << e;
  e = error_of("oneshot: {split: stem_stride}\n");  // the tiny space's stem stride is fixed
  EXPECT_NE(e.find(kFile + ":4:18: 'oneshot.split' stem_stride needs a space whose stem stride is a decision"),
            std::string::npos) << e;
  e = error_of("oneshot: {bn_batches: -1}\n");
  EXPECT_NE(e.find(kFile + ":4:23: 'oneshot.bn_batches' must be >= 1"), std::string::npos) << e;
}

TEST(OneshotConfig, RefusesPrunerAndHyperparameters) {
  std::string e = error_of("", "pruner: median\n");
  EXPECT_NE(e.find(kFile), std::string::npos) << e;
  EXPECT_NE(e.find("'pruner' must be none"), std::string::npos) << e;
  e = error_of("", "hyperparameters: {lr: {low: 0.01, high: 0.1}}\n");
  EXPECT_NE(e.find("'hyperparameters' are not searched"), std::string::npos) << e;
}

// Every shipped NAS config loads (space files, baselines in their space, constraints), and the
// one-shot ones' `oneshot:` sections pass: the full-size configs are too long for CI to run.
TEST(OneshotConfig, EveryShippedConfigLoads) {
  int oneshot = 0, all = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(XNN_SOURCE_DIR) + "/configs/nas")) {
    if (entry.path().extension() != ".yaml") continue;
    SCOPED_TRACE(entry.path().string());
    NasConfig c;
    ASSERT_NO_THROW(c = load_nas_config(entry.path().string()));
    ++all;
    if (c.method == "oneshot") {
      EXPECT_NO_THROW(parse_oneshot_options(c));
      ++oneshot;
    }
  }
  EXPECT_GE(all, 8);
  EXPECT_GE(oneshot, 4);  // fmnist_oneshot{,_ci,_full,_lenet}
}
