// Internals of the .xnn format shared by its reader, writer and tests: the fixed 64-byte file
// header (layout documented in engine/format/xnn.fbs) and the encode/decode steps between the
// IR and file bytes. Users go through engine/format/xnn_format.h instead.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/graph.h"
#include "engine/format/xnn_format.h"

namespace xnn::xnn_file {

constexpr char kMagic[4] = {'X', 'N', 'N', '\x01'};
constexpr size_t kHeaderSize = 64;
// Blobs are aligned like every other tensor storage, so mmap'ed weights are usable as is.
constexpr uint64_t kBlobAlignment = kTensorAlignment;
// Deepest nesting of subgraphs (If inside Loop inside ...) either side accepts; bounds the
// recursion a corrupted file can cause.
constexpr int kMaxGraphNesting = 32;

struct Header {
  uint32_t format_version = kXnnFormatVersion;
  uint32_t flags = 0;
  uint64_t flatbuffer_offset = 0;
  uint64_t flatbuffer_size = 0;
  uint64_t data_offset = 0;
  uint64_t data_size = 0;
  uint64_t file_size = 0;
};

constexpr uint64_t align_up(uint64_t v, uint64_t alignment) { return (v + alignment - 1) / alignment * alignment; }

// The 64 header bytes for `h` (magic included, reserved bytes zero).
std::string encode_header(const Header& h);
// Reads the header of a file of `file_size` bytes and checks every field against the file
// size and the layout rules, so callers may trust the regions it describes. Errors start
// with `name`.
Header decode_header(const uint8_t* file, size_t file_size, const std::string& name);

// A model laid out as an .xnn file: `head` is the header, FlatBuffer and padding up to the
// data section; each blob's bytes go at its file offset; zeros fill the gaps up to file_size.
// Blobs point into the model's tensors, which must outlive this, or into `owned`. Errors start with `name`
// (the destination file).
struct EncodedFile {
  struct Blob {
    uint64_t offset;
    const void* data;
    size_t size;
  };
  std::string head;
  std::vector<Blob> blobs;  // ascending offsets
  uint64_t file_size = 0;
  // Bytes made while encoding (coded weights, codebooks) that blobs point into.
  std::vector<std::shared_ptr<const std::string>> owned;
};
EncodedFile encode_model(const Model& model, const XnnSaveOptions& options, const std::string& name);

// Parses a whole .xnn file held in `storage` (the mapping or an aligned copy); constant
// tensors of the result are views into `storage`.
Model decode_model(const std::shared_ptr<Buffer>& storage, const std::string& name);

}  // namespace xnn::xnn_file
