#include "harness/metrics/http_exporter.h"

#include <httplib.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "engine/core/error.h"
#include "harness/metrics/text_serializer.h"

namespace xnn::metrics {

ListenAddress ParseListenAddress(const std::string& text) {
  const std::string expected = "expected HOST:PORT, [IPV6]:PORT or :PORT, e.g. 127.0.0.1:9464";
  ListenAddress a;
  std::string port;
  if (!text.empty() && text[0] == '[') {
    const size_t close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':')
      throw Error("listen address '" + text + "': " + expected);
    a.host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    const size_t colon = text.rfind(':');
    if (colon == std::string::npos) throw Error("listen address '" + text + "': no port; " + expected);
    a.host = text.substr(0, colon);
    if (a.host.find(':') != std::string::npos)
      throw Error("listen address '" + text + "': put an IPv6 address in brackets; " + expected);
    port = text.substr(colon + 1);
  }
  if (a.host.empty()) a.host = "0.0.0.0";
  if (port.empty() || port.size() > 5 || !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }))
    throw Error("listen address '" + text + "': port '" + port + "' is not a number; " + expected);
  a.port = std::stoi(port);
  if (a.port > 65535) throw Error("listen address '" + text + "': port " + port + " is out of range (0-65535)");
  return a;
}

namespace {

std::string host_port(const std::string& host, int port) {
  return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

// httplib reports only "bind failed"; redo the bind ourselves to tell the user why.
std::string diagnose_bind(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const std::string service = std::to_string(port);
  const int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &res);
  if (rc != 0) return std::string("cannot resolve host '") + host + "': " + gai_strerror(rc);
  int err = 0;
  for (addrinfo* p = res; p; p = p->ai_next) {
    const int s = socket(p->ai_family, p->ai_socktype, p->ai_protocol);
    if (s < 0) {
      err = errno;
      continue;
    }
    int yes = 1;
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    const int b = bind(s, p->ai_addr, p->ai_addrlen);
    err = b == 0 ? 0 : errno;
    if (b == 0) err = listen(s, 1) == 0 ? 0 : errno;
    close(s);
    if (err == 0) break;
  }
  freeaddrinfo(res);
  switch (err) {
    case 0: return "the socket could not be bound (it is free now: try again)";
    case EADDRINUSE: return "address already in use (another process listens on port " + std::to_string(port) + ")";
    case EADDRNOTAVAIL: return "address not available (no interface of this machine has it)";
    case EACCES: return "permission denied (ports below 1024 need privileges)";
    default: return std::strerror(err);
  }
}

void check_resolves(const ListenAddress& a) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  const int rc = getaddrinfo(a.host.c_str(), nullptr, &hints, &res);
  if (rc != 0) throw Error("cannot listen on " + host_port(a.host, a.port) + ": unknown host '" + a.host + "' (" + gai_strerror(rc) + ")");
  freeaddrinfo(res);
}

}  // namespace

struct Exposer::Impl {
  httplib::Server server;
  ListenAddress address;
  std::thread thread;
  std::atomic<bool> stopped{false};
  std::mutex mutex;       // collectables
  std::mutex stop_mutex;  // Stop (never held while serving: a request in flight needs `mutex`)
  std::map<std::string, std::vector<std::weak_ptr<Collectable>>> collectables;
  std::shared_ptr<Registry> own = std::make_shared<Registry>();
  Counter* scrapes = nullptr;
  Histogram* duration = nullptr;

