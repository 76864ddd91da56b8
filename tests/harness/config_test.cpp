// Experiment config parsing: valid configs (defaults, shorthands, relative paths, overrides) and
// invalid ones with their exact error text.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "harness/config/experiment_config.h"

namespace fs = std::filesystem;
using namespace xnn::config;

namespace {

class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("xnn_config_test_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "models");
    std::ofstream(dir_ / "models" / "mlp.onnx") << "not really onnx";
    std::ofstream(dir_ / "models" / "cnn.xnn") << "not really xnn";
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& yaml, const std::string& name = "exp.yaml") {
    const fs::path p = dir_ / name;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << yaml;
    return p.string();
  }

  ExperimentConfig load(const std::string& yaml, const std::vector<std::string>& overrides = {},
                        const ParseOptions& opts = {}) {
    return load_experiment_config(write(yaml), overrides, opts);
  }

  // The error text, with the test folder left out so that it reads "exp.yaml:3:5: ...".
  std::string error(const std::string& yaml, const std::vector<std::string>& overrides = {},
                    const ParseOptions& opts = {}) {
    try {
      load(yaml, overrides, opts);
    } catch (const xnn::Error& e) {
      std::string s = e.what();
      const std::string prefix = dir_.string() + "/";
      for (size_t p; (p = s.find(prefix)) != std::string::npos;) s.replace(p, prefix.size(), "");
      return s;
    }
    ADD_FAILURE() << "no error for:\n" << yaml;
    return "";
  }

  std::string abs(const std::string& rel) const { return (dir_ / rel).lexically_normal().string(); }

  fs::path dir_;
};

const char* kMinimal = "name: demo\nmodels:\n  - models/mlp.onnx\n";

ParseOptions with_registries() {
  ParseOptions o;
  o.known_targets = {"cpu", "sim:cortex-a53", "sim:cortex-m7"};
  o.is_known_target = [o](const std::string& k) {
    return std::find(o.known_targets.begin(), o.known_targets.end(), k) != o.known_targets.end();
  };
  o.known_steps = {"convert", "optimize", "quantize"};
  o.is_known_step = [o](const std::string& k) {
    return std::find(o.known_steps.begin(), o.known_steps.end(), k) != o.known_steps.end();
  };
  return o;
}

// ---- valid configs -------------------------------------------------------------------------

TEST_F(ConfigTest, MinimalConfigGetsEveryDefault) {
  const ExperimentConfig c = load(kMinimal);
  EXPECT_EQ(c.name, "demo");
  EXPECT_EQ(c.description, "");
  EXPECT_EQ(c.file, abs("exp.yaml"));
  ASSERT_EQ(c.models.size(), 1u);
  EXPECT_EQ(c.models[0].name, "mlp");
  EXPECT_EQ(c.models[0].path, abs("models/mlp.onnx"));
  EXPECT_EQ(c.models[0].preprocess.scale, 1.0);
  EXPECT_EQ(c.models[0].preprocess.mean, std::vector<float>{0.0f});
  EXPECT_EQ(c.models[0].preprocess.std, std::vector<float>{1.0f});
  EXPECT_EQ(c.models[0].preprocess.layout, "NCHW");
  ASSERT_EQ(c.variants.size(), 1u);
  EXPECT_EQ(c.variants[0].name, "fp32");
  EXPECT_TRUE(c.variants[0].steps.empty());
  ASSERT_EQ(c.targets.size(), 1u);
  EXPECT_EQ(c.targets[0].name, "cpu");
  EXPECT_EQ(c.targets[0].kind, "cpu");
  EXPECT_EQ(c.targets[0].threads, 1);
  EXPECT_TRUE(c.targets[0].affinity.empty());
  const Metrics& m = c.metrics;
  EXPECT_TRUE(m.latency.enabled);
  EXPECT_EQ(m.latency.warmup, 5);
  EXPECT_EQ(m.latency.runs, 20);
  EXPECT_EQ(m.latency.min_time, 0.5);
  EXPECT_EQ(m.latency.max_runs, 10000);
  EXPECT_FALSE(m.latency.profile);
  EXPECT_TRUE(m.size.enabled);
  EXPECT_FALSE(m.accuracy.enabled);
  EXPECT_EQ(m.accuracy.dataset, "fashion-mnist");
  EXPECT_EQ(m.accuracy.split, "test");
  EXPECT_EQ(m.accuracy.limit, 0);
  EXPECT_EQ(m.accuracy.path, "/usr/share/datasets/fashion-mnist");
  EXPECT_TRUE(m.memory.enabled);
  EXPECT_EQ(c.store, abs("xnn-lab.db"));
  EXPECT_EQ(c.models[0].location, dir_.string() + "/exp.yaml:3:5");
}

