// The public face of the .xnn format: file I/O around the encoder (xnn_writer.cpp) and the
// decoder (xnn_reader.cpp). Loading maps the file read-only and keeps the mapping alive for as
// long as any tensor views it; saving writes a temporary file and renames it into place, so a
// reader never sees a half-written model.
#include "engine/format/xnn_format.h"

#include <cstring>

#include "engine/format/file_io.h"
#include "engine/format/xnn_layout.h"

namespace xnn {

namespace {

using file_io::write_all;

void write_zeros(int fd, uint64_t count, const std::string& path) {
  static const char zeros[4096] = {};
  while (count > 0) {
    const size_t n = count < sizeof(zeros) ? static_cast<size_t>(count) : sizeof(zeros);
    write_all(fd, zeros, n, path);
    count -= n;
  }
}

void write_file(int fd, const xnn_file::EncodedFile& file, const std::string& path) {
  write_all(fd, file.head.data(), file.head.size(), path);
  uint64_t position = file.head.size();
  for (const auto& blob : file.blobs) {
    write_zeros(fd, blob.offset - position, path);
    write_all(fd, blob.data, blob.size, path);
    position = blob.offset + blob.size;
  }
  write_zeros(fd, file.file_size - position, path);
}

}  // namespace

void save_xnn(const Model& model, const std::string& path, const XnnSaveOptions& options) {
  const xnn_file::EncodedFile file = xnn_file::encode_model(model, options, path);
  file_io::write_file_atomically(path, 0644, [&](int fd, const std::string& tmp) { write_file(fd, file, tmp); });
}

std::string serialize_xnn(const Model& model, const XnnSaveOptions& options) {
  xnn_file::EncodedFile file = xnn_file::encode_model(model, options, "serialize_xnn");
  std::string out = std::move(file.head);
  out.resize(file.file_size, '\0');
  for (const auto& blob : file.blobs) {
    if (blob.size > 0) std::memcpy(out.data() + blob.offset, blob.data, blob.size);
  }
  return out;
}

Model load_xnn(const std::string& path) {
  // The last tensor viewing the mapping unmaps it.
  file_io::MappedFile f = file_io::map_file_readonly(path, "an .xnn model");
  void* data = const_cast<uint8_t*>(f.data);
  return xnn_file::decode_model(Buffer::wrap(data, f.size, std::move(f.mapping)), path);
}

Model load_xnn_bytes(const void* data, size_t size, const std::string& name) {
  if (size == 0) throw Error(name + ": file is empty, not an .xnn model");
  if (data == nullptr) throw Error(name + ": no data (null pointer) for " + std::to_string(size) + " bytes");
  // An aligned copy: blobs and the FlatBuffer need the alignment the file promises.
  std::shared_ptr<Buffer> storage = Buffer::allocate(size);
  std::memcpy(storage->data(), data, size);
  return xnn_file::decode_model(storage, name);
}

bool has_xnn_magic(const void* data, size_t size) {
  return size >= sizeof(xnn_file::kMagic) && std::memcmp(data, xnn_file::kMagic, sizeof(xnn_file::kMagic)) == 0;
}

}  // namespace xnn
