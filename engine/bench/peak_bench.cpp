// This CPU's FP32 FMA peak, measured: 12 independent 8-lane FMA chains (enough to cover FMA
// latency x throughput on current x86 cores), so the loop is bound by FMA issue only. The
// peer comparison and the README report achieved GFLOP/s against this (and against the
// formula cores x 2 FMA pipes x 8 lanes x 2 flops x clock).
#include <benchmark/benchmark.h>

#include "engine/kernels/cpu_features.h"

#if defined(__x86_64__)
#include <immintrin.h>

namespace {

// Written in assembly: compilers reorder or spill intrinsic-based versions of this loop.
__attribute__((target("avx2,fma"))) void fma_chains(int64_t iterations) {
  __asm__ volatile(
      "vxorps %%ymm14, %%ymm14, %%ymm14\n"
      "vxorps %%ymm15, %%ymm15, %%ymm15\n"
      "1:\n"
      "vfmadd231ps %%ymm14, %%ymm15, %%ymm0\n"
      "vfmadd231ps %%ymm14, %%ymm15, %%ymm1\n"
      "vfmadd231ps %%ymm14, %%ymm15, %%ymm2\n"
      "vfmadd231ps %%ymm14, %%ymm15, %%ymm3\n"
      "vfmadd231ps %%ymm14, %%ymm15, %%ymm4\n"
      "vfmadd231ps %%ymm14, %%ymm15, %%ymm5\n"
      "vfmadd231ps %%ymm14, %%ymm15, %%ymm6\n"
      "vfmadd231ps %%ymm14, %%ymm15, %%ymm7\n"
      "vfmadd231ps %%ymm14, %%ymm15, %%ymm8\n"
      "vfmadd231ps %%ymm14, %%ymm15, %%ymm9\n"
      "vfmadd231ps %%ymm14, %%ymm15, %%ymm10\n"
      "vfmadd231ps %%ymm14, %%ymm15, %%ymm11\n"
      "dec %0\n"
      "jnz 1b\n"
      "vzeroupper\n"
      : "+r"(iterations)
      :
      : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm14",
        "xmm15", "cc");
}

void BM_f32_fma_peak__avx2(benchmark::State& state) {
  if (!xnn::kernels::isa_supported(xnn::kernels::Isa::kAvx2)) {
    state.SkipWithError("AVX2+FMA not supported");
    return;
  }
  const int64_t iterations = 1 << 20;
  for (auto _ : state) fma_chains(iterations);
  // 12 chains x 8 lanes x 2 flops per iteration.
  state.counters["GFLOP/s"] = benchmark::Counter(static_cast<double>(iterations) * 12 * 8 * 2 * 1e-9,
                                                 benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_f32_fma_peak__avx2)->Unit(benchmark::kMillisecond)->MinTime(0.5);

}  // namespace
#endif
