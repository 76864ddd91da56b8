// Sparse vs dense kernels for pruned layers: what the CPU backend runs for a 1×1 convolution or
// a linear layer with dense weights (f32_gemm / f32_gemv) against the sparse kernels
// (f32_spmm / f32_spmv) at 50..95% zeros. Counter "GFLOP/s" counts the DENSE work (2·M·N·K),
// so its ratio sparse/dense is the speedup directly.
//
//   xnn_kernel_bench --benchmark_filter='BM_(dense|sparse|sliced)_' --benchmark_min_time=0.2
//       --benchmark_repetitions=3 --benchmark_enable_random_interleaving=true   (one command)
//
// Args: conv1x1 {Cout, H·W, Cin[, zeros %]}; linear {M (batch), K, N[, zeros %]}.
// Shapes: MobileNet-like 1×1 convolutions 56²×64→64, 28²×128→128, 14²×256→256, 7²×512→512;
// LeNet-300-100's first layer (784→300) at batch 1 and 64; 1024→1024 and 4096→4096 (a 64 MB
// AlexNet/VGG-size classifier layer whose dense GEMV streams from DRAM) at batch 1.
// The measured ratios and the sparsity thresholds they justify are in the comment at the top of
// engine/backends/cpu/sparse_cpu.cpp (kMinSparsity*).
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "engine/core/aligned_vector.h"
#include "engine/kernels/gemm.h"
#include "engine/kernels/gemv.h"
#include "engine/kernels/scratch.h"
#include "engine/kernels/spmm.h"
#include "engine/kernels/spmv_sliced.h"
#include "engine/kernels/transpose.h"

namespace {

using namespace xnn::kernels;

// Weights and activations start on a cache line, as the backend's tensors do (tensor.h): the
// dense GEMV streams W with full-width loads too, and is measured as the backend runs it.
using Floats = xnn::AlignedVector<float>;

Floats weights(int64_t count, double zeros, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  Floats v(static_cast<size_t>(count));
  for (float& x : v) x = u(rng) < zeros ? 0.0f : dist(rng);
  return v;
}

void set_rate(benchmark::State& state, int64_t m, int64_t n, int64_t k) {
  state.counters["GFLOP/s"] = benchmark::Counter(2e-9 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k),
                                                 benchmark::Counter::kIsIterationInvariantRate);
}

