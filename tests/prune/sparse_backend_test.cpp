// The CPU backend's choice of the sparse kernels (engine/backends/cpu/sparse_cpu.cpp): 1×1 Conv /
// FusedConv, Gemm / FusedGemm and MatMul with constant weights take the sparse kernel when the
// weights are mostly zeros (90% here) and the dense one when they are not (30%), and the sparse
// kernels match the reference ops with every epilogue, for every ISA and 1 and 2 threads.
// Also: a Session over a pruned model names the sparse kernel in its plan.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "engine/backends/cpu/cpu_kernel.h"
#include "engine/kernels/spmm.h"
#include "engine/kernels/spmv_sliced.h"
#include "engine/runtime/executor.h"
#include "engine/runtime/session.h"

namespace xnn {
namespace {

using kernels::Isa;

Tensor random_tensor(const Shape& shape, std::mt19937& rng, double sparsity = 0.0) {
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  Tensor t(DType::kF32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng) < sparsity ? 0.0f : dist(rng);
  return t;
}

struct Case {
  Node node;
  std::vector<Tensor> inputs;  // undefined = absent optional input
  std::vector<bool> constant;
};

// Reference kernel vs the CPU backend's kernel: max error relative to the largest |reference|
// (at least 1), and the kernel's name ("none" when no CPU kernel applies).
std::pair<double, std::string> compare(const Case& c, Isa isa, int threads) {
  std::vector<const Tensor*> in_ptrs;
  for (const Tensor& t : c.inputs) in_ptrs.push_back(t.defined() ? &t : nullptr);
  std::vector<Tensor> want;
  run_node(OpRegistry::builtin(), c.node, in_ptrs, want);
  std::vector<TensorInfo> ins(c.inputs.size()), outs(1);
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    if (c.inputs[i].defined()) ins[i] = TensorInfo{DType::kF32, c.inputs[i].shape(), c.constant[i] ? &c.inputs[i] : nullptr};
  }
  outs[0] = TensorInfo{want[0].dtype(), want[0].shape(), nullptr};
  ThreadPool pool(threads);
  CpuKernelPrepareContext ctx{c.node, ins, outs, isa, &pool, false};
  std::unique_ptr<CpuKernel> k = CpuKernelRegistry::builtin().create(ctx);
  if (!k) return {1e30, "none"};
  Tensor got(want[0].dtype(), want[0].shape());
  for (int64_t i = 0; i < got.numel(); ++i) got.data<float>()[i] = std::nanf("");
  Tensor* out_ptr = &got;
  KernelContext kctx(c.node, in_ptrs, std::span<Tensor* const>(&out_ptr, 1), &pool);
  k->run(kctx);
  k->run(kctx);
  double max_ref = 1.0, max_diff = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double w = want[0].data<float>()[i], g = got.data<float>()[i];
    max_ref = std::max(max_ref, std::fabs(w));
    max_diff = std::isnan(g) ? 1e30 : std::max(max_diff, std::fabs(g - w));
  }
  return {max_diff / max_ref, k->name()};
}

std::vector<Isa> isas() {
  std::vector<Isa> v{Isa::kScalar};
  if (kernels::isa_supported(Isa::kAvx2)) v.push_back(Isa::kAvx2);
  return v;
}

Case conv1x1(std::mt19937& rng, int64_t n, int64_t cin, int64_t cout, int64_t h, int64_t w, double sparsity, bool bias,
             bool residual, const std::string& act, std::vector<float> params = {}) {
  Case c;
  c.node.op_type = residual || !act.empty() ? "FusedConv" : "Conv";
  c.node.domain = c.node.op_type == "FusedConv" ? "ai.xnn" : "";
  c.node.name = "pw";
  c.node.attrs["kernel_shape"] = std::vector<int64_t>{1, 1};
  if (!act.empty()) c.node.attrs["activation"] = act;
  if (!params.empty()) c.node.attrs["activation_params"] = params;
  c.inputs = {random_tensor({n, cin, h, w}, rng), random_tensor({cout, cin, 1, 1}, rng, sparsity),
              bias ? random_tensor({cout}, rng) : Tensor()};
  c.constant = {false, true, true};
  if (residual) {
    c.inputs.push_back(random_tensor({n, cout, h, w}, rng));
    c.constant.push_back(false);
  }
  c.node.inputs.assign(c.inputs.size(), 0);
  c.node.outputs = {0};
  return c;
}