TEST_F(ConfigTest, FullFormEveryKeySet) {
  const ExperimentConfig c = load(R"(name: full
description: every key written out
models:
  - name: small
    path: models/cnn.xnn
    preprocess:
      scale: 1/255
      mean: [0.485, 0.456, 0.406]
      std: [0.229, 0.224, 0.225]
      layout: NHWC
variants:
  - name: fp32
  - name: opt
    steps:
      - convert
      - type: optimize
        level: 2
targets:
  - name: cpu-2t
    kind: cpu
    threads: 2
    affinity: [0, 1]
metrics:
  latency: {enabled: true, warmup: 0, runs: 7, min_time: 0, max_runs: 7, profile: true}
  size: {enabled: false}
  accuracy: {enabled: true, dataset: fashion-mnist, split: train, limit: 1000, path: models}
  memory: {enabled: no}
store: results/full.db
)");
  EXPECT_EQ(c.description, "every key written out");
  const ModelSpec& m = c.models[0];
  EXPECT_EQ(m.name, "small");
  EXPECT_EQ(m.path, abs("models/cnn.xnn"));
  EXPECT_DOUBLE_EQ(m.preprocess.scale, 1.0 / 255);
  EXPECT_EQ(m.preprocess.mean, (std::vector<float>{0.485f, 0.456f, 0.406f}));
  EXPECT_EQ(m.preprocess.std, (std::vector<float>{0.229f, 0.224f, 0.225f}));
  EXPECT_EQ(m.preprocess.layout, "NHWC");
  ASSERT_EQ(c.variants.size(), 2u);
  EXPECT_TRUE(c.variants[0].steps.empty());
  ASSERT_EQ(c.variants[1].steps.size(), 2u);
  EXPECT_EQ(c.variants[1].steps[0].type, "convert");
  EXPECT_TRUE(c.variants[1].steps[0].params.IsMap());
  EXPECT_EQ(c.variants[1].steps[0].params.size(), 0u);
  EXPECT_EQ(c.variants[1].steps[1].type, "optimize");
  EXPECT_EQ(c.variants[1].steps[1].params["level"].as<int>(), 2);
  EXPECT_EQ(c.variants[1].steps[1].location, dir_.string() + "/exp.yaml:16:9");
  EXPECT_EQ(c.variants[1].steps[1].param_locations.at("level"), dir_.string() + "/exp.yaml:17:16");
  EXPECT_EQ(c.targets[0].name, "cpu-2t");
  EXPECT_EQ(c.targets[0].threads, 2);
  EXPECT_EQ(c.targets[0].affinity, (std::vector<int>{0, 1}));
  EXPECT_TRUE(c.metrics.latency.enabled);
  EXPECT_EQ(c.metrics.latency.warmup, 0);
  EXPECT_EQ(c.metrics.latency.runs, 7);
  EXPECT_EQ(c.metrics.latency.min_time, 0.0);
  EXPECT_EQ(c.metrics.latency.max_runs, 7);
  EXPECT_TRUE(c.metrics.latency.profile);
  EXPECT_FALSE(c.metrics.size.enabled);
  EXPECT_TRUE(c.metrics.accuracy.enabled);
  EXPECT_EQ(c.metrics.accuracy.split, "train");
  EXPECT_EQ(c.metrics.accuracy.limit, 1000);
  EXPECT_EQ(c.metrics.accuracy.path, abs("models"));
  EXPECT_FALSE(c.metrics.memory.enabled);
  EXPECT_EQ(c.store, abs("results/full.db"));
}

TEST_F(ConfigTest, ShorthandForms) {
  const ExperimentConfig c = load(R"(name: short
models:
  - models/mlp.onnx
  - {path: models/cnn.xnn, preprocess: {mean: 0.5, std: 0.25}}
variants: [fp32, {name: converted, steps: [convert]}]
targets: [cpu, {kind: cpu, name: pinned, affinity: 3}]
metrics:
  latency: false
  accuracy: true
  size: off
  memory: {}
)");
  ASSERT_EQ(c.models.size(), 2u);
  EXPECT_EQ(c.models[1].name, "cnn");
  EXPECT_EQ(c.models[1].preprocess.mean, std::vector<float>{0.5f});
  EXPECT_EQ(c.models[1].preprocess.std, std::vector<float>{0.25f});
  ASSERT_EQ(c.variants.size(), 2u);
  EXPECT_EQ(c.variants[0].name, "fp32");
  EXPECT_TRUE(c.variants[0].steps.empty());
  EXPECT_EQ(c.variants[1].steps.at(0).type, "convert");
  ASSERT_EQ(c.targets.size(), 2u);
  EXPECT_EQ(c.targets[0].name, "cpu");
  EXPECT_EQ(c.targets[1].name, "pinned");
  EXPECT_EQ(c.targets[1].affinity, std::vector<int>{3});
  EXPECT_FALSE(c.metrics.latency.enabled);
  EXPECT_TRUE(c.metrics.accuracy.enabled);  // `true`: on, with the defaults
  EXPECT_EQ(c.metrics.accuracy.limit, 0);
  EXPECT_FALSE(c.metrics.size.enabled);
  EXPECT_TRUE(c.metrics.memory.enabled);  // a map turns the metric on
}

