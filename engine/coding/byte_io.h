// Bounds-checked byte and bit I/O for the entropy coders. Coded streams come from files that
// may be truncated or hostile, so every read is checked and a short stream is an xnn::Error
// ("coded stream truncated ..."), never a read past the end.
#pragma once
#include <cstdint>
#include <string>

#include "engine/core/error.h"

namespace xnn::coding {

// LEB128 varint (7 bits per byte, low first).
inline void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

class ByteReader {
 public:
  ByteReader(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  uint8_t byte(const char* what) {
    if (pos_ >= size_) throw Error(std::string("coded stream truncated (reading the ") + what + ")");
    return data_[pos_++];
  }
  uint64_t varint(const char* what) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      const uint8_t b = byte(what);
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return v;
    }
    throw Error(std::string("coded stream corrupted (the ") + what + " is not a valid varint)");
  }
  size_t position() const { return pos_; }
  size_t remaining() const { return size_ - pos_; }
  const uint8_t* here() const { return data_ + pos_; }
  void skip(size_t n) {
    if (n > remaining()) throw Error("coded stream truncated");
    pos_ += n;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

}  // namespace xnn::coding
