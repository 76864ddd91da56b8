// BatchNorm re-calibration: after one batch the running statistics are that batch's (checked
// against the stem convolution computed by hand), after several they are the average of the
// per-batch ones; the momentum attribute is left as it was; top-1 counts argmax hits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "engine/runtime/session.h"
#include "harness/arch/mobilenet_space.h"
#include "nas/oneshot/subnet_scoring.h"

using namespace xnn;
using namespace xnn::nas;

namespace {

arch::SearchSpace tiny_space() {
  return arch::load_search_space(std::string(XNN_SOURCE_DIR) + "/configs/arch/mobilenet_space_tiny.yaml");
}

data::Dataset random_dataset(int64_t count, uint64_t seed) {
  data::Dataset ds;
  ds.count = count;
  ds.rows = ds.cols = 28;
  std::mt19937_64 rng(seed);
  for (int64_t i = 0; i < count * 28 * 28; ++i) ds.images.push_back(static_cast<uint8_t>(rng() % 256));
  for (int64_t i = 0; i < count; ++i) ds.labels.push_back(static_cast<uint8_t>(rng() % 10));
  return ds;
}

const Tensor& constant(const Model& m, const std::string& name) {
  const int v = m.graph.find_value(name);
  EXPECT_GE(v, 0) << name;
  return *m.graph.value(v).data;
}

// Per output channel: mean and unbiased variance of the stem's 3x3 stride-2 pad-1 convolution
// (no bias: BatchNorm follows) of a 1-channel batch.
void stem_conv_stats(const Tensor& images, const Tensor& weight, std::vector<double>& mean, std::vector<double>& var) {
  const int64_t n = images.dim(0), h = images.dim(2), wd = images.dim(3), co = weight.dim(0);
  const int64_t oh = (h + 2 - 3) / 2 + 1, ow = (wd + 2 - 3) / 2 + 1;
  mean.assign(static_cast<size_t>(co), 0);
  var.assign(static_cast<size_t>(co), 0);
  for (int64_t c = 0; c < co; ++c) {
    std::vector<double> out;
    for (int64_t b = 0; b < n; ++b)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t x = 0; x < ow; ++x) {
          double s = 0;
          for (int64_t ky = 0; ky < 3; ++ky)
            for (int64_t kx = 0; kx < 3; ++kx) {
              const int64_t iy = y * 2 - 1 + ky, ix = x * 2 - 1 + kx;
              if (iy < 0 || ix < 0 || iy >= h || ix >= wd) continue;
              s += static_cast<double>(images.data<float>()[(b * h + iy) * wd + ix]) *
                   weight.data<float>()[(c * 3 + ky) * 3 + kx];
            }
          out.push_back(s);
        }
    double m = 0;
    for (double v : out) m += v;
    m /= static_cast<double>(out.size());
    double ss = 0;
    for (double v : out) ss += (v - m) * (v - m);
    mean[static_cast<size_t>(c)] = m;
    var[static_cast<size_t>(c)] = ss / static_cast<double>(out.size() - 1);
  }
}

}  // namespace

TEST(BatchNormRecalibration, OneBatchGivesItsStatistics) {
  const arch::Arch a = arch::parse_arch("r28-w0.5|k3e3.relu|k5e1se.hardswish|k3e1.silu");
  auto model = arch::build_arch_model(tiny_space(), a, 3, 0);
  const data::Dataset ds = random_dataset(32, 1);
  const auto batches = fixed_batches(ds, 16, 1, true, 5, 0.2860f, 0.3530f);
  ASSERT_EQ(batches.size(), 1u);
  EXPECT_EQ(batches[0].images.dim(0), 16);

  recalibrate_batchnorm(model, batches, 1);
  std::vector<double> mean, var;
  stem_conv_stats(batches[0].images, constant(*model, "stem.conv.weight"), mean, var);
  const Tensor& rm = constant(*model, "stem.bn.running_mean");
  const Tensor& rv = constant(*model, "stem.bn.running_var");
  ASSERT_EQ(rm.numel(), static_cast<int64_t>(mean.size()));
  for (size_t c = 0; c < mean.size(); ++c) {
    EXPECT_NEAR(rm.data<float>()[c], mean[c], 1e-4 + 1e-4 * std::abs(mean[c])) << "channel " << c;
    EXPECT_NEAR(rv.data<float>()[c], var[c], 1e-4 + 1e-3 * var[c]) << "channel " << c;
  }
  // Every BN moved off its initial (0, 1) statistics; the momentum attribute is unchanged.
  for (const Node& n : model->graph.nodes) {
    if (n.op_type != "BatchNormalization") continue;
    EXPECT_FLOAT_EQ(n.attr_float("momentum", -1), 0.9f) << n.name;
    const Tensor& m = *model->graph.value(n.inputs[3]).data;
    bool moved = false;
    for (int64_t c = 0; c < m.numel(); ++c) moved = moved || m.data<float>()[c] != 0.0f;
    EXPECT_TRUE(moved) << n.name;
  }
}