TEST_F(ConfigTest, WritingAMetricSectionTurnsItOn) {
  const ExperimentConfig c = load(std::string(kMinimal) + "metrics:\n  accuracy: {limit: 100}\n");
  EXPECT_TRUE(c.metrics.accuracy.enabled);
  EXPECT_EQ(c.metrics.accuracy.limit, 100);
}

TEST_F(ConfigTest, RelativePathsStartFromTheConfigFolder) {
  const std::string path = write(R"(name: rel
models:
  - ../models/./mlp.onnx
  - path: /ABSOLUTE
store: ../out/results.db
)", "sub/dir/../exp.yaml");
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string abs_model = abs("models/cnn.xnn");
  text.replace(text.find("/ABSOLUTE"), 9, abs_model);
  std::ofstream(path) << text;
  const ExperimentConfig c = load_experiment_config(path);
  EXPECT_EQ(c.file, abs("sub/exp.yaml"));
  EXPECT_EQ(c.models[0].path, abs("models/mlp.onnx"));
  EXPECT_EQ(c.models[1].path, abs_model);
  EXPECT_EQ(c.store, abs("out/results.db"));
}

TEST_F(ConfigTest, OverridesOfNestedListItemsAndNewKeys) {
  const ExperimentConfig c = load(R"(name: ov
models:
  - models/mlp.onnx
targets:
  - cpu
  - {kind: cpu, name: four, threads: 4}
)",
                                  {"targets.1.threads=1", "metrics.latency.runs=50", "models.0.path=" + abs("models/cnn.xnn"),
                                   "metrics.accuracy.limit=100", "models.0.preprocess.layout=NHWC",
                                   "description=from the command line"});
  EXPECT_EQ(c.targets[1].threads, 1);
  EXPECT_EQ(c.metrics.latency.runs, 50);
  EXPECT_EQ(c.models[0].path, abs("models/cnn.xnn"));
  EXPECT_EQ(c.models[0].name, "cnn");
  EXPECT_TRUE(c.metrics.accuracy.enabled);  // metrics: and accuracy: were created
  EXPECT_EQ(c.metrics.accuracy.limit, 100);
  EXPECT_EQ(c.models[0].preprocess.layout, "NHWC");
  EXPECT_EQ(c.description, "from the command line");
}

TEST_F(ConfigTest, FlowListOverrides) {
  const ExperimentConfig c = load(kMinimal, {"targets=[cpu, {kind: cpu, name: t4, threads: 4}]", "targets.1.affinity=[0,1]",
                                             "variants=[fp32, {name: opt, steps: [convert]}]",
                                             "variants.1.steps=[convert, {type: optimize, level: 1}]",
                                             "models.0.preprocess.mean=[0.1,0.2,0.3]"});
  ASSERT_EQ(c.targets.size(), 2u);
  EXPECT_EQ(c.targets[1].threads, 4);
  EXPECT_EQ(c.targets[1].affinity, (std::vector<int>{0, 1}));
  ASSERT_EQ(c.variants.size(), 2u);
  ASSERT_EQ(c.variants[1].steps.size(), 2u);
  EXPECT_EQ(c.variants[1].steps[1].type, "optimize");
  EXPECT_EQ(c.variants[1].steps[1].params["level"].as<int>(), 1);
  EXPECT_EQ(c.variants[1].steps[1].location, "override 'variants.1.steps=[convert, {type: optimize, level: 1}]'");
  EXPECT_EQ(c.variants[1].steps[1].param_locations.at("level"),
            "override 'variants.1.steps=[convert, {type: optimize, level: 1}]'");
  EXPECT_EQ(c.models[0].preprocess.mean, (std::vector<float>{0.1f, 0.2f, 0.3f}));
}

TEST_F(ConfigTest, OverridesReachTheDefaultTargetAndVariant) {
  const ExperimentConfig c = load(kMinimal, {"targets.0.threads=3", "variants.0.steps=[convert]"});
  ASSERT_EQ(c.targets.size(), 1u);
  EXPECT_EQ(c.targets[0].kind, "cpu");
  EXPECT_EQ(c.targets[0].threads, 3);
  ASSERT_EQ(c.variants.size(), 1u);
  EXPECT_EQ(c.variants[0].name, "fp32");
  EXPECT_EQ(c.variants[0].steps.at(0).type, "convert");
}

TEST_F(ConfigTest, OverridesReachIntoShorthandEntries) {
  const ExperimentConfig c = load(R"(name: sh
models: [models/mlp.onnx]
variants:
  - fp32
  - {name: opt, steps: [convert, optimize]}
targets: [cpu]
)",
                                  {"models.0.name=renamed", "targets.0.threads=2", "variants.1.steps.1.level=1",
                                   "variants.0.steps=[convert]"});
  EXPECT_EQ(c.models[0].name, "renamed");
  EXPECT_EQ(c.models[0].path, abs("models/mlp.onnx"));
  EXPECT_EQ(c.models[0].location, dir_.string() + "/exp.yaml");  // the entry was rewritten
  EXPECT_EQ(c.targets[0].kind, "cpu");
  EXPECT_EQ(c.targets[0].threads, 2);
  EXPECT_EQ(c.variants[0].name, "fp32");
  EXPECT_EQ(c.variants[0].steps.at(0).type, "convert");
  EXPECT_EQ(c.variants[1].steps.at(1).type, "optimize");
  EXPECT_EQ(c.variants[1].steps.at(1).params["level"].as<int>(), 1);
  EXPECT_EQ(c.variants[1].steps.at(1).param_locations.at("level"), "override 'variants.1.steps.1.level=1'");
}

