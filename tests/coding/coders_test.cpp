// Entropy coders (engine/coding): exact round trips of every coder on random, skewed, empty and
// single-symbol streams; the rANS payload within 1% of the Shannon bound; Huffman length limits;
// corrupt and truncated streams give xnn::Error, never a crash.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "engine/coding/entropy.h"
#include "engine/coding/huffman.h"
#include "engine/coding/rans.h"
#include "engine/coding/symbol_stream.h"
#include "engine/core/error.h"

namespace xnn::coding {
namespace {

const SymbolCoder kCoders[] = {SymbolCoder::kFixed, SymbolCoder::kHuffman, SymbolCoder::kRans};

std::vector<uint16_t> geometric_stream(size_t n, double p, uint32_t alphabet, uint32_t seed) {
  std::mt19937 rng(seed);
  std::geometric_distribution<int> dist(p);
  std::vector<uint16_t> out(n);
  for (auto& s : out) s = static_cast<uint16_t>(std::min<int>(dist(rng), static_cast<int>(alphabet) - 1));
  return out;
}

std::vector<uint16_t> uniform_stream(size_t n, uint32_t alphabet, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(0, static_cast<int>(alphabet) - 1);
  std::vector<uint16_t> out(n);
  for (auto& s : out) s = static_cast<uint16_t>(dist(rng));
  return out;
}

void expect_round_trip(const std::vector<uint16_t>& symbols, uint32_t alphabet) {
  for (SymbolCoder coder : kCoders) {
    SCOPED_TRACE(symbol_coder_name(coder));
    const CodedStream c = encode_symbols(symbols, alphabet, coder);
    EXPECT_LE(c.table_bytes, c.bytes.size());
    const auto* data = reinterpret_cast<const uint8_t*>(c.bytes.data());
    EXPECT_EQ(decode_symbols(data, c.bytes.size(), alphabet, symbols.size()), symbols);
  }
}

TEST(Entropy, KnownValues) {
  const std::vector<uint64_t> uniform4 = {5, 5, 5, 5};
  EXPECT_DOUBLE_EQ(shannon_entropy_bits(std::span<const uint64_t>(uniform4)), 40.0);
  const std::vector<uint64_t> one = {0, 7, 0};
  EXPECT_DOUBLE_EQ(shannon_entropy_bits(std::span<const uint64_t>(one)), 0.0);
  const std::vector<uint16_t> s = {0, 0, 0, 1};
  EXPECT_NEAR(shannon_entropy_bits(s, 2), 3 * std::log2(4.0 / 3) + 2, 1e-12);
  EXPECT_THROW(symbol_histogram(s, 1), Error);
}

TEST(Coders, RoundTripRandomAndSkewed) {
  expect_round_trip(uniform_stream(10000, 16, 1), 16);
  expect_round_trip(uniform_stream(777, 256, 2), 256);
  expect_round_trip(uniform_stream(3001, 4096, 3), 4096);
  expect_round_trip(geometric_stream(50000, 0.3, 32, 4), 32);
  expect_round_trip(geometric_stream(20000, 0.95, 256, 5), 256);
  expect_round_trip(uniform_stream(1000, 3, 6), 3);
}

TEST(Coders, RoundTripEmptyAndSingleSymbol) {
  expect_round_trip({}, 1);
  expect_round_trip({}, 16);
  expect_round_trip(std::vector<uint16_t>(1000, 0), 1);
  expect_round_trip(std::vector<uint16_t>(1000, 7), 16);
  expect_round_trip({5}, 16);
}

TEST(Coders, RefusesSymbolsOutsideTheAlphabet) {
  EXPECT_THROW(encode_symbols(std::vector<uint16_t>{0, 4}, 4, SymbolCoder::kRans), Error);
  EXPECT_THROW(encode_symbols(std::vector<uint16_t>{0}, 0, SymbolCoder::kRans), Error);
  EXPECT_THROW(encode_symbols(std::vector<uint16_t>{0}, kMaxAlphabet + 1, SymbolCoder::kHuffman), Error);
  EXPECT_EQ(symbol_coder_from_name("huffman"), SymbolCoder::kHuffman);
  EXPECT_THROW(symbol_coder_from_name("lz77"), Error);
}

TEST(Huffman, LengthsAreLimitedAndPrefixFree) {
  // Fibonacci counts make optimal Huffman codes as deep as the alphabet is large.
  std::vector<uint64_t> counts = {1, 1};
  while (counts.size() < 40) counts.push_back(counts[counts.size() - 1] + counts[counts.size() - 2]);
  const std::vector<uint8_t> lengths = huffman_code_lengths(counts, 15);
  double kraft = 0;
  for (uint8_t l : lengths) {
    EXPECT_GE(l, 1);
    EXPECT_LE(l, 15);
    kraft += std::ldexp(1.0, -l);
  }
  EXPECT_LE(kraft, 1.0);
  // The stream with those counts still round-trips.
  std::vector<uint16_t> symbols;
  for (uint16_t s = 0; s < 30; ++s) symbols.insert(symbols.end(), counts[s] % 5000 + 1, s);
  expect_round_trip(symbols, 40);
  // Optimal lengths when no limit applies: counts 4, 2, 1, 1 -> 1, 2, 3, 3.
  const std::vector<uint64_t> small = {4, 2, 1, 1};
  EXPECT_EQ(huffman_code_lengths(small), (std::vector<uint8_t>{1, 2, 3, 3}));
}

TEST(Rans, WithinOnePercentOfTheShannonBound) {
  // A skewed stream like clustered pruned weights: ~1.3 bits/symbol of entropy.
  const std::vector<uint16_t> symbols = geometric_stream(1000000, 0.7, 32, 11);
  const double entropy = shannon_entropy_bits(symbols, 32);
  const CodedStream c = encode_symbols(symbols, 32, SymbolCoder::kRans);
  const double payload_bits = static_cast<double>(c.payload_bytes()) * 8;
  const double table_bits = static_cast<double>(c.table_bytes) * 8;
  EXPECT_LE(payload_bits, 1.01 * entropy) << "payload " << payload_bits << " entropy " << entropy;
  EXPECT_LE(payload_bits + table_bits, 1.01 * entropy + table_bits);
  // Huffman, for contrast, cannot go below one bit per symbol.
  const CodedStream h = encode_symbols(symbols, 32, SymbolCoder::kHuffman);
  EXPECT_GE(static_cast<double>(h.payload_bytes()) * 8, static_cast<double>(symbols.size()) - 8);
  // Frequencies sum to the scale and keep every present symbol.
  const std::vector<uint64_t> counts = symbol_histogram(symbols, 32);
  const std::vector<uint32_t> freq = quantize_frequencies(counts);
  uint64_t sum = 0;
  for (size_t s = 0; s < freq.size(); ++s) {
    sum += freq[s];
    EXPECT_EQ(freq[s] > 0, counts[s] > 0);
  }
  EXPECT_EQ(sum, uint64_t{1} << kRansScaleBits);
}

TEST(Coders, CorruptAndTruncatedStreamsAreErrors) {
  std::mt19937 rng(99);
  const std::vector<uint16_t> symbols = geometric_stream(3000, 0.4, 16, 12);
  int errors = 0, decoded = 0;
  for (SymbolCoder coder : kCoders) {
    const std::string good = encode_symbols(symbols, 16, coder).bytes;
    for (int trial = 0; trial < 1500; ++trial) {
      std::string bad = good;
      switch (trial % 3) {
        case 0: bad[rng() % bad.size()] = static_cast<char>(rng()); break;
        case 1: bad.resize(rng() % bad.size()); break;
        case 2:
          for (int k = 0; k < 4; ++k) bad[rng() % bad.size()] ^= static_cast<char>(1u << (rng() % 8));
          break;
      }
      try {
        const auto out = decode_symbols(reinterpret_cast<const uint8_t*>(bad.data()), bad.size(), 16, symbols.size());
        EXPECT_LE(out.size(), symbols.size());
        for (uint16_t s : out) EXPECT_LT(s, 16);
        ++decoded;
      } catch (const Error&) {
        ++errors;
      }
    }
  }
  EXPECT_GT(errors, 2000);  // most mutations are detected; the rest decode to valid symbols
  // A stream claiming more symbols than allowed is refused before decoding.
  const std::string good = encode_symbols(symbols, 16, SymbolCoder::kRans).bytes;
  EXPECT_THROW(decode_symbols(reinterpret_cast<const uint8_t*>(good.data()), good.size(), 16, 10), Error);
  EXPECT_THROW(decode_symbols(reinterpret_cast<const uint8_t*>(good.data()), good.size(), 8, symbols.size()), Error);
  std::string trailing = good + "x";
  EXPECT_THROW(decode_symbols(reinterpret_cast<const uint8_t*>(trailing.data()), trailing.size(), 16, symbols.size()),
               Error);
}

}  // namespace
}  // namespace xnn::coding