TEST(BatchNormRecalibration, SeveralBatchesAverageTheirStatistics) {
  const arch::Arch a = arch::parse_arch("r28-w0.5|k3e3.relu|k3e1.relu|k3e3se.relu6");
  const data::Dataset ds = random_dataset(48, 2);
  const auto batches = fixed_batches(ds, 16, 3, false, 0, 0.2860f, 0.3530f);
  ASSERT_EQ(batches.size(), 3u);
  const std::string name = "stage2.block0.depthwise.bn.running_var";
  std::vector<float> expected;
  for (size_t i = 0; i < batches.size(); ++i) {
    auto m = arch::build_arch_model(tiny_space(), a, 3, 0);
    recalibrate_batchnorm(m, {batches[i]}, 1);
    const Tensor& t = constant(*m, name);
    expected.resize(static_cast<size_t>(t.numel()), 0.0f);
    for (int64_t c = 0; c < t.numel(); ++c) expected[static_cast<size_t>(c)] += t.data<float>()[c] / 3.0f;
  }
  auto model = arch::build_arch_model(tiny_space(), a, 3, 0);
  recalibrate_batchnorm(model, batches, 1);
  const Tensor& got = constant(*model, name);
  for (int64_t c = 0; c < got.numel(); ++c) {
    EXPECT_NEAR(got.data<float>()[c], expected[static_cast<size_t>(c)], 1e-4 * (1 + expected[static_cast<size_t>(c)]));
  }
}

TEST(SubnetScoring, Top1CountsArgmaxHits) {
  const arch::Arch a = arch::parse_arch("r28-w0.5|k3e1.relu|k3e1.relu|k3e1.relu");
  auto model = arch::build_arch_model(tiny_space(), a, 3, 0);
  data::Dataset ds = random_dataset(20, 4);
  auto batches = fixed_batches(ds, 8, 0, false, 0, 0.2860f, 0.3530f);
  ASSERT_EQ(batches.size(), 3u);  // 8 + 8 + 4
  EXPECT_EQ(batches[2].images.dim(0), 4);
  // Label every image with the model's own argmax: all hits; shift the labels: no hits.
  {
    Session session(model);
    int64_t i = 0;
    for (const data::Batch& b : batches) {
      const Tensor z = session.run({{"input", b.images}}).at(0);
      for (int64_t r = 0; r < z.dim(0); ++r, ++i) {
        const float* row = z.data<float>() + r * z.dim(1);
        ds.labels[static_cast<size_t>(i)] = static_cast<uint8_t>(std::max_element(row, row + z.dim(1)) - row);
      }
    }
  }
  batches = fixed_batches(ds, 8, 0, false, 0, 0.2860f, 0.3530f);
  EXPECT_DOUBLE_EQ(top1_accuracy(model, batches, 1), 1.0);
  for (uint8_t& l : ds.labels) l = static_cast<uint8_t>((l + 1) % 10);
  batches = fixed_batches(ds, 8, 0, false, 0, 0.2860f, 0.3530f);
  EXPECT_DOUBLE_EQ(top1_accuracy(model, batches, 1), 0.0);
}
