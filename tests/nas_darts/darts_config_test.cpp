// The `darts:` section: defaults from the space, every key read, and errors naming
// FILE:LINE:COL and the key.
#include "nas/darts/darts_config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;

namespace xnn::nas {
namespace {

const char* kSpace = R"(space:
  input: [1, 8, 8]
  resolutions: [8, 6]
  classes: 3
  width_multipliers: [0.5, 1.0]
  stem: {channels: 4, stride: 1, activation: relu}
  head: {channels: 16, activation: relu}
  block_choices: {kernels: [3, 5], expansions: [1, 2], se: [false], activations: [relu, silu]}
  stages:
    - {depths: [1, 2], channels: 8, stride: 2}
)";

NasConfig load(const std::string& darts_section, const std::string& name) {
  const fs::path p = fs::temp_directory_path() / ("darts_cfg_" + std::to_string(::getpid()) + "_" + name + ".yaml");
  {
    std::ofstream out(p);
    out << "method: darts\n" << kSpace << darts_section;
  }
  NasConfig c = load_nas_config(p.string());
  fs::remove(p);
  return c;
}

std::string error_of(const std::string& darts_section, const std::string& name) {
  try {
    parse_darts_options(load(darts_section, name));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(DartsConfig, DefaultsComeFromTheSpace) {
  const DartsOptions o = parse_darts_options(load("", "defaults"));
  EXPECT_EQ(o.width, 0.5);
  EXPECT_EQ(o.resolution, 8);
  EXPECT_EQ(o.activation, "relu");
  EXPECT_EQ(o.relaxation, "softmax");
  EXPECT_EQ(o.lambdas, (std::vector<double>{0.0}));
}

TEST(DartsConfig, ReadsEveryKey) {
  const DartsOptions o = parse_darts_options(load(R"(darts:
  width: 1.0
  resolution: 6
  activation: silu
  relaxation: gumbel
  tau_start: 4
  tau_end: 0.25
  epochs: 5
  warmup_epochs: 1
  val_fraction: 0.25
  train_limit: 1000
  alpha_lr: 0.01
  alpha_beta1: 0.9
  alpha_weight_decay: 0
  lambda: [0, 0.5, 2]
)",
                                                  "every_key"));
  EXPECT_EQ(o.width, 1.0);
  EXPECT_EQ(o.resolution, 6);
  EXPECT_EQ(o.activation, "silu");
  EXPECT_EQ(o.relaxation, "gumbel");
  EXPECT_EQ(o.tau_start, 4);
  EXPECT_EQ(o.tau_end, 0.25);
  EXPECT_EQ(o.epochs, 5);
  EXPECT_EQ(o.warmup_epochs, 1);
  EXPECT_EQ(o.val_fraction, 0.25);
  EXPECT_EQ(o.train_limit, 1000);
  EXPECT_EQ(o.alpha_lr, 0.01);
  EXPECT_EQ(o.alpha_beta1, 0.9);
  EXPECT_EQ(o.alpha_weight_decay, 0);
  EXPECT_EQ(o.lambdas, (std::vector<double>{0, 0.5, 2}));
  EXPECT_EQ(parse_darts_options(load("darts: {lambda: 3}\n", "scalar_lambda")).lambdas, (std::vector<double>{3}));
}

TEST(DartsConfig, ErrorsNameTheFileLineColumnAndKey) {
  // The space takes lines 2-11; darts: is line 12, its first key line 13.
  EXPECT_NE(error_of("darts:\n  epoks: 3\n", "typo").find(":13:3: "), std::string::npos)
      << error_of("darts:\n  epoks: 3\n", "typo");
  EXPECT_NE(error_of("darts:\n  epoks: 3\n", "typo2").find("epoks"), std::string::npos);
  const std::string width = error_of("darts:\n  width: 0.75\n", "width");
  EXPECT_NE(width.find(":13:10: 'darts.width' must be one of the space's width_multipliers"), std::string::npos)
      << width;
  const std::string act = error_of("darts:\n  activation: hardswish\n", "act");
  EXPECT_NE(act.find("'darts.activation'"), std::string::npos) << act;
  EXPECT_NE(act.find(":13:"), std::string::npos) << act;
  const std::string relax = error_of("darts:\n  relaxation: sparsemax\n", "relax");
  EXPECT_NE(relax.find(":13:15: 'darts.relaxation' must be softmax or gumbel"), std::string::npos) << relax;
  const std::string warm = error_of("darts:\n  epochs: 2\n  warmup_epochs: 2\n", "warm");
  EXPECT_NE(warm.find(":14:18: 'darts.warmup_epochs'"), std::string::npos) << warm;
  const std::string lam = error_of("darts:\n  lambda: [0.1, x]\n", "lambda");
  EXPECT_NE(lam.find(":13:17: 'darts.lambda' entries must be numbers"), std::string::npos) << lam;
  const std::string neg = error_of("darts:\n  lambda: -1\n", "neg");
  EXPECT_NE(neg.find(":13:11: 'darts.lambda' values must be finite numbers >= 0"), std::string::npos) << neg;
  const std::string type = error_of("darts:\n  epochs: many\n", "type");
  EXPECT_NE(type.find(":13:11: 'darts.epochs' must be an integer >= 1"), std::string::npos) << type;
  const std::string hp = error_of("hyperparameters:\n  lr: {low: 0.01, high: 0.1}\n", "hp");
  EXPECT_NE(hp.find("'hyperparameters' are not searched by method darts"), std::string::npos) << hp;
  for (const std::string& e : {hp, width, act, relax, warm, lam, neg, type})
    EXPECT_NE(e.find("darts_cfg_"), std::string::npos) << e;
}

}  // namespace
}  // namespace xnn::nas
