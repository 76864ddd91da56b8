// Serves the Prometheus text format over HTTP (Debian's cpp-httplib) on background threads:
// GET /metrics collects every registered Collectable at request time. prometheus-cpp's Exposer
// shape: construct with the listen address, RegisterCollectable, destroy (or Stop) to stop.
//
// The exporter's own metrics are served too: xnn_lab_exporter_scrapes_total and the
// xnn_lab_exporter_scrape_duration_seconds histogram. Server threads block SIGINT/SIGTERM, so
// those signals reach the program's own handlers (the runner's, serve's sigwait).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "harness/metrics/registry.h"

namespace xnn::metrics {

inline constexpr char kScrapesTotal[] = "xnn_lab_exporter_scrapes_total";
inline constexpr char kScrapeDurationSeconds[] = "xnn_lab_exporter_scrape_duration_seconds";

struct ListenAddress {
  std::string host;  // an IPv4/IPv6 literal or a host name ("[::1]" is given as "::1")
  int port = 0;      // 0: any free port (see Exposer::GetListeningPorts)
};
// "HOST:PORT", "[IPV6]:PORT" or ":PORT" (all interfaces). Throws xnn::Error naming the value
// and the expected form.
ListenAddress ParseListenAddress(const std::string& text);

class Exposer {
 public:
  // Binds now: a bad address, an unknown host or a port in use throws xnn::Error with the reason
  // (no SO_REUSEPORT: a second exporter on the same port fails instead of sharing it).
  explicit Exposer(const std::string& bind_address, std::size_t num_threads = 4);
  ~Exposer();
  Exposer(const Exposer&) = delete;
  Exposer& operator=(const Exposer&) = delete;

  // Collected on each request to `uri` (only "/metrics" is served; other URIs are refused).
  void RegisterCollectable(const std::weak_ptr<Collectable>& collectable, const std::string& uri = "/metrics");
  void RemoveCollectable(const std::weak_ptr<Collectable>& collectable, const std::string& uri = "/metrics");
  std::vector<int> GetListeningPorts() const;
  // "http://HOST:PORT/metrics" with the bound port.
  std::string Url() const;
  // Stops accepting and waits for the server threads; idempotent.
  void Stop();
  // False once the server has stopped (Stop, or a fatal socket error).
  bool IsRunning() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace xnn::metrics