TEST_F(ConfigTest, CopiesOfStepsDoNotShareAssignments) {
  const ExperimentConfig c = load(std::string(kMinimal) +
                                  "variants:\n  - {name: a, steps: [{type: s, k: 1}, {type: t, k: 2}]}\n");
  StepSpec x = c.variants[0].steps[0];
  x = c.variants[0].steps[1];  // must not turn steps[0]'s parameters into steps[1]'s
  EXPECT_EQ(c.variants[0].steps[0].params["k"].as<int>(), 1);
  EXPECT_EQ(x.params["k"].as<int>(), 2);
  std::vector<VariantSpec> v = c.variants;
  v = c.variants;
  v[0].steps = {c.variants[0].steps[1], c.variants[0].steps[0]};
  EXPECT_EQ(c.variants[0].steps[0].params["k"].as<int>(), 1);
  EXPECT_EQ(c.variants[0].steps[1].params["k"].as<int>(), 2);
}

TEST_F(ConfigTest, LaterOverridesWin) {
  const ExperimentConfig c = load(kMinimal, {"metrics.latency.runs=5", "metrics.latency.runs=6", "targets.0.threads=0",
                                             "targets=[{kind: cpu, threads: 2}]"});
  EXPECT_EQ(c.metrics.latency.runs, 6);
  EXPECT_EQ(c.targets[0].threads, 2);
}

TEST_F(ConfigTest, SimulatedTargetsAndStepsThroughTheRegistries) {
  const ExperimentConfig c = load(R"(name: sim
models: [models/mlp.onnx]
variants:
  - name: q8
    steps: [convert, {type: quantize, bits: 8, scheme: {per_channel: true, axis: 0}}]
targets: [cpu, sim:cortex-m7]
)",
                                  {}, with_registries());
  EXPECT_EQ(c.targets[1].kind, "sim:cortex-m7");
  EXPECT_EQ(c.targets[1].name, "sim:cortex-m7");
  const StepSpec& q = c.variants[0].steps[1];
  EXPECT_EQ(q.type, "quantize");
  EXPECT_EQ(q.params["bits"].as<int>(), 8);
  EXPECT_TRUE(q.params["scheme"]["per_channel"].as<bool>());
  EXPECT_EQ(q.params.size(), 2u);
}

TEST_F(ConfigTest, ResolvedYamlIsCanonicalAndLoadsBack) {
  const ExperimentConfig a = load(R"(name: canon
models:
  - {path: models/mlp.onnx, preprocess: {scale: 1/255, mean: 0.286, std: 0.353}}
variants:
  - {name: q, steps: [convert, {type: quantize, z: 1, a: {y: 2, x: 1}}]}
targets: [{kind: cpu, threads: 2, affinity: [1, 0]}]
metrics: {accuracy: {limit: 10}, size: false}
)");
  const std::string yaml = a.resolved_yaml();
  EXPECT_EQ(yaml, "name: canon\n"
                  "description: \"\"\n"
                  "models:\n"
                  "  - name: mlp\n"
                  "    path: " + abs("models/mlp.onnx") + "\n"
                  "    preprocess: {scale: 0.00392156862745098, mean: [0.286], std: [0.353], layout: NCHW}\n"
                  "variants:\n"
                  "  - name: q\n"
                  "    steps:\n"
                  "      - type: convert\n"
                  "      - type: quantize\n"
                  "        a:\n"
                  "          x: 1\n"
                  "          y: 2\n"
                  "        z: 1\n"
                  "targets:\n"
                  "  - name: cpu\n"
                  "    kind: cpu\n"
                  "    threads: 2\n"
                  "    affinity: [1, 0]\n"
                  "metrics:\n"
                  "  latency: {enabled: true, warmup: 5, runs: 20, min_time: 0.5, max_runs: 10000, profile: false}\n"
                  "  size: false\n"
                  "  accuracy: {enabled: true, dataset: fashion-mnist, split: test, limit: 10, path: "
                  "/usr/share/datasets/fashion-mnist}\n"
                  "  memory: true\n");
  EXPECT_EQ(a.resolved_yaml(), yaml);  // emitting leaves the parameters alone
  EXPECT_EQ(a.variants[0].steps[1].params["a"]["x"].as<int>(), 1);
  // It is a config that loads back to itself, with the same hash.
  const ExperimentConfig b = load(yaml, {}, {});
  EXPECT_EQ(b.resolved_yaml(), yaml);
  EXPECT_EQ(config_hash(a), config_hash(b));
  EXPECT_EQ(config_hash(a).size(), 64u);
  EXPECT_EQ(config_hash(a).find_first_not_of("0123456789abcdef"), std::string::npos);
}

