// Training-path kernels (engine/kernels/training_kernels.h) on the activation sizes of the
// small Fashion-MNIST CNN at batch 128: BatchNorm passes over [N][C][inner] walked channel by
// channel (as the training BatchNorm does), ReLU backward and the 2×2 max pool with argmax.
// Counter "GB/s" = bytes read + written per second.
//
//   xnn_kernel_bench --benchmark_filter=BM_train_ --benchmark_min_time=0.2
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "engine/kernels/training_kernels.h"

namespace {

using xnn::kernels::Isa;

std::vector<float> random_floats(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

Isa isa_arg(int64_t a) { return a ? Isa::kAvx2 : Isa::kScalar; }

// args: C, inner (= H·W), isa
void BM_train_bn_forward(benchmark::State& state) {
  const int64_t n = 128, c = state.range(0), inner = state.range(1);
  const Isa isa = isa_arg(state.range(2));
  const std::vector<float> x = random_floats(static_cast<size_t>(n * c * inner), 1);
  std::vector<float> y(x.size());
  for (auto _ : state) {
    for (int64_t ch = 0; ch < c; ++ch) {
      double s1 = 0, s2 = 0;
      for (int64_t i = 0; i < n; ++i) {
        float a = 0, b = 0;
        xnn::kernels::f32_shifted_sums(x.data() + (i * c + ch) * inner, inner, 0.1f, &a, &b, isa);
        s1 += a, s2 += b;
      }
      const float scale = static_cast<float>(1.0 / (1.0 + s2 * 1e-9)), shift = static_cast<float>(s1 * 1e-9);
      for (int64_t i = 0; i < n; ++i)
        xnn::kernels::f32_scale_shift(x.data() + (i * c + ch) * inner, inner, scale, shift, true,
                                      y.data() + (i * c + ch) * inner, isa);
    }
    benchmark::ClobberMemory();
  }
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(x.size() * 12), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_train_bn_forward)->Args({32, 784, 0})->Args({32, 784, 1})->Args({64, 196, 1})->Unit(benchmark::kMillisecond);

void BM_train_bn_backward(benchmark::State& state) {
  const int64_t n = 128, c = state.range(0), inner = state.range(1);
  const Isa isa = isa_arg(state.range(2));
  const std::vector<float> x = random_floats(static_cast<size_t>(n * c * inner), 1);
  const std::vector<float> dy = random_floats(x.size(), 2), r = random_floats(x.size(), 3);
  std::vector<float> dx(x.size());
  for (auto _ : state) {
    for (int64_t ch = 0; ch < c; ++ch) {
      double s1 = 0, s2 = 0;
      for (int64_t i = 0; i < n; ++i) {
        const int64_t off = (i * c + ch) * inner;
        float a = 0, b = 0;
        xnn::kernels::f32_bn_grad_sums(x.data() + off, dy.data() + off, r.data() + off, inner, 0.1f, &a, &b, isa);
        s1 += a, s2 += b;
      }
      for (int64_t i = 0; i < n; ++i) {
        const int64_t off = (i * c + ch) * inner;
        xnn::kernels::f32_bn_grad_apply(x.data() + off, dy.data() + off, r.data() + off, inner, 0.1f, 1.0f,
                                        static_cast<float>(s1 * 1e-9), static_cast<float>(s2 * 1e-9), dx.data() + off,
                                        isa);
      }
    }
    benchmark::ClobberMemory();
  }
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(x.size() * 28), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_train_bn_backward)->Args({32, 784, 0})->Args({32, 784, 1})->Args({64, 196, 1})->Unit(benchmark::kMillisecond);

// args: planes (N·C), input H = W, isa
void BM_train_maxpool2x2(benchmark::State& state) {
  const int64_t planes = state.range(0), h = state.range(1), oh = h / 2;
  const Isa isa = isa_arg(state.range(2));
  const std::vector<float> x = random_floats(static_cast<size_t>(planes * h * h), 1);
  std::vector<float> y(static_cast<size_t>(planes * oh * oh)), dx(x.size());
  std::vector<uint8_t> idx(y.size());
  for (auto _ : state) {
    for (int64_t p = 0; p < planes; ++p)
      for (int64_t oy = 0; oy < oh; ++oy) {
        const float* r0 = x.data() + (p * h + 2 * oy) * h;
        xnn::kernels::f32_maxpool2x2_argmax_row(r0, r0 + h, oh, y.data() + (p * oh + oy) * oh,
                                                idx.data() + (p * oh + oy) * oh, isa);
      }
    for (int64_t p = 0; p < planes; ++p)
      for (int64_t oy = 0; oy < oh; ++oy) {
        float* d0 = dx.data() + (p * h + 2 * oy) * h;
        xnn::kernels::f32_maxpool2x2_grad_row(y.data() + (p * oh + oy) * oh, idx.data() + (p * oh + oy) * oh, oh, d0,
                                              d0 + h, isa);
      }
    benchmark::ClobberMemory();
  }
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(x.size() * 4 * 2 + y.size() * 10),
                                              benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_train_maxpool2x2)->Args({128 * 32, 28, 0})->Args({128 * 32, 28, 1})->Args({128 * 64, 14, 1})->Unit(benchmark::kMillisecond);

}  // namespace
