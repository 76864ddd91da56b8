#include "harness/predict/calibration.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>

#include "fake_target.h"

namespace xnn::predict {
namespace {

namespace fs = std::filesystem;

class CalibrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("xnn_calibration_test_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  ArchSetOptions options(int models) const {
    ArchSetOptions o;
    o.space_path = XNN_SOURCE_DIR "/configs/arch/mobilenet_space_tiny.yaml";
    o.models = models;
    o.seed = 5;
    o.passes = 1;
    return o;
  }
  fs::path dir_;
};

TEST_F(CalibrationTest, NamesAndPaths) {
  EXPECT_EQ(target_key("cpu", 4), "cpu-t4");
  EXPECT_EQ(calibration_experiment("cpu-t1"), "calibration:cpu-t1");
  EXPECT_EQ(holdout_experiment("cpu-t1"), "holdout:cpu-t1");
  EXPECT_EQ(default_predictor_path((dir_ / "x.db").string(), "cpu-t1"), (dir_ / "predictors" / "cpu-t1.json").string());
  EXPECT_NE(holdout_seed(1), 1u);
}

TEST_F(CalibrationTest, MeasuresOnlyWhatTheStoreLacksAndFitsFromTheStore) {
  Store store((dir_ / "x.db").string());
  testing::FakeTarget target(TargetSettings{"cpu-t1", "cpu", 1, {}});
  const CalibrationOutcome first = calibrate(store, target, options(6), PredictorFitOptions{}, "");
  EXPECT_EQ(first.measured_now, 6);
  EXPECT_EQ(first.reused, 0);
  EXPECT_EQ(first.models_in_store, 6);
  EXPECT_EQ(target.measured, 6);
  EXPECT_EQ(first.predictor_path, (dir_ / "predictors" / "cpu-t1.json").string());
  ASSERT_TRUE(fs::exists(first.predictor_path));

  // A larger set from the same seed starts with the same models: only the new ones are measured.
  const CalibrationOutcome second = calibrate(store, target, options(9), PredictorFitOptions{}, "");
  EXPECT_EQ(second.reused, 6);
  EXPECT_EQ(second.measured_now, 3);
  EXPECT_EQ(second.models_in_store, 9);
  EXPECT_EQ(target.measured, 9);

  // Recorded like runner jobs: two runs of the experiment, jobs DONE with profiles and artifacts.
  const auto runs = store.list_runs(calibration_experiment("cpu-t1"));
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].status, run_status::kFinished);
  const auto jobs = store.jobs_of_run(runs[0].id);
  ASSERT_EQ(jobs.size(), 9u);
  int reused = 0;
  for (const RunJob& j : jobs) reused += j.reused ? 1 : 0;
  EXPECT_EQ(reused, 6);
  const std::vector<MeasuredModel> stored = load_measured_set(store, calibration_experiment("cpu-t1"), "cpu-t1");
  ASSERT_EQ(stored.size(), 9u);
  for (const MeasuredModel& m : stored) {
    EXPECT_GT(m.median_ms, 0);
    EXPECT_FALSE(m.ops.empty());
    EXPECT_TRUE(fs::exists(m.model_path)) << m.model_path;
  }

  // The fitted predictor matches the fake target's deterministic latencies on held-out models.
  const LatencyPredictor p = LatencyPredictor::load(second.predictor_path);
  EXPECT_EQ(p.info().target_name, "cpu-t1");
  const HoldoutOutcome h = evaluate_holdout(store, target, p, options(4));
  EXPECT_EQ(h.measured_now, 4);
  ASSERT_EQ(h.models.size(), 4u);
  for (const HoldoutModel& m : h.models) {
    EXPECT_GT(m.predicted_ms, 0);
    EXPECT_GT(m.measured_ms, 0);
  }
  EXPECT_EQ(h.metrics.count, 4);
  EXPECT_EQ(store.list_runs(holdout_experiment("cpu-t1")).size(), 1u);
  // Held-out architectures are never calibration ones.
  for (const HoldoutModel& m : h.models) {
    for (const MeasuredModel& c : stored) EXPECT_NE(m.encoding, c.encoding);
  }
}

TEST_F(CalibrationTest, PassesKeepTheQuietestMeasurement) {
  Store store((dir_ / "x.db").string());
  testing::FakeTarget quiet(TargetSettings{"cpu-t1", "cpu", 1, {}});
  testing::FakeTarget noisy(TargetSettings{"cpu-t1", "cpu", 1, {}});
  noisy.slowdowns = {1.5, 1.0, 1.2};  // the second of three attempts is the quiet one
  const auto space = arch::load_search_space(XNN_SOURCE_DIR "/configs/arch/mobilenet_space_tiny.yaml");
  const auto set = arch::generate_arch_models(space, 3, 11, (dir_ / "set").string());
  MeasureSetOptions o;
  o.experiment = "calibration:cpu-t1";
  o.variant = "tiny";
  o.passes = 1;
  const auto reference = measure_arch_set(store, quiet, set, (dir_ / "models").string(), o);
  o.experiment = "holdout:cpu-t1";  // another experiment: measured again
  o.passes = 3;
  const auto best = measure_arch_set(store, noisy, set, (dir_ / "models").string(), o);
  EXPECT_EQ(noisy.measured, 9);
  ASSERT_EQ(best.size(), 3u);
  for (size_t i = 0; i < best.size(); ++i) {
    EXPECT_DOUBLE_EQ(best[i].median_ms, reference[i].median_ms);
    EXPECT_EQ(best[i].encoding, set[i].arch.to_string());
  }
  o.passes = 0;
  EXPECT_THROW(measure_arch_set(store, noisy, set, (dir_ / "models").string(), o), Error);
}

TEST_F(CalibrationTest, ChangedModelFilesAreSkippedWhenFitting) {
  Store store((dir_ / "x.db").string());
  testing::FakeTarget target(TargetSettings{"cpu-t1", "cpu", 1, {}});
  calibrate(store, target, options(3), PredictorFitOptions{}, (dir_ / "p.json").string());
  std::vector<MeasuredModel> stored = load_measured_set(store, calibration_experiment("cpu-t1"), "cpu-t1");
  ASSERT_EQ(stored.size(), 3u);
  fs::remove(stored[0].model_path);
  std::vector<std::string> log;
  const auto models = calibration_models(stored, [&](const std::string& l) { log.push_back(l); });
  EXPECT_EQ(models.size(), 2u);
  ASSERT_EQ(log.size(), 1u);
  EXPECT_NE(log[0].find("is gone"), std::string::npos) << log[0];
}

}  // namespace
}  // namespace xnn::predict
