#include "engine/coding/rans.h"

#include <algorithm>
#include <cmath>

#include "engine/coding/entropy.h"

namespace xnn::coding {
namespace {

// Lower bound of the normalised state interval [L, 256 L).
constexpr uint32_t kRansL = 1u << 23;

}  // namespace

std::vector<uint32_t> quantize_frequencies(std::span<const uint64_t> counts, int scale_bits) {
  const uint32_t total_freq = 1u << scale_bits;
  uint64_t total = 0;
  size_t present = 0;
  for (uint64_t c : counts) {
    total += c;
    present += c > 0 ? 1 : 0;
  }
  std::vector<uint32_t> freq(counts.size(), 0);
  if (total == 0) return freq;
  if (present > total_freq) {
    throw Error(std::to_string(present) + " symbols do not fit a frequency total of " + std::to_string(total_freq));
  }
  int64_t sum = 0;
  for (size_t s = 0; s < counts.size(); ++s) {
    if (counts[s] == 0) continue;
    const double exact = static_cast<double>(counts[s]) * total_freq / static_cast<double>(total);
    freq[s] = static_cast<uint32_t>(std::max(1.0, std::round(exact)));
    sum += freq[s];
  }
  // Settle the rounding error one unit at a time where it costs the fewest bits: take from /
  // give to the symbol whose code length changes least in count-weighted terms.
  while (sum != total_freq) {
    size_t best = counts.size();
    double best_cost = 0;
    for (size_t s = 0; s < counts.size(); ++s) {
      if (counts[s] == 0 || (sum > total_freq && freq[s] <= 1)) continue;
      const double f = freq[s];
      const double cost = sum > total_freq ? static_cast<double>(counts[s]) * std::log2(f / (f - 1))
                                           : -static_cast<double>(counts[s]) * std::log2((f + 1) / f);
      if (best == counts.size() || cost < best_cost) {
        best = s;
        best_cost = cost;
      }
    }
    if (sum > total_freq) {
      --freq[best];
      --sum;
    } else {
      ++freq[best];
      ++sum;
    }
  }
  return freq;
}

size_t rans_encode(std::span<const uint16_t> symbols, uint32_t alphabet, std::string& out) {
  const std::vector<uint64_t> counts = symbol_histogram(symbols, alphabet);
  const std::vector<uint32_t> freq = quantize_frequencies(counts, kRansScaleBits);
  uint32_t used = 0;
  for (uint32_t s = 0; s < alphabet; ++s) {
    if (freq[s] > 0) used = s + 1;
  }
  std::vector<uint32_t> start(alphabet, 0);
  for (uint32_t s = 1; s < alphabet; ++s) start[s] = start[s - 1] + freq[s - 1];

  const size_t table_begin = out.size();
  out.push_back(static_cast<char>(kRansScaleBits));
  put_varint(out, used);
  for (uint32_t s = 0; s < used; ++s) put_varint(out, freq[s]);
  const size_t table_bytes = out.size() - table_begin;

  // Encoding runs backwards so decoding runs forwards; bytes are collected reversed.
  std::string reversed;
  reversed.reserve(symbols.size() / 2 + 16);
  uint32_t x = kRansL;
  for (size_t i = symbols.size(); i-- > 0;) {
    const uint32_t f = freq[symbols[i]];
    const uint32_t x_max = ((kRansL >> kRansScaleBits) << 8) * f;
    while (x >= x_max) {
      reversed.push_back(static_cast<char>(x & 0xff));
      x >>= 8;
    }
    x = ((x / f) << kRansScaleBits) + (x % f) + start[symbols[i]];
  }
  for (int k = 0; k < 4; ++k) {
    reversed.push_back(static_cast<char>(x & 0xff));
    x >>= 8;
  }
  out.append(reversed.rbegin(), reversed.rend());
  return table_bytes;
}

void rans_decode(ByteReader& in, uint32_t alphabet, uint64_t count, std::vector<uint16_t>& out) {
  const int scale_bits = in.byte("rANS scale");
  if (scale_bits < 1 || scale_bits > 16) {
    throw Error("coded stream corrupted (rANS frequency scale 2^" + std::to_string(scale_bits) + ")");
  }
  const uint32_t total_freq = 1u << scale_bits;
  const uint64_t used = in.varint("rANS table size");
  if (used == 0 || used > alphabet) {
    throw Error("coded stream corrupted (rANS table of " + std::to_string(used) + " symbols for an alphabet of " +
                std::to_string(alphabet) + ")");
  }
  std::vector<uint32_t> freq(used), start(used);
  uint64_t sum = 0;
  for (uint64_t s = 0; s < used; ++s) {
    const uint64_t f = in.varint("rANS frequencies");
    if (f > total_freq) throw Error("coded stream corrupted (rANS frequency above the total)");
    freq[s] = static_cast<uint32_t>(f);
    start[s] = static_cast<uint32_t>(sum);
    sum += f;
  }
  if (sum != total_freq) {
    throw Error("coded stream corrupted (rANS frequencies sum to " + std::to_string(sum) + ", not " +
                std::to_string(total_freq) + ")");
  }
  std::vector<uint16_t> slot_symbol(total_freq);
  for (uint32_t s = 0; s < used; ++s) std::fill_n(slot_symbol.begin() + start[s], freq[s], static_cast<uint16_t>(s));

  uint32_t x = 0;
  for (int k = 0; k < 4; ++k) x = (x << 8) | in.byte("rANS state");
  if (x < kRansL) throw Error("coded stream corrupted (rANS state out of range)");
  const uint32_t mask = total_freq - 1;
  out.reserve(out.size() + count);
  for (uint64_t i = 0; i < count; ++i) {
    const uint32_t slot = x & mask;
    const uint16_t s = slot_symbol[slot];
    x = freq[s] * (x >> scale_bits) + slot - start[s];
    while (x < kRansL) x = (x << 8) | in.byte("rANS payload");
    out.push_back(s);
  }
  if (x != kRansL) throw Error("coded stream corrupted (rANS final state does not match)");
}

}  // namespace xnn::coding
