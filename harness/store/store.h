// The results store: one SQLite database that holds every experiment, run, job, raw sample,
// metric, per-op profile, artifact, target and environment xnn-lab records. Several
// `xnn-lab run` processes may share one database: it runs in WAL mode, every write is a short
// BEGIN IMMEDIATE transaction, and a writer that finds the database busy waits and retries (up
// to StoreOptions::busy_deadline_ms) instead of failing with "database is locked".
// The schema, its migrations and the rules for adding one are in harness/store/README.md.
//
// A Store is one connection: use one per thread. A forked child that uses the database opens
// its own Store (SQLite's lock bookkeeping is per process: never use a connection across fork).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

struct sqlite3;

namespace xnn {

// Status values as stored (the schema's CHECK constraints accept exactly these).
namespace run_status {
inline constexpr char kRunning[] = "RUNNING";
inline constexpr char kFinished[] = "FINISHED";
inline constexpr char kFailed[] = "FAILED";
inline constexpr char kKilled[] = "KILLED";
}  // namespace run_status
namespace job_status {
inline constexpr char kRunning[] = "RUNNING";
inline constexpr char kDone[] = "DONE";
inline constexpr char kFailed[] = "FAILED";
}  // namespace job_status

// Timestamps are UTC ISO 8601 with milliseconds, e.g. "2026-12-02T14:15:03.123Z", so text
// order is time order.
std::string utc_now_iso();

// The machine and build a run was measured on.
struct Environment {
  std::string cpu_model;    // /proc/cpuinfo "model name" (or the closest field on non-x86)
  std::string isa;          // notable ISA extensions present, space-separated ("avx2 fma avx512f")
  int cores = 0;            // online logical CPUs
  std::string governor;     // cpu0 cpufreq scaling governor; empty where there is none
  double load_avg_1m = 0;   // 1-minute load average when captured
  std::string compiler;     // e.g. "gcc 12.2.0"
  std::string xnn_version;  // xnn-lab's version
  std::string git_commit;   // xnn-lab's source commit (the caller knows it)
  std::string os;           // e.g. "Debian GNU/Linux 12 (bookworm); Linux 6.1.0-18-amd64 x86_64"
  std::string hostname;

  // Reads /proc/cpuinfo, cpufreq, getloadavg, uname and /etc/os-release. Never throws for a
  // missing file: that field is left empty.
  static Environment capture(const std::string& git_commit = "");
  // Hash of every field; ensure_environment() dedupes on it.
  std::string fingerprint() const;
};

struct ExperimentRecord {
  int64_t id = 0;
  std::string name;
  std::string config_path;
  std::string created_at;
};

struct TargetRecord {
  int64_t id = 0;  // filled by readers; ignored by ensure_target
  std::string name;
  std::string kind;        // e.g. "cpu", "simulated-npu"
  bool simulated = false;  // results come from a model of the device, not the device
  std::string spec_json = "{}";
};

struct RunRecord {
  std::string id;  // empty: create_run generates one ("20261202-141503-ab12cd": UTC time + random)
  std::string experiment;
  std::string config_path;
  std::string config_hash;
  std::string config_text;
  std::string git_commit;
  std::optional<std::string> tag;
  std::string status = run_status::kRunning;
  std::string started_at;   // empty: now
  std::string finished_at;  // empty while running
  int64_t environment_id = 0;  // 0: none
  std::string command;         // the command line that started the run
  int64_t pid = 0;             // 0: this process (create_run fills it)
  std::string hostname;        // empty: this host (create_run fills it)
};

struct JobRecord {
  std::string id;  // deterministic hash of the job's spec, computed by the caller
  std::string run_id;  // the run that (last) executed it
  std::string experiment;
  std::string model;
  std::string variant;
  std::string target;  // a target name registered with ensure_target
  std::string spec_json = "{}";
  std::string status = job_status::kRunning;
  std::string error;
  std::string started_at;
  std::string finished_at;
  int attempts = 0;  // how many times start_job was called for this id
};

struct MetricValue {
  std::string name;
  double value = 0;  // NaN is stored as NULL and read back as NaN
  std::string unit;
};

struct OpProfileRow {
  int64_t node_index = 0;
  std::string node_name;
  std::string op_type;
  std::string kernel;
  std::string shapes;  // free text, e.g. "1x3x224x224,32x3x3x3->1x32x112x112"
  int64_t macs = 0;
  int64_t bytes = 0;
  double time_ms = 0;  // mean time per inference
};

struct ArtifactRecord {
  std::string kind;  // e.g. "model", "report", "profile"
  std::string path;
  std::string sha256;
  int64_t size_bytes = 0;
};

struct JobResult {
  std::string status = job_status::kDone;  // DONE or FAILED
  std::string error;
  std::vector<MetricValue> metrics;
  std::map<std::string, std::vector<double>> samples;  // e.g. "latency_ms" -> raw samples in order
  std::vector<OpProfileRow> op_profiles;
  std::vector<ArtifactRecord> artifacts;
};

struct RunJob {
  JobRecord job;
  bool reused = false;  // the run found it DONE and did not execute it again
};

struct LatestResult {
  JobRecord job;
  bool simulated = false;  // the target's flag
  std::string git_commit;  // the commit of the run that produced the job
  std::vector<MetricValue> metrics;
};

struct StoreOptions {
  bool create_if_missing = true;  // false: a missing file is an error (for readers)
  // Open with SQLITE_OPEN_READONLY (the Prometheus exporter): nothing is written, not even a
  // migration (an older schema is an error); the file must already be in WAL mode.
  bool read_only = false;
  int busy_timeout_ms = 30000;    // SQLite's own wait for a lock (PRAGMA busy_timeout)
  int busy_deadline_ms = 60000;   // total time a transaction keeps retrying while busy
};

class Store {
 public:
  static constexpr int kSchemaVersion = 2;

