// Weight-only fully connected layers (row-wise 4/8-bit, k-means codebook 2/4/8-bit) beside the
// fp32 GEMV, so one run gives the ratios for memory-bound batch-1 layers:
//
//   xnn_kernel_bench --benchmark_filter='rowq|codebook|f32_gemv'
//
//   BM_f32_gemv    fp32 weights (f32_gemv_4x8__avx2)
//   BM_rowq_gemm/8 and /4   row-wise 8- and 4-bit codes dequantised on the fly (f32_rowq{8,4}_gemm)
//   BM_codebook{8,4,2}_gemm k-means indices looked up on the fly (f32_cb{8,4,2}_gemm: a gather,
//                           two permutes or one permute per 8 weights)
// Args: rows (outputs), K (inputs), M (batch rows) for rowq. Counter "GB/s" is weight bytes read
// per second; "GFLOP/s" counts 2 flops per multiply-add.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "engine/bench/bench_data.h"
#include "engine/kernels/codebook.h"
#include "engine/kernels/gemv.h"
#include "engine/kernels/row_quantized.h"

namespace {

using xnn::kernels::Isa;

using xnn::bench::random_floats;

void BM_f32_gemv(benchmark::State& state) {
  const int64_t rows = state.range(0), k = state.range(1);
  const auto w = random_floats(static_cast<size_t>(rows * k), 1), x = random_floats(static_cast<size_t>(k), 2);
  std::vector<float> y(static_cast<size_t>(rows));
  for (auto _ : state) {
    xnn::kernels::f32_gemv(rows, k, w.data(), k, x.data(), nullptr, {}, y.data(), nullptr, xnn::kernels::best_isa());
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["GB/s"] = benchmark::Counter(4.0 * double(rows * k), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GFLOP/s"] = benchmark::Counter(2e-9 * double(rows * k), benchmark::Counter::kIsIterationInvariantRate);
}

void run_rowq(benchmark::State& state, int bits) {
  const int64_t rows = state.range(0), k = state.range(1), m = state.range(2);
  const int64_t row_bytes = xnn::kernels::row_quantized_bytes(k, bits);
  std::mt19937 rng(3);
  std::vector<uint8_t> codes(static_cast<size_t>(rows * row_bytes));
  for (uint8_t& c : codes) c = static_cast<uint8_t>(rng());
  const auto scale = random_floats(static_cast<size_t>(rows), 4), offset = random_floats(static_cast<size_t>(rows), 5);
  const auto a = random_floats(static_cast<size_t>(m * k), 6);
  std::vector<float> y(static_cast<size_t>(m * rows));
  const xnn::kernels::RowQuantizedWeights w{codes.data(), bits, rows, k, row_bytes, scale.data(), offset.data()};
  for (auto _ : state) {
    xnn::kernels::f32_rowq_gemm(a.data(), m, w, nullptr, y.data(), nullptr, xnn::kernels::best_isa());
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["GB/s"] = benchmark::Counter(double(rows * row_bytes), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GFLOP/s"] = benchmark::Counter(2e-9 * double(m * rows * k), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_rowq8_gemm(benchmark::State& state) { run_rowq(state, 8); }
void BM_rowq4_gemm(benchmark::State& state) { run_rowq(state, 4); }

void run_codebook(benchmark::State& state, int bits) {
  const int64_t rows = state.range(0), k = state.range(1), m = state.range(2);
  const int64_t row_bytes = xnn::kernels::codebook_row_bytes(k, bits);
  std::mt19937 rng(3);
  std::vector<uint8_t> codes(static_cast<size_t>(rows * row_bytes));
  for (uint8_t& c : codes) c = static_cast<uint8_t>(rng());  // every packed code < 2^bits
  const auto centroids = random_floats(size_t{1} << bits, 4);
  const auto a = random_floats(static_cast<size_t>(m * k), 6);
  std::vector<float> y(static_cast<size_t>(m * rows));
  const xnn::kernels::CodebookWeights w{codes.data(), bits, rows, k, row_bytes, centroids.data(),
                                        static_cast<int64_t>(centroids.size())};
  for (auto _ : state) {
    xnn::kernels::f32_codebook_gemm(a.data(), m, w, nullptr, y.data(), nullptr, xnn::kernels::best_isa());
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["GB/s"] = benchmark::Counter(double(rows * row_bytes), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GFLOP/s"] = benchmark::Counter(2e-9 * double(m * rows * k), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_codebook8_gemm(benchmark::State& state) { run_codebook(state, 8); }
void BM_codebook4_gemm(benchmark::State& state) { run_codebook(state, 4); }
void BM_codebook2_gemm(benchmark::State& state) { run_codebook(state, 2); }

// A 4096x4096 layer (64 MiB fp32) is far beyond the caches: reading weights dominates.
BENCHMARK(BM_f32_gemv)->Args({1024, 1024})->Args({4096, 4096})->Args({300, 784});
BENCHMARK(BM_rowq8_gemm)->Args({1024, 1024, 1})->Args({4096, 4096, 1})->Args({300, 784, 1})->Args({4096, 4096, 4});
BENCHMARK(BM_rowq4_gemm)->Args({1024, 1024, 1})->Args({4096, 4096, 1})->Args({300, 784, 1})->Args({4096, 4096, 4});
BENCHMARK(BM_codebook8_gemm)->Args({1024, 1024, 1})->Args({4096, 4096, 1})->Args({300, 784, 1})->Args({4096, 4096, 4});
BENCHMARK(BM_codebook4_gemm)->Args({1024, 1024, 1})->Args({4096, 4096, 1})->Args({300, 784, 1})->Args({4096, 4096, 4});
BENCHMARK(BM_codebook2_gemm)->Args({1024, 1024, 1})->Args({4096, 4096, 1})->Args({300, 784, 1})->Args({4096, 4096, 4});

}  // namespace
