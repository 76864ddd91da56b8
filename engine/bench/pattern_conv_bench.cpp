// Pattern-pruned vs dense 3×3 convolution on ResNet-like shapes (batch 1, one thread): the dense
// kernel is whatever the CPU backend's conv rule chooses for the dense weights (Winograd
// F(4,3)/F(6,3) or im2col GEMM; its name is the benchmark's label), prepared through the kernel
// registry as a Session would; the pattern kernel (f32_patconv3x3) runs on 4-of-9 pattern
// weights (8 patterns) with 0/30/50/70% of the kernels removed by connectivity pruning (78/84%
// too on the small CNN's shapes). Counter
// "GFLOP/s" counts the DENSE work (2·Cout·Cin·9·H·W) for both, so the ratio pattern/dense is
// the speedup directly.
//
//   xnn_kernel_bench --benchmark_filter='BM_(dense|pattern)_conv3x3' --benchmark_min_time=0.2
//       --benchmark_repetitions=3 --benchmark_enable_random_interleaving=true   (one command line)
//
// Args: {C (in = out), H = W} for dense; pattern adds {connectivity sparsity %, input channels per
// block (0: the backend's choice, pattern_channel_block())}; 64×14² and 64×7² are the small CNN's
// layers (configs/train/fmnist_cnn3x3.yaml), where the dense rule picks im2col. The measured ratios are in
// compress/prune/README.md and justify kMaxWorkFraction in engine/backends/cpu/pattern_conv_cpu.cpp.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "engine/backends/cpu/cpu_kernel.h"
#include "engine/core/op_registry.h"
#include "engine/kernels/pattern_conv.h"

namespace {

using namespace xnn;

Tensor random_tensor(const Shape& shape, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  Tensor t(DType::kF32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng);
  return t;
}

// Dense weights reduced to 4 taps per kernel, each kernel in one of 8 patterns (center plus 3
// of its neighbours, as PatDNN's library), and `connectivity` of the kernels zeroed entirely.
void pattern_prune_weights(Tensor& w, double connectivity, unsigned seed) {
  static const uint16_t kPatterns[8] = {0x01B, 0x036, 0x0D8, 0x1B0, 0x03A, 0x0B8, 0x092 | 0x008, 0x092 | 0x020};
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> pick(0, 7);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  float* v = w.data<float>();
  for (int64_t k = 0; k < w.numel() / 9; ++k) {
    const uint16_t mask = u(rng) < connectivity ? 0 : kPatterns[pick(rng)];
    for (int t = 0; t < 9; ++t) {
      if (!(mask & (1u << t))) v[k * 9 + t] = 0.0f;
    }
  }
}

void set_rate(benchmark::State& state, int64_t c, int64_t hw) {
  state.counters["GFLOP/s"] = benchmark::Counter(2e-9 * static_cast<double>(c * c * 9 * hw * hw),
                                                 benchmark::Counter::kIsIterationInvariantRate);
}

void BM_dense_conv3x3(benchmark::State& state) {
  const int64_t c = state.range(0), hw = state.range(1);
  Node node;
  node.op_type = "FusedConv";
  node.domain = "ai.xnn";
  node.name = "conv";
  node.attrs["kernel_shape"] = std::vector<int64_t>{3, 3};
  node.attrs["pads"] = std::vector<int64_t>{1, 1, 1, 1};
  node.attrs["activation"] = std::string("Relu");
  const Tensor x = random_tensor({1, c, hw, hw}, 1), w = random_tensor({c, c, 3, 3}, 2), b = random_tensor({c}, 3);
  std::vector<TensorInfo> ins{{DType::kF32, x.shape(), nullptr}, {DType::kF32, w.shape(), &w}, {DType::kF32, b.shape(), &b}};
  std::vector<TensorInfo> outs{{DType::kF32, {1, c, hw, hw}, nullptr}};
  ThreadPool pool(1);
  CpuKernelPrepareContext ctx{node, ins, outs, kernels::best_isa(), &pool, false};
  std::unique_ptr<CpuKernel> k = CpuKernelRegistry::builtin().create(ctx);
  Tensor y(DType::kF32, outs[0].shape);
  std::vector<const Tensor*> in_ptrs{&x, &w, &b};
  Tensor* out_ptr = &y;
  KernelContext kctx(node, in_ptrs, std::span<Tensor* const>(&out_ptr, 1), &pool);
  for (auto _ : state) {
    k->run(kctx);
    benchmark::DoNotOptimize(y.data<float>());
    benchmark::ClobberMemory();
  }
  state.SetLabel(k->name());
  set_rate(state, c, hw);
}

void BM_pattern_conv3x3(benchmark::State& state) {
  const int64_t c = state.range(0), hw = state.range(1);
  const double connectivity = static_cast<double>(state.range(2)) / 100.0;
  const Tensor x = random_tensor({1, c, hw, hw}, 1), b = random_tensor({c}, 3);
  Tensor w = random_tensor({c, c, 3, 3}, 2);
  pattern_prune_weights(w, connectivity, 4);
  const int64_t block = state.range(3) > 0 ? state.range(3) : kernels::pattern_channel_block(hw, hw);
  const auto pw = kernels::PatternConvWeights::from_dense(c, c, w.data<float>(), 4, block);
  Tensor y(DType::kF32, {1, c, hw, hw});
  const kernels::PatternConvShape s{hw, hw, hw, hw, 1, 1};
  kernels::PatternConvEpilogue ep;
  ep.bias = b.data<float>();
  ep.act = kernels::Activation::relu();
  ThreadPool pool(1);
  for (auto _ : state) {
    kernels::f32_patconv3x3(*pw, s, x.data<float>(), y.data<float>(), ep, &pool, kernels::best_isa());
    benchmark::DoNotOptimize(y.data<float>());
    benchmark::ClobberMemory();
  }
  state.SetLabel(kernels::patconv_kernel_name(kernels::best_isa()));
  set_rate(state, c, hw);
}

BENCHMARK(BM_dense_conv3x3)
    ->Args({64, 56})
    ->Args({128, 28})
    ->Args({256, 14})
    ->Args({512, 7})
    ->Args({64, 14})
    ->Args({64, 7})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_pattern_conv3x3)
    ->ArgsProduct({{64}, {56}, {0, 30, 50, 70}, {0}})
    ->ArgsProduct({{128}, {28}, {0, 30, 50, 70}, {0}})
    ->ArgsProduct({{256}, {14}, {0, 30, 50, 70}, {0}})
    ->ArgsProduct({{512}, {7}, {0, 30, 50, 70}, {0}})
    ->ArgsProduct({{64}, {14, 7}, {0, 30, 50, 70, 78, 84}, {0}})
    ->ArgsProduct({{64}, {14, 7}, {70}, {16}})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
