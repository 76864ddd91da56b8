// The banded 1×1 conv → depthwise conv driver (engine/kernels/conv1x1_dwconv.h) against the two
// stages run one after the other (f32_gemm into the whole intermediate, then f32_dwconv), on the
// inverted-bottleneck shapes of MobileNetV2 and EfficientNet-B0. Counter "GFLOP/s" = 2·(1×1 MACs
// + depthwise MACs) per second / 1e9; compare the two benchmarks of one shape in one process.
//
//   xnn_kernel_bench --benchmark_filter=conv1x1_dwconv --benchmark_min_time=0.2
//
// Arguments: input channels, expanded channels, input height = width, depthwise kernel, stride.
// The driver needs the AVX-512 depthwise kernel; elsewhere the banded benchmark is skipped.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "engine/bench/bench_data.h"
#include "engine/kernels/conv1x1_dwconv.h"

namespace {

using namespace xnn::kernels;

using xnn::bench::random_floats;

struct PairData {
  DepthwiseParams p;
  int64_t cin;
  std::vector<float> x, w1, b1, wd, bd, mid, y;
  PackedA packed;
  explicit PairData(const benchmark::State& state) {
    cin = state.range(0);
    const int64_t c = state.range(1), h = state.range(2), k = state.range(3), s = state.range(4);
    const int64_t o = (h + 2 * (k / 2) - k) / s + 1;
    p = DepthwiseParams{c, h, h, o, o, k, s, k / 2, k / 2};
    x = random_floats(static_cast<size_t>(cin * h * h), 1);
    w1 = random_floats(static_cast<size_t>(c * cin), 2);
    b1 = random_floats(static_cast<size_t>(c), 3);
    wd = random_floats(static_cast<size_t>(c * k * k), 4);
    bd = random_floats(static_cast<size_t>(c), 5);
    mid.resize(static_cast<size_t>(c * h * h));
    y.resize(static_cast<size_t>(c * o * o));
    packed = PackedA(c, cin, MatrixRef{w1.data(), cin, 1}, Isa::kAvx2);
  }
  double gflop() const {
    return 2e-9 * static_cast<double>(p.channels) *
           (static_cast<double>(cin * p.in_h * p.in_w) + static_cast<double>(p.out_h * p.out_w * p.kernel * p.kernel));
  }
};

const Activation kRelu6 = Activation::clip(0.0f, 6.0f);

void BM_f32_conv1x1_dwconv_two_stages(benchmark::State& state) {
  PairData d(state);
  const GemmEpilogue ep{d.b1.data(), nullptr, 0, kRelu6};
  const int64_t plane = d.p.in_h * d.p.in_w;
  for (auto _ : state) {
    f32_gemm(d.packed, plane, MatrixRef{d.x.data(), plane, 1}, d.mid.data(), plane, ep, nullptr);
    f32_dwconv(d.p, d.mid.data(), d.wd.data(), d.bd.data(), nullptr, kRelu6, d.y.data(), nullptr, Isa::kAvx2);
    benchmark::DoNotOptimize(d.y.data());
    benchmark::ClobberMemory();
  }
  state.counters["GFLOP/s"] = benchmark::Counter(d.gflop(), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_f32_conv1x1_dwconv_banded(benchmark::State& state) {
  PairData d(state);
  if (!conv1x1_dwconv_supported(d.packed, d.p, Isa::kAvx2)) {
    state.SkipWithError("needs the AVX-512 depthwise kernel");
    return;
  }
  const Conv1x1Stage expand{&d.packed, d.b1.data(), kRelu6};
  const DwconvStage depthwise{d.p, d.wd.data(), d.bd.data(), nullptr, kRelu6};
  for (auto _ : state) {
    f32_conv1x1_dwconv(expand, depthwise, d.x.data(), d.y.data(), nullptr);
    benchmark::DoNotOptimize(d.y.data());
    benchmark::ClobberMemory();
  }
  state.counters["GFLOP/s"] = benchmark::Counter(d.gflop(), benchmark::Counter::kIsIterationInvariantRate);
}

// MobileNetV2 features.2 (and EfficientNet-B0's first MBConv6) at 112x112 stride 2, the same at
// stride 1, then 56x56 and 28x28 expansions (below the session's 4 MB threshold) and a 5x5 one.
void bottleneck_shapes(benchmark::internal::Benchmark* b) {
  b->Args({16, 96, 112, 3, 2})->Args({16, 96, 112, 3, 1})->Args({24, 144, 56, 3, 1})->Args({24, 144, 56, 5, 2});
  b->Args({32, 192, 28, 3, 1});
}

BENCHMARK(BM_f32_conv1x1_dwconv_two_stages)->Apply(bottleneck_shapes);
BENCHMARK(BM_f32_conv1x1_dwconv_banded)->Apply(bottleneck_shapes);

}  // namespace
