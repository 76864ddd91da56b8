// POSIX file plumbing shared by the .xnn reader/writer and the protected-model container: an
// owning descriptor, full writes, atomic replacement (write PATH.tmp, fsync, rename), read-only
// whole-file mappings, and explicit little-endian field access for the fixed file headers.
#pragma once
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace xnn::file_io {

std::string errno_text();  // strerror(errno)

class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() { close(); }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }
  // Returns close()'s result so writers can notice late write errors (e.g. on NFS).
  int close();

 private:
  int fd_;
};

// Writes all `size` bytes (retrying on EINTR); errors name `path`.
void write_all(int fd, const void* data, size_t size, const std::string& path);

// Creates `path` atomically: `write` fills PATH.tmp (created with `mode`), which is flushed to
// disk and renamed into place, so a crash never leaves a renamed but incomplete file; on any
// error the temporary file is removed.
void write_file_atomically(const std::string& path, mode_t mode,
                           const std::function<void(int fd, const std::string& tmp_path)>& write);

// A read-only mapping of a whole regular file; `mapping` unmaps it when the last owner goes.
struct MappedFile {
  std::shared_ptr<void> mapping;
  const uint8_t* data = nullptr;
  size_t size = 0;
};
// `what` completes "file is empty, not <what>" (e.g. "an .xnn model").
MappedFile map_file_readonly(const std::string& path, const std::string& what);

// Explicit little-endian byte order, independent of the host.
template <typename T>
void put_le(uint8_t* out, T v) {
  for (size_t i = 0; i < sizeof(T); ++i) out[i] = static_cast<uint8_t>((v >> (8 * i)) & 0xff);
}
template <typename T>
T get_le(const uint8_t* p) {
  T v = 0;
  for (size_t i = 0; i < sizeof(T); ++i) v |= static_cast<T>(static_cast<T>(p[i]) << (8 * i));
  return v;
}

}  // namespace xnn::file_io
