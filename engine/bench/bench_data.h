// Inputs shared by the kernel micro-benchmarks (engine/bench/*_bench.cpp).
#pragma once
#include <cstddef>
#include <random>
#include <vector>

namespace xnn::bench {

// n floats uniform in [-1, 1), reproducible from the seed.
inline std::vector<float> random_floats(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

}  // namespace xnn::bench
