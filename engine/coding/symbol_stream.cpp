#include "engine/coding/symbol_stream.h"

#include <bit>

#include "engine/coding/byte_io.h"
#include "engine/coding/entropy.h"
#include "engine/coding/huffman.h"
#include "engine/coding/rans.h"

namespace xnn::coding {
namespace {

int fixed_width(uint32_t alphabet) { return alphabet <= 1 ? 0 : std::bit_width(alphabet - 1); }

void check_alphabet(uint32_t alphabet) {
  if (alphabet == 0 || alphabet > kMaxAlphabet) {
    throw Error("symbol alphabet of " + std::to_string(alphabet) + " symbols (expected 1.." +
                std::to_string(kMaxAlphabet) + ")");
  }
}

}  // namespace

const char* symbol_coder_name(SymbolCoder coder) {
  switch (coder) {
    case SymbolCoder::kFixed: return "fixed";
    case SymbolCoder::kHuffman: return "huffman";
    case SymbolCoder::kRans: return "rans";
  }
  return "?";
}

SymbolCoder symbol_coder_from_name(const std::string& name) {
  for (SymbolCoder c : {SymbolCoder::kFixed, SymbolCoder::kHuffman, SymbolCoder::kRans}) {
    if (name == symbol_coder_name(c)) return c;
  }
  throw Error("unknown coder '" + name + "' (expected fixed, huffman or rans)");
}

CodedStream encode_symbols(std::span<const uint16_t> symbols, uint32_t alphabet, SymbolCoder coder) {
  check_alphabet(alphabet);
  for (uint16_t s : symbols) {
    if (s >= alphabet) {
      throw Error("symbol " + std::to_string(s) + " outside the alphabet of " + std::to_string(alphabet) + " symbols");
    }
  }
  CodedStream out;
  out.bytes.push_back(static_cast<char>(coder));
  put_varint(out.bytes, symbols.size());
  out.table_bytes = out.bytes.size();
  if (symbols.empty()) return out;
  switch (coder) {
    case SymbolCoder::kFixed: {
      const int width = fixed_width(alphabet);
      uint64_t acc = 0;
      int bits = 0;
      for (uint16_t s : symbols) {
        acc |= static_cast<uint64_t>(s) << bits;
        bits += width;
        while (bits >= 8) {
          out.bytes.push_back(static_cast<char>(acc & 0xff));
          acc >>= 8;
          bits -= 8;
        }
      }
      if (bits > 0) out.bytes.push_back(static_cast<char>(acc & 0xff));
      break;
    }
    case SymbolCoder::kHuffman: out.table_bytes += huffman_encode(symbols, alphabet, out.bytes); break;
    case SymbolCoder::kRans: out.table_bytes += rans_encode(symbols, alphabet, out.bytes); break;
  }
  return out;
}

std::vector<uint16_t> decode_symbols(const uint8_t* data, size_t size, uint32_t alphabet, uint64_t max_count) {
  check_alphabet(alphabet);
  ByteReader in(data, size);
  const uint8_t coder = in.byte("coder");
  const uint64_t count = in.varint("symbol count");
  if (count > max_count) {
    throw Error("coded stream corrupted (" + std::to_string(count) + " symbols, at most " + std::to_string(max_count) +
                " expected)");
  }
  std::vector<uint16_t> out;
  if (count > 0) {
    switch (static_cast<SymbolCoder>(coder)) {
      case SymbolCoder::kFixed: {
        const int width = fixed_width(alphabet);
        const uint64_t bytes = (count * static_cast<uint64_t>(width) + 7) / 8;
        if (bytes > in.remaining()) throw Error("coded stream truncated (fixed-width payload)");
        const uint8_t* p = in.here();
        out.resize(count);
        uint64_t bit = 0;
        const uint32_t mask = (1u << width) - 1;
        for (uint64_t i = 0; i < count; ++i, bit += static_cast<uint64_t>(width)) {
          // A 24-bit window holds any width <= 12 at any bit offset.
          uint32_t w = 0;
          for (uint64_t k = 0; k < 3; ++k) {
            const uint64_t b = (bit >> 3) + k;
            w |= static_cast<uint32_t>(b < bytes ? p[b] : 0) << (8 * k);
          }
          const uint32_t s = (w >> (bit & 7)) & mask;
          if (s >= alphabet) throw Error("coded stream corrupted (symbol " + std::to_string(s) + " outside the alphabet)");
          out[i] = static_cast<uint16_t>(s);
        }
        in.skip(static_cast<size_t>(bytes));
        break;
      }
      case SymbolCoder::kHuffman: huffman_decode(in, alphabet, count, out); break;
      case SymbolCoder::kRans: rans_decode(in, alphabet, count, out); break;
      default: throw Error("coded stream corrupted (unknown coder " + std::to_string(coder) + ")");
    }
  } else if (coder > static_cast<uint8_t>(SymbolCoder::kRans)) {
    throw Error("coded stream corrupted (unknown coder " + std::to_string(coder) + ")");
  }
  if (in.remaining() != 0) {
    throw Error("coded stream corrupted (" + std::to_string(in.remaining()) + " bytes after the end of the stream)");
  }
  return out;
}

}  // namespace xnn::coding
