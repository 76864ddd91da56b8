// The sim:<profile> target: creation errors, description, simulated latency and per-op rows,
// threads on CPU profiles, and numerics (fp16 emulation on the GPU, int8 NPU behaviour).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "harness/sim/sim_target.h"
#include "sim_test_util.h"

#ifndef XNN_SOURCE_DIR
#define XNN_SOURCE_DIR "."
#endif

namespace xnn::sim {
namespace {

using testing::contains;
using testing::error_of;
using testing::TempDir;

const std::string kModel = std::string(XNN_SOURCE_DIR) + "/configs/models/fmnist_cnn.onnx";

TargetSettings sim_settings(const std::string& profile, int threads = 1) {
  TargetSettings s;
  s.name = profile;
  s.kind = "sim:" + profile;
  s.threads = threads;
  return s;
}

TEST(SimTarget, CreationErrorsNameTheProblem) {
  std::string msg = error_of([] { make_sim_target(sim_settings("adreno_66_gpu")); });
  EXPECT_TRUE(contains(msg, "unknown device profile 'adreno_66_gpu' (did you mean 'adreno_660_gpu'?)")) << msg;
  EXPECT_TRUE(contains(msg, "known profiles: ") && contains(msg, "hexagon_780_npu")) << msg;
  TargetSettings pinned = sim_settings("cortex_a78_big");
  pinned.affinity = {0};
  msg = error_of([&] { make_sim_target(pinned); });
  EXPECT_TRUE(contains(msg, "affinity pins real CPUs")) << msg;
  EXPECT_TRUE(contains(error_of([] { make_sim_target(sim_settings("cortex_a78_big", 0)); }), "threads must be >= 1"));
}

TEST(SimTarget, RegistryServesSimKindsByPrefix) {
  TargetRegistry reg;
  reg.add("sim:", "simulated", make_sim_target);
  EXPECT_TRUE(reg.knows("sim:adreno_660_gpu"));
  auto t = reg.create(sim_settings("adreno_660_gpu"));
  EXPECT_TRUE(t->simulated());
  const std::string d = t->describe_json();
  EXPECT_TRUE(contains(d, "\"kind\":\"sim:adreno_660_gpu\"")) << d;
  EXPECT_TRUE(contains(d, "\"simulated\":true")) << d;
  EXPECT_TRUE(contains(d, "\"numerics\":\"fp16\"")) << d;
  EXPECT_TRUE(contains(d, "\"peak_fp16_gflops\":3441")) << d;
  EXPECT_TRUE(contains(d, "\"host\":{\"name\":\"cortex_a78_big\"")) << d;
}

TEST(SimTarget, LatencyIsOneDeterministicSampleWithPerOpRows) {
  auto t = make_sim_target(sim_settings("adreno_660_gpu"));
  const LatencyMeasurement m = t->measure_latency(kModel, LatencySpec{5, 50, 0.5, 1000}, true);
  ASSERT_EQ(m.run.samples_ms.size(), 1u);
  EXPECT_GT(m.run.samples_ms[0], 0);
  EXPECT_EQ(m.run.first_run_ms, m.run.samples_ms[0]);
  EXPECT_EQ(m.init_ms, 0);
  EXPECT_GT(m.activation_bytes, 0);
  EXPECT_GT(m.peak_rss_bytes, m.activation_bytes);
  double sum = 0;
  bool on_gpu = false;
  for (const OpTiming& o : m.ops) {
    sum += o.time_ms;
    on_gpu = on_gpu || o.kernel == "sim:adreno_660_gpu";
    EXPECT_FALSE(o.shapes.empty());
  }
  EXPECT_TRUE(on_gpu);
  EXPECT_NEAR(sum, m.run.samples_ms[0], 1e-9);
  // Deterministic: the same again.
  EXPECT_EQ(t->measure_latency(kModel, LatencySpec{}, false).run.samples_ms[0], m.run.samples_ms[0]);
}

TEST(SimTarget, FallbackOpsAreMarkedWithTheHost) {
  auto t = make_sim_target(sim_settings("hexagon_780_npu"));
  const LatencyMeasurement m = t->measure_latency(kModel, LatencySpec{}, true);
  int fallback = 0;
  for (const OpTiming& o : m.ops) fallback += o.kernel.rfind("fallback:cortex_a78_big", 0) == 0;
  EXPECT_GT(fallback, 0);
}

TEST(SimTarget, ThreadsChooseCoresOfCpuProfiles) {
  const double one = make_sim_target(sim_settings("cortex_a78_big", 1))->measure_latency(kModel, {}, false).run.samples_ms[0];
  const double three = make_sim_target(sim_settings("cortex_a78_big", 3))->measure_latency(kModel, {}, false).run.samples_ms[0];
  EXPECT_GT(one, three);
}

std::vector<float> run_once(Session& s) {
  const auto inputs = random_inputs(s, 3);
  const std::vector<Tensor> out = s.run(inputs);
  const float* p = out.at(0).data<float>();
  return std::vector<float>(p, p + out.at(0).numel());
}

TEST(SimTarget, GpuSessionComputesInFp16) {
  auto gpu = make_sim_target(sim_settings("adreno_660_gpu"))->open_session(kModel);
  EXPECT_EQ(gpu->options().float_emulation, FloatEmulation::kF16);
  TargetSettings cpu_settings;
  cpu_settings.name = cpu_settings.kind = "cpu";
  auto cpu = make_cpu_target(cpu_settings)->open_session(kModel);
  const std::vector<float> a = run_once(*gpu), b = run_once(*cpu);
  ASSERT_EQ(a.size(), b.size());
  double max_diff = 0, max_abs = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    max_diff = std::max(max_diff, static_cast<double>(std::abs(a[i] - b[i])));
    max_abs = std::max(max_abs, static_cast<double>(std::abs(b[i])));
  }
  // fp16 rounding: a visible difference, of fp16's size (2^-11 relative per rounding, a few layers deep).
  EXPECT_GT(max_diff, 0.0);
  EXPECT_LT(max_diff, 2e-2 * max_abs) << "max |fp16 - fp32| " << max_diff << " vs max |fp32| " << max_abs;
}

TEST(SimTarget, Int8NpuWithFloatModelFallsBackToFp32OrRefusesAsConfigured) {
  auto fallback = make_sim_target(sim_settings("hexagon_780_npu"))->open_session(kModel);
  EXPECT_EQ(fallback->options().float_emulation, FloatEmulation::kNone);

  // A copy of the profile with on_unsupported: error, found through XNN_DEVICES_DIR.
  TempDir dir;
  std::ifstream in(std::string(XNN_SOURCE_DIR) + "/configs/devices/hexagon_780_npu.yaml");
  std::stringstream text;
  text << in.rdbuf();
  std::string yaml = text.str();
  yaml.replace(yaml.find("\non_unsupported: fallback"), 25, "\non_unsupported: error");
  dir.file("hexagon_780_npu.yaml", yaml);
  ::setenv("XNN_DEVICES_DIR", dir.path().c_str(), 1);
  std::string msg;
  try {
    auto t = make_sim_target(sim_settings("hexagon_780_npu"));
    msg = error_of([&] { t->open_session(kModel); });
  } catch (...) {
    ::unsetenv("XNN_DEVICES_DIR");
    throw;
  }
  ::unsetenv("XNN_DEVICES_DIR");
  EXPECT_TRUE(contains(msg, "model cannot run on hexagon_780_npu (on_unsupported: error)")) << msg;
  EXPECT_TRUE(contains(msg, "(Conv): dtype fp32 unsupported: int8 only")) << msg;
}

}  // namespace
}  // namespace xnn::sim
