// Static rANS (range asymmetric numeral systems; byte-wise renormalisation, 32-bit state, as
// in ryg_rans): codes an order-0 symbol stream within a fraction of a percent of its Shannon
// entropy, plus a table of quantised frequencies.
//
// Frequencies are quantised to a total of 2^kRansScaleBits (every present symbol >= 1), so the
// only losses against the entropy are that quantisation, the 4-byte final state and the table.
//
// Stream layout (appended by rans_encode, read by rans_decode; the symbol count is stored by
// the caller, see symbol_stream.h):
//   u8 scale bits             the frequency total is 2^this (kRansScaleBits when written)
//   varint U                  symbols 0..U-1 have a frequency (U <= alphabet)
//   U varints                 the frequencies; they sum to 2^scale bits
//   payload                   4-byte big-endian initial decoder state, then renormalisation
//                             bytes in reading order; runs to the end
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/coding/byte_io.h"

namespace xnn::coding {

constexpr int kRansScaleBits = 15;

// Frequencies summing to 2^scale_bits, proportional to counts, >= 1 for every present symbol.
// Needs at most 2^scale_bits present symbols.
std::vector<uint32_t> quantize_frequencies(std::span<const uint64_t> counts, int scale_bits = kRansScaleBits);
// Appends table + payload; returns the number of table bytes (the rest is payload).
size_t rans_encode(std::span<const uint16_t> symbols, uint32_t alphabet, std::string& out);
// Decodes `count` symbols from the rest of `in` into `out`; corrupt or truncated input is an
// xnn::Error (the final state must return to its start value and every byte be consumed).
void rans_decode(ByteReader& in, uint32_t alphabet, uint64_t count, std::vector<uint16_t>& out);

}  // namespace xnn::coding
