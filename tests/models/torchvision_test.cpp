// torchvision architectures exported by PyTorch (scripts/export_torchvision.py: seeded random
// weights, BatchNorm statistics calibrated, opset 13) must convert and run with outputs equal to
// PyTorch's within 1e-4 relative to the output's largest magnitude — through ONNX import and
// through the .xnn round trip.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "engine/format/xnn_format.h"
#include "engine/onnx/onnx_import.h"
#include "engine/runtime/npy.h"
#include "engine/runtime/session.h"

namespace xnn {
namespace {

std::string fixture_dir() {
  const char* d = std::getenv("XNN_TORCHVISION_FIXTURES");
  return d ? d : "";
}

double relative_error(const Tensor& got, const Tensor& want) {
  double max_abs = 0, max_diff = 0;
  const float* g = got.data<float>();
  const float* w = want.data<float>();
  for (int64_t i = 0; i < want.numel(); ++i) {
    max_abs = std::max(max_abs, std::fabs(static_cast<double>(w[i])));
    max_diff = std::max(max_diff, std::fabs(static_cast<double>(g[i]) - w[i]));
  }
  return max_diff / std::max(max_abs, 1e-30);
}

class TorchvisionModel : public ::testing::TestWithParam<const char*> {};

TEST_P(TorchvisionModel, MatchesPyTorchThroughOnnxAndXnn) {
  const std::string dir = fixture_dir();
  ASSERT_FALSE(dir.empty()) << "XNN_TORCHVISION_FIXTURES is not set (ctest sets it; the fixture step runs "
                               "scripts/export_torchvision.py)";
  const std::string name = GetParam();
  const std::string onnx_path = dir + "/" + name + ".onnx";
  ASSERT_TRUE(std::filesystem::exists(onnx_path)) << onnx_path << " missing: the fixture export failed";
  const Tensor input = read_npy(dir + "/" + name + ".input.npy");
  const Tensor expected = read_npy(dir + "/" + name + ".output.npy");

  auto from_onnx = std::make_shared<Model>(import_onnx_file(onnx_path));
  Session onnx_session(from_onnx);
  const std::string in_name = onnx_session.inputs().at(0).name;
  std::vector<Tensor> out = onnx_session.run({{in_name, input}});
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].shape(), expected.shape());
  const double onnx_err = relative_error(out[0], expected);
  EXPECT_LE(onnx_err, 1e-4) << name << " via ONNX";

  const std::string xnn_path = (std::filesystem::temp_directory_path() / (name + "_test_" + std::to_string(::getpid()) + ".xnn")).string();
  save_xnn(*from_onnx, xnn_path);
  Session xnn_session(std::make_shared<Model>(load_xnn(xnn_path)));
  std::vector<Tensor> out2 = xnn_session.run({{in_name, input}});
  const double xnn_err = relative_error(out2[0], expected);
  EXPECT_LE(xnn_err, 1e-4) << name << " via .xnn";
  std::filesystem::remove(xnn_path);
  RecordProperty("relative_error", std::to_string(onnx_err));
  std::printf("%s: relative error %.3g (onnx), %.3g (xnn)\n", name.c_str(), onnx_err, xnn_err);
}

// The fast path (level-2 passes, CPU kernels, 2 threads, static memory plan) against PyTorch and
// against the reference runtime, and the planned arena against the liveness lower bound.
TEST_P(TorchvisionModel, OptimisedKernelsMatchAndArenaIsTight) {
  const std::string dir = fixture_dir();
  ASSERT_FALSE(dir.empty()) << "XNN_TORCHVISION_FIXTURES is not set";
  const std::string name = GetParam();
  const std::string onnx_path = dir + "/" + name + ".onnx";
  ASSERT_TRUE(std::filesystem::exists(onnx_path)) << onnx_path << " missing: the fixture export failed";
  const Tensor input = read_npy(dir + "/" + name + ".input.npy");
  const Tensor expected = read_npy(dir + "/" + name + ".output.npy");
  auto model = std::make_shared<Model>(import_onnx_file(onnx_path));

  SessionOptions reference;
  reference.opt_level = 0;
  reference.cpu_kernels = false;
  reference.memory_planning = false;
  Session ref(model, reference);
  const std::string in_name = ref.inputs().at(0).name;
  const Tensor want = ref.run({{in_name, input}})[0];

  SessionOptions fast;
  fast.threads = 2;
  Session s(model, fast);
  const Tensor got = s.run({{in_name, input}})[0];
  const double err_ref = relative_error(got, want), err_torch = relative_error(got, expected);
  EXPECT_LE(err_ref, 1e-4) << name << ": optimised vs reference kernels";
  EXPECT_LE(err_torch, 1e-4) << name << ": optimised vs PyTorch";
  const MemoryStats m = s.memory_stats();
  ASSERT_TRUE(m.planned) << name;
  const double ratio = static_cast<double>(m.arena_bytes) / static_cast<double>(m.lower_bound_bytes);
  EXPECT_LE(ratio, 1.1) << name << ": arena " << m.arena_bytes << " vs liveness bound " << m.lower_bound_bytes;
  std::printf("%s: optimised error %.3g (vs reference), %.3g (vs PyTorch); arena %.2f MiB, bound %.2f MiB (%.3fx)\n",
              name.c_str(), err_ref, err_torch, m.arena_bytes / 1048576.0, m.lower_bound_bytes / 1048576.0, ratio);
}

INSTANTIATE_TEST_SUITE_P(Torchvision, TorchvisionModel,
                         ::testing::Values("mobilenet_v2", "mobilenet_v3_small", "resnet18", "shufflenet_v2_x1_0",
                                           "squeezenet1_1", "efficientnet_b0", "regnet_x_400mf", "googlenet"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace xnn
