// The cost model on small hand-built graphs: roofline (compute- vs memory-bound), cores used,
// fp16 bytes, fusion, op constraints, partitioning and transfers, on_unsupported, and the
// shipped profiles on the quickstart model.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "engine/runtime/model_io.h"
#include "harness/sim/cost_model.h"
#include "harness/sim/op_support.h"
#include "sim_test_util.h"

#ifndef XNN_SOURCE_DIR
#define XNN_SOURCE_DIR "."
#endif

namespace xnn::sim {
namespace {

using testing::contains;
using testing::error_of;
using testing::GraphBuilder;
using testing::load_text;
using testing::TempDir;

const SimOpRow& row(const SimResult& r, const std::string& name) {
  for (const SimOpRow& o : r.ops) {
    if (o.node_name == name) return o;
  }
  throw Error("no row for node '" + name + "'");
}

class CostModel : public ::testing::Test {
 protected:
  TempDir dir;
  DeviceProfile cpu = load_text(dir, "test_cpu", testing::test_cpu_yaml());
  DeviceProfile cpu_fusing = load_text(dir, "test_cpu_f", testing::test_cpu_yaml("fusion: [Conv + Relu]\n"));
  DeviceProfile npu = load_text(dir, "test_npu", testing::test_npu_yaml());
};

TEST_F(CostModel, BigConvIsComputeBoundAtPeakTimesEfficiency) {
  GraphBuilder b;
  b.input("x", {1, 64, 56, 56}).conv("conv", "x", "y", 64, 64, 3).output("y");
  const SimResult r = simulate(b.build(), {}, cpu, nullptr);
  const SimOpRow& c = row(r, "conv");
  const double flops = 2.0 * 56 * 56 * 64 * 64 * 9;
  EXPECT_DOUBLE_EQ(c.flops, flops);
  EXPECT_EQ(c.bound, "compute");
  EXPECT_EQ(c.device, "test_cpu");
  EXPECT_EQ(c.op_class, "conv");
  // 100 GFLOP/s x eff: max 0.5, half 1 MFLOP -> 0.5 * 231.2 / 232.2 of peak.
  const double expected_ms = flops / (100e9 * 0.5 * flops / (flops + 1e6)) * 1e3;
  EXPECT_NEAR(c.compute_ms, expected_ms, 1e-9 * expected_ms);
  EXPECT_NEAR(c.time_ms, expected_ms + 0.001, 1e-9 * expected_ms);  // + 1 us dispatch
  // A big op gets close to flops / (peak * eff_max): within 1%.
  const double at_max = flops / (100e9 * 0.5) * 1e3;
  EXPECT_NEAR(c.compute_ms / at_max, 1.0, 0.01);
  EXPECT_NEAR(r.total_ms, c.time_ms, 1e-12);
  EXPECT_EQ(r.transfer_count, 0);
  ASSERT_EQ(r.partitions.size(), 1u);
  EXPECT_FALSE(r.partitions[0].accelerator);
}

TEST_F(CostModel, BigElementwiseOpIsMemoryBoundAtBandwidth) {
  GraphBuilder b;
  b.input("x", {1, 64, 256, 256}).node("Relu", "relu", {"x"}, "y").output("y");
  const SimResult r = simulate(b.build(), {}, cpu, nullptr);
  const SimOpRow& o = row(r, "relu");
  const double bytes = 2.0 * 64 * 256 * 256 * 4;
  EXPECT_DOUBLE_EQ(o.bytes, bytes);
  EXPECT_EQ(o.bound, "memory");
  EXPECT_EQ(o.op_class, "elementwise");
  EXPECT_NEAR(o.memory_ms, bytes / 10e9 * 1e3, 1e-9);  // 10 GB/s, memory efficiency 1
  EXPECT_LT(o.compute_ms, o.memory_ms / 10);
}

TEST_F(CostModel, SmallOpsReachLessOfPeak) {
  // Per FLOP, a tiny conv costs more than a big one: the efficiency curve at work.
  auto ms_per_flop = [&](int64_t hw) {
    GraphBuilder b;
    b.input("x", {1, 16, hw, hw}).conv("conv", "x", "y", 16, 16, 3).output("y");
    const SimOpRow& c = row(simulate(b.build(), {}, cpu, nullptr), "conv");
    return c.compute_ms / c.flops;
  };
  EXPECT_GT(ms_per_flop(4), 2.0 * ms_per_flop(128));
}

TEST_F(CostModel, ThreadsLimitTheCoresOfCpuProfiles) {
  GraphBuilder b;
  b.input("x", {1, 64, 56, 56}).conv("conv", "x", "y", 64, 64, 3).output("y");
  const Graph g = b.build();
  SimOptions one;
  one.threads = 1;
  SimOptions many;
  many.threads = 16;  // more than the 4 cores: all 4
  const double t1 = row(simulate(g, {}, cpu, nullptr, one), "conv").compute_ms;
  const double t4 = row(simulate(g, {}, cpu, nullptr, many), "conv").compute_ms;
  EXPECT_NEAR(t1 / t4, 4.0, 1e-9);
}

TEST_F(CostModel, FusionRemovesIntermediateTrafficAndDispatch) {
  GraphBuilder b;
  b.input("x", {1, 16, 64, 64}).conv("conv", "x", "c", 16, 16, 3).node("Relu", "relu", {"c"}, "y").output("y");
  const Graph g = b.build();
  const SimResult plain = simulate(g, {}, cpu, nullptr);
  const SimResult fused = simulate(g, {}, cpu_fusing, nullptr);
  const double intermediate = 16.0 * 64 * 64 * 4;
  EXPECT_EQ(plain.fused_kernels, 0);
  EXPECT_EQ(fused.fused_kernels, 1);
  const SimOpRow& conv = row(fused, "conv");
  const SimOpRow& relu = row(fused, "relu");
  EXPECT_EQ(conv.fused_group, "conv+relu");
  EXPECT_EQ(relu.fused_into, "conv");
  EXPECT_EQ(relu.bound, "fused");
  EXPECT_EQ(relu.time_ms, 0);
  // The conv's output is neither written nor read back: 2 x its bytes disappear.
  EXPECT_DOUBLE_EQ(conv.bytes, row(plain, "conv").bytes + row(plain, "relu").bytes - 2 * intermediate);
  EXPECT_DOUBLE_EQ(conv.flops, row(plain, "conv").flops + row(plain, "relu").flops);
  EXPECT_LT(fused.total_ms, plain.total_ms);
  EXPECT_DOUBLE_EQ(conv.dispatch_ms, 0.001);  // one dispatch for the kernel
}

TEST_F(CostModel, NoFusionAcrossAnOutputWithTwoReaders) {
  GraphBuilder b;
  b.input("x", {1, 16, 32, 32})
      .conv("conv", "x", "c", 16, 16, 3)
      .node("Relu", "relu", {"c"}, "r")
      .node("Add", "add", {"c", "r"}, "y")
      .output("y");
  const SimResult r = simulate(b.build(), {}, cpu_fusing, nullptr);
  EXPECT_EQ(r.fused_kernels, 0);
  EXPECT_TRUE(row(r, "relu").fused_into.empty());
}

TEST_F(CostModel, UnsupportedOpInTheMiddleGivesThreePartitionsAndFourTransfers) {
  GraphBuilder b;
  b.input("x", {1, 8, 32, 32})
      .conv("conv1", "x", "c1", 8, 8, 3)
      .node("Relu", "relu1", {"c1"}, "r1")
      .node("Erf", "erf", {"r1"}, "e")
      .conv("conv2", "e", "c2", 8, 8, 3)
      .node("Relu", "relu2", {"c2"}, "y")
      .output("y");
  const SimResult r = simulate(b.build(), {}, npu, &cpu);
  ASSERT_EQ(r.partitions.size(), 3u);
  int accel = 0, host = 0;
  for (const SimPartition& p : r.partitions) (p.accelerator ? accel : host)++;
  EXPECT_EQ(accel, 2);
  EXPECT_EQ(host, 1);
  EXPECT_EQ(r.partitions[0].nodes, (std::vector<std::string>{"conv1", "relu1"}));
  EXPECT_EQ(r.partitions[1].nodes, (std::vector<std::string>{"erf"}));
  EXPECT_EQ(r.partitions[1].device, "test_cpu");
  // x in, r1 out to the host, e back in, y out to the host.
  ASSERT_EQ(r.transfer_count, 4);
  EXPECT_EQ(r.transfers[0].value, "x");
  EXPECT_EQ(r.transfers[0].from, "test_cpu");
  EXPECT_EQ(r.transfers[0].to, "test_npu");
  const double tensor = 8.0 * 32 * 32 * 4;
  for (const SimTransfer& t : r.transfers) {
    EXPECT_DOUBLE_EQ(t.bytes, tensor);
    EXPECT_NEAR(t.time_ms, 0.1 + tensor / 1e9 * 1e3, 1e-12);  // 100 us + bytes at 1 GB/s
  }
  const SimOpRow& erf = row(r, "erf");
  EXPECT_TRUE(erf.fell_back);
  EXPECT_EQ(erf.reason, "op Erf not supported");
  EXPECT_EQ(erf.device, "test_cpu");
  EXPECT_EQ(r.fell_back, 1);
  EXPECT_EQ(row(r, "relu1").fused_into, "conv1");  // the NPU fuses Conv + Relu
  EXPECT_NEAR(r.device_ms.at("transfer"), 4 * (0.1 + tensor / 1e6), 1e-9);
  double sum = 0;
  for (const SimOpRow& o : r.ops) sum += o.time_ms;
  EXPECT_NEAR(r.total_ms, sum, 1e-12);
  EXPECT_NEAR(r.total_ms, r.device_ms.at("test_npu") + r.device_ms.at("test_cpu") + r.device_ms.at("transfer"), 1e-9);
}

TEST_F(CostModel, ViewsFollowTheirInputAndNeverCutPartitions) {
  GraphBuilder b;
  b.input("x", {1, 8, 4, 4})
      .conv("conv", "x", "c", 8, 8, 3)
      .node("Flatten", "flat", {"c"}, "f", {{"axis", int64_t{1}}})
      .random("w", {10, 128})
      .random("bias", {10})
      .node("Gemm", "fc", {"f", "w", "bias"}, "y", {{"transB", int64_t{1}}})
      .output("y");
  const SimResult r = simulate(b.build(), {}, npu, &cpu);
  ASSERT_EQ(r.partitions.size(), 2u);  // conv on the NPU, Gemm on the host; Flatten in none
  EXPECT_EQ(row(r, "flat").bound, "free");
  EXPECT_EQ(row(r, "flat").partition, -1);
  EXPECT_EQ(row(r, "flat").device, "test_npu");
  EXPECT_EQ(row(r, "fc").reason, "op Gemm not supported");
  EXPECT_EQ(r.transfer_count, 2);  // x to the NPU, the flattened tensor back
  EXPECT_EQ(r.transfers[1].value, "f");
}

TEST_F(CostModel, ShapeConstraintsGiveReadableReasons) {
  GraphBuilder b;
  b.input("x", {1, 3, 32, 32})
      .conv("rgb", "x", "a", 3, 8, 3)       // 3 input channels: not a multiple of 8
      .conv("big", "a", "b", 8, 8, 9)       // 9x9 kernel > 7
      .conv("ok", "b", "y", 8, 8, 5)
      .output("y");
  const SimResult r = simulate(b.build(), {}, npu, &cpu);
  EXPECT_EQ(row(r, "rgb").reason, "Conv input channels 3 not a multiple of 8");
  EXPECT_EQ(row(r, "big").reason, "Conv kernel 9x9 > max 7");
  EXPECT_EQ(row(r, "ok").reason, "");
  EXPECT_EQ(row(r, "ok").device, "test_npu");
}

TEST_F(CostModel, Fp32ModelOnInt8OnlyNpuErrorsOrFallsBackAsConfigured) {
  GraphBuilder b;
  b.input("x", {1, 8, 16, 16}).conv("conv1", "x", "c", 8, 8, 3).node("Relu", "relu1", {"c"}, "y").output("y");
  const Graph g = b.build();
  const DeviceProfile int8_error = load_text(dir, "i8e", testing::test_npu_yaml("int8", "[int8]", "on_unsupported: error\n"));
  const std::string msg = error_of([&] { simulate(g, {}, int8_error, &cpu); });
  EXPECT_TRUE(contains(msg, "model cannot run on test_npu (on_unsupported: error): 2 of 2 nodes unsupported")) << msg;
  EXPECT_TRUE(contains(msg, "'conv1' (Conv): dtype fp32 unsupported: int8 only")) << msg;
  EXPECT_TRUE(contains(msg, "'relu1' (Relu): dtype fp32 unsupported: int8 only")) << msg;

  // The same profile forced to fall back, and a fallback profile: everything on the host.
  SimOptions force;
  force.on_unsupported = OnUnsupported::kFallback;
  const DeviceProfile int8_fallback = load_text(dir, "i8f", testing::test_npu_yaml("int8", "[int8]"));
  for (const SimResult& r : {simulate(g, {}, int8_error, &cpu, force), simulate(g, {}, int8_fallback, &cpu)}) {
    EXPECT_EQ(r.fell_back, 2);
    EXPECT_EQ(r.transfer_count, 0);
    ASSERT_EQ(r.partitions.size(), 1u);
    EXPECT_FALSE(r.partitions[0].accelerator);
    EXPECT_NEAR(r.total_ms, simulate(g, {}, cpu, nullptr).total_ms, 1e-12);
  }
  // The option also forces an error on a fallback profile.
  SimOptions strict;
  strict.on_unsupported = OnUnsupported::kError;
  EXPECT_FALSE(error_of([&] { simulate(g, {}, int8_fallback, &cpu, strict); }).empty());
  // An accelerator without its host is an error too.
  EXPECT_TRUE(contains(error_of([&] { simulate(g, {}, int8_fallback, nullptr); }), "host profile 'test_cpu'"));
}

TEST_F(CostModel, Fp16DeviceMovesHalfTheBytes) {
  const DeviceProfile fp16 = load_text(dir, "f16", testing::test_npu_yaml("fp16", "[fp32, fp16]"));
  GraphBuilder b;
  b.input("x", {1, 8, 128, 128}).node("Relu", "relu", {"x"}, "y").output("y");
  const Graph g = b.build();
  const SimResult half = simulate(g, {}, fp16, &cpu), full = simulate(g, {}, npu, &cpu);
  const SimOpRow& h = row(half, "relu");
  const SimOpRow& f = row(full, "relu");
  EXPECT_EQ(h.dtype, "fp16");
  EXPECT_EQ(f.dtype, "fp32");
  EXPECT_DOUBLE_EQ(h.bytes, f.bytes / 2);
}

TEST(OpSupport, ClassifiesOpsIncludingQuantisedAndDepthwiseConvs) {
  auto node = [](const std::string& op, int64_t group = 1) {
    Node n;
    n.op_type = op;
    n.attrs["group"] = group;
    return n;
  };
  NodeCost c32;
  c32.input_shapes = {{1, 32, 8, 8}};
  EXPECT_EQ(classify_op(node("Conv"), c32), OpClass::kConv);
  EXPECT_EQ(classify_op(node("Conv", 32), c32), OpClass::kDepthwise);
  EXPECT_EQ(classify_op(node("Conv", 4), c32), OpClass::kConv);  // grouped, not depthwise
  EXPECT_EQ(classify_op(node("QLinearConv", 32), c32), OpClass::kDepthwise);
  EXPECT_EQ(classify_op(node("ConvInteger"), c32), OpClass::kConv);
  EXPECT_EQ(classify_op(node("QLinearMatMul"), {}), OpClass::kGemm);
  EXPECT_EQ(classify_op(node("MatMul"), {}), OpClass::kGemm);
  EXPECT_EQ(classify_op(node("AveragePool"), {}), OpClass::kPool);
  EXPECT_EQ(classify_op(node("HardSwish"), {}), OpClass::kElementwise);
  EXPECT_EQ(classify_op(node("Softmax"), {}), OpClass::kOther);
  Node fused = node("FusedConv");
  fused.domain = "ai.xnn";
  EXPECT_EQ(base_op_type(fused), "Conv");
  EXPECT_TRUE(is_free_op(node("Flatten")));
  EXPECT_FALSE(is_free_op(node("Transpose")));
}

TEST(CostModelShippedProfiles, QuickstartModelRunsOnEveryProfile) {
  const auto model = load_model(std::string(XNN_SOURCE_DIR) + "/configs/models/fmnist_cnn.onnx");
  for (const DeviceProfile& d : list_device_profiles()) {
    SCOPED_TRACE(d.name);
    const DeviceProfile host = d.is_cpu() ? d : find_device_profile(d.host);
    const SimResult r = simulate(model->graph, {}, d, d.is_cpu() ? nullptr : &host);
    EXPECT_GT(r.total_ms, 0);
    EXPECT_FALSE(r.ops.empty());
    if (d.dtypes == std::vector<std::string>{"int8"}) {
      // A float model on an int8-only NPU falls back entirely (on_unsupported: fallback).
      for (const SimOpRow& o : r.ops) {
        if (o.bound != "free") {
          EXPECT_TRUE(o.fell_back && contains(o.reason, "dtype fp32 unsupported")) << o.node_name;
        }
      }
      EXPECT_EQ(r.transfer_count, 0);
    }
    if (d.name == "adreno_660_gpu") {
      EXPECT_GT(r.device_ms.at("adreno_660_gpu"), 0);
      EXPECT_GT(r.transfer_count, 0);  // input in, logits out at least
      EXPECT_GT(r.fused_kernels, 0);
    }
  }
}

}  // namespace
}  // namespace xnn::sim
