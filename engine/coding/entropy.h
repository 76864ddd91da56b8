// Order-0 statistics of a symbol stream: the histogram and its empirical Shannon entropy, the
// bound the entropy coders (huffman.h, rans.h) are measured against.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace xnn::coding {

// counts[s] = occurrences of s; every symbol must be < alphabet (xnn::Error otherwise).
std::vector<uint64_t> symbol_histogram(std::span<const uint16_t> symbols, uint32_t alphabet);
// sum over s of counts[s] * log2(total / counts[s]): the fewest bits any order-0 code can use
// for the stream (excluding the cost of describing the distribution).
double shannon_entropy_bits(std::span<const uint64_t> counts);
inline double shannon_entropy_bits(std::span<const uint16_t> symbols, uint32_t alphabet) {
  const std::vector<uint64_t> counts = symbol_histogram(symbols, alphabet);
  return shannon_entropy_bits(std::span<const uint64_t>(counts));
}

}  // namespace xnn::coding
