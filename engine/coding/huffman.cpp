#include "engine/coding/huffman.h"

#include <algorithm>
#include <queue>

#include "engine/coding/entropy.h"

namespace xnn::coding {
namespace {

// Depth of every leaf in a Huffman tree built over weights (all > 0).
std::vector<uint8_t> huffman_depths(const std::vector<uint64_t>& weights) {
  const size_t leaves = weights.size();
  std::vector<int> parent(2 * leaves, -1);
  using Item = std::pair<uint64_t, int>;  // (weight, node); ties by node id keep it deterministic
  std::priority_queue<Item, std::vector<Item>, std::greater<>> heap;
  for (size_t i = 0; i < leaves; ++i) heap.push({weights[i], static_cast<int>(i)});
  int next = static_cast<int>(leaves);
  while (heap.size() > 1) {
    const Item a = heap.top();
    heap.pop();
    const Item b = heap.top();
    heap.pop();
    parent[static_cast<size_t>(a.second)] = next;
    parent[static_cast<size_t>(b.second)] = next;
    heap.push({a.first + b.first, next++});
  }
  std::vector<uint8_t> depth(leaves, 0);
  std::vector<int> node_depth(static_cast<size_t>(next), 0);
  for (int n = next - 2; n >= 0; --n) node_depth[static_cast<size_t>(n)] = node_depth[static_cast<size_t>(parent[static_cast<size_t>(n)])] + 1;
  for (size_t i = 0; i < leaves; ++i) depth[i] = static_cast<uint8_t>(std::min(node_depth[i], 255));
  return depth;
}

// Canonical codes from lengths: by (length, symbol), each code the previous plus one, shifted
// left when the length grows.
std::vector<uint32_t> canonical_codes(const std::vector<uint8_t>& lengths) {
  std::vector<uint32_t> order;
  for (uint32_t s = 0; s < lengths.size(); ++s) {
    if (lengths[s] > 0) order.push_back(s);
  }
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return lengths[a] < lengths[b]; });
  std::vector<uint32_t> codes(lengths.size(), 0);
  uint32_t code = 0;
  int length = order.empty() ? 0 : lengths[order[0]];
  for (size_t i = 0; i < order.size(); ++i) {
    if (i > 0) {
      ++code;
      code <<= (lengths[order[i]] - length);
      length = lengths[order[i]];
    }
    codes[order[i]] = code;
  }
  return codes;
}

}  // namespace

std::vector<uint8_t> huffman_code_lengths(std::span<const uint64_t> counts, int max_bits) {
  std::vector<uint8_t> lengths(counts.size(), 0);
  std::vector<uint32_t> present;
  std::vector<uint64_t> weights;
  for (uint32_t s = 0; s < counts.size(); ++s) {
    if (counts[s] > 0) {
      present.push_back(s);
      weights.push_back(counts[s]);
    }
  }
  if (present.empty()) return lengths;
  if (present.size() == 1) {
    lengths[present[0]] = 1;
    return lengths;
  }
  if (present.size() > (size_t{1} << max_bits)) {
    throw Error(std::to_string(present.size()) + " symbols do not fit in Huffman codes of at most " +
                std::to_string(max_bits) + " bits");
  }
  while (true) {
    const std::vector<uint8_t> depth = huffman_depths(weights);
    if (*std::max_element(depth.begin(), depth.end()) <= max_bits) {
      for (size_t i = 0; i < present.size(); ++i) lengths[present[i]] = depth[i];
      return lengths;
    }
    for (uint64_t& w : weights) w = std::max<uint64_t>(1, w >> 1);
  }
}

