// A self-describing coded symbol stream: what an .xnn Codebook tensor stores for its codebook
// indices and its sparse index gaps (engine/format/xnn.fbs). One byte names the coder, so a
// reader decodes any of them and the writer may pick per stream.
//
//   u8 coder                  SymbolCoder
//   varint count              number of symbols
//   coder part                (absent when count is 0)
//     kFixed:   payload of count * bit_width(alphabet - 1) bits, LSB-first
//     kHuffman: huffman.h's table + payload
//     kRans:    rans.h's table + payload
// The stream must end exactly where the coder part ends.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace xnn::coding {

enum class SymbolCoder : uint8_t { kFixed = 0, kHuffman = 1, kRans = 2 };
// Alphabets are small (codebooks, gap symbols); this bounds decoder tables.
constexpr uint32_t kMaxAlphabet = 4096;

const char* symbol_coder_name(SymbolCoder coder);  // "fixed", "huffman", "rans"
// Throws an xnn::Error listing the names for an unknown one.
SymbolCoder symbol_coder_from_name(const std::string& name);

struct CodedStream {
  std::string bytes;
  size_t table_bytes = 0;  // coder byte, count and the coder's table: the stream's overhead
  size_t payload_bytes() const { return bytes.size() - table_bytes; }
};

// Every symbol must be < alphabet (1 <= alphabet <= kMaxAlphabet); xnn::Error otherwise.
CodedStream encode_symbols(std::span<const uint16_t> symbols, uint32_t alphabet, SymbolCoder coder);
// Decodes a stream written by encode_symbols for the same alphabet. A stream claiming more than
// max_count symbols, or corrupt / truncated / with trailing bytes, is an xnn::Error.
std::vector<uint16_t> decode_symbols(const uint8_t* data, size_t size, uint32_t alphabet, uint64_t max_count);

}  // namespace xnn::coding