  void handle(const httplib::Request& req, httplib::Response& res) {
    std::vector<std::shared_ptr<Collectable>> targets;
    {
      std::lock_guard<std::mutex> lock(mutex);
      auto it = collectables.find(req.path);
      if (it == collectables.end()) {
        if (req.path == "/") {
          res.set_content("xnn-lab metrics exporter: see /metrics\n", "text/plain; charset=utf-8");
        } else {
          res.status = 404;
          res.set_content("not found: metrics are served at /metrics\n", "text/plain; charset=utf-8");
        }
        return;
      }
      for (const auto& w : it->second) {
        if (auto c = w.lock()) targets.push_back(std::move(c));
      }
    }
    const auto start = std::chrono::steady_clock::now();
    scrapes->Increment();
    std::vector<MetricFamily> families;
    for (const auto& c : targets) {
      for (MetricFamily& f : c->Collect()) families.push_back(std::move(f));
    }
    for (MetricFamily& f : own->Collect()) families.push_back(std::move(f));
    res.set_content(TextSerializer().Serialize(families), kTextContentType);
    duration->Observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
};

Exposer::Exposer(const std::string& bind_address, std::size_t num_threads) : impl_(std::make_unique<Impl>()) {
  Impl& im = *impl_;
  im.address = ParseListenAddress(bind_address);
  im.scrapes = &BuildCounter().Name(kScrapesTotal).Help("Requests for /metrics served by this exporter").Register(*im.own).Add({});
  im.duration = &BuildHistogram()
                     .Name(kScrapeDurationSeconds)
                     .Help("Time to collect and serialize the metrics of one /metrics request")
                     .Register(*im.own)
                     .Add({}, Histogram::BucketBoundaries{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5});
  check_resolves(im.address);

  const std::size_t threads = std::max<std::size_t>(1, num_threads);
  im.server.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  // SO_REUSEADDR only: httplib's default adds SO_REUSEPORT, which lets two servers share a port.
  im.server.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  im.server.set_read_timeout(5, 0);
  im.server.set_write_timeout(5, 0);
  im.server.set_keep_alive_timeout(5);
  im.server.Get(".*", [&im](const httplib::Request& req, httplib::Response& res) { im.handle(req, res); });
  im.server.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "unknown error";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    res.status = 500;
    res.set_content("error collecting metrics: " + what + "\n", "text/plain; charset=utf-8");
  });

  bool bound = false;
  if (im.address.port == 0) {
    const int port = im.server.bind_to_any_port(im.address.host);
    bound = port > 0;
    if (bound) im.address.port = port;
  } else {
    bound = im.server.bind_to_port(im.address.host, im.address.port);
  }
  if (!bound) {
    throw Error("cannot listen on " + host_port(im.address.host, im.address.port) + ": " +
                diagnose_bind(im.address.host, im.address.port));
  }

  // The server threads (and the pool they start) never take SIGINT/SIGTERM/SIGPIPE.
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGINT);
  sigaddset(&block, SIGTERM);
  sigaddset(&block, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &block, &old);
  im.thread = std::thread([&im] {
    im.server.listen_after_bind();
    im.stopped = true;
  });
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

Exposer::~Exposer() { Stop(); }

void Exposer::RegisterCollectable(const std::weak_ptr<Collectable>& collectable, const std::string& uri) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->collectables[uri].push_back(collectable);
}

void Exposer::RemoveCollectable(const std::weak_ptr<Collectable>& collectable, const std::string& uri) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  auto it = impl_->collectables.find(uri);
  if (it == impl_->collectables.end()) return;
  auto& v = it->second;
  v.erase(std::remove_if(v.begin(), v.end(),
                         [&](const std::weak_ptr<Collectable>& w) { return !w.owner_before(collectable) && !collectable.owner_before(w); }),
          v.end());
}

std::vector<int> Exposer::GetListeningPorts() const { return {impl_->address.port}; }

std::string Exposer::Url() const { return "http://" + host_port(impl_->address.host, impl_->address.port) + "/metrics"; }

void Exposer::Stop() {
  if (!impl_) return;
  std::lock_guard<std::mutex> lock(impl_->stop_mutex);
  if (impl_->thread.joinable()) {
    // httplib's stop() is a no-op until the listen loop runs: wait for it (or for its end).
    while (!impl_->stopped && !impl_->server.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    impl_->server.stop();
    impl_->thread.join();
  }
  impl_->stopped = true;
}

bool Exposer::IsRunning() const { return !impl_->stopped; }

}  // namespace xnn::metrics
