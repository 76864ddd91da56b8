#include "engine/format/file_io.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "engine/core/error.h"

namespace xnn::file_io {

std::string errno_text() { return std::strerror(errno); }

int FileDescriptor::close() {
  const int rc = fd_ >= 0 ? ::close(fd_) : 0;
  fd_ = -1;
  return rc;
}

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

void write_file_atomically(const std::string& path, mode_t mode,
                           const std::function<void(int fd, const std::string& tmp_path)>& write) {
  const std::string tmp = path + ".tmp";
  FileDescriptor fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode));
  if (fd.get() < 0) throw Error(tmp + ": cannot create: " + errno_text());
  try {
    write(fd.get(), tmp);
    // Flush before the rename, so a crash cannot leave a renamed but empty file behind.
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

MappedFile map_file_readonly(const std::string& path, const std::string& what) {
  FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) throw Error(path + ": cannot open: " + errno_text());
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw Error(path + ": cannot open: " + errno_text());
  if (!S_ISREG(st.st_mode)) throw Error(path + ": cannot open: not a regular file");
  if (st.st_size == 0) throw Error(path + ": file is empty, not " + what);
  const auto size = static_cast<size_t>(st.st_size);
  void* mapped = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd.get(), 0);
  if (mapped == MAP_FAILED) throw Error(path + ": cannot map into memory: " + errno_text());
  // The mapping outlives the descriptor; the last owner unmaps it.
  MappedFile out;
  out.mapping = std::shared_ptr<void>(mapped, [size](void* p) { ::munmap(p, size); });
  out.data = static_cast<const uint8_t*>(mapped);
  out.size = size;
  return out;
}

}  // namespace xnn::file_io
