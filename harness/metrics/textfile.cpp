#include "harness/metrics/textfile.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "engine/core/error.h"
#include "harness/metrics/text_serializer.h"

namespace xnn::metrics {

namespace fs = std::filesystem;

void WriteTextfile(const std::string& dir, const std::vector<MetricFamily>& families, const std::string& name) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw Error("textfile folder '" + dir + "' does not exist (create it first)");
  if (name.size() < 5 || name.compare(name.size() - 5, 5, ".prom") != 0 || name.find('/') != std::string::npos)
    throw Error("textfile name '" + name + "' must be a file name ending in .prom");
  const std::string final_path = (fs::path(dir) / name).string();
  const std::string tmp_path = final_path + ".tmp." + std::to_string(getpid());
  const std::string text = TextSerializer().Serialize(families);

  auto fail = [&](const std::string& what, int err) {
    ::unlink(tmp_path.c_str());
    throw Error(final_path + ": " + what + ": " + std::strerror(err));
  };
  const int fd = ::open(tmp_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail("cannot create " + tmp_path, errno);
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      fail("cannot write " + tmp_path, err);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    fail("cannot sync " + tmp_path, err);
  }
  if (::close(fd) != 0) fail("cannot close " + tmp_path, errno);
  if (::rename(tmp_path.c_str(), final_path.c_str()) != 0) fail("cannot rename " + tmp_path + " into place", errno);
  // Make the rename itself durable; failing to sync the folder does not undo it.
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

void WriteTextfile(const std::string& dir, const std::vector<std::shared_ptr<Collectable>>& collectables, const std::string& name) {
  std::vector<MetricFamily> families;
  for (const auto& c : collectables) {
    for (MetricFamily& f : c->Collect()) families.push_back(std::move(f));
  }
  WriteTextfile(dir, families, name);
}

}  // namespace xnn::metrics