  // Opens (or creates) the database at `path` and applies pending migrations. Errors
  // (xnn::Error) name the path: a folder that does not exist, a file that is not an SQLite
  // database, a schema newer than kSchemaVersion.
  explicit Store(const std::string& path, const StoreOptions& options = {});
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  const std::string& path() const { return path_; }
  int schema_version();
  std::string integrity_check();  // PRAGMA integrity_check: "ok" when healthy

  // Runs `fn` in one BEGIN IMMEDIATE transaction: COMMIT when it returns, ROLLBACK when it
  // throws (the exception propagates). Store calls made inside join the transaction (nested
  // calls use savepoints), so several writes can be made atomic together. While the database
  // is busy, BEGIN and COMMIT are retried with jittered backoff until busy_deadline_ms; if a
  // statement inside `fn` itself reports busy, the transaction is rolled back and `fn` is run
  // again, so `fn` should have no effects outside the database.
  void write_transaction(const std::function<void()>& fn);
  // Runs `fn` in one deferred transaction (one consistent snapshot), retried while busy; inside
  // a write transaction it simply joins it. Like write_transaction, `fn` may run more than once.
  void read_transaction(const std::function<void()>& fn);
  // The underlying connection, for stores of other layers that keep their own tables in the
  // same database (nas/study/study_store.h); use it only inside the transactions above.
  sqlite3* connection() { return db_; }

  // ---- writers ----
  int64_t ensure_experiment(const std::string& name, const std::string& config_path);
  int64_t ensure_environment(const Environment& env);  // deduped by env.fingerprint()
  int64_t ensure_target(const TargetRecord& target);   // by name; kind/simulated/spec updated
  // Inserts the run (creating its experiment if needed); returns its id.
  std::string create_run(const RunRecord& run);
  void finish_run(const std::string& run_id, const std::string& status);
  void set_run_tag(const std::string& run_id, const std::optional<std::string>& tag);

  bool is_job_done(const std::string& job_id);
  // Inserts the job as RUNNING, or restarts an existing one (RUNNING from an interrupted run,
  // FAILED, or DONE when the caller forces a re-run): its old metrics, samples, profiles and
  // artifacts are deleted and attempts incremented, in the same transaction. Also links the
  // job to job.run_id (not reused). The experiment and target must exist.
  void start_job(const JobRecord& job);
  // Records the outcome: status, error, metrics, every raw sample, op profiles and artifacts,
  // all in one transaction (replacing anything recorded for the job before).
  void finish_job(const std::string& job_id, const JobResult& result);
  // Records that `run_id` covers `job_id`; reused = it was DONE already and not re-executed.
  void link_job_to_run(const std::string& run_id, const std::string& job_id, bool reused);

  // ---- readers ----
  std::vector<ExperimentRecord> list_experiments();
  std::vector<TargetRecord> list_targets();
  std::optional<Environment> get_environment(int64_t id);
  // Newest first (by started_at).
  std::vector<RunRecord> list_runs(const std::optional<std::string>& experiment = std::nullopt);
  // Exact id, else a unique id prefix; throws when the prefix matches several runs.
  std::optional<RunRecord> get_run(const std::string& id_or_prefix);
  // `sel`: a run id (or unique prefix), "latest", "commit:<sha-prefix>" (newest run at that
  // commit) or "tag:<name>" (newest run with that tag). `experiment` restricts the search.
  // nullopt when nothing matches; throws for an empty selector or an ambiguous prefix.
  // With `status` (e.g. run_status::kFinished, for CI gating), "latest", "commit:" and "tag:"
  // only consider runs with that status; a run id selects its run whatever the status.
  std::optional<RunRecord> resolve_run_selector(const std::string& sel,
                                                const std::optional<std::string>& experiment = std::nullopt,
                                                const std::optional<std::string>& status = std::nullopt);
  // True when `run` is RUNNING but was started on this host by a process that no longer exists
  // (killed or crashed; readers can show it as interrupted).
  static bool is_run_orphaned(const RunRecord& run);

  std::optional<JobRecord> get_job(const std::string& job_id);
  std::vector<RunJob> jobs_of_run(const std::string& run_id);  // in link order
  std::vector<MetricValue> metrics_of_job(const std::string& job_id);  // in recorded order
  std::vector<double> samples_of_job(const std::string& job_id, const std::string& name);
  std::map<std::string, std::vector<double>> samples_of_job(const std::string& job_id);
  std::vector<OpProfileRow> op_profiles_of_job(const std::string& job_id);  // by node_index
  std::vector<ArtifactRecord> artifacts_of_job(const std::string& job_id);
  // For each (experiment, model, variant, target): the newest DONE job and its metrics.
  std::vector<LatestResult> latest_results();

 private:
  void open(const StoreOptions& options);
  void migrate();
  [[noreturn]] void throw_busy(const char* what);
  void backoff_sleep(int& backoff_ms);

  std::string path_;
  StoreOptions options_;
  sqlite3* db_ = nullptr;
  int depth_ = 0;  // transaction nesting: 0 none, 1 BEGIN, >1 savepoints
};

}  // namespace xnn
