// The fixed 64-byte .xnn header: writing it, and reading it back with every field checked
// against the real file size before anything else of the file is looked at.
#include <cstring>

#include "engine/format/file_io.h"
#include "engine/format/xnn_layout.h"

namespace xnn::xnn_file {

namespace {

// Field positions; bytes 12..15 and 56..63 are reserved and must be zero.
constexpr size_t kVersionAt = 4;
constexpr size_t kFlagsAt = 8;
constexpr size_t kFlatbufferOffsetAt = 16;
constexpr size_t kFlatbufferSizeAt = 24;
constexpr size_t kDataOffsetAt = 32;
constexpr size_t kDataSizeAt = 40;
constexpr size_t kFileSizeAt = 48;

// Explicit little-endian byte order, independent of the host.
template <typename T>
void put_le(std::string& out, size_t at, T v) {
  file_io::put_le(reinterpret_cast<uint8_t*>(out.data()) + at, v);
}
using file_io::get_le;

// FlatBuffers addresses its buffer with signed 32-bit offsets.
constexpr uint64_t kMaxFlatbufferSize = (uint64_t{1} << 31) - 1;

}  // namespace

std::string encode_header(const Header& h) {
  std::string out(kHeaderSize, '\0');
  std::memcpy(out.data(), kMagic, sizeof(kMagic));
  put_le(out, kVersionAt, h.format_version);
  put_le(out, kFlagsAt, h.flags);
  put_le(out, kFlatbufferOffsetAt, h.flatbuffer_offset);
  put_le(out, kFlatbufferSizeAt, h.flatbuffer_size);
  put_le(out, kDataOffsetAt, h.data_offset);
  put_le(out, kDataSizeAt, h.data_size);
  put_le(out, kFileSizeAt, h.file_size);
  return out;
}

Header decode_header(const uint8_t* file, size_t file_size, const std::string& name) {
  const std::string pre = name + ": ";
  if (file_size == 0) throw Error(pre + "file is empty, not an .xnn model");
  if (!has_xnn_magic(file, file_size)) throw Error(pre + "not an .xnn model (missing the \"XNN\\x01\" magic)");
  if (file_size < kHeaderSize) {
    throw Error(pre + "file is " + std::to_string(file_size) + " bytes, shorter than the " +
                std::to_string(kHeaderSize) + "-byte .xnn header (truncated?)");
  }
  Header h;
  // The version comes first: a newer version may lay out everything after it differently.
  h.format_version = get_le<uint32_t>(file + kVersionAt);
  if (h.format_version == 0) throw Error(pre + "invalid .xnn format version 0 (corrupted header)");
  if (h.format_version > kXnnFormatVersion) {
    throw Error(pre + ".xnn format version " + std::to_string(h.format_version) +
                " is newer than this build supports (" + std::to_string(kXnnFormatVersion) +
                "); upgrade xnn-lab");
  }
  h.flags = get_le<uint32_t>(file + kFlagsAt);
  if (h.flags != 0) {
    throw Error(pre + "header flags " + std::to_string(h.flags) +
                " name features this build does not know (expected 0)");
  }
  for (size_t i : {12, 13, 14, 15, 56, 57, 58, 59, 60, 61, 62, 63}) {
    if (file[i] != 0) throw Error(pre + "reserved header byte " + std::to_string(i) + " is not zero (corrupted header)");
  }
  h.flatbuffer_offset = get_le<uint64_t>(file + kFlatbufferOffsetAt);
  h.flatbuffer_size = get_le<uint64_t>(file + kFlatbufferSizeAt);
  h.data_offset = get_le<uint64_t>(file + kDataOffsetAt);
  h.data_size = get_le<uint64_t>(file + kDataSizeAt);
  h.file_size = get_le<uint64_t>(file + kFileSizeAt);

  const uint64_t size = file_size;
  if (h.file_size != size) {
    throw Error(pre + "file is " + std::to_string(size) + " bytes but its header says " +
                std::to_string(h.file_size) + " (truncated or corrupted)");
  }
  // Every comparison below is arranged so that nothing can overflow.
  if (h.flatbuffer_offset < kHeaderSize || h.flatbuffer_offset % 8 != 0 || h.flatbuffer_offset > size) {
    throw Error(pre + "model description offset " + std::to_string(h.flatbuffer_offset) +
                " is invalid (expected an 8-byte aligned offset after the header, inside the file)");
  }
  if (h.flatbuffer_size == 0 || h.flatbuffer_size % 8 != 0 || h.flatbuffer_size > size - h.flatbuffer_offset) {
    throw Error(pre + "model description size " + std::to_string(h.flatbuffer_size) + " at offset " +
                std::to_string(h.flatbuffer_offset) + " is invalid (expected a non-zero multiple of 8 " +
                "that fits in the file of " + std::to_string(size) + " bytes)");
  }
  if (h.flatbuffer_size >= kMaxFlatbufferSize) {
    throw Error(pre + "model description of " + std::to_string(h.flatbuffer_size) +
                " bytes exceeds the 2 GiB FlatBuffers limit");
  }
  const uint64_t expected_data_offset = align_up(h.flatbuffer_offset + h.flatbuffer_size, kBlobAlignment);
  if (h.data_offset != expected_data_offset) {
    throw Error(pre + "data section offset " + std::to_string(h.data_offset) + " should be " +
                std::to_string(expected_data_offset) + " (the end of the model description rounded up to " +
                std::to_string(kBlobAlignment) + ")");
  }
  if (h.data_offset > size || h.data_size != size - h.data_offset) {
    throw Error(pre + "data section [offset " + std::to_string(h.data_offset) + ", size " +
                std::to_string(h.data_size) + "] does not end at the end of the file (" + std::to_string(size) +
                " bytes)");
  }
  return h;
}

}  // namespace xnn::xnn_file
