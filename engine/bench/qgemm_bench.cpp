// Int8 kernel micro-benchmarks beside their fp32 counterparts, so one run gives the ratios:
//
//   xnn_kernel_bench --benchmark_filter='gemm|dw'
//
// Counter "GOP/s" = 2·(multiply-adds) per second / 1e9, the same count as the fp32 "GFLOP/s".
//   BM_qs8_gemm       full-range int8 weights (qs8_gemm_6x16c2__avx2, exact 16-bit path)
//   BM_qs8_gemm_w7    7-bit weights, |w| <= 64 (qs8_gemm_4x16c4__avx2, vpmaddubsw)
//   BM_qs8_gemm_2t    full-range weights, 2 threads (wall time)
//   BM_qs8_dwconv / BM_f32_dwconv   MobileNetV2 depthwise layers at 224² (3×3, stride 1 and 2)
// GEMM shapes are those of gemm_bench.cpp (M = output channels, N = pixels, K = Cin·kh·kw).
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "engine/core/thread_pool.h"
#include "engine/kernels/depthwise.h"
#include "engine/kernels/qdepthwise.h"
#include "engine/kernels/qgemm.h"

namespace {

using xnn::kernels::Isa;

template <typename T>
std::vector<T> random_ints(size_t n, int lo, int hi, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(lo, hi);
  std::vector<T> v(n);
  for (T& x : v) x = static_cast<T>(dist(rng));
  return v;
}

void set_ops_counter(benchmark::State& state, double multiply_adds) {
  state.counters["GOP/s"] = benchmark::Counter(2e-9 * multiply_adds, benchmark::Counter::kIsIterationInvariantRate);
}

void run_qgemm_bench(benchmark::State& state, int threads, int weight_bound) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  const auto w = random_ints<int8_t>(static_cast<size_t>(m * k), -weight_bound, weight_bound, 1);
  const auto x = random_ints<uint8_t>(static_cast<size_t>(k * n), 0, 255, 2);
  const auto bias = random_ints<int32_t>(static_cast<size_t>(m), -5000, 5000, 3);
  const std::vector<float> mult(static_cast<size_t>(m), 0.0005f);
  std::vector<uint8_t> y(static_cast<size_t>(m * n));
  const xnn::kernels::PackedQs8Weights packed(m, k, w.data(), k, bias.data(), xnn::kernels::best_isa());
  xnn::kernels::QRequant rq;
  rq.multiplier = mult.data();
  rq.zero_point = 10;
  rq.qmin = 10;  // fused Relu, as a convolution would run it
  xnn::ThreadPool pool(threads);
  xnn::ThreadPool* p = threads > 1 ? &pool : nullptr;
  for (auto _ : state) {
    xnn::kernels::qs8_gemm(packed, n, x.data(), n, 128, rq, y.data(), n, p);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.SetLabel(packed.kernel_name());
  set_ops_counter(state, static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k));
}

void BM_qs8_gemm(benchmark::State& state) { run_qgemm_bench(state, 1, 127); }
void BM_qs8_gemm_w7(benchmark::State& state) { run_qgemm_bench(state, 1, 64); }
void BM_qs8_gemm_2t(benchmark::State& state) { run_qgemm_bench(state, 2, 127); }

void resnet_shapes(benchmark::internal::Benchmark* b) {
  b->Args({64, 3136, 576})->Args({128, 784, 1152})->Args({256, 196, 2304})->Args({512, 49, 4608});
}
void mobilenet_shapes(benchmark::internal::Benchmark* b) {
  b->Args({144, 3136, 24})->Args({24, 3136, 144})->Args({16, 12544, 32})->Args({96, 12544, 16})->Args({160, 49, 576});
}

BENCHMARK(BM_qs8_gemm)->Apply(resnet_shapes)->Apply(mobilenet_shapes);
BENCHMARK(BM_qs8_gemm_w7)->Apply(resnet_shapes)->Apply(mobilenet_shapes);
BENCHMARK(BM_qs8_gemm_2t)->Apply(resnet_shapes)->UseRealTime();