size_t huffman_encode(std::span<const uint16_t> symbols, uint32_t alphabet, std::string& out) {
  const std::vector<uint64_t> counts = symbol_histogram(symbols, alphabet);
  const std::vector<uint8_t> lengths = huffman_code_lengths(counts);
  uint32_t used = 0;
  for (uint32_t s = 0; s < alphabet; ++s) {
    if (lengths[s] > 0) used = s + 1;
  }
  const size_t start = out.size();
  put_varint(out, used);
  for (uint32_t s = 0; s < used; s += 2) {
    const uint8_t high = s + 1 < used ? lengths[s + 1] : 0;
    out.push_back(static_cast<char>(lengths[s] | (high << 4)));
  }
  const size_t table_bytes = out.size() - start;

  const std::vector<uint32_t> codes = canonical_codes(lengths);
  uint64_t acc = 0;
  int bits = 0;
  for (uint16_t s : symbols) {
    acc = (acc << lengths[s]) | codes[s];
    bits += lengths[s];
    while (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  if (bits > 0) out.push_back(static_cast<char>((acc << (8 - bits)) & 0xff));
  return table_bytes;
}

void huffman_decode(ByteReader& in, uint32_t alphabet, uint64_t count, std::vector<uint16_t>& out) {
  const uint64_t used = in.varint("Huffman table size");
  if (used == 0 || used > alphabet) {
    throw Error("coded stream corrupted (Huffman table of " + std::to_string(used) + " symbols for an alphabet of " +
                std::to_string(alphabet) + ")");
  }
  std::vector<uint8_t> lengths(used, 0);
  for (uint64_t s = 0; s < used; s += 2) {
    const uint8_t b = in.byte("Huffman code lengths");
    lengths[s] = b & 0x0f;
    if (s + 1 < used) lengths[s + 1] = b >> 4;
  }
  // Kraft: the lengths must describe a prefix code (sum of 2^-len <= 1).
  uint64_t kraft = 0;
  int max_len = 0;
  for (uint8_t l : lengths) {
    if (l > 0) {
      kraft += uint64_t{1} << (kHuffmanMaxBits - l);
      max_len = std::max<int>(max_len, l);
    }
  }
  if (max_len == 0 || kraft > (uint64_t{1} << kHuffmanMaxBits)) {
    throw Error("coded stream corrupted (Huffman code lengths do not form a prefix code)");
  }
  // One lookup table indexed by the next max_len bits: symbol and its length (0 = no code).
  const std::vector<uint32_t> codes = canonical_codes(lengths);
  std::vector<uint16_t> table_symbol(size_t{1} << max_len, 0);
  std::vector<uint8_t> table_length(size_t{1} << max_len, 0);
  for (uint32_t s = 0; s < used; ++s) {
    if (lengths[s] == 0) continue;
    const int shift = max_len - lengths[s];
    const size_t first = static_cast<size_t>(codes[s]) << shift;
    for (size_t k = 0; k < (size_t{1} << shift); ++k) {
      table_symbol[first + k] = static_cast<uint16_t>(s);
      table_length[first + k] = lengths[s];
    }
  }
  const uint8_t* data = in.here();
  const uint64_t total_bits = static_cast<uint64_t>(in.remaining()) * 8;
  const size_t bytes = in.remaining();
  uint64_t pos = 0;  // bits consumed
  out.reserve(out.size() + count);
  for (uint64_t i = 0; i < count; ++i) {
    // The next max_len bits, MSB-first, from a 24-bit window (bit offset <= 7, max_len <= 15);
    // zeros past the end, caught by the length check below.
    const uint64_t byte_index = pos >> 3;
    uint32_t w24 = 0;
    for (uint64_t k = 0; k < 3; ++k) w24 = (w24 << 8) | (byte_index + k < bytes ? data[byte_index + k] : 0);
    const uint32_t peek = (w24 >> (24 - static_cast<int>(pos & 7) - max_len)) & ((1u << max_len) - 1);
    const uint8_t len = table_length[peek];
    if (len == 0) throw Error("coded stream corrupted (bits that are no Huffman code)");
    pos += len;
    if (pos > total_bits) throw Error("coded stream truncated (Huffman payload ends early)");
    out.push_back(table_symbol[peek]);
  }
  in.skip(static_cast<size_t>((pos + 7) / 8));
}

}  // namespace xnn::coding
