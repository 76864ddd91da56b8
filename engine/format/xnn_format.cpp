// The public face of the .xnn format: file I/O around the encoder (xnn_writer.cpp) and the
// decoder (xnn_reader.cpp). Loading maps the file read-only and keeps the mapping alive for as
// long as any tensor views it; saving writes a temporary file and renames it into place, so a
// reader never sees a half-written model.
#include "engine/format/xnn_format.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "engine/format/xnn_layout.h"

namespace xnn {

namespace {

std::string errno_text() { return std::strerror(errno); }

class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() { close(); }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }
  // Returns close()'s result so writers can notice late write errors (e.g. on NFS).
  int close() {
    const int rc = fd_ >= 0 ? ::close(fd_) : 0;
    fd_ = -1;
    return rc;
  }

 private:
  int fd_;
};

void write_all(int fd, const void* data, size_t size, const std::string& path) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd, p, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error(path + ": cannot write: " + errno_text());
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
}

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
  const std::string tmp = path + ".tmp";
  FileDescriptor fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (fd.get() < 0) throw Error(tmp + ": cannot create: " + errno_text());
  try {
    write_file(fd.get(), file, tmp);
    // Flush before the rename, so a crash cannot leave a renamed but empty model behind.
    if (::fsync(fd.get()) != 0) throw Error(tmp + ": cannot flush to disk: " + errno_text());
    if (fd.close() != 0) throw Error(tmp + ": cannot write: " + errno_text());
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
      throw Error(path + ": cannot move " + tmp + " into place: " + errno_text());
    }
  } catch (...) {
    fd.close();
    ::unlink(tmp.c_str());
    throw;
  }
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
  FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) throw Error(path + ": cannot open: " + errno_text());
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw Error(path + ": cannot open: " + errno_text());
  if (!S_ISREG(st.st_mode)) throw Error(path + ": cannot open: not a regular file");
  if (st.st_size == 0) throw Error(path + ": file is empty, not an .xnn model");
  const auto size = static_cast<size_t>(st.st_size);
  void* mapped = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd.get(), 0);
  if (mapped == MAP_FAILED) throw Error(path + ": cannot map into memory: " + errno_text());
  // The mapping outlives the descriptor; the last tensor viewing it unmaps it.
  std::shared_ptr<void> mapping(mapped, [size](void* p) { ::munmap(p, size); });
  return xnn_file::decode_model(Buffer::wrap(mapped, size, std::move(mapping)), path);
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
