// f32_gemm micro-benchmarks: C[M×N] = A[M×K]·B[K×N] with A packed once (weights), B row-major
// (activations), as in 1×1 and im2col convolution. Counter "GFLOP/s" = 2·M·N·K per second / 1e9.
//
//   xnn_kernel_bench --benchmark_filter=BM_f32_gemm --benchmark_min_time=0.2
//
// Shapes (M = output channels, N = output pixels, K = input channels × kernel area):
//   ResNet-18 3×3 convolutions (im2col): 64x3136x576, 128x784x1152, 256x196x2304, 512x49x4608
//   MobileNetV2 1×1 convolutions (expand/project layers): see mobilenet_shapes
//   square: 256, 512, 1024
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "engine/bench/bench_data.h"
#include "engine/core/thread_pool.h"
#include "engine/kernels/gemm.h"

namespace {

using xnn::kernels::f32_gemm;
using xnn::kernels::GemmEpilogue;
using xnn::kernels::Isa;
using xnn::kernels::MatrixRef;
using xnn::kernels::PackedA;

using xnn::bench::random_floats;

void run_gemm_bench(benchmark::State& state, int threads, Isa isa, bool packed_a) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  const std::vector<float> a = random_floats(static_cast<size_t>(m * k), 1);
  const std::vector<float> b = random_floats(static_cast<size_t>(k * n), 2);
  const std::vector<float> bias = random_floats(static_cast<size_t>(m), 3);
  std::vector<float> c(static_cast<size_t>(m * n));
  const MatrixRef aref{a.data(), k, 1}, bref{b.data(), n, 1};
  const PackedA pa(m, k, aref, isa);
  // Bias + Relu: what a fused convolution runs; costs nothing measurable next to the K loop.
  const GemmEpilogue ep{bias.data(), nullptr, 0, xnn::kernels::Activation::relu()};
  xnn::ThreadPool pool(threads);
  xnn::ThreadPool* p = threads > 1 ? &pool : nullptr;
  for (auto _ : state) {
    if (packed_a) {
      f32_gemm(pa, n, bref, c.data(), n, ep, p);
    } else {
      f32_gemm(m, n, k, aref, bref, c.data(), n, ep, p, isa);
    }
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  // Rate counter of per-iteration GFLOP: reported value is GFLOP/s.
  state.counters["GFLOP/s"] =
      benchmark::Counter(2e-9 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k),
                         benchmark::Counter::kIsIterationInvariantRate);
}

void BM_f32_gemm(benchmark::State& state) { run_gemm_bench(state, 1, xnn::kernels::best_isa(), true); }
void BM_f32_gemm_2t(benchmark::State& state) { run_gemm_bench(state, 2, xnn::kernels::best_isa(), true); }
void BM_f32_gemm_unpacked(benchmark::State& state) { run_gemm_bench(state, 1, xnn::kernels::best_isa(), false); }
void BM_f32_gemm_scalar(benchmark::State& state) { run_gemm_bench(state, 1, Isa::kScalar, true); }

void resnet_shapes(benchmark::internal::Benchmark* b) {
  b->Args({64, 3136, 576})->Args({128, 784, 1152})->Args({256, 196, 2304})->Args({512, 49, 4608});
}
void mobilenet_shapes(benchmark::internal::Benchmark* b) {
  // 1×1 convolutions of MobileNetV2 at 224²: expand 24→144 at 56², project 96→24 at 56²,
  // first block's 32→16 at 112², expand 16→96 at 112², 576→160 at 7².
  b->Args({144, 3136, 24})->Args({24, 3136, 144})->Args({16, 12544, 32})->Args({96, 12544, 16})->Args({160, 49, 576});
}
void square_shapes(benchmark::internal::Benchmark* b) {
  b->Args({256, 256, 256})->Args({512, 512, 512})->Args({1024, 1024, 1024});
}

// Single-thread rates use CPU time (steadier on a shared machine); the 2-thread variant must use
// wall time, as its work is spread over the pool's threads.
BENCHMARK(BM_f32_gemm)->Apply(resnet_shapes)->Apply(mobilenet_shapes)->Apply(square_shapes);
BENCHMARK(BM_f32_gemm_2t)->Apply(resnet_shapes)->Apply(square_shapes)->UseRealTime();
BENCHMARK(BM_f32_gemm_unpacked)->Args({512, 512, 512})->Args({64, 3136, 576});
BENCHMARK(BM_f32_gemm_scalar)->Args({256, 256, 256});

}  // namespace
