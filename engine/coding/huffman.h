// Canonical Huffman coding (as in Deep Compression), length-limited so a decoder needs one
// lookup table of at most 2^15 entries. The table is stored as code lengths only: canonical
// codes follow from the lengths, ordered by (length, symbol).
//
// Stream layout (appended by huffman_encode, read by huffman_decode; the symbol count is
// stored by the caller, see symbol_stream.h):
//   varint U                  symbols 0..U-1 have a length (U <= alphabet; the rest are absent)
//   ceil(U/2) bytes           4-bit code lengths, low nibble first; 0 = symbol absent
//   payload                   codes MSB-first, last byte zero-padded; runs to the end
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/coding/byte_io.h"

namespace xnn::coding {

constexpr int kHuffmanMaxBits = 15;

// Code lengths for `counts` (0 for absent symbols). Optimal Huffman lengths when they fit in
// max_bits; otherwise the counts are halved (keeping every present symbol >= 1) until they do,
// which costs little because only very rare symbols get long codes. A lone symbol gets length 1.
std::vector<uint8_t> huffman_code_lengths(std::span<const uint64_t> counts, int max_bits = kHuffmanMaxBits);
// Appends table + payload for `symbols` (each < alphabet, alphabet <= 2^15); returns the number
// of table bytes appended (the rest is payload).
size_t huffman_encode(std::span<const uint16_t> symbols, uint32_t alphabet, std::string& out);
// Decodes `count` symbols from the rest of `in` into `out`; corrupt or truncated input is an
// xnn::Error.
void huffman_decode(ByteReader& in, uint32_t alphabet, uint64_t count, std::vector<uint16_t>& out);

}  // namespace xnn::coding
