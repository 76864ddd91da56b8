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

// The same 12 chains on zmm (16 lanes), and vpdpbusd on zmm (64 int8 multiply-adds each): some
// AVX-512 CPUs issue one 512-bit FMA per cycle (twice the ymm work per instruction, the same work
// per cycle), others two; the int8 dot product may differ again. Counted as 2 ops per multiply-add.
#define XNN_CHAINS(OP)                                                                                      \
  OP "%%zmm14, %%zmm15, %%zmm0\n" OP "%%zmm14, %%zmm15, %%zmm1\n" OP "%%zmm14, %%zmm15, %%zmm2\n"           \
  OP "%%zmm14, %%zmm15, %%zmm3\n" OP "%%zmm14, %%zmm15, %%zmm4\n" OP "%%zmm14, %%zmm15, %%zmm5\n"           \
  OP "%%zmm14, %%zmm15, %%zmm6\n" OP "%%zmm14, %%zmm15, %%zmm7\n" OP "%%zmm14, %%zmm15, %%zmm8\n"           \
  OP "%%zmm14, %%zmm15, %%zmm9\n" OP "%%zmm14, %%zmm15, %%zmm10\n" OP "%%zmm14, %%zmm15, %%zmm11\n"
#define XNN_CHAIN_LOOP(OP, iterations)                                                                          \
  __asm__ volatile("vpxord %%zmm14, %%zmm14, %%zmm14\n"                                                       \
                   "vpxord %%zmm15, %%zmm15, %%zmm15\n"                                                       \
                   "1:\n" XNN_CHAINS(OP) "dec %0\n"                                                           \
                   "jnz 1b\n"                                                                                 \
                   "vzeroupper\n"                                                                             \
                   : "+r"(iterations)                                                                         \
                   :                                                                                          \
                   : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",   \
                     "xmm11", "xmm14", "xmm15", "cc")

__attribute__((target("avx512f"))) void fma_chains_zmm(int64_t iterations) {
  XNN_CHAIN_LOOP("vfmadd231ps ", iterations);
}
__attribute__((target("avx512f,avx512vnni"))) void dpbusd_chains_zmm(int64_t iterations) {
  XNN_CHAIN_LOOP("vpdpbusd ", iterations);
}
#undef XNN_CHAIN_LOOP
#undef XNN_CHAINS

void run_zmm_peak(benchmark::State& state, void (*chains)(int64_t), double ops_per_lane) {
  const int64_t iterations = 1 << 20;
  for (auto _ : state) chains(iterations);
  state.counters["GOP/s"] = benchmark::Counter(static_cast<double>(iterations) * 12 * 16 * ops_per_lane * 1e-9,
                                               benchmark::Counter::kIsIterationInvariantRate);
}
void BM_f32_fma_peak__avx512(benchmark::State& state) {
  if (!xnn::kernels::avx512_enabled()) return state.SkipWithError("AVX-512 not supported");
  run_zmm_peak(state, fma_chains_zmm, 2.0);
}
void BM_qs8_dpbusd_peak__avx512vnni(benchmark::State& state) {
  if (!xnn::kernels::vnni512_enabled()) return state.SkipWithError("AVX512-VNNI not supported");
  run_zmm_peak(state, dpbusd_chains_zmm, 8.0);  // 4 multiply-adds per 32-bit lane
}
BENCHMARK(BM_f32_fma_peak__avx512)->Unit(benchmark::kMillisecond)->MinTime(0.5);
BENCHMARK(BM_qs8_dpbusd_peak__avx512vnni)->Unit(benchmark::kMillisecond)->MinTime(0.5);

}  // namespace
#endif
