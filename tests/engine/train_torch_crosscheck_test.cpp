// Cross-check of the trainer against PyTorch: scripts/torch_grad_reference.py builds a small
// fixed network (conv/depthwise/grouped conv, training-mode BatchNorm, ReLU/ReLU6/LeakyReLU/
// HardSwish/SiLU, max/average/global pooling, residual Add, Concat, Linear), exports it with its
// initial weights and writes the loss and every parameter gradient of one training step on a
// seeded batch. Our TrainingSession, starting from the same ONNX file and batch, must give the
// same loss and gradients within 1e-4 relative (per tensor: max |ours − torch| ≤ 1e-4·max |torch|,
// plus 1e-7 absolute for gradients that are zero up to rounding).
// Skipped, saying so, where Debian's PyTorch is not installed.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "engine/onnx/onnx_import.h"
#include "engine/runtime/npy.h"
#include "engine/train/training_session.h"

namespace xnn::train {
namespace {

namespace fs = std::filesystem;

fs::path reference_dir() {
  static const fs::path dir = [] {
    const fs::path d = fs::temp_directory_path() / ("xnn_torch_grad_ref_" + std::to_string(::getpid()));
    const fs::path script = fs::path(XNN_SOURCE_DIR) / "scripts" / "torch_grad_reference.py";
    const std::string cmd = "/usr/bin/python3 " + script.string() + " " + d.string() + " > " + (d.string() + ".log") + " 2>&1";
    const int rc = std::system(cmd.c_str());
    if (rc != 0) return fs::path();  // the test reads the log to say why
    return d;
  }();
  return dir;
}

TEST(TrainTorchCrossCheck, LossAndGradientsMatchPyTorch) {
  if (!fs::exists("/usr/bin/python3")) GTEST_SKIP() << "SKIPPED: /usr/bin/python3 (Debian's PyTorch) is absent";
  const fs::path dir = reference_dir();
  if (dir.empty()) {
    const fs::path log = fs::temp_directory_path() / ("xnn_torch_grad_ref_" + std::to_string(::getpid()) + ".log");
    std::ifstream in(log);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (text.find("SKIP") != std::string::npos) GTEST_SKIP() << "SKIPPED: PyTorch is not installed: " << text;
    FAIL() << "scripts/torch_grad_reference.py failed:\n" << text;
  }
  auto model = std::make_shared<Model>(import_onnx_file((dir / "model.onnx").string()));
  TrainingSession session(model, TrainingOptions{2, 0, 0.0f});
  const Tensor x = read_npy((dir / "x.npy").string());
  const Tensor labels = read_npy((dir / "labels.npy").string());
  const float torch_loss = read_npy((dir / "loss.npy").string()).data<float>()[0];
  const StepResult r = session.train_step(x, labels);
  EXPECT_NEAR(r.loss, torch_loss, 1e-4 * std::fabs(torch_loss));

  std::ifstream names(dir / "grads.txt");
  std::string name;
  int checked = 0;
  while (std::getline(names, name)) {
    if (name.empty()) continue;
    const Tensor expected = read_npy((dir / ("grad_" + name + ".npy")).string());
    const Parameter* p = nullptr;
    for (const Parameter& q : session.parameters())
      if (q.name == name) p = &q;
    ASSERT_NE(p, nullptr) << "no trainable parameter '" << name << "'";
    ASSERT_EQ(p->grad.shape(), expected.shape()) << name;
    double max_ref = 0, max_diff = 0;
    for (int64_t i = 0; i < expected.numel(); ++i) {
      max_ref = std::max(max_ref, std::fabs(static_cast<double>(expected.data<float>()[i])));
      max_diff = std::max(max_diff, std::fabs(static_cast<double>(expected.data<float>()[i]) - p->grad.data<float>()[i]));
    }
    // Plus an absolute 1e-7: a conv bias that feeds a BatchNorm has an exactly zero gradient,
    // which both sides compute as float rounding noise (~1e-9).
    EXPECT_LE(max_diff, 1e-4 * max_ref + 1e-7) << name << ": max |diff| " << max_diff << ", max |torch| " << max_ref;
    ++checked;
  }
  EXPECT_EQ(checked, 17);
  // Every trainable parameter of ours is one PyTorch has (no BatchNorm statistics, no constants).
  EXPECT_EQ(static_cast<int>(session.parameters().size()), checked);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace xnn::train