TEST_F(ConfigTest, HashIgnoresLayoutAndStoreButNotSettings) {
  const std::string h = config_hash(load(kMinimal));
  EXPECT_EQ(config_hash(load("# a comment\nmodels: [models/mlp.onnx]\nname: demo\nstore: elsewhere.db\n")), h);
  EXPECT_EQ(config_hash(load(kMinimal, {"metrics.latency.warmup=5"})), h);  // the default, written out
  EXPECT_EQ(config_hash(load(kMinimal, {"metrics.accuracy.limit=7", "metrics.accuracy.enabled=false"})), h);
  EXPECT_NE(config_hash(load(kMinimal, {"metrics.latency.runs=21"})), h);
  EXPECT_NE(config_hash(load(kMinimal, {"targets.0.threads=2"})), h);
}

TEST_F(ConfigTest, ExampleConfigsLoad) {
  // tests/harness/config_test.cpp -> the repository root
  const fs::path root = fs::path(__FILE__).parent_path().parent_path().parent_path();
  ParseOptions opts;  // the models come from scripts/train_fmnist_quickstart.py; they need not exist here
  opts.check_paths_exist = false;
  int n = 0;
  for (const auto& entry : fs::directory_iterator(root / "configs" / "examples")) {
    if (entry.path().extension() != ".yaml") continue;
    SCOPED_TRACE(entry.path().string());
    const ExperimentConfig c = load_experiment_config(entry.path().string(), {}, opts);
    EXPECT_FALSE(c.models.empty());
    ++n;
  }
  EXPECT_GE(n, 3);
}

TEST(DidYouMean, DistanceAndSuggestions) {
  EXPECT_EQ(edit_distance("warmpu", "warmup"), 1u);  // a transposition counts once
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(did_you_mean("modles", {"name", "models"}), "models");
  EXPECT_EQ(did_you_mean("Models", {"name", "models"}), "models");
  EXPECT_EQ(did_you_mean("cpuu", {"cpu", "sim:cortex-m7"}), "cpu");
  EXPECT_EQ(did_you_mean("gpu", {"cpu"}), "cpu");
  EXPECT_EQ(did_you_mean("xy", {"ab"}), "");
  EXPECT_EQ(did_you_mean("colour", {"name", "path", "preprocess"}), "");
  EXPECT_EQ(did_you_mean("sim:cortexm-7", {"cpu", "sim:cortex-m7"}), "sim:cortex-m7");
}

// ---- invalid configs: the exact message --------------------------------------------------------

TEST_F(ConfigTest, UnknownTopLevelKeyWithDidYouMean) {
  EXPECT_EQ(error("name: demo\nmodles:\n  - models/mlp.onnx\n"),
            "exp.yaml:2:1: unknown key 'modles' at the top level (did you mean 'models'?); expected one of: name, "
            "description, models, variants, targets, metrics, store");
}

TEST_F(ConfigTest, UnknownNestedKeyWithDidYouMean) {
  EXPECT_EQ(error(std::string(kMinimal) + "metrics:\n  latency:\n    warmpu: 3\n"),
            "exp.yaml:6:5: unknown key 'warmpu' in metrics.latency (did you mean 'warmup'?); expected one of: warmup, "
            "runs, min_time, max_runs, profile, enabled");
}

TEST_F(ConfigTest, UnknownKeyWithoutSuggestion) {
  EXPECT_EQ(error("name: demo\nmodels:\n  - path: models/mlp.onnx\n    colour: red\n"),
            "exp.yaml:4:5: unknown key 'colour' in models.0; expected one of: name, path, preprocess");
}

TEST_F(ConfigTest, StringWhereAnIntegerIsExpected) {
  EXPECT_EQ(error(std::string(kMinimal) + "metrics:\n  latency: {runs: fifty}\n"),
            "exp.yaml:5:19: metrics.latency.runs: expected a positive integer, got 'fifty'");
}

TEST_F(ConfigTest, FractionWhereAnIntegerIsExpected) {
  EXPECT_EQ(error(std::string(kMinimal) + "metrics:\n  latency:\n    warmup: 2.5\n"),
            "exp.yaml:6:13: metrics.latency.warmup: expected a non-negative integer, got '2.5'");
}

TEST_F(ConfigTest, ListWhereAMapIsExpected) {
  EXPECT_EQ(error(std::string(kMinimal) + "metrics:\n  - latency\n"),
            "exp.yaml:5:3: metrics: expected a map with latency:, size:, accuracy: or memory:, got a list");
}

TEST_F(ConfigTest, MapWhereAListIsExpected) {
  EXPECT_EQ(error("name: demo\nmodels:\n  path: models/mlp.onnx\n"),
            "exp.yaml:3:3: models: expected a list of models, got a map");
}

TEST_F(ConfigTest, EmptyModelList) {
  EXPECT_EQ(error("name: demo\nmodels: []\n"), "exp.yaml:2:9: models: expected at least one model, got an empty list");
}

