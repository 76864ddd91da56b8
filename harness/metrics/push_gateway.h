// Pushes metrics to a Prometheus Pushgateway (for batch jobs such as `xnn-lab run`), the shape of
// prometheus-cpp's Gateway: a job name and grouping labels, registered collectables, and
//   Push()    PUT    replaces every metric of the group
//   PushAdd() POST   replaces only the metrics with the names pushed (push-add; what runs use)
//   Delete()  DELETE removes the group
// at URL/metrics/job/<job>[/<label>/<value>...] ("instance" first, then the others by name).
// A value that is empty or contains '/' is sent base64url-encoded (`<label>@base64/<value>`), as
// the Pushgateway documents. Each call returns the HTTP status (2xx: accepted) or -1 when no
// response came (connection refused, timeout); LastError() says what went wrong.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "harness/metrics/registry.h"

namespace xnn::metrics {

inline constexpr char kLastSuccessTimestampSeconds[] = "xnn_lab_last_success_timestamp_seconds";

class Gateway {
 public:
  // `url`: http(s)://HOST[:PORT][/PREFIX]. Throws xnn::Error for a malformed URL or job name.
  Gateway(const std::string& url, const std::string& job_name, const Labels& grouping_labels = {});
  ~Gateway();
  Gateway(const Gateway&) = delete;
  Gateway& operator=(const Gateway&) = delete;

  void RegisterCollectable(const std::weak_ptr<Collectable>& collectable);
  int Push();
  int PushAdd();
  int Delete();
  const std::string& LastError() const { return last_error_; }
  // The full URL the group lives at, e.g. http://127.0.0.1:9091/metrics/job/xnn-lab/instance/box.
  std::string GroupUrl() const;

  // The grouping-key path for `job` and `labels` (exposed for tests).
  static std::string GroupingPath(const std::string& job, const Labels& labels);

 private:
  int send(const char* method);
  std::string base_;    // scheme://host:port
  std::string prefix_;  // path prefix without a trailing slash
  std::string path_;    // /metrics/job/...
  std::vector<std::weak_ptr<Collectable>> collectables_;
  std::string last_error_;
};

}  // namespace xnn::metrics