// Depthwise: args = channels, input size, kernel, stride (padding (kernel − 1) / 2).
void dw_shapes(benchmark::internal::Benchmark* b) {
  // MobileNetV2 at 224²: 32@112 s1, 96@112 s2, 144@56 s1, 144@56 s2, 192@28 s1, 576@14 s1, 960@7 s1.
  b->Args({32, 112, 3, 1})->Args({96, 112, 3, 2})->Args({144, 56, 3, 1})->Args({144, 56, 3, 2});
  b->Args({192, 28, 3, 1})->Args({576, 14, 3, 1})->Args({960, 7, 3, 1})->Args({96, 56, 5, 1});
}

struct DwShape {
  int64_t c, size, kernel, stride, out;
  explicit DwShape(const benchmark::State& s)
      : c(s.range(0)), size(s.range(1)), kernel(s.range(2)), stride(s.range(3)),
        out((size + 2 * ((kernel - 1) / 2) - kernel) / stride + 1) {}
  double multiply_adds() const { return static_cast<double>(c * out * out * kernel * kernel); }
};

void BM_qs8_dwconv(benchmark::State& state) {
  const DwShape s(state);
  xnn::kernels::DepthwiseParams p;
  p.channels = s.c, p.in_h = p.in_w = s.size, p.out_h = p.out_w = s.out;
  p.kernel = s.kernel, p.stride = s.stride, p.pad_t = p.pad_l = (s.kernel - 1) / 2;
  const auto x = random_ints<uint8_t>(static_cast<size_t>(s.c * s.size * s.size), 0, 255, 1);
  const auto w = random_ints<int8_t>(static_cast<size_t>(s.c * s.kernel * s.kernel), -127, 127, 2);
  const auto bias = random_ints<int32_t>(static_cast<size_t>(s.c), -5000, 5000, 3);
  const std::vector<float> mult(static_cast<size_t>(s.c), 0.002f);
  std::vector<uint8_t> y(static_cast<size_t>(s.c * s.out * s.out));
  xnn::kernels::QRequant rq;
  rq.multiplier = mult.data();
  rq.zero_point = 10;
  rq.qmin = 10;
  const Isa isa = xnn::kernels::best_isa();
  for (auto _ : state) {
    xnn::kernels::qs8_dwconv(p, x.data(), 128, w.data(), bias.data(), rq, y.data(), nullptr, isa);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.SetLabel(xnn::kernels::qs8_dwconv_kernel_name(s.kernel, s.stride, isa));
  set_ops_counter(state, s.multiply_adds());
}

void BM_f32_dwconv(benchmark::State& state) {
  const DwShape s(state);
  xnn::kernels::DepthwiseParams p;
  p.channels = s.c, p.in_h = p.in_w = s.size, p.out_h = p.out_w = s.out;
  p.kernel = s.kernel, p.stride = s.stride, p.pad_t = p.pad_l = (s.kernel - 1) / 2;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(s.c * s.size * s.size)), w(static_cast<size_t>(s.c * s.kernel * s.kernel));
  std::vector<float> bias(static_cast<size_t>(s.c)), y(static_cast<size_t>(s.c * s.out * s.out));
  for (auto* v : {&x, &w, &bias})
    for (float& f : *v) f = d(rng);
  const Isa isa = xnn::kernels::best_isa();
  for (auto _ : state) {
    xnn::kernels::f32_dwconv(p, x.data(), w.data(), bias.data(), nullptr, xnn::kernels::Activation::relu(), y.data(),
                             nullptr, isa);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.SetLabel(xnn::kernels::dwconv_kernel_name(s.kernel, s.stride, isa));
  set_ops_counter(state, s.multiply_adds());
}

BENCHMARK(BM_qs8_dwconv)->Apply(dw_shapes);
BENCHMARK(BM_f32_dwconv)->Apply(dw_shapes);

}  // namespace