TEST_F(ConfigTest, ZeroThreads) {
  EXPECT_EQ(error(std::string(kMinimal) + "targets:\n  - kind: cpu\n    threads: 0\n"),
            "exp.yaml:6:14: targets.0.threads: expected an integer >= 1, got 0");
}

TEST_F(ConfigTest, NegativeWarmupAndMinTime) {
  EXPECT_EQ(error(std::string(kMinimal) + "metrics:\n  latency: {warmup: -1}\n"),
            "exp.yaml:5:21: metrics.latency.warmup: expected an integer >= 0, got -1");
  EXPECT_EQ(error(std::string(kMinimal) + "metrics:\n  latency: {min_time: -0.5}\n"),
            "exp.yaml:5:23: metrics.latency.min_time: expected a number of seconds >= 0, got -0.5");
}

TEST_F(ConfigTest, IntegerTooLarge) {
  EXPECT_EQ(error(std::string(kMinimal) + "targets: [{kind: cpu, threads: 99999999999}]\n"),
            "exp.yaml:4:32: targets.0.threads: expected an integer <= 2147483647, got 99999999999");
}

TEST_F(ConfigTest, EmptyValue) {
  EXPECT_EQ(error(std::string(kMinimal) + "metrics:\n  latency:\n    runs:\n"),
            "exp.yaml:6:5: metrics.latency.runs: expected a positive integer, got an empty value");
}

TEST_F(ConfigTest, MaxRunsBelowRuns) {
  EXPECT_EQ(error(std::string(kMinimal) + "metrics:\n  latency: {runs: 30, max_runs: 10}\n"),
            "exp.yaml:5:33: metrics.latency.max_runs: expected an integer >= runs (30), got 10");
}

TEST_F(ConfigTest, MissingName) {
  EXPECT_EQ(error("models:\n  - models/mlp.onnx\n"), "exp.yaml: missing required key 'name' (a name for the experiment)");
}

TEST_F(ConfigTest, EmptyName) {
  EXPECT_EQ(error("name: ''\nmodels:\n  - models/mlp.onnx\n"), "exp.yaml:1:7: name: expected a non-empty string, got ''");
}

TEST_F(ConfigTest, MissingModels) {
  EXPECT_EQ(error("name: demo\n"), "exp.yaml: missing required key 'models' (a list of models)");
}

TEST_F(ConfigTest, ModelFileDoesNotExist) {
  EXPECT_EQ(error("name: demo\nmodels:\n  - name: gone\n    path: models/gone.onnx\n"),
            "exp.yaml:4:11: models.0.path: no such file: models/gone.onnx (relative paths start from the config "
            "file's folder)");
}

TEST_F(ConfigTest, ModelPathIsAFolder) {
  EXPECT_EQ(error("name: demo\nmodels: [models]\n"),
            "exp.yaml:2:10: models.0: models is a folder; expected a model file (.onnx or .xnn)");
}

TEST_F(ConfigTest, ModelWithoutPath) {
  EXPECT_EQ(error("name: demo\nmodels:\n  - name: x\n"),
            "exp.yaml:3:5: models.0: missing required key 'path' (the model file, .onnx or .xnn)");
}

TEST_F(ConfigTest, DuplicateModelNames) {
  std::ofstream(dir_ / "mlp.onnx") << "x";
  EXPECT_EQ(error("name: demo\nmodels:\n  - models/mlp.onnx\n  - mlp.onnx\n"),
            "exp.yaml:4:5: models.1: duplicate model name 'mlp' (models.0 has the same name; give one a name:)");
}

TEST_F(ConfigTest, UnknownTargetKindWithDidYouMean) {
  EXPECT_EQ(error(std::string(kMinimal) + "targets:\n  - kind: sim:cortex-m8\n", {}, with_registries()),
            "exp.yaml:5:11: targets.0.kind: unknown target 'sim:cortex-m8' (did you mean 'sim:cortex-m7'?); known "
            "targets: cpu, sim:cortex-a53, sim:cortex-m7");
  EXPECT_EQ(error(std::string(kMinimal) + "targets: [gpu]\n"),
            "exp.yaml:4:11: targets.0: unknown target 'gpu' (did you mean 'cpu'?); known targets: cpu");
}

TEST_F(ConfigTest, TargetWithoutKind) {
  EXPECT_EQ(error(std::string(kMinimal) + "targets:\n  - threads: 2\n"),
            "exp.yaml:5:5: targets.0: missing required key 'kind' (cpu, or sim:<profile> for a simulated device)");
}

TEST_F(ConfigTest, AffinityListsACpuTwice) {
  EXPECT_EQ(error(std::string(kMinimal) + "targets: [{kind: cpu, affinity: [0, 2, 0]}]\n"),
            "exp.yaml:4:40: targets.0.affinity.2: CPU 0 is listed twice");
  EXPECT_EQ(error(std::string(kMinimal) + "targets: [{kind: cpu, affinity: [-1]}]\n"),
            "exp.yaml:4:34: targets.0.affinity.0: expected an integer >= 0, got -1");
}