// 1×1 conv: Y[Cout × HW] = relu(W[Cout × Cin] · X[Cin × HW] + b).
void BM_dense_conv1x1(benchmark::State& state) {
  const int64_t cout = state.range(0), hw = state.range(1), cin = state.range(2);
  const Floats w = weights(cout * cin, 0.0, 1), x = weights(cin * hw, 0.0, 2), b = weights(cout, 0.0, 3);
  Floats y(static_cast<size_t>(cout * hw));
  const PackedA pa(cout, cin, MatrixRef{w.data(), cin, 1}, best_isa());
  const GemmEpilogue ep{b.data(), nullptr, 0, Activation::relu()};
  for (auto _ : state) {
    f32_gemm(pa, hw, MatrixRef{x.data(), hw, 1}, y.data(), hw, ep, nullptr);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  set_rate(state, cout, hw, cin);
}

void BM_sparse_conv1x1(benchmark::State& state) {
  const int64_t cout = state.range(0), hw = state.range(1), cin = state.range(2);
  const double zeros = static_cast<double>(state.range(3)) / 100.0;
  const Floats w = weights(cout * cin, zeros, 1), x = weights(cin * hw, 0.0, 2), b = weights(cout, 0.0, 3);
  Floats y(static_cast<size_t>(cout * hw));
  const SparseWeights sw(cout, cin, w.data(), cin, hw);
  const auto tail = spmm_sliced_tail_form(cout, cin, w.data(), cin, hw, best_isa());  // as the backend
  SpmmEpilogue ep;
  ep.bias = b.data();
  ep.act = Activation::relu();
  for (auto _ : state) {
    f32_spmm(sw, hw, x.data(), y.data(), hw, ep, nullptr, best_isa(), tail ? &*tail : nullptr);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  set_rate(state, cout, hw, cin);
}

// Linear layer Y[M × N] = relu(X[M × K] · Wᵀ + b) as the backend runs it: batch 1 a GEMV, else
// Yᵀ = W · Xᵀ with W packed (dense) or sparse over Xᵀ (transposed into scratch), then Yᵀ → Y.
void BM_dense_linear(benchmark::State& state) {
  const int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  const Floats w = weights(n * k, 0.0, 1), x = weights(m * k, 0.0, 2), b = weights(n, 0.0, 3);
  Floats y(static_cast<size_t>(m * n)), yt(static_cast<size_t>(m * n));
  const PackedA pa(n, k, MatrixRef{w.data(), k, 1}, best_isa());
  const GemmEpilogue ep{b.data(), nullptr, 0, Activation::relu()};
  for (auto _ : state) {
    if (m == 1) {
      f32_gemv(n, k, w.data(), k, x.data(), b.data(), Activation::relu(), y.data(), nullptr, best_isa());
    } else {
      f32_gemm(pa, m, MatrixRef{x.data(), 1, k}, yt.data(), m, ep, nullptr);
      f32_transpose(n, m, yt.data(), m, y.data(), n, best_isa());
    }
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  set_rate(state, m, n, k);
}

void BM_sparse_linear(benchmark::State& state) {
  const int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  const double zeros = static_cast<double>(state.range(3)) / 100.0;
  const Floats w = weights(n * k, zeros, 1), x = weights(m * k, 0.0, 2), b = weights(n, 0.0, 3);
  Floats y(static_cast<size_t>(m * n)), yt(static_cast<size_t>(m * n)), xt(static_cast<size_t>(m * k));
  const SparseWeights sw(n, k, w.data(), k, m);
  const auto tail = m > 1 ? spmm_sliced_tail_form(n, k, w.data(), k, m, best_isa()) : std::nullopt;  // as the backend
  SpmmEpilogue ep;
  ep.bias = b.data();
  ep.act = Activation::relu();
  for (auto _ : state) {
    if (m == 1) {
      f32_spmv(sw, x.data(), b.data(), Activation::relu(), y.data(), nullptr, best_isa());
    } else {
      f32_transpose(m, k, x.data(), k, xt.data(), m, best_isa());
      f32_spmm(sw, m, xt.data(), yt.data(), m, ep, nullptr, best_isa(), tail ? &*tail : nullptr);
      f32_transpose(n, m, yt.data(), m, y.data(), n, best_isa());
    }
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  set_rate(state, m, n, k);
}

// Batch 1 in the permute format (spmv_sliced.h) of this CPU's kernel (16x32 with AVX-512, 8x16
// with AVX2; XNN_ISA=avx2 measures the 8x16 one on an AVX-512 CPU), what the backend takes.
void BM_sliced_linear(benchmark::State& state) {
  const int64_t k = state.range(1), n = state.range(2);
  const double zeros = static_cast<double>(state.range(3)) / 100.0;
  if (!spmv_sliced_fast()) {
    state.SkipWithError("needs AVX2 (spmv_sliced_fast)");
    return;
  }
  const Floats w = weights(n * k, zeros, 1), x = weights(k, 0.0, 2), b = weights(n, 0.0, 3);
  Floats y(static_cast<size_t>(n));
  const SlicedSparseWeights sw(n, k, w.data(), k, spmv_sliced_shape());
  state.SetLabel(spmv_sliced_kernel_name(sw.shape()));
  for (auto _ : state) {
    f32_spmv_sliced(sw, x.data(), b.data(), Activation::relu(), y.data(), nullptr);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  set_rate(state, 1, n, k);
}

const std::vector<std::vector<int64_t>> kConvShapes = {{64, 3136, 64}, {128, 784, 128}, {256, 196, 256}, {512, 49, 512}};
const std::vector<std::vector<int64_t>> kLinearShapes = {{1, 784, 300}, {64, 784, 300}, {1, 1024, 1024},
                                                           {1, 4096, 4096}};
const int64_t kZeros[] = {50, 70, 80, 90, 95};

void dense_args(benchmark::internal::Benchmark* b, const std::vector<std::vector<int64_t>>& shapes) {
  for (const auto& s : shapes) b->Args(s);
}
void sparse_args(benchmark::internal::Benchmark* b, const std::vector<std::vector<int64_t>>& shapes) {
  for (const auto& s : shapes) {
    for (int64_t z : kZeros) b->Args({s[0], s[1], s[2], z});
  }
}

BENCHMARK(BM_dense_conv1x1)->Apply([](auto* b) { dense_args(b, kConvShapes); });
BENCHMARK(BM_sparse_conv1x1)->Apply([](auto* b) { sparse_args(b, kConvShapes); });
BENCHMARK(BM_dense_linear)->Apply([](auto* b) { dense_args(b, kLinearShapes); });
BENCHMARK(BM_sparse_linear)->Apply([](auto* b) { sparse_args(b, kLinearShapes); });
BENCHMARK(BM_sliced_linear)->Apply([](auto* b) {
  std::vector<std::vector<int64_t>> batch1;
  for (const auto& s : kLinearShapes)
    if (s[0] == 1) batch1.push_back(s);
  sparse_args(b, batch1);
});

}  // namespace
