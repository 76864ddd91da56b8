// xnn-lab serve [--listen HOST:PORT] [--db FILE]: a Prometheus exporter for the results store.
// Each scrape of /metrics re-reads the store (read-only, one snapshot; WAL keeps writers going)
// and serves the latest result per (experiment, model, variant, target) plus the exporter's own
// counters. SIGINT/SIGTERM stop it cleanly (exit 0).
#include <signal.h>

#include <cerrno>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <memory>
#include <mutex>

#include "harness/cli/commands.h"
#include "harness/metrics/http_exporter.h"
#include "harness/metrics/store_metrics.h"
#include "harness/store/store.h"

namespace xnn::cli {

void add_serve_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("serve", "Serve the results store as Prometheus metrics at http://ADDRESS/metrics");
  static std::string listen = "127.0.0.1:9464", db = "xnn-lab.db";
  cmd->add_option("--listen", listen, "HOST:PORT to listen on (default 127.0.0.1:9464; port 0: any free port)");
  cmd->add_option("--db", db, "SQLite database (default ./xnn-lab.db), re-read on every scrape");
  cmd->callback([&exit_code] {
    const std::string path = std::filesystem::absolute(db).string();
    if (!std::filesystem::exists(path)) {
      std::fprintf(stderr, "warning: %s does not exist yet: serving the exporter's own metrics until it does\n", path.c_str());
    }
    // SIGINT/SIGTERM are taken with sigwait below, never by a handler (the server threads block them too).
    sigset_t stop_signals, old_mask;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, &old_mask);
    struct MaskGuard {
      sigset_t old;
      ~MaskGuard() { pthread_sigmask(SIG_SETMASK, &old, nullptr); }
    } restore{old_mask};

    auto own = std::make_shared<metrics::Registry>();
    metrics::BuildGauge()
        .Name("xnn_lab_build_info")
        .Help("xnn-lab build serving these metrics (always 1)")
        .Register(*own)
        .Add({{"version", Environment::capture().xnn_version}})
        .Set(1);
    auto collector = std::make_shared<metrics::StoreCollector>(path, *own);
    auto last_error = std::make_shared<std::pair<std::mutex, std::string>>();
    collector->set_error_handler([last_error](const std::string& message) {
      std::lock_guard<std::mutex> lock(last_error->first);
      if (message == last_error->second) return;  // say it once, not on every scrape
      last_error->second = message;
      std::fprintf(stderr, "warning: reading the results store failed: %s\n", message.c_str());
    });

    metrics::Exposer exposer(listen);  // throws with the reason: bad address, port in use
    exposer.RegisterCollectable(collector);
    exposer.RegisterCollectable(own);
    std::fprintf(stderr, "serving %s (results: %s); Ctrl-C to stop\n", exposer.Url().c_str(), path.c_str());

    int signal_number = 0;
    while (exposer.IsRunning()) {
      timespec tick{0, 200 * 1000 * 1000};
      const int s = sigtimedwait(&stop_signals, nullptr, &tick);
      if (s > 0) {
        signal_number = s;
        break;
      }
    }
    const bool died = signal_number == 0;
    exposer.Stop();
    if (died) {
      std::fprintf(stderr, "error: the HTTP server on %s stopped unexpectedly\n", listen.c_str());
      exit_code = 1;
      return;
    }
    std::fprintf(stderr, "stopped (%s)\n", signal_number == SIGINT ? "SIGINT" : "SIGTERM");
    exit_code = 0;
  });
}

}  // namespace xnn::cli
