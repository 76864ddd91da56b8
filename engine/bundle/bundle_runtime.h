// BundleRuntime: runs the model a bundle's policy picks for this device, and switches to a newer
// bundle while the host process keeps running.
//
// Versions: everything a request needs (the chosen model, its prepared Sessions, the status
// that describes them) lives in one immutable "active version" object held by a shared_ptr.
// run() copies that pointer ONCE and does the whole request on the version it got, so a request
// never mixes versions, and the version stays alive until its last request finishes even after a
// newer one replaced it. The pointer is guarded by a mutex held only to copy or replace it (not
// std::atomic<std::shared_ptr>: GCC 12's releases its internal lock with a relaxed store after a
// load, which ThreadSanitizer rightly reports as a race).
//
// Concurrency: run() may be called from any number of threads at once. Session::run is not
// thread-safe, so each version prepares a small pool of Sessions (BundleOptions::sessions, by
// default logical cores / the rule's threads) and each request leases one for its run
// (engine/bundle/session_pool.h); when all are busy, a request waits for one.
//
// Updates: update(path) opens, checks, selects and prepares the new bundle completely off to the
// side (the running version keeps serving) and only then swaps the pointer. Anything wrong (file
// corrupt or truncated, not newer, a different bundle name, no rule usable here, inputs or
// outputs that differ from the running model's) throws an xnn::Error that says why, and the old
// version stays active. Updates are serialised with each other. watch() polls a path and
// updates when a new file appears there (replace the file atomically: write_bundle does).
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "engine/bundle/bundle_variant.h"
#include "engine/bundle/device_info.h"
#include "engine/format/xnn_protect.h"
#include "engine/runtime/session.h"

namespace xnn {

struct BundleOptions {
  // Key of the bundle's protected models, supplied by the host app; never stored in a bundle.
  std::optional<ModelKey> key;
  // The device the policy is matched against; empty: detect_device(). Host apps set it to add
  // their own device class name (DeviceInfo::device_class) or to test a policy.
  std::optional<DeviceInfo> device;
  // Prepared Sessions per version (requests served at once); 0: max(1, cores / rule threads).
  int sessions = 0;
  // Base session options (opt level, profiling, ...); threads come from the chosen rule.
  SessionOptions session;
};

// What a version is and why it was chosen.
struct BundleStatus {
  std::string path;
  std::string name;
  int64_t version = 0;
  std::string label;
  std::string created_at;
  std::string manifest_sha256;
  size_t rule_index = 0;  // 0-based
  std::string rule_name;
  std::string model_id;
  std::string target;
  int threads = 1;
  int sessions = 1;
  std::vector<RuleOutcome> rules;  // every rule: chosen / skipped (with the reason) / not tried
  DeviceInfo device;
};

struct BundleRunResult {
  std::vector<Tensor> outputs;            // the model's outputs in declaration order
  std::vector<std::string> output_names;  // their names
  std::shared_ptr<const BundleStatus> produced_by;  // the version that computed them
};

struct UpdateOptions {
  bool allow_downgrade = false;         // accept a version <= the active one
  bool allow_signature_change = false;  // accept different input/output names, dtypes or shapes
};

struct WatchStatus {
  bool watching = false;
  std::string path;
  int64_t polls = 0;
  int64_t updates_applied = 0;
  int64_t updates_refused = 0;
  std::string last_error;  // why the last refused update was refused
};

class BundleRuntime {
 public:
  // Opens `path`, picks the variant for the device and prepares it. Throws an xnn::Error when
  // the bundle is unreadable or no rule can be used (every rule's reason in the message).
  static std::unique_ptr<BundleRuntime> open(const std::string& path, BundleOptions options = {});
  ~BundleRuntime();  // stops watching
  BundleRuntime(const BundleRuntime&) = delete;
  BundleRuntime& operator=(const BundleRuntime&) = delete;

  // Thread-safe; see the header comment. Inputs are checked like Session::run's.
  BundleRunResult run(const std::map<std::string, Tensor>& inputs) const;

  // The active version (a snapshot: a later update does not change it).
  std::shared_ptr<const BundleStatus> active() const;
  // The active model's inputs and outputs.
  std::vector<IoInfo> inputs() const;
  std::vector<IoInfo> outputs() const;

  // Switches to the bundle at `path` (see the header comment); returns the new status.
  std::shared_ptr<const BundleStatus> update(const std::string& path, const UpdateOptions& options = {});

  // Polls `path` every `interval` on a background thread (mtime, size and inode) and calls
  // update() when the file changed; refusals are recorded in watch_status(), not thrown.
  // A file identical to the active bundle's path at the time of the call is not re-applied.
  // Replaces an earlier watch.
  void watch(const std::string& path, std::chrono::milliseconds interval, const UpdateOptions& options = {});
  void stop_watching();
  WatchStatus watch_status() const;

 private:
  struct Version;
  explicit BundleRuntime(BundleOptions options);
  std::shared_ptr<const Version> load_version(const BundleFile& bundle) const;

  BundleOptions options_;
  DeviceInfo device_;
  std::shared_ptr<const Version> current() const;
  void activate(std::shared_ptr<const Version> version);

  mutable std::mutex active_mutex_;  // guards active_ only for the copy or the swap
  std::shared_ptr<const Version> active_;
  std::mutex update_mutex_;  // one update at a time

  mutable std::mutex watch_mutex_;
  std::condition_variable watch_wake_;
  bool watch_stop_ = false;
  WatchStatus watch_status_;
  std::thread watcher_;
};

}  // namespace xnn
