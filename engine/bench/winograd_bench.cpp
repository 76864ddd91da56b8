// Micro-benchmarks of the Winograd 3×3 convolution on ResNet-18's 3×3 layers (cin = cout, pad 1,
// stride 1), single thread. "eff_GFLOP/s" is the direct convolution's work, 2·cout·cin·9·oh·ow,
// over the time taken: the rate a direct convolution would need to match, comparable to the
// core's FP32 peak (AVX2: 2 FMA ports × 8 lanes × 2 flops per cycle).
//
// WinogradBaseline_Im2colGemm is what the selection rule compares against: im2col (the 9·cin ×
// oh·ow column matrix, built per call) and the project's packed f32_gemm with the same epilogue.
// cold_*: caches evicted before every iteration (a layer inside a whole network); rule_*: the
// other shapes behind choose_winograd_tile (few channels; sizes that split into 6×6 tiles).
//
//   build-wino/engine/xnn_kernel_bench --benchmark_filter=Winograd --benchmark_min_time=0.2
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "engine/kernels/gemm.h"
#include "engine/kernels/im2col.h"
#include "engine/kernels/winograd.h"

namespace xnn::kernels {
namespace {

struct Layer {
  int64_t ch, size;
  std::vector<float> input, weights, bias, output;
  explicit Layer(const benchmark::State& state) : ch(state.range(0)), size(state.range(1)) {
    std::mt19937 rng(42);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    input.resize(static_cast<size_t>(ch * size * size));
    for (float& x : input) x = dist(rng);
    weights.resize(static_cast<size_t>(ch * ch * 9));
    for (float& x : weights) x = dist(rng) * 0.05f;
    bias.assign(static_cast<size_t>(ch), 0.1f);
    output.resize(static_cast<size_t>(ch * size * size));
  }
  double flops() const { return 2.0 * static_cast<double>(ch * ch * 9 * size * size); }
};

// Cold caches: in a whole network every layer's weights come from DRAM (ResNet-18's exceed the
// L3 share of one core), which a loop over one layer hides. Evicts them before each iteration.
void evict_caches() {
  static std::vector<float> junk(size_t{64} << 20 >> 2);  // 64 MiB
  float sum = 0;
  for (size_t i = 0; i < junk.size(); i += 16) sum += junk[i];
  benchmark::DoNotOptimize(sum);
}

void set_rate(benchmark::State& state, const Layer& layer) {
  state.counters["eff_GFLOP/s"] =
      benchmark::Counter(layer.flops() * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// Bias + ReLU, the epilogue every benchmark here runs.
GemmEpilogue bias_relu(const Layer& layer) {
  GemmEpilogue ep;
  ep.bias = layer.bias.data();
  ep.act = Activation::relu();
  return ep;
}

// Before a timed iteration of a cold benchmark: evict the caches, untimed.
void evict_if_cold(benchmark::State& state, bool cold) {
  if (!cold) return;
  state.PauseTiming();
  evict_caches();
  state.ResumeTiming();
}

void BM_Winograd(benchmark::State& state, WinogradTile tile, Isa isa, bool cold = false) {
  if (!isa_supported(isa)) {
    state.SkipWithError("ISA not supported");
    return;
  }
  Layer layer(state);
  const WinogradConv3x3 conv(layer.ch, layer.ch, layer.weights.data(), tile, isa);
  const ConvEpilogue ep{layer.bias.data(), nullptr, Activation::relu()};
  for (auto _ : state) {
    evict_if_cold(state, cold);
    conv.run(layer.input.data(), layer.size, layer.size, 1, 1, layer.output.data(), layer.size, layer.size, ep,
             nullptr);
    benchmark::ClobberMemory();
  }
  set_rate(state, layer);
  state.SetLabel(conv.name());
}

void BM_WinogradBaseline_Im2colGemm(benchmark::State& state, Isa isa, bool cold = false) {
  if (!isa_supported(isa)) {
    state.SkipWithError("ISA not supported");
    return;
  }
  Layer layer(state);
  const int64_t ch = layer.ch, s = layer.size, k = ch * 9, n = s * s;
  const PackedA a(ch, k, MatrixRef{layer.weights.data(), k, 1}, isa);
  std::vector<float> cols(static_cast<size_t>(k * n));
  const GemmEpilogue ep = bias_relu(layer);
  for (auto _ : state) {
    evict_if_cold(state, cold);
    for (int64_t c = 0; c < ch; ++c) {
      for (int64_t ky = 0; ky < 3; ++ky) {
        for (int64_t kx = 0; kx < 3; ++kx) {
          // Row (c, ky, kx) of the column matrix is the input plane shifted by (ky - 1, kx - 1).
          float* dst = cols.data() + ((c * 3 + ky) * 3 + kx) * n;
          for (int64_t y = 0; y < s; ++y) {
            float* d = dst + y * s;
            const int64_t iy = y + ky - 1;
            if (iy < 0 || iy >= s) {
              std::memset(d, 0, static_cast<size_t>(s) * sizeof(float));
              continue;
            }
            const float* src = layer.input.data() + (c * s + iy) * s;
            if (kx == 0) {
              d[0] = 0.0f;
              std::memcpy(d + 1, src, static_cast<size_t>(s - 1) * sizeof(float));
            } else if (kx == 1) {
              std::memcpy(d, src, static_cast<size_t>(s) * sizeof(float));
            } else {
              std::memcpy(d, src + 1, static_cast<size_t>(s - 1) * sizeof(float));
              d[s - 1] = 0.0f;
            }
          }
        }
      }
    }
    f32_gemm(a, n, MatrixRef{cols.data(), n, 1}, layer.output.data(), n, ep, nullptr);
    benchmark::ClobberMemory();
  }
  set_rate(state, layer);
  state.SetLabel(gemm_kernel_name(isa));
}

// The im2col + GEMM as the session runs it on AVX-512 CPUs (conv_cpu.cpp): blocks of columns
// sized so a block's panels stay in L2, each gathered straight into the zmm GEMM's 16-wide B
// panels (f32_im2col_panels16__avx512 + f32_gemm_packed_b), no row-major column matrix and no
// packing per call. WinogradBaseline_Im2colGemm/avx2 builds the whole column matrix instead.
void BM_Im2colPanelsGemm(benchmark::State& state, bool cold = false) {
  if (!isa_supported(Isa::kAvx2) || !avx512_enabled()) {
    state.SkipWithError("AVX-512 not supported");
    return;
  }
  Layer layer(state);
  const int64_t ch = layer.ch, s = layer.size, k = ch * 9, n = s * s;
  const PackedA a(ch, k, MatrixRef{layer.weights.data(), k, 1}, Isa::kAvx2, F32GemmKernels::kAvx512);
  const int64_t nb = im2col_block_columns(k, n);  // the session's block width
  std::vector<float> panels(static_cast<size_t>(k * ((nb + 15) / 16 * 16)));
  Im2colGeometry g;
  g.channels = ch, g.in_h = g.in_w = g.out_h = g.out_w = s, g.kernel_h = g.kernel_w = 3, g.pad_t = g.pad_l = 1;
  const GemmEpilogue ep = bias_relu(layer);
  for (auto _ : state) {
    evict_if_cold(state, cold);
    for (int64_t c0 = 0; c0 < n; c0 += nb) {
      const int64_t cols = std::min(nb, n - c0);
      f32_im2col_panels16__avx512(g, layer.input.data(), c0, cols, panels.data());
      f32_gemm_packed_b(a, cols, panels.data(), layer.output.data() + c0, n, ep, nullptr);
    }
    benchmark::ClobberMemory();
  }
  set_rate(state, layer);
  state.SetLabel(a.kernel_name());
}

void resnet_layers(benchmark::internal::Benchmark* b) {
  b->ArgNames({"ch", "hw"});
  for (int64_t ch : {64, 128, 256, 512}) b->Args({ch, 56 * 64 / ch});
}

// Sizes that split evenly into 6×6 tiles, where F(6,3) does 21% fewer multiplications than
// F(4,3) (at 56 and 28 only 9%).
void even_tiles(benchmark::internal::Benchmark* b) {
  b->ArgNames({"ch", "hw"});
  for (int64_t ch : {32, 64, 128}) b->Args({ch, 48});
  b->Args({64, 24});
}

// The other shapes behind the selection rule: few channels, where the transforms' share grows
// (the lower end), and the even sizes above.
void rule_layers(benchmark::internal::Benchmark* b) {
  b->ArgNames({"ch", "hw"});
  for (int64_t ch : {4, 8, 16, 32}) {
    for (int64_t hw : {56, 14}) b->Args({ch, hw});
  }
  even_tiles(b);
}

BENCHMARK_CAPTURE(BM_Winograd, f43_avx2, WinogradTile::kF43, Isa::kAvx2)->Apply(resnet_layers);
BENCHMARK_CAPTURE(BM_Winograd, f63_avx2, WinogradTile::kF63, Isa::kAvx2)->Apply(resnet_layers);
BENCHMARK_CAPTURE(BM_Winograd, f43_scalar, WinogradTile::kF43, Isa::kScalar)->Apply(resnet_layers);
BENCHMARK_CAPTURE(BM_Winograd, f63_scalar, WinogradTile::kF63, Isa::kScalar)->Apply(resnet_layers);
BENCHMARK_CAPTURE(BM_WinogradBaseline_Im2colGemm, avx2, Isa::kAvx2)->Apply(resnet_layers);
BENCHMARK_CAPTURE(BM_WinogradBaseline_Im2colGemm, scalar, Isa::kScalar)->Apply(resnet_layers);
BENCHMARK_CAPTURE(BM_Im2colPanelsGemm, avx512, false)->Apply(resnet_layers);

BENCHMARK_CAPTURE(BM_Winograd, cold_f43_avx2, WinogradTile::kF43, Isa::kAvx2, true)->Apply(resnet_layers);
BENCHMARK_CAPTURE(BM_Winograd, cold_f63_avx2, WinogradTile::kF63, Isa::kAvx2, true)->Apply(resnet_layers);
BENCHMARK_CAPTURE(BM_WinogradBaseline_Im2colGemm, cold_avx2, Isa::kAvx2, true)->Apply(resnet_layers);
BENCHMARK_CAPTURE(BM_Im2colPanelsGemm, cold_avx512, true)->Apply(resnet_layers);

BENCHMARK_CAPTURE(BM_Winograd, rule_cold_f43_avx2, WinogradTile::kF43, Isa::kAvx2, true)->Apply(even_tiles);
BENCHMARK_CAPTURE(BM_Winograd, rule_cold_f63_avx2, WinogradTile::kF63, Isa::kAvx2, true)->Apply(even_tiles);
BENCHMARK_CAPTURE(BM_WinogradBaseline_Im2colGemm, rule_cold_avx2, Isa::kAvx2, true)->Apply(even_tiles);
BENCHMARK_CAPTURE(BM_Winograd, rule_f43_avx2, WinogradTile::kF43, Isa::kAvx2)->Apply(rule_layers);
BENCHMARK_CAPTURE(BM_Winograd, rule_f63_avx2, WinogradTile::kF63, Isa::kAvx2)->Apply(rule_layers);
BENCHMARK_CAPTURE(BM_WinogradBaseline_Im2colGemm, rule_avx2, Isa::kAvx2)->Apply(rule_layers);
BENCHMARK_CAPTURE(BM_Winograd, rule_f43_scalar, WinogradTile::kF43, Isa::kScalar)->Apply(rule_layers);
BENCHMARK_CAPTURE(BM_WinogradBaseline_Im2colGemm, rule_scalar, Isa::kScalar)->Apply(rule_layers);

}  // namespace
}  // namespace xnn::kernels
