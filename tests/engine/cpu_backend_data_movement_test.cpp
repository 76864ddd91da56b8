// Transpose / Slice / ReduceMean CPU kernels against the reference kernels, bit-exact for the
// copies, within float rounding for the mean.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "engine/backends/cpu/cpu_kernel.h"
#include "engine/runtime/executor.h"

namespace xnn {
namespace {

// Returns max |got - want| (or -1 when no CPU kernel applies).
double compare(const Node& node, const std::vector<Tensor>& inputs, const std::vector<bool>& constant, int threads) {
  std::vector<const Tensor*> ptrs;
  for (const Tensor& t : inputs) ptrs.push_back(t.defined() ? &t : nullptr);
  std::vector<Tensor> want;
  run_node(OpRegistry::builtin(), node, ptrs, want);
  std::vector<TensorInfo> ins(inputs.size()), outs{TensorInfo{want[0].dtype(), want[0].shape(), nullptr}};
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].defined()) ins[i] = TensorInfo{inputs[i].dtype(), inputs[i].shape(), constant[i] ? &inputs[i] : nullptr};
  }
  ThreadPool pool(threads);
  CpuKernelPrepareContext ctx{node, ins, outs, kernels::best_isa(), &pool, false};
  auto k = CpuKernelRegistry::builtin().create(ctx);
  if (!k) return -1;
  Tensor got(want[0].dtype(), want[0].shape());
  Tensor* out = &got;
  KernelContext kctx(node, ptrs, std::span<Tensor* const>(&out, 1), &pool);
  k->run(kctx);
  double d = 0;
  for (int64_t i = 0; i < got.numel(); ++i) d = std::max(d, std::fabs(static_cast<double>(got.data<float>()[i]) - want[0].data<float>()[i]));
  return d;
}

Tensor random_tensor(const Shape& s, std::mt19937& rng) {
  Tensor t(DType::kF32, s);
  std::uniform_real_distribution<float> u(-2, 2);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

TEST(CpuBackendDataMovement, TransposeRandomPermutations) {
  std::mt19937 rng(1);
  for (int trial = 0; trial < 40; ++trial) {
    const int rank = 1 + static_cast<int>(rng() % 5);
    Shape s;
    for (int d = 0; d < rank; ++d) s.push_back(1 + rng() % 6);
    std::vector<int64_t> perm(static_cast<size_t>(rank));
    for (int d = 0; d < rank; ++d) perm[static_cast<size_t>(d)] = d;
    std::shuffle(perm.begin(), perm.end(), rng);
    Node n;
    n.op_type = "Transpose";
    n.name = "t";
    n.attrs["perm"] = perm;
    n.inputs = {0};
    n.outputs = {0};
    for (int threads : {1, 2}) EXPECT_EQ(compare(n, {random_tensor(s, rng)}, {false}, threads), 0.0) << trial;
  }
}

TEST(CpuBackendDataMovement, SliceStartsStepsAndNegativeIndices) {
  std::mt19937 rng(2);
  for (int trial = 0; trial < 60; ++trial) {
    const Shape s{1 + static_cast<int64_t>(rng() % 4), 2 + static_cast<int64_t>(rng() % 9), 2 + static_cast<int64_t>(rng() % 9)};
    const int64_t axis = static_cast<int64_t>(rng() % 3) - (rng() % 2 ? 3 : 0);
    const int64_t dim = s[static_cast<size_t>(axis < 0 ? axis + 3 : axis)];
    int64_t step = std::vector<int64_t>{1, 1, 2, 3, -1, -2}[rng() % 6];
    int64_t start = static_cast<int64_t>(rng() % (dim + 2)) - 1, end = static_cast<int64_t>(rng() % (dim + 3)) - 1;
    if (step < 0) std::swap(start, end);
    Node n;
    n.op_type = "Slice";
    n.name = "s";
    n.inputs = {0, 0, 0, 0, 0};
    n.outputs = {0};
    std::vector<Tensor> in{random_tensor(s, rng), Tensor::from_vector<int64_t>({start}, {1}),
                           Tensor::from_vector<int64_t>({end}, {1}), Tensor::from_vector<int64_t>({axis}, {1}),
                           Tensor::from_vector<int64_t>({step}, {1})};
    for (int threads : {1, 2}) {
      const double d = compare(n, in, {false, true, true, true, true}, threads);
      EXPECT_TRUE(d == 0.0 || d == -1) << "trial " << trial << " start " << start << " end " << end << " step " << step;
    }
  }
}

TEST(CpuBackendDataMovement, ReduceMeanTrailingAxes) {
  std::mt19937 rng(3);
  for (auto axes : std::vector<std::vector<int64_t>>{{2, 3}, {-1}, {3}, {1, 2, 3}}) {
    for (int64_t keep : {0, 1}) {
      Node n;
      n.op_type = "ReduceMean";
      n.name = "m";
      n.attrs["axes"] = axes;
      n.attrs["keepdims"] = keep;
      n.inputs = {0};
      n.outputs = {0};
      const double d = compare(n, {random_tensor({2, 5, 7, 9}, rng)}, {false}, 2);
      EXPECT_GE(d, 0.0);
      EXPECT_LE(d, 1e-6);
    }
  }
  // A non-trailing axis is left to the reference kernel.
  Node n;
  n.op_type = "ReduceMean";
  n.name = "m";
  n.attrs["axes"] = std::vector<int64_t>{1};
  n.inputs = {0};
  n.outputs = {0};
  EXPECT_EQ(compare(n, {random_tensor({2, 5, 7}, rng)}, {false}, 1), -1);
}

}  // namespace
}  // namespace xnn
