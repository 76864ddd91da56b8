#include "engine/coding/entropy.h"

#include <cmath>
#include <string>

#include "engine/core/error.h"

namespace xnn::coding {

std::vector<uint64_t> symbol_histogram(std::span<const uint16_t> symbols, uint32_t alphabet) {
  std::vector<uint64_t> counts(alphabet, 0);
  for (uint16_t s : symbols) {
    if (s >= alphabet) {
      throw Error("symbol " + std::to_string(s) + " outside the alphabet of " + std::to_string(alphabet) + " symbols");
    }
    ++counts[s];
  }
  return counts;
}

double shannon_entropy_bits(std::span<const uint64_t> counts) {
  uint64_t total = 0;
  for (uint64_t c : counts) total += c;
  if (total == 0) return 0.0;
  double bits = 0.0;
  const double n = static_cast<double>(total);
  for (uint64_t c : counts) {
    if (c > 0) bits += static_cast<double>(c) * std::log2(n / static_cast<double>(c));
  }
  return bits;
}

}  // namespace xnn::coding
