// Compile-time unrolling for micro-kernels: unroll<N>(f) calls f(std::integral_constant<int, I>{})
// for I = 0..N-1, in order.
//
// Why not `#pragma GCC unroll`: GCC unrolls such loops late (on RTL), after scalar replacement of
// aggregates, so an accumulator array indexed by the loop variable stays in memory and the kernel
// stores and reloads its accumulators every iteration (seen in qs8_gemm_6x16c4__avxvnni: spills
// in the inner loop, 55-60% of the vpdpbusd peak). With constant indices the array becomes
// registers.
#pragma once
#include <type_traits>
#include <utility>

namespace xnn::kernels {

template <int N, typename F>
[[gnu::always_inline]] inline void unroll(F&& f) {
  [&]<int... I>(std::integer_sequence<int, I...>) [[gnu::always_inline]] {
    (f(std::integral_constant<int, I>{}), ...);
  }(std::make_integer_sequence<int, N>{});
}

}  // namespace xnn::kernels
