// The NAS config (nas/nas_config.h): parsing, strict errors with FILE:LINE:COL, the mapping of
// the architecture space and hyper-parameters to flat search parameters and back, and the
// per-epoch line the pruner reads (nas/blackbox_search.h).
#include <gtest/gtest.h>

#include <set>

#include <filesystem>
#include <fstream>
#include <random>

#include <unistd.h>

#include "engine/core/error.h"
#include "nas/blackbox_search.h"
#include "harness/predict/latency_predictor.h"
#include "harness/predict/model_features.h"
#include "nas/nas_config.h"

namespace fs = std::filesystem;
using namespace xnn;
using namespace xnn::nas;

namespace {

const fs::path kConfigs = fs::path(XNN_SOURCE_DIR) / "configs";

// A directory of this process's own: ctest runs each test case as its own process in parallel,
// so a shared file name would let one case read another's half-written config.
struct OwnTempDir {
  fs::path path = fs::temp_directory_path() / ("nas_config_test_" + std::to_string(::getpid()));
  OwnTempDir() { fs::create_directories(path); }
  ~OwnTempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};
fs::path own_temp_dir() {
  static const OwnTempDir dir;
  return dir.path;
}

// Writes `text` as a config and loads it (space paths in the tests are absolute).
NasConfig load_text(const std::string& text, const std::string& stem = "nas_config_test_tmp") {
  const fs::path path = own_temp_dir() / (stem + ".yaml");
  std::ofstream(path) << text;
  return load_nas_config(path.string());
}

std::string error_of(const std::string& text) {
  try {
    load_text(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::string space_line() { return "space: {file: " + (kConfigs / "arch/mobilenet_space_tiny.yaml").string() + "}\n"; }

}  // namespace

TEST(NasConfig, LoadsTheShippedConfigs) {
  const NasConfig ci = load_nas_config((kConfigs / "nas/fmnist_evolution_ci.yaml").string());
  EXPECT_EQ(ci.name, "fmnist_evolution_ci");
  EXPECT_EQ(ci.trials, 3);
  EXPECT_EQ(ci.strategy, "evolution");
  EXPECT_EQ(ci.pruner, "median");
  EXPECT_EQ(ci.recipe.epochs, 1);
  EXPECT_EQ(ci.recipe.train_limit, 512);
  ASSERT_EQ(ci.baselines.size(), 2u);
  EXPECT_TRUE(ci.baselines[0].builder.has_value());
  EXPECT_TRUE(ci.baselines[1].arch.has_value());
  ASSERT_EQ(ci.constraints.size(), 1u);
  EXPECT_EQ(ci.constraints[0].metric, "params");
  EXPECT_TRUE(fs::path(ci.output_dir).is_absolute());

  const NasConfig full = load_nas_config((kConfigs / "nas/fmnist_evolution.yaml").string());
  EXPECT_EQ(full.space.in_channels, 1);
  EXPECT_EQ(full.space.classes, 10);
  EXPECT_EQ(full.objectives, (std::vector<std::string>{"top1", "latency_ms"}));
  EXPECT_EQ(objective_directions(full), (std::vector<Direction>{Direction::kMaximize, Direction::kMinimize}));
  ASSERT_EQ(full.baselines.size(), 2u);
  EXPECT_EQ(full.baselines[1].arch->width, 0.5);
  EXPECT_NE(make_strategy(full), nullptr);
  EXPECT_NE(make_pruner(full), nullptr);
}

TEST(NasConfig, MethodAndItsSection) {
  EXPECT_EQ(load_text(space_line()).method, "blackbox");
  const NasConfig c = load_text(space_line() + "method: oneshot\noneshot: {supernet_epochs: 2}\n");
  EXPECT_EQ(c.method, "oneshot");
  ASSERT_TRUE(c.method_options.IsMap());
  EXPECT_EQ(c.method_options["supernet_epochs"].as<int>(), 2);

  std::string e = error_of(space_line() + "method: dart\n");
  EXPECT_NE(e.find("did you mean 'darts'"), std::string::npos) << e;
  e = error_of(space_line() + "darts: {epochs: 1}\n");
  EXPECT_NE(e.find("'method: darts'"), std::string::npos) << e;
  EXPECT_NE(e.find(":2:8"), std::string::npos) << e;
}

TEST(NasConfig, OverridesApply) {
  const NasConfig c = load_nas_config((kConfigs / "nas/fmnist_evolution_ci.yaml").string(),
                                      {"trials=7", "train.epochs=2", "strategy=random"});
  EXPECT_EQ(c.trials, 7);
  EXPECT_EQ(c.recipe.epochs, 2);
  EXPECT_EQ(make_strategy(c)->name(), "random");
}

TEST(NasConfig, ErrorsNameFileLineAndKey) {
  std::string e = error_of(space_line() + "trails: 3\n");
  EXPECT_NE(e.find("nas_config_test_tmp.yaml:2:1"), std::string::npos) << e;
  EXPECT_NE(e.find("did you mean 'trials'"), std::string::npos) << e;

  e = error_of(space_line() + "strategy: evolutoin\n");
  EXPECT_NE(e.find(":2:11"), std::string::npos) << e;
  EXPECT_NE(e.find("did you mean 'evolution'"), std::string::npos) << e;

  e = error_of(space_line() + "train:\n  epochs: many\n");
  EXPECT_NE(e.find(":3:11"), std::string::npos) << e;
  EXPECT_NE(e.find("epochs"), std::string::npos) << e;

  e = error_of(space_line() + "train:\n  model: {file: x.onnx}\n");
  EXPECT_NE(e.find("'train.model' is set by the search"), std::string::npos) << e;

  e = error_of(space_line() + "hyperparameters:\n  lr: {low: 0.5, high: 0.1}\n");
  EXPECT_NE(e.find(":3:7"), std::string::npos) << e;
  EXPECT_NE(e.find("hyperparameters.lr"), std::string::npos) << e;

  e = error_of(space_line() + "hyperparameters:\n  momentum: {low: 0.5, high: 0.9}\n");
  EXPECT_NE(e.find("unknown key 'hyperparameters.momentum'"), std::string::npos) << e;

  e = error_of(space_line() + "baselines:\n  - {name: b, arch: \"r32-w0.5|k3e1.relu|k3e1.relu|k3e1.relu\"}\n");
  EXPECT_NE(e.find("not in the search space"), std::string::npos) << e;

  e = error_of(space_line() + "constraints: {latency_ms: -1}\n");
  EXPECT_NE(e.find("must be > 0"), std::string::npos) << e;

  e = error_of(space_line() + "objectives: [latency_ms]\n");
  EXPECT_NE(e.find("'objectives'"), std::string::npos) << e;

  e = error_of(space_line() + "strategy: {type: tpe, population_size: 3}\n");
  EXPECT_NE(e.find("unknown key 'strategy.population_size'"), std::string::npos) << e;

  e = error_of("trials: 3\n");
  EXPECT_NE(e.find("'space' is required"), std::string::npos) << e;

  e = error_of(space_line() + "latency: {method: predicted}\n");
  EXPECT_NE(e.find("latency.predictor"), std::string::npos) << e;

  e = error_of(space_line() + "latency: {confirm_rounds: -2}\n");
  EXPECT_NE(e.find(":2:27: 'latency.confirm_rounds' must be >= 0"), std::string::npos) << e;
}

TEST(NasConfig, SearchSpaceHasOneParameterPerDecision) {
  const NasConfig c = load_text(space_line() + "hyperparameters:\n  lr: {low: 0.01, high: 0.1, log: true}\n"
                                               "  batch_size: {choices: [64, 128]}\n");
  const SearchSpace s = make_search_space(c);
  // tiny space: resolution (2), width (2), 3 stages x (depth + 2 blocks x 4 decisions), 2 hp
  EXPECT_EQ(s.size(), 2u + 3u * (1u + 2u * 4u) + 2u);
  EXPECT_NO_THROW(s.index_of("s1.b1.activation"));
  EXPECT_NO_THROW(s.index_of("hp.lr"));
  EXPECT_THROW(s.index_of("s0.b2.kernel"), Error);

  std::mt19937_64 rng(7);
  for (int i = 0; i < 50; ++i) {
    const TrialParams p = s.sample(rng);
    const arch::Arch a = arch_from_params(c.space, p);
    std::string why;
    ASSERT_TRUE(arch::arch_in_space(c.space, a, &why)) << why;
    EXPECT_EQ(arch_from_params(c.space, params_from_arch(c.space, a)), a);
    const train::TrainConfig r = recipe_for(c, p);
    EXPECT_EQ(r.schedule.base_lr, std::get<double>(p.at("hp.lr")));
    EXPECT_EQ(r.batch_size, std::get<int64_t>(p.at("hp.batch_size")));
  }
}

// A space whose stem stride is a decision gets a `stem_stride` parameter; the default stride
// maps back to the implicit (0) form so encodings stay canonical.
TEST(NasConfig, StemStrideDecisionIsAParameter) {
  NasConfig c = load_text(space_line());
  const size_t fixed = make_search_space(c).size();
  c.space.stem_strides = {c.space.stem_stride, 3 - c.space.stem_stride};
  const SearchSpace s = make_search_space(c);
  EXPECT_EQ(s.size(), fixed + 1);
  ASSERT_NO_THROW(s.index_of("stem_stride"));
  std::mt19937_64 rng(11);
  std::set<int64_t> seen;
  for (int i = 0; i < 40; ++i) {
    const TrialParams p = s.sample(rng);
    const arch::Arch a = arch_from_params(c.space, p);
    EXPECT_EQ(arch::stem_stride(c.space, a), std::get<int64_t>(p.at("stem_stride")));
    EXPECT_EQ(a.stem_stride, arch::canonical_stem_stride(c.space, arch::stem_stride(c.space, a)));
    EXPECT_EQ(arch_from_params(c.space, params_from_arch(c.space, a)), a);
    seen.insert(arch::stem_stride(c.space, a));
  }
  EXPECT_EQ(seen.size(), 2u);
}

// The space's canonical form: choices of blocks past a stage's depth are reset (they build
// nothing), the hyper-parameters kept, so two parameter sets of one architecture share a key.
TEST(NasConfig, CanonicalFormIsTheArchitecturesRoundTrip) {
  const NasConfig c = load_text(space_line() + "hyperparameters:\n  lr: {low: 0.01, high: 0.1, log: true}\n");
  const SearchSpace s = make_search_space(c);
  std::mt19937_64 rng(5);
  int inactive_changes = 0;
  for (int i = 0; i < 60; ++i) {
    TrialParams p = s.sample(rng);
    const TrialParams canon = s.canonical(p);
    EXPECT_TRUE(s.contains(canon));
    EXPECT_EQ(arch_from_params(c.space, canon), arch_from_params(c.space, p));
    EXPECT_EQ(canon.at("hp.lr"), p.at("hp.lr"));
    // Change stage 0's second block: a new key only when the stage is 2 deep.
    TrialParams q = p;
    const auto& kernels = c.space.stages[0].kernels;
    const int64_t k = std::get<int64_t>(p.at("s0.b1.kernel"));
    q["s0.b1.kernel"] = k == kernels.front() ? kernels.back() : kernels.front();
    const bool deep = std::get<int64_t>(p.at("s0.depth")) >= 2;
    EXPECT_EQ(s.canonical_key(q) == s.canonical_key(p), !deep);
    inactive_changes += !deep;
  }
  EXPECT_GT(inactive_changes, 0);
}

TEST(NasConfig, InactiveBlocksAreIgnored) {
  const NasConfig c = load_text(space_line());
  std::mt19937_64 rng(3);
  TrialParams p = make_search_space(c).sample(rng);
  p["s0.depth"] = int64_t{1};
  const arch::Arch a = arch_from_params(c.space, p);
  p["s0.b1.kernel"] = std::get<int64_t>(p["s0.b1.kernel"]) == 3 ? int64_t{5} : int64_t{3};
  EXPECT_EQ(arch_from_params(c.space, p), a);
  EXPECT_EQ(a.stages[0].size(), 1u);
}

TEST(NasConfig, OutcomeHasConstraintsAsExcess) {
  NasConfig c = load_text(space_line() + "constraints: {latency_ms: 2.0, params: 1000, size_bytes: 5000}\n");
  CandidateResult r;
  r.top1 = 0.9;
  r.latency_ms = 1.5;
  r.params = 1500;
  r.size_bytes = 4000;
  const TrialOutcome o = candidate_outcome(c, r);
  EXPECT_EQ(o.values, (std::vector<double>{0.9, 1.5}));
  EXPECT_EQ(o.constraints, (std::vector<double>{-0.5, 500, -1000}));
  c.objectives = {"top1"};
  EXPECT_EQ(candidate_outcome(c, r).values, (std::vector<double>{0.9}));
}

TEST(NasConfig, ReadsTheTrainersEpochLine) {
  int epoch = 0;
  double acc = 0;
  ASSERT_TRUE(parse_epoch_line("epoch 3/10: train loss 0.4, train acc 88.00%, test acc 91.23%, test loss 0.3, 2.0 s, "
                               "100 img/s", &epoch, &acc));
  EXPECT_EQ(epoch, 3);
  EXPECT_DOUBLE_EQ(acc, 0.9123);
  EXPECT_FALSE(parse_epoch_line("epoch 1/10 step 50/468  loss 0.5  acc 80.00%", &epoch, &acc));
}

// train_and_measure trains, exports and measures a candidate, and stops it (TrialPruned) when
// the epoch callback asks; the pruner's step is the epoch.
TEST(BlackboxSearch, TrainAndMeasureReportsEpochsAndPrunes) {
  const NasConfig c = load_text(space_line() + "train: {epochs: 2, threads: 1, log_every: 0, "
                                               "data: {train_limit: 128, test_limit: 64, batch_size: 32}}\n");
  std::mt19937_64 rng(1);
  const arch::Arch a = arch::sample_arch(c.space, rng);
  const fs::path dir = own_temp_dir() / "candidate";
  fs::remove_all(dir);
  const LatencyFn latency = [](const std::string& path) { return static_cast<double>(fs::file_size(path)) / 1e6; };

  std::vector<int> epochs;
  const CandidateResult r = train_and_measure(arch::build_arch_model(c.space, a, 0, 0), c.recipe, dir.string(), latency,
                                              nullptr, [&](int e, double acc) {
                                                EXPECT_GE(acc, 0.0);
                                                EXPECT_LE(acc, 1.0);
                                                epochs.push_back(e);
                                                return false;
                                              });
  EXPECT_EQ(epochs, (std::vector<int>{1, 2}));
  EXPECT_TRUE(fs::exists(r.xnn_path));
  EXPECT_TRUE(fs::exists(r.onnx_path));
  EXPECT_EQ(r.size_bytes, static_cast<int64_t>(fs::file_size(r.xnn_path)));
  EXPECT_DOUBLE_EQ(r.latency_ms, static_cast<double>(r.size_bytes) / 1e6);
  EXPECT_GT(r.params, 0);

  epochs.clear();
  fs::remove_all(dir);
  EXPECT_THROW(train_and_measure(arch::build_arch_model(c.space, a, 0, 0), c.recipe, dir.string(), latency, nullptr,
                                 [&](int e, double) {
                                   epochs.push_back(e);
                                   return true;
                                 }),
               TrialPruned);
  EXPECT_EQ(epochs, (std::vector<int>{1}));
  fs::remove_all(dir);
}

// latency: {method: predicted} reads a predictor file (xnn-lab calibrate's format) and predicts
// from the model's features; here a predictor fitted on tiny-space models whose "measured" time
// is proportional to their work, so a bigger model predicts slower.
TEST(BlackboxSearch, PredictedLatencyUsesThePredictorFile) {
  const NasConfig space_only = load_text(space_line());
  const fs::path dir = own_temp_dir() / "predictor";
  fs::remove_all(dir);
  const std::vector<arch::GeneratedArch> models = arch::generate_arch_models(space_only.space, 12, 5, dir.string());
  std::vector<predict::CalibrationModel> calibration;
  for (const arch::GeneratedArch& g : models) {
    predict::CalibrationModel m;
    m.name = g.path;
    for (const predict::OpFeatures& f : predict::featurize_model_file(g.path, 1)) {
      m.ops.push_back(predict::OpSample{f, 1e-6 * f.work + 1e-4});
      m.measured_ms += 1e-6 * f.work + 1e-4;
    }
    calibration.push_back(std::move(m));
  }
  const std::string predictor_path = (dir / "predictor.json").string();
  predict::LatencyPredictor::fit(calibration, predict::PredictorFitOptions{}).save(predictor_path);

  const NasConfig c = load_text(space_line() + "latency: {method: predicted, predictor: " + predictor_path + "}\n");
  EXPECT_EQ(c.latency.method, "predicted");
  const LatencyFn latency = make_latency_fn(c.latency, nullptr);
  const auto smallest = std::min_element(models.begin(), models.end(), [](auto& a, auto& b) { return a.macs < b.macs; });
  const auto largest = std::max_element(models.begin(), models.end(), [](auto& a, auto& b) { return a.macs < b.macs; });
  const double small_ms = latency(smallest->path), large_ms = latency(largest->path);
  EXPECT_GT(small_ms, 0);
  EXPECT_LT(small_ms, large_ms);
  const auto direct = predict::LatencyPredictor::load(predictor_path);
  EXPECT_DOUBLE_EQ(small_ms, direct.predict_latency_ms(predict::featurize_model_file(smallest->path, 1)));
  fs::remove_all(dir);
}