Case gemm(std::mt19937& rng, int64_t m, int64_t k, int64_t n, double sparsity, bool trans_a, bool trans_b, float alpha,
          float beta, bool bias, const std::string& act) {
  Case c;
  c.node.op_type = act.empty() ? "Gemm" : "FusedGemm";
  c.node.domain = act.empty() ? "" : "ai.xnn";
  c.node.name = "fc";
  c.node.attrs["transA"] = int64_t{trans_a};
  c.node.attrs["transB"] = int64_t{trans_b};
  c.node.attrs["alpha"] = alpha;
  c.node.attrs["beta"] = beta;
  if (!act.empty()) c.node.attrs["activation"] = act;
  c.inputs = {random_tensor(trans_a ? Shape{k, m} : Shape{m, k}, rng),
              random_tensor(trans_b ? Shape{n, k} : Shape{k, n}, rng, sparsity), bias ? random_tensor({n}, rng) : Tensor()};
  c.constant = {false, true, true};
  c.node.inputs.assign(c.inputs.size(), 0);
  c.node.outputs = {0};
  return c;
}

TEST(SparseBackend, Conv1x1TakesSparseKernelOnlyWhenSparse) {
  std::mt19937 rng(3);
  const char* acts[] = {"", "Relu", "Clip", "LeakyRelu", "HardSwish", "Sigmoid", "Silu", "HardSigmoid"};
  for (int trial = 0; trial < 40; ++trial) {
    const int64_t n = 1 + rng() % 2, cin = 1 + rng() % 40, cout = 1 + rng() % 40, h = 1 + rng() % 12, w = 1 + rng() % 12;
    const std::string act = acts[rng() % 8];
    std::vector<float> params;
    if (act == "Clip") params = {0.0f, 6.0f};
    const bool bias = rng() % 2, residual = rng() % 2;
    const Case sparse = conv1x1(rng, n, cin, cout, h, w, 0.9, bias, residual, act, params);
    const Case dense = conv1x1(rng, n, cin, cout, h, w, 0.3, bias, residual, act, params);
    for (Isa isa : isas()) {
      for (int threads : {1, 2}) {
        const auto [err, name] = compare(sparse, isa, threads);
        EXPECT_LT(err, 1e-5) << "trial " << trial << " " << name;
        EXPECT_NE(name.find("f32_conv1x1_sparse+f32_spmm"), std::string::npos) << "trial " << trial << " " << name;
        // A narrow tail of H·W columns goes to the permute kernel (f32_spmm's sliced tail).
        EXPECT_EQ(name.find("perm") != std::string::npos, kernels::spmm_sliced_tail(h * w, isa) > 0) << name;
        const auto [derr, dname] = compare(dense, isa, threads);
        EXPECT_LT(derr, 1e-4) << dname;
        EXPECT_EQ(dname.find("sparse"), std::string::npos) << "trial " << trial << " " << dname;
      }
    }
  }
}

TEST(SparseBackend, NonPointwiseConvStaysDense) {
  std::mt19937 rng(4);
  Case c = conv1x1(rng, 1, 8, 8, 6, 6, 0.95, true, false, "");
  c.node.attrs["strides"] = std::vector<int64_t>{2, 2};
  const auto [err, name] = compare(c, kernels::best_isa(), 1);
  EXPECT_LT(err, 1e-4);
  EXPECT_EQ(name.find("sparse"), std::string::npos) << name;
}

TEST(SparseBackend, GemmAndMatMulTakeSparseKernelOnlyWhenSparse) {
  std::mt19937 rng(9);
  for (int trial = 0; trial < 40; ++trial) {
    const int64_t m = trial % 4 == 0 ? 1 : 1 + rng() % 70, k = 1 + rng() % 100, n = 1 + rng() % 60;
    const bool ta = rng() % 2, tb = rng() % 2, bias = rng() % 2;
    const float alpha = rng() % 3 == 0 ? 0.5f : 1.0f, beta = rng() % 3 == 0 ? 2.0f : 1.0f;
    const std::string act = rng() % 2 ? "Relu" : "";
    const Case sparse = gemm(rng, m, k, n, 0.95, ta, tb, alpha, beta, bias, act);
    const Case dense = gemm(rng, m, k, n, 0.3, ta, tb, alpha, beta, bias, act);
    for (Isa isa : isas()) {
      for (int threads : {1, 2}) {
        const auto [err, name] = compare(sparse, isa, threads);
        EXPECT_LT(err, 1e-5) << "trial " << trial << " " << name;
        EXPECT_NE(name.find(m == 1 ? "_sparse+f32_spmv" : "_sparse+f32_spmm"), std::string::npos) << name;
        if (m > 1) {
          EXPECT_EQ(name.find("perm") != std::string::npos, kernels::spmm_sliced_tail(m, isa) > 0) << name;
        }
        const auto [derr, dname] = compare(dense, isa, threads);
        EXPECT_LT(derr, 1e-4);
        EXPECT_EQ(dname.find("sparse"), std::string::npos) << dname;
      }
    }
  }
  // MatMul with a constant 2-D B; leading dims of A fold into M.
  for (const Shape& a_shape : {Shape{1, 48}, Shape{3, 5, 48}}) {
    Case c;
    c.node.op_type = "MatMul";
    c.node.name = "mm";
    c.inputs = {random_tensor(a_shape, rng), random_tensor({48, 33}, rng, 0.95)};
    c.constant = {false, true};
    c.node.inputs = {0, 0};
    c.node.outputs = {0};
    for (Isa isa : isas()) {
      const auto [err, name] = compare(c, isa, 2);
      EXPECT_LT(err, 1e-5) << name;
      EXPECT_NE(name.find("f32_matmul_sparse+"), std::string::npos) << name;
    }
  }
}

