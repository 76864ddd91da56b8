#include "harness/predict/profile_refit.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>

#include "harness/predict/calibration.h"
#include "harness/sim/device_profile.h"
#include "fake_target.h"

namespace xnn::predict {
namespace {

namespace fs = std::filesystem;

TEST(ProfileRefit, MeasuredOpsTakeCostFromShapes) {
  MeasuredModel m;
  m.encoding = "e";
  m.ops = {OpProfileRow{0, "dw", "FusedConv", "f32_dwconv3x3s1__avx2", "[1,8,10,10];[8,1,3,3]->[1,8,10,10]", 0, 0, 0.01},
           OpProfileRow{1, "add", "Add", "f32_vadd__avx2", "[1,8,10,10];[1,8,10,10]->[1,8,10,10]", 0, 0, 0.002},
           OpProfileRow{2, "zero", "Relu", "f32_relu__avx2", "[4]->[4]", 0, 0, 0.0}};  // no time: left out
  const std::vector<sim::MeasuredOp> ops = measured_ops({m});
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[0].op_type, "FusedConv");
  EXPECT_EQ(ops[0].kernel, "f32_dwconv3x3s1__avx2");
  EXPECT_DOUBLE_EQ(ops[0].macs, 8.0 * 10 * 10 * 9);
  EXPECT_DOUBLE_EQ(ops[0].bytes, 4.0 * (800 + 72 + 800));
  EXPECT_DOUBLE_EQ(ops[1].macs, 800);  // one op per output element
  EXPECT_DOUBLE_EQ(ops[1].time_ms, 0.002);
  m.ops[0].shapes = "[1,8";
  EXPECT_THROW(measured_ops({m}), Error);
}

TEST(ProfileRefit, WritesALoadableRefittedProfile) {
  const fs::path dir = fs::temp_directory_path() / ("xnn_refit_test_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  Store store((dir / "x.db").string());
  testing::FakeTarget target(TargetSettings{"cpu-t1", "cpu", 1, {}});
  ArchSetOptions o;
  o.space_path = XNN_SOURCE_DIR "/configs/arch/mobilenet_space_tiny.yaml";
  o.models = 4;
  o.passes = 1;
  calibrate(store, target, o, PredictorFitOptions{}, (dir / "p.json").string());
  const auto measured = load_measured_set(store, calibration_experiment("cpu-t1"), "cpu-t1");
  const std::string out = (dir / "devices" / "host-refit.yaml").string();
  const sim::FitResult fit = refit_device_profile(measured, "x86_xeon_host", 1, out);
  EXPECT_GT(fit.ops_used, 20);
  EXPECT_LE(fit.rms_log_error_after, fit.rms_log_error_before);
  const sim::DeviceProfile reloaded = sim::load_device_profile(out);
  EXPECT_EQ(reloaded.name, "host-refit");
  EXPECT_EQ(reloaded.kind, "cpu");
  EXPECT_THROW(refit_device_profile(measured, "no_such_device", 1, out), Error);
  EXPECT_THROW(refit_device_profile({}, "x86_xeon_host", 1, out), Error);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace xnn::predict