TEST_F(ConfigTest, DuplicateTargetNames) {
  EXPECT_EQ(error(std::string(kMinimal) + "targets:\n  - cpu\n  - kind: cpu\n    threads: 4\n"),
            "exp.yaml:6:11: targets.1.kind: duplicate target name 'cpu' (targets.0 has the same name; give one a "
            "name:)");
}

TEST_F(ConfigTest, DuplicateVariantNames) {
  EXPECT_EQ(error(std::string(kMinimal) + "variants:\n  - fp32\n  - name: fp32\n    steps: [convert]\n"),
            "exp.yaml:6:11: variants.1.name: duplicate variant name 'fp32' (variants.0 has the same name)");
}

TEST_F(ConfigTest, VariantWithoutName) {
  EXPECT_EQ(error(std::string(kMinimal) + "variants:\n  - steps: [convert]\n"),
            "exp.yaml:5:5: variants.0: missing required key 'name' (the variant's name)");
}

TEST_F(ConfigTest, StepsNotAList) {
  EXPECT_EQ(error(std::string(kMinimal) + "variants:\n  - name: opt\n    steps: convert\n"),
            "exp.yaml:6:12: variants.0.steps: expected a list of steps, got 'convert'");
}

TEST_F(ConfigTest, StepWithoutType) {
  EXPECT_EQ(error(std::string(kMinimal) + "variants:\n  - name: opt\n    steps:\n      - level: 2\n"),
            "exp.yaml:7:9: variants.0.steps.0: missing required key 'type' (the step, e.g. convert or optimize)");
}

TEST_F(ConfigTest, UnknownStepWithDidYouMean) {
  EXPECT_EQ(error(std::string(kMinimal) + "variants:\n  - name: opt\n    steps: [convert, optimise]\n", {}, with_registries()),
            "exp.yaml:6:22: variants.0.steps.1: unknown step 'optimise' (did you mean 'optimize'?); known steps: "
            "convert, optimize, quantize");
}

TEST_F(ConfigTest, BadLayout) {
  EXPECT_EQ(error("name: demo\nmodels:\n  - path: models/mlp.onnx\n    preprocess: {layout: NWHC}\n"),
            "exp.yaml:4:26: models.0.preprocess.layout: expected NCHW or NHWC, got 'NWHC' (did you mean 'NHWC'?)");
}

TEST_F(ConfigTest, MeanWithTwoValues) {
  EXPECT_EQ(error("name: demo\nmodels:\n  - path: models/mlp.onnx\n    preprocess: {mean: [0.5, 0.5]}\n"),
            "exp.yaml:4:24: models.0.preprocess.mean: expected 1 or 3 numbers (one for all channels, or one per "
            "channel), got 2");
}

TEST_F(ConfigTest, StdZeroAndBadScale) {
  EXPECT_EQ(error("name: demo\nmodels:\n  - path: models/mlp.onnx\n    preprocess: {std: [1, 0, 1]}\n"),
            "exp.yaml:4:27: models.0.preprocess.std.1: expected a number > 0, got 0");
  EXPECT_EQ(error("name: demo\nmodels:\n  - path: models/mlp.onnx\n    preprocess: {scale: 1/0}\n"),
            "exp.yaml:4:25: models.0.preprocess.scale: expected a number > 0 (e.g. 0.00392 or 1/255), got '1/0'");
}

TEST_F(ConfigTest, PreprocessNotAMap) {
  EXPECT_EQ(error("name: demo\nmodels:\n  - path: models/mlp.onnx\n    preprocess: [1, 2]\n"),
            "exp.yaml:4:17: models.0.preprocess: expected a map with scale:, mean:, std: and layout:, got a list");
}

TEST_F(ConfigTest, AccuracyDatasetAndSplit) {
  EXPECT_EQ(error(std::string(kMinimal) + "metrics:\n  accuracy: {dataset: mnist}\n"),
            "exp.yaml:5:23: metrics.accuracy.dataset: expected fashion-mnist, got 'mnist'");
  EXPECT_EQ(error(std::string(kMinimal) + "metrics:\n  accuracy: {split: validation}\n"),
            "exp.yaml:5:21: metrics.accuracy.split: expected test or train, got 'validation'");
  EXPECT_EQ(error(std::string(kMinimal) + "metrics:\n  accuracy: {path: no/such/folder}\n"),
            "exp.yaml:5:20: metrics.accuracy.path: no such folder: no/such/folder (relative paths start from the "
            "config file's folder)");
}

TEST_F(ConfigTest, BadBooleanAndMetricSection) {
  EXPECT_EQ(error(std::string(kMinimal) + "metrics:\n  latency: {profile: maybe}\n"),
            "exp.yaml:5:22: metrics.latency.profile: expected true or false, got 'maybe'");
  EXPECT_EQ(error(std::string(kMinimal) + "metrics:\n  latency: 5\n"),
            "exp.yaml:5:12: metrics.latency: expected true, false or a map of latency settings, got '5'");
}