// Batch-1 linear layers follow the rule in sparse_cpu.cpp (gemv_kernel): with AVX-512 the 16x32
// permute format from 70% zeros; with AVX2 only (XNN_ISA=avx2 on an AVX-512 CPU; a ctest entry
// runs this suite so) the 8x16 permute format from 80% for weights that fit in L2 (these: 240 KB;
// from 70% beyond 2 MB) and the CSR gather kernel from 93%; on the scalar ISA, or with
// XNN_ISA=scalar, the CSR kernel from 85%. 300x200 weights, so the share of zeros is within ~0.5%.
TEST(SparseBackend, Batch1LinearKernelFollowsTheRule) {
  std::mt19937 rng(12);
  const bool avx512 = kernels::avx512_enabled(), sliced = kernels::spmv_sliced_fast();
  for (const double zeros : {0.6, 0.75, 0.88, 0.97}) {
    const Case c = gemm(rng, 1, 300, 200, zeros, false, true, 1.0f, 1.0f, true, "Relu");
    for (Isa isa : isas()) {
      std::string want = "";  // dense
      if (isa == Isa::kAvx2 && sliced && avx512) {
        want = zeros >= 0.7 ? "f32_spmv_16x32perm__avx512" : "";
      } else if (isa == Isa::kAvx2 && sliced) {
        want = zeros >= 0.93 ? "f32_spmv_8x1__avx2" : zeros >= 0.8 ? "f32_spmv_8x16perm__avx2" : "";
      } else if (zeros >= 0.85) {  // XNN_ISA=scalar keeps the sliced format off for every session
        want = isa == Isa::kAvx2 ? "f32_spmv_8x1__avx2" : "f32_spmv_1x4__scalar";
      }
      const auto [err, name] = compare(c, isa, 2);
      EXPECT_LT(err, 1e-5) << name;
      if (want.empty()) {
        EXPECT_EQ(name.find("sparse"), std::string::npos) << zeros << " " << name;
      } else {
        EXPECT_NE(name.find("_sparse+" + want), std::string::npos) << zeros << " " << name << " want " << want;
      }
    }
  }
}

TEST(SparseBackend, SessionPlanNamesSparseKernel) {
  std::mt19937 rng(2);
  auto model = std::make_shared<Model>();
  Graph& g = model->graph;
  Value in;
  in.name = "x";
  in.dtype = DType::kF32;
  in.has_shape = true;
  in.shape = {Dim::fixed(1), Dim::fixed(64)};
  const int x = g.add_value(in);
  g.inputs.push_back(x);
  const int w = g.add_constant("w", random_tensor({128, 64}, rng, 0.9));
  const int b = g.add_constant("b", random_tensor({128}, rng));
  Value out;
  out.name = "y";
  out.dtype = DType::kF32;
  const int y = g.add_value(out);
  Node n;
  n.op_type = "Gemm";
  n.name = "fc";
  n.inputs = {x, w, b};
  n.outputs = {y};
  n.attrs["transB"] = int64_t{1};
  g.nodes.push_back(n);
  g.outputs.push_back(y);
  Session s(model, SessionOptions{});
  s.prepare();
  std::string kernels;
  for (const NodeProfile& p : s.plan_summary()) kernels += p.kernel + " ";
  EXPECT_NE(kernels.find("f32_gemm_sparse+"), std::string::npos) << kernels;
}

}  // namespace
}  // namespace xnn
