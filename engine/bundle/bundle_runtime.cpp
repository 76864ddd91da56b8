#include "engine/bundle/bundle_runtime.h"

#include <sys/stat.h>

#include <filesystem>
#include <utility>

#include "engine/bundle/session_pool.h"
#include "engine/core/error.h"

namespace xnn {

// One immutable version: never changed after construction (the pool's bookkeeping is internally
// synchronised), so any number of requests can share it.
struct BundleRuntime::Version {
  std::shared_ptr<const BundleStatus> status;
  std::shared_ptr<const Model> model;
  mutable SessionPool pool;
  std::vector<IoInfo> inputs, outputs;
  std::vector<std::string> output_names;

  Version(std::shared_ptr<const BundleStatus> s, PreparedVariant&& v)
      : status(std::move(s)), model(v.model), pool(std::move(v.sessions)) {
    inputs = pool.front().inputs();
    outputs = pool.front().outputs();
    for (const IoInfo& io : outputs) output_names.push_back(io.name);
  }
};

namespace {

std::string io_str(const IoInfo& io) {
  return std::string(dtype_name(io.dtype)) + (io.has_shape ? dims_str(io.shape) : "[?]");
}

// "" when `next` has the same inputs and outputs (names, order, dtypes, shapes) as `current`.
std::string signature_change(const std::vector<IoInfo>& current, const std::vector<IoInfo>& next,
                             const std::string& what) {
  if (current.size() != next.size()) {
    return "the new model has " + std::to_string(next.size()) + " " + what + "s, the active one " +
           std::to_string(current.size());
  }
  for (size_t i = 0; i < current.size(); ++i) {
    const IoInfo& a = current[i];
    const IoInfo& b = next[i];
    if (a.name != b.name) return what + " " + std::to_string(i) + " is '" + b.name + "', the active model's is '" + a.name + "'";
    if (a.dtype != b.dtype || a.has_shape != b.has_shape || a.shape != b.shape) {
      return what + " '" + a.name + "' changes from " + io_str(a) + " to " + io_str(b);
    }
  }
  return "";
}

// What identifies a file's content for the watcher without reading it.
std::string file_signature(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "";
  return std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + ":" + std::to_string(st.st_size) + ":" +
         std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
}

}  // namespace

BundleRuntime::BundleRuntime(BundleOptions options)
    : options_(std::move(options)), device_(options_.device ? *options_.device : detect_device()) {}

BundleRuntime::~BundleRuntime() { stop_watching(); }

std::unique_ptr<BundleRuntime> BundleRuntime::open(const std::string& path, BundleOptions options) {
  std::unique_ptr<BundleRuntime> rt(new BundleRuntime(std::move(options)));
  const BundleFile bundle = BundleFile::open(path);
  rt->activate(rt->load_version(bundle));
  return rt;
}

std::shared_ptr<const BundleRuntime::Version> BundleRuntime::load_version(const BundleFile& bundle) const {
  VariantOptions vo;
  vo.key = options_.key;
  vo.sessions = options_.sessions;
  vo.session = options_.session;
  VariantSelection sel = select_variant(bundle, device_, vo);
  if (!sel.chosen) throw Error(sel.failure_summary(bundle, device_));

  auto status = std::make_shared<BundleStatus>();
  const BundleManifest& m = bundle.manifest();
  status->path = bundle.path();
  status->name = m.name;
  status->version = m.version;
  status->label = m.label;
  status->created_at = m.created_at;
  status->manifest_sha256 = bundle.manifest_sha256();
  status->rule_index = sel.chosen->rule_index;
  status->rule_name = m.policy[sel.chosen->rule_index].name;
  status->model_id = sel.chosen->model_id;
  status->target = sel.chosen->target;
  status->threads = sel.chosen->threads;
  status->sessions = static_cast<int>(sel.chosen->sessions.size());
  status->rules = std::move(sel.outcomes);
  status->device = device_;
  return std::make_shared<const Version>(std::move(status), std::move(*sel.chosen));
}

std::shared_ptr<const BundleRuntime::Version> BundleRuntime::current() const {
  std::lock_guard<std::mutex> lock(active_mutex_);
  return active_;
}

void BundleRuntime::activate(std::shared_ptr<const Version> version) {
  std::shared_ptr<const Version> previous;
  {
    std::lock_guard<std::mutex> lock(active_mutex_);
    previous = std::exchange(active_, std::move(version));
  }
  // `previous` is released here, outside the lock: when no request holds it any more, its
  // sessions are destroyed, which must not block requests that are taking the new version.
}

BundleRunResult BundleRuntime::run(const std::map<std::string, Tensor>& inputs) const {
  // One load: the whole request runs on this version, whatever update() does meanwhile.
  const std::shared_ptr<const Version> version = current();
  BundleRunResult result;
  {
    SessionPool::Lease session = version->pool.acquire();
    result.outputs = session->run(inputs);
  }
  result.output_names = version->output_names;
  result.produced_by = version->status;
  return result;
}

std::shared_ptr<const BundleStatus> BundleRuntime::active() const { return current()->status; }
std::vector<IoInfo> BundleRuntime::inputs() const { return current()->inputs; }
std::vector<IoInfo> BundleRuntime::outputs() const { return current()->outputs; }

std::shared_ptr<const BundleStatus> BundleRuntime::update(const std::string& path, const UpdateOptions& options) {
  std::lock_guard<std::mutex> serialise(update_mutex_);
  const std::shared_ptr<const Version> running = current();
  const BundleStatus& cur = *running->status;
  const BundleFile bundle = BundleFile::open(path);
  const BundleManifest& m = bundle.manifest();
  const std::string refused = path + ": update refused: ";
  if (m.name != cur.name) {
    throw Error(refused + "it is bundle '" + m.name + "', the active bundle is '" + cur.name + "'");
  }
  if (m.version <= cur.version && !options.allow_downgrade) {
    throw Error(refused + "version " + std::to_string(m.version) + " is not newer than the active version " +
                std::to_string(cur.version) + " (downgrade protection; allow it explicitly with allow_downgrade)");
  }
  std::shared_ptr<const Version> next;
  try {
    next = load_version(bundle);
  } catch (const Error& e) {
    throw Error(refused + e.what());
  }
  if (!options.allow_signature_change) {
    std::string change = signature_change(running->inputs, next->inputs, "input");
    if (change.empty()) change = signature_change(running->outputs, next->outputs, "output");
    if (!change.empty()) {
      throw Error(refused + change + " (requests made for the active model would fail; allow it explicitly with "
                            "allow_signature_change)");
    }
  }
  activate(next);
  return next->status;
}

void BundleRuntime::watch(const std::string& path, std::chrono::milliseconds interval, const UpdateOptions& options) {
  stop_watching();
  {
    std::lock_guard<std::mutex> lock(watch_mutex_);
    watch_stop_ = false;
    watch_status_ = WatchStatus{};
    watch_status_.watching = true;
    watch_status_.path = path;
  }
  // The file the active version came from is already applied; anything else is new.
  std::error_code ec;
  std::string seen = std::filesystem::equivalent(path, active()->path, ec) ? file_signature(path) : "";
  watcher_ = std::thread([this, path, interval, options, seen]() mutable {
    std::unique_lock<std::mutex> lock(watch_mutex_);
    while (!watch_stop_) {
      ++watch_status_.polls;
      const std::string now = file_signature(path);
      if (!now.empty() && now != seen) {
        seen = now;
        lock.unlock();  // an update takes a while; watch_status() must not wait for it
        std::string error;
        try {
          update(path, options);
        } catch (const std::exception& e) {  // xnn::Error, or e.g. bad_alloc: the old version stays
          error = e.what();
        }
        lock.lock();
        if (error.empty()) {
          ++watch_status_.updates_applied;
        } else {
          ++watch_status_.updates_refused;
          watch_status_.last_error = error;
        }
      }
      watch_wake_.wait_for(lock, interval, [this] { return watch_stop_; });
    }
  });
}

void BundleRuntime::stop_watching() {
  {
    std::lock_guard<std::mutex> lock(watch_mutex_);
    watch_stop_ = true;
    watch_status_.watching = false;
  }
  watch_wake_.notify_all();
  if (watcher_.joinable()) watcher_.join();
}

WatchStatus BundleRuntime::watch_status() const {
  std::lock_guard<std::mutex> lock(watch_mutex_);
  return watch_status_;
}

}  // namespace xnn