TEST_F(ConfigTest, DuplicateKey) {
  EXPECT_EQ(error(std::string(kMinimal) + "metrics:\n  latency:\n    runs: 5\n    runs: 6\n"),
            "exp.yaml:7:5: duplicate key 'runs' in metrics.latency");
}

TEST_F(ConfigTest, TopLevelNotAMap) {
  EXPECT_EQ(error("- name: demo\n"), "exp.yaml:1:1: expected a map at the top level (name:, models:, ...), got a list");
}

TEST_F(ConfigTest, EmptyFile) {
  EXPECT_EQ(error(""), "exp.yaml: the file is empty; expected a map with at least name: and models:");
  EXPECT_EQ(error("# nothing but a comment\n"), "exp.yaml: the file is empty; expected a map with at least name: and models:");
}

TEST_F(ConfigTest, YamlSyntaxErrorWithItsLocation) {
  EXPECT_EQ(error("name: demo\nmodels: [models/mlp.onnx\ntargets: [cpu]\n"),
            "exp.yaml:3:8: YAML syntax error: end of sequence flow not found");
  EXPECT_EQ(error("name: demo\n  models: x\n"), "exp.yaml:2:9: YAML syntax error: illegal map value");
}

TEST_F(ConfigTest, MissingFile) {
  EXPECT_THROW(load_experiment_config((dir_ / "nope.yaml").string()), xnn::Error);
  try {
    load_experiment_config((dir_ / "nope.yaml").string());
  } catch (const xnn::Error& e) {
    EXPECT_EQ(std::string(e.what()), (dir_ / "nope.yaml").string() + ": cannot read the config file (No such file or directory)");
  }
}

// ---- overrides ------------------------------------------------------------------------------

TEST_F(ConfigTest, OverrideWithoutEquals) {
  EXPECT_EQ(error(kMinimal, {"metrics.latency.runs"}),
            "override 'metrics.latency.runs': expected KEY.PATH=VALUE, e.g. metrics.latency.runs=50");
}

TEST_F(ConfigTest, OverrideWithEmptyKeys) {
  EXPECT_EQ(error(kMinimal, {"metrics..runs=1"}), "override 'metrics..runs=1': empty key in the path 'metrics..runs'");
  EXPECT_EQ(error(kMinimal, {"=1"}), "override '=1': the key path before '=' is empty");
}

TEST_F(ConfigTest, OverrideIndexOutOfRange) {
  EXPECT_EQ(error(kMinimal, {"targets.5.threads=1"}), "override 'targets.5.threads=1': targets has 1 entry");
  EXPECT_EQ(error(kMinimal, {"models.2.path=x.onnx"}), "override 'models.2.path=x.onnx': models has 1 entry");
}

TEST_F(ConfigTest, OverrideNamesAListEntryByName) {
  EXPECT_EQ(error(kMinimal, {"targets.cpu.threads=1"}),
            "override 'targets.cpu.threads=1': targets is a list; expected an index (0..0), got 'cpu'");
}

TEST_F(ConfigTest, OverrideIntoAScalar) {
  EXPECT_EQ(error(kMinimal, {"name.x=1"}), "override 'name.x=1': name is a single value ('demo'), not a map or a list");
}

TEST_F(ConfigTest, OverrideIndexIntoAMissingList) {
  EXPECT_EQ(error(kMinimal, {"metrics.profiles.0.x=1"}), "override 'metrics.profiles.0.x=1': metrics.profiles has no entries");
}

TEST_F(ConfigTest, OverrideValueIsNotYaml) {
  EXPECT_EQ(error(kMinimal, {"targets=[cpu"}),
            "override 'targets=[cpu': the value is not valid YAML (end of sequence flow not found); quote it: "
            "targets='...'");
}

TEST_F(ConfigTest, OverrideValueOfTheWrongType) {
  EXPECT_EQ(error(kMinimal, {"metrics.latency.runs=abc"}),
            "override 'metrics.latency.runs=abc': metrics.latency.runs: expected a positive integer, got 'abc'");
  EXPECT_EQ(error(kMinimal, {"targets.0.threads=0"}),
            "override 'targets.0.threads=0': targets.0.threads: expected an integer >= 1, got 0");
}

TEST_F(ConfigTest, OverrideOfAnUnknownKey) {
  EXPECT_EQ(error(kMinimal, {"metrics.latency.warmpu=3"}),
            "override 'metrics.latency.warmpu=3': unknown key 'warmpu' in metrics.latency (did you mean 'warmup'?); "
            "expected one of: warmup, runs, min_time, max_runs, profile, enabled");
}

TEST_F(ConfigTest, OverrideOfAModelPathThatDoesNotExist) {
  EXPECT_EQ(error(kMinimal, {"models.0.path=/x/y.onnx"}),
            "override 'models.0.path=/x/y.onnx': models.0.path: no such file: /x/y.onnx (relative paths start from "
            "the config file's folder)");
}

}  // namespace
