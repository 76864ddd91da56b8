#include "harness/store/store.h"

#include <signal.h>
#include <sqlite3.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "engine/core/error.h"
#include "harness/store/migrations.h"

#ifndef XNN_LAB_VERSION
#define XNN_LAB_VERSION "unknown"
#endif

namespace xnn {
namespace fs = std::filesystem;

namespace {

constexpr bool migrations_are_consecutive() {
  int expected = 1;
  for (const auto& m : store_schema::kMigrations) {
    if (m.version != expected++) return false;
  }
  return true;
}
static_assert(std::size(store_schema::kMigrations) == Store::kSchemaVersion,
              "append a migration to harness/store/migrations.h and bump Store::kSchemaVersion together");
static_assert(migrations_are_consecutive(), "migration versions must be 1, 2, 3, ...");

// Carries SQLite's result code so callers can tell busy and not-a-database apart.
class SqliteError : public Error {
 public:
  SqliteError(const std::string& what, int code) : Error(what), code(code) {}
  int code;
};
class BusyError : public SqliteError {
 public:
  using SqliteError::SqliteError;
};

bool is_busy(int rc) {
  int primary = rc & 0xff;
  return primary == SQLITE_BUSY || primary == SQLITE_LOCKED;
}

[[noreturn]] void fail(sqlite3* db, const std::string& path, int rc, const std::string& what) {
  std::string msg = path + ": " + what + ": " + (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
  if (is_busy(rc)) throw BusyError(msg, rc);
  throw SqliteError(msg, rc);
}

// A prepared statement; every value goes in through a bound parameter.
class Stmt {
 public:
  Stmt(sqlite3* db, const std::string& path, const char* sql) : db_(db), path_(path), sql_(sql) {
    int rc = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr);
    if (rc != SQLITE_OK) fail(db_, path_, rc, "preparing \"" + first_line() + "\"");
  }
  ~Stmt() { sqlite3_finalize(stmt_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  Stmt& text(int i, const std::string& v) {
    check(sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT));
    return *this;
  }
  Stmt& text(int i, const std::optional<std::string>& v) { return v ? text(i, *v) : null(i); }
  Stmt& int64(int i, int64_t v) {
    check(sqlite3_bind_int64(stmt_, i, v));
    return *this;
  }
  Stmt& real(int i, double v) {  // NaN becomes NULL
    check(std::isnan(v) ? sqlite3_bind_null(stmt_, i) : sqlite3_bind_double(stmt_, i, v));
    return *this;
  }
  Stmt& null(int i) {
    check(sqlite3_bind_null(stmt_, i));
    return *this;
  }

  // True while there is a row.
  bool step() {
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    fail(db_, path_, rc, "running \"" + first_line() + "\"");
  }
  void run() {
    while (step()) {
    }
  }
  void reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }

  bool is_null(int i) { return sqlite3_column_type(stmt_, i) == SQLITE_NULL; }
  std::string col_text(int i) {
    const unsigned char* p = sqlite3_column_text(stmt_, i);
    return p ? std::string(reinterpret_cast<const char*>(p), sqlite3_column_bytes(stmt_, i)) : std::string();
  }
  std::optional<std::string> col_opt_text(int i) {
    if (is_null(i)) return std::nullopt;
    return col_text(i);
  }
  int64_t col_int64(int i) { return sqlite3_column_int64(stmt_, i); }
  double col_real(int i) {
    return is_null(i) ? std::numeric_limits<double>::quiet_NaN() : sqlite3_column_double(stmt_, i);
  }

 private:
  void check(int rc) {
    if (rc != SQLITE_OK) fail(db_, path_, rc, "binding a parameter of \"" + first_line() + "\"");
  }
  std::string first_line() const {
    std::string s = sql_.substr(0, sql_.find('\n'));
    return s.size() > 80 ? s.substr(0, 80) + "..." : s;
  }
  sqlite3* db_;
  const std::string& path_;
  std::string sql_;
  sqlite3_stmt* stmt_ = nullptr;
};

void exec(sqlite3* db, const std::string& path, const std::string& sql) {
  char* err = nullptr;
  int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errstr(rc);
    sqlite3_free(err);
    std::string head = sql.substr(0, sql.find('\n'));
    std::string text = path + ": running \"" + head.substr(0, 80) + "\": " + msg;
    if (is_busy(rc)) throw BusyError(text, rc);
    throw SqliteError(text, rc);
  }
}

void rollback_quietly(sqlite3* db) {
  if (!sqlite3_get_autocommit(db)) sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
}

std::string this_hostname() {
  struct utsname u {};
  return uname(&u) == 0 ? std::string(u.nodename) : std::string();
}

std::string new_run_id() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
  std::random_device rd;
  char suffix[16];
  std::snprintf(suffix, sizeof(suffix), "%06x", static_cast<unsigned>(rd() & 0xffffff));
  return std::string(stamp) + "-" + suffix;
}

bool one_of(const std::string& s, std::initializer_list<const char*> values) {
  for (const char* v : values) {
    if (s == v) return true;
  }
  return false;
}

std::string read_first_line(const std::string& file) {
  std::ifstream in(file);
  std::string line;
  if (in) std::getline(in, line);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r' || line.back() == ' ')) line.pop_back();
  return line;
}

std::string trim(std::string s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  size_t e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

constexpr const char* kRunColumns =
    "SELECT r.id, e.name, r.config_path, r.config_hash, r.config_text, r.git_commit, r.tag, r.status, "
    "r.started_at, r.finished_at, r.environment_id, r.command, r.pid, r.hostname "
    "FROM runs r JOIN experiments e ON e.id = r.experiment_id ";

RunRecord read_run(Stmt& q) {
  RunRecord r;
  r.id = q.col_text(0);
  r.experiment = q.col_text(1);
  r.config_path = q.col_text(2);
  r.config_hash = q.col_text(3);
  r.config_text = q.col_text(4);
  r.git_commit = q.col_text(5);
  r.tag = q.col_opt_text(6);
  r.status = q.col_text(7);
  r.started_at = q.col_text(8);
  r.finished_at = q.col_text(9);
  r.environment_id = q.is_null(10) ? 0 : q.col_int64(10);
  r.command = q.col_text(11);
  r.pid = q.col_int64(12);
  r.hostname = q.col_text(13);
  return r;
}

constexpr const char* kJobColumns =
    "SELECT j.id, j.run_id, e.name, j.model, j.variant, t.name, j.spec_json, j.status, j.error, "
    "j.started_at, j.finished_at, j.attempts ";
constexpr const char* kJobJoins =
    "JOIN experiments e ON e.id = j.experiment_id JOIN targets t ON t.id = j.target_id ";

JobRecord read_job(Stmt& q) {
  JobRecord j;
  j.id = q.col_text(0);
  j.run_id = q.col_text(1);
  j.experiment = q.col_text(2);
  j.model = q.col_text(3);
  j.variant = q.col_text(4);
  j.target = q.col_text(5);
  j.spec_json = q.col_text(6);
  j.status = q.col_text(7);
  j.error = q.col_text(8);
  j.started_at = q.col_text(9);
  j.finished_at = q.col_text(10);
  j.attempts = static_cast<int>(q.col_int64(11));
  return j;
}

}  // namespace

std::string utc_now_iso() {
  auto now = std::chrono::system_clock::now();
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  std::time_t t = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  size_t n = std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(buf + n, sizeof(buf) - n, ".%03dZ", static_cast<int>(ms % 1000));
  return buf;
}

// ---------------------------------------------------------------- Environment

Environment Environment::capture(const std::string& git_commit) {
  Environment env;
  env.git_commit = git_commit;

  // /proc/cpuinfo: the first processor's name and ISA flags.
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line, flags, fallback_name;
  while (std::getline(cpuinfo, line)) {
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = trim(line.substr(0, colon));
    std::string value = trim(line.substr(colon + 1));
    if (key == "model name" && env.cpu_model.empty()) env.cpu_model = value;
    else if ((key == "Hardware" || key == "Processor" || key == "cpu model") && fallback_name.empty())
      fallback_name = value;
    else if ((key == "flags" || key == "Features") && flags.empty()) flags = value;
  }
  if (env.cpu_model.empty()) env.cpu_model = fallback_name;
  std::set<std::string> present;
  std::istringstream fs_in(flags);
  for (std::string f; fs_in >> f;) present.insert(f);
  static const char* const kNotable[] = {
      // x86
      "sse4_2", "avx", "f16c", "fma", "avx2", "avx_vnni", "avx512f", "avx512bw", "avx512vl",
      "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_int8", "amx_bf16",
      // Arm
      "asimd", "asimdhp", "asimddp", "i8mm", "bf16", "sve", "sve2", "sme"};
  for (const char* f : kNotable) {
    if (!present.count(f)) continue;
    if (!env.isa.empty()) env.isa += ' ';
    env.isa += f;
  }

  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  env.cores = cores > 0 ? static_cast<int>(cores) : 0;
  env.governor = read_first_line("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
  double load[1] = {0};
  if (getloadavg(load, 1) == 1) env.load_avg_1m = load[0];

#if defined(__clang__)
  env.compiler = "clang " __clang_version__;
#elif defined(__GNUC__)
  env.compiler = "gcc " __VERSION__;
#else
  env.compiler = __VERSION__;
#endif
  env.compiler = trim(env.compiler);
  env.xnn_version = XNN_LAB_VERSION;

  std::ifstream os_release("/etc/os-release");
  while (std::getline(os_release, line)) {
    if (line.rfind("PRETTY_NAME=", 0) == 0) {
      std::string v = line.substr(12);
      if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'')) v = v.substr(1, v.size() - 2);
      env.os = v;
      break;
    }
  }
  struct utsname u {};
  if (uname(&u) == 0) {
    std::string kernel = std::string(u.sysname) + " " + u.release + " " + u.machine;
    env.os = env.os.empty() ? kernel : env.os + "; " + kernel;
    env.hostname = u.nodename;
  }
  return env;
}

std::string Environment::fingerprint() const {
  // FNV-1a 64 over the fields with a separator; only used to dedupe rows.
  uint64_t h = 1469598103934665603ull;
  auto add = [&h](const std::string& s) {
    for (unsigned char c : s) {
      h ^= c;
      h *= 1099511628211ull;
    }
    h ^= 0x1f;
    h *= 1099511628211ull;
  };
  char load[32];
  std::snprintf(load, sizeof(load), "%.17g", load_avg_1m);
  for (const std::string* s : {&cpu_model, &isa, &governor, &compiler, &xnn_version, &git_commit, &os, &hostname})
    add(*s);
  add(std::to_string(cores));
  add(load);
  char out[20];
  std::snprintf(out, sizeof(out), "%016llx", static_cast<unsigned long long>(h));
  return out;
}

// ---------------------------------------------------------------- opening and migrations

Store::Store(const std::string& path, const StoreOptions& options) : path_(path), options_(options) {
  try {
    open(options);
  } catch (...) {
    if (db_) sqlite3_close_v2(db_);
    db_ = nullptr;
    throw;
  }
}

Store::~Store() {
  if (db_) {
    rollback_quietly(db_);
    sqlite3_close_v2(db_);
  }
}

void Store::open(const StoreOptions& options) {
  XNN_CHECK(!path_.empty(), "results database path is empty");
  if (path_ != ":memory:") {
    fs::path p(path_);
    fs::path dir = p.parent_path();
    if (dir.empty()) dir = ".";
    std::error_code ec;
    if (!fs::is_directory(dir, ec))
      throw Error(path_ + ": folder '" + dir.string() + "' does not exist (create it first)");
    if (fs::is_directory(p, ec)) throw Error(path_ + ": is a folder, expected an SQLite database file");
    if ((!options.create_if_missing || options.read_only) && !fs::exists(p, ec))
      throw Error(path_ + ": no such results database");
  }
  int flags = options.read_only ? SQLITE_OPEN_READONLY
                                : SQLITE_OPEN_READWRITE | (options.create_if_missing ? SQLITE_OPEN_CREATE : 0);
  int rc = sqlite3_open_v2(path_.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) fail(db_, path_, rc, "cannot open the results database");
  sqlite3_extended_result_codes(db_, 1);
  sqlite3_busy_timeout(db_, options.busy_timeout_ms);

  // The first read of the file tells a non-database apart and finds its schema version.
  int version = 0;
  try {
    version = schema_version();
  } catch (const SqliteError& e) {
    int primary = e.code & 0xff;
    if (primary == SQLITE_NOTADB || primary == SQLITE_CORRUPT)
      throw Error(path_ + ": not an SQLite database (" + sqlite3_errstr(e.code) + ")");
    throw;
  }
  if (version > kSchemaVersion) {
    throw Error(path_ + ": database schema version " + std::to_string(version) +
                " is newer than this xnn-lab supports (" + std::to_string(kSchemaVersion) + "); upgrade xnn-lab");
  }

  if (options.read_only) {
    if (version < kSchemaVersion) {
      throw Error(path_ + ": database schema version " + std::to_string(version) + " is older than this xnn-lab's (" +
                  std::to_string(kSchemaVersion) + "); a read-only reader does not migrate it (any xnn-lab run will)");
    }
    Stmt q(db_, path_, "PRAGMA journal_mode");  // reads the mode, changes nothing
    std::string mode = q.step() ? q.col_text(0) : "";
    std::transform(mode.begin(), mode.end(), mode.begin(), [](unsigned char c) { return std::tolower(c); });
    if (mode != "wal") throw Error(path_ + ": not in WAL journal mode ('" + mode + "'); open it once with xnn-lab run");
    exec(db_, path_, "PRAGMA foreign_keys=ON");
    return;
  }
  // WAL lets readers run beside one writer; switching needs a brief exclusive lock, so retry.
  auto start = std::chrono::steady_clock::now();
  int backoff = 2;
  std::string mode;
  for (;;) {
    try {
      Stmt q(db_, path_, "PRAGMA journal_mode=WAL");
      if (q.step()) mode = q.col_text(0);
      break;
    } catch (const BusyError&) {
      if (std::chrono::steady_clock::now() - start > std::chrono::milliseconds(options.busy_deadline_ms))
        throw_busy("switch to WAL journal mode");
      backoff_sleep(backoff);
    }
  }
  std::transform(mode.begin(), mode.end(), mode.begin(), [](unsigned char c) { return std::tolower(c); });
  if (mode != "wal" && !(path_ == ":memory:" && mode == "memory")) {
    throw Error(path_ + ": cannot use WAL journal mode (SQLite reports '" + mode +
                "'); keep the results database on a local file system");
  }
  exec(db_, path_, "PRAGMA synchronous=NORMAL");
  exec(db_, path_, "PRAGMA foreign_keys=ON");
  if (version < kSchemaVersion) migrate();
}

int Store::schema_version() {
  int v = 0;
  read_transaction([&] {
    Stmt q(db_, path_, "PRAGMA user_version");
    v = q.step() ? static_cast<int>(q.col_int64(0)) : 0;
  });
  return v;
}

std::string Store::integrity_check() {
  std::string out;
  read_transaction([&] {
    std::string text;
    Stmt q(db_, path_, "PRAGMA integrity_check");
    while (q.step()) {
      if (!text.empty()) text += '\n';
      text += q.col_text(0);
    }
    out = text;
  });
  return out;
}

void Store::migrate() {
  // Foreign keys off so a migration may rebuild a table (SQLite's 12-step ALTER); checked
  // before COMMIT instead. The pragma is a no-op inside a transaction, hence here.
  exec(db_, path_, "PRAGMA foreign_keys=OFF");
  try {
    write_transaction([&] {
      int version = 0;
      {
        Stmt q(db_, path_, "PRAGMA user_version");
        if (q.step()) version = static_cast<int>(q.col_int64(0));
      }
      if (version > kSchemaVersion) {  // another process upgraded it meanwhile
        throw Error(path_ + ": database schema version " + std::to_string(version) +
                    " is newer than this xnn-lab supports (" + std::to_string(kSchemaVersion) +
                    "); upgrade xnn-lab");
      }
      for (const auto& m : store_schema::kMigrations) {
        if (m.version <= version) continue;
        exec(db_, path_, std::string(m.sql));
        Stmt h(db_, path_, "INSERT INTO schema_history(version, name, applied_at) VALUES (?1, ?2, ?3)");
        h.int64(1, m.version).text(2, std::string(m.name)).text(3, utc_now_iso()).run();
        exec(db_, path_, "PRAGMA user_version = " + std::to_string(m.version));
      }
      Stmt fk(db_, path_, "PRAGMA foreign_key_check");
      if (fk.step()) {
        throw Error(path_ + ": migrating to schema version " + std::to_string(kSchemaVersion) +
                    " left rows in table '" + fk.col_text(0) + "' that violate a foreign key");
      }
    });
  } catch (...) {
    sqlite3_exec(db_, "PRAGMA foreign_keys=ON", nullptr, nullptr, nullptr);
    throw;
  }
  exec(db_, path_, "PRAGMA foreign_keys=ON");
}

// ---------------------------------------------------------------- transactions

void Store::backoff_sleep(int& backoff_ms) {
  thread_local std::minstd_rand rng(std::random_device{}());
  int lo = std::max(1, backoff_ms / 2);
  int ms = std::uniform_int_distribution<int>(lo, std::max(lo, backoff_ms))(rng);
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  backoff_ms = std::min(backoff_ms * 2, 200);
}

void Store::throw_busy(const char* what) {
  char seconds[32];
  std::snprintf(seconds, sizeof(seconds), "%.1f", options_.busy_deadline_ms / 1000.0);
  throw Error(path_ + ": database is busy: could not " + std::string(what) + " within " + seconds +
              " s because another connection kept it locked");
}

void Store::write_transaction(const std::function<void()>& fn) {
  if (depth_ > 0) {  // nested: a savepoint inside the caller's transaction
    std::string sp = "xnn_sp" + std::to_string(depth_);
    exec(db_, path_, "SAVEPOINT " + sp);
    ++depth_;
    try {
      fn();
    } catch (...) {
      --depth_;
      if (!sqlite3_get_autocommit(db_)) {
        sqlite3_exec(db_, ("ROLLBACK TO " + sp).c_str(), nullptr, nullptr, nullptr);
        sqlite3_exec(db_, ("RELEASE " + sp).c_str(), nullptr, nullptr, nullptr);
      }
      throw;
    }
    --depth_;
    exec(db_, path_, "RELEASE " + sp);
    return;
  }

  const auto start = std::chrono::steady_clock::now();
  auto expired = [&] {
    return std::chrono::steady_clock::now() - start > std::chrono::milliseconds(options_.busy_deadline_ms);
  };
  int backoff = 2;
  for (;;) {
    try {
      exec(db_, path_, "BEGIN IMMEDIATE");
    } catch (const BusyError&) {
      if (expired()) throw_busy("start a write transaction");
      backoff_sleep(backoff);
      continue;
    }
    depth_ = 1;
    try {
      fn();
    } catch (const BusyError&) {
      rollback_quietly(db_);
      depth_ = 0;
      if (expired()) throw_busy("finish a write transaction");
      backoff_sleep(backoff);
      continue;  // run fn again from the start
    } catch (...) {
      rollback_quietly(db_);
      depth_ = 0;
      throw;
    }
    for (;;) {  // COMMIT may be retried on its own after SQLITE_BUSY
      try {
        exec(db_, path_, "COMMIT");
        depth_ = 0;
        return;
      } catch (const BusyError&) {
        if (expired()) {
          rollback_quietly(db_);
          depth_ = 0;
          throw_busy("commit a write transaction");
        }
        backoff_sleep(backoff);
      } catch (...) {
        rollback_quietly(db_);
        depth_ = 0;
        throw;
      }
    }
  }
}

void Store::read_transaction(const std::function<void()>& fn) {
  if (depth_ > 0) {
    fn();
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  int backoff = 2;
  for (;;) {
    try {
      exec(db_, path_, "BEGIN");
      depth_ = 1;
      fn();
      exec(db_, path_, "COMMIT");
      depth_ = 0;
      return;
    } catch (const BusyError&) {
      rollback_quietly(db_);
      depth_ = 0;
      if (std::chrono::steady_clock::now() - start > std::chrono::milliseconds(options_.busy_deadline_ms))
        throw_busy("read");
      backoff_sleep(backoff);
    } catch (...) {
      rollback_quietly(db_);
      depth_ = 0;
      throw;
    }
  }
}

// ---------------------------------------------------------------- writers

int64_t Store::ensure_experiment(const std::string& name, const std::string& config_path) {
  XNN_CHECK(!name.empty(), path_ + ": experiment name is empty");
  int64_t id = 0;
  write_transaction([&] {
    Stmt q(db_, path_,
           "INSERT INTO experiments(name, config_path, created_at) VALUES (?1, ?2, ?3) "
           "ON CONFLICT(name) DO UPDATE SET config_path = CASE WHEN excluded.config_path <> '' "
           "THEN excluded.config_path ELSE experiments.config_path END RETURNING id");
    q.text(1, name).text(2, config_path).text(3, utc_now_iso());
    XNN_CHECK(q.step(), path_ + ": experiment '" + name + "' was not recorded");
    id = q.col_int64(0);
    q.run();
  });
  return id;
}

int64_t Store::ensure_environment(const Environment& env) {
  const std::string fp = env.fingerprint();
  int64_t id = 0;
  write_transaction([&] {
    Stmt ins(db_, path_,
             "INSERT INTO environments(fingerprint, cpu_model, isa, cores, governor, load_avg_1m, compiler, "
             "xnn_version, git_commit, os, hostname, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, "
             "?10, ?11, ?12) ON CONFLICT(fingerprint) DO NOTHING");
    ins.text(1, fp).text(2, env.cpu_model).text(3, env.isa).int64(4, env.cores).text(5, env.governor);
    ins.real(6, env.load_avg_1m).text(7, env.compiler).text(8, env.xnn_version).text(9, env.git_commit);
    ins.text(10, env.os).text(11, env.hostname).text(12, utc_now_iso()).run();
    Stmt q(db_, path_, "SELECT id FROM environments WHERE fingerprint = ?1");
    q.text(1, fp);
    XNN_CHECK(q.step(), path_ + ": environment " + fp + " was not recorded");
    id = q.col_int64(0);
  });
  return id;
}

int64_t Store::ensure_target(const TargetRecord& target) {
  XNN_CHECK(!target.name.empty(), path_ + ": target name is empty");
  int64_t id = 0;
  write_transaction([&] {
    Stmt q(db_, path_,
           "INSERT INTO targets(name, kind, simulated, spec_json, updated_at) VALUES (?1, ?2, ?3, ?4, ?5) "
           "ON CONFLICT(name) DO UPDATE SET kind = excluded.kind, simulated = excluded.simulated, "
           "spec_json = excluded.spec_json, updated_at = excluded.updated_at RETURNING id");
    q.text(1, target.name).text(2, target.kind).int64(3, target.simulated ? 1 : 0);
    q.text(4, target.spec_json.empty() ? std::string("{}") : target.spec_json).text(5, utc_now_iso());
    XNN_CHECK(q.step(), path_ + ": target '" + target.name + "' was not recorded");
    id = q.col_int64(0);
    q.run();
  });
  return id;
}

std::string Store::create_run(const RunRecord& run) {
  XNN_CHECK(!run.experiment.empty(), path_ + ": run has no experiment name");
  XNN_CHECK(one_of(run.status, {run_status::kRunning, run_status::kFinished, run_status::kFailed, run_status::kKilled}),
            path_ + ": run status '" + run.status + "' is not one of RUNNING, FINISHED, FAILED, KILLED");
  std::string id;
  write_transaction([&] {
    id = run.id.empty() ? new_run_id() : run.id;
    for (int tries = 0;; ++tries) {
      Stmt q(db_, path_, "SELECT 1 FROM runs WHERE id = ?1");
      q.text(1, id);
      if (!q.step()) break;
      if (!run.id.empty()) throw Error(path_ + ": a run with id '" + id + "' already exists");
      XNN_CHECK(tries < 100, path_ + ": could not generate a fresh run id");
      id = new_run_id();
    }
    if (run.environment_id != 0) {
      Stmt q(db_, path_, "SELECT 1 FROM environments WHERE id = ?1");
      q.int64(1, run.environment_id);
      XNN_CHECK(q.step(), path_ + ": run '" + id + "': environment id " + std::to_string(run.environment_id) +
                              " does not exist (use ensure_environment's id)");
    }
    const int64_t experiment_id = ensure_experiment(run.experiment, run.config_path);
    Stmt ins(db_, path_,
             "INSERT INTO runs(id, experiment_id, config_path, config_hash, config_text, git_commit, tag, status, "
             "started_at, finished_at, environment_id, command, pid, hostname) "
             "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)");
    ins.text(1, id).int64(2, experiment_id).text(3, run.config_path).text(4, run.config_hash);
    ins.text(5, run.config_text).text(6, run.git_commit).text(7, run.tag).text(8, run.status);
    ins.text(9, run.started_at.empty() ? utc_now_iso() : run.started_at);
    if (run.finished_at.empty()) ins.null(10);
    else ins.text(10, run.finished_at);
    if (run.environment_id == 0) ins.null(11);
    else ins.int64(11, run.environment_id);
    ins.text(12, run.command).int64(13, run.pid != 0 ? run.pid : static_cast<int64_t>(getpid()));
    ins.text(14, run.hostname.empty() ? this_hostname() : run.hostname).run();
  });
  return id;
}

void Store::finish_run(const std::string& run_id, const std::string& status) {
  XNN_CHECK(one_of(status, {run_status::kFinished, run_status::kFailed, run_status::kKilled}),
            path_ + ": run '" + run_id + "': final status '" + status + "' is not one of FINISHED, FAILED, KILLED");
  write_transaction([&] {
    Stmt q(db_, path_, "UPDATE runs SET status = ?1, finished_at = ?2 WHERE id = ?3");
    q.text(1, status).text(2, utc_now_iso()).text(3, run_id).run();
    XNN_CHECK(sqlite3_changes(db_) == 1, path_ + ": no run with id '" + run_id + "'");
  });
}

void Store::set_run_tag(const std::string& run_id, const std::optional<std::string>& tag) {
  std::optional<std::string> value = tag && !tag->empty() ? tag : std::nullopt;
  write_transaction([&] {
    Stmt q(db_, path_, "UPDATE runs SET tag = ?1 WHERE id = ?2");
    q.text(1, value).text(2, run_id).run();
    XNN_CHECK(sqlite3_changes(db_) == 1, path_ + ": no run with id '" + run_id + "'");
  });
}

bool Store::is_job_done(const std::string& job_id) {
  bool done = false;
  read_transaction([&] {
    Stmt q(db_, path_, "SELECT status FROM jobs WHERE id = ?1");
    q.text(1, job_id);
    done = q.step() && q.col_text(0) == job_status::kDone;
  });
  return done;
}

void Store::start_job(const JobRecord& job) {
  const std::string who = path_ + ": job '" + job.id + "'";
  XNN_CHECK(!job.id.empty(), path_ + ": job id is empty");
  XNN_CHECK(!job.run_id.empty(), who + " has no run id");
  XNN_CHECK(!job.model.empty(), who + " has no model");
  write_transaction([&] {
    int64_t experiment_id = 0, target_id = 0;
    {
      Stmt q(db_, path_, "SELECT id FROM experiments WHERE name = ?1");
      q.text(1, job.experiment);
      XNN_CHECK(q.step(), who + ": experiment '" + job.experiment + "' does not exist (create its run first)");
      experiment_id = q.col_int64(0);
    }
    {
      Stmt q(db_, path_, "SELECT id FROM targets WHERE name = ?1");
      q.text(1, job.target);
      XNN_CHECK(q.step(), who + ": target '" + job.target + "' is not registered (call ensure_target first)");
      target_id = q.col_int64(0);
    }
    {
      Stmt q(db_, path_, "SELECT 1 FROM runs WHERE id = ?1");
      q.text(1, job.run_id);
      XNN_CHECK(q.step(), who + ": run '" + job.run_id + "' does not exist");
    }
    for (const char* sql : {"DELETE FROM metrics WHERE job_id = ?1", "DELETE FROM samples WHERE job_id = ?1",
                            "DELETE FROM op_profiles WHERE job_id = ?1", "DELETE FROM artifacts WHERE job_id = ?1"}) {
      Stmt d(db_, path_, sql);
      d.text(1, job.id).run();
    }
    Stmt ins(db_, path_,
             "INSERT INTO jobs(id, run_id, experiment_id, model, variant, target_id, spec_json, status, error, "
             "attempts, started_at, finished_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'RUNNING', '', 1, ?8, NULL) "
             "ON CONFLICT(id) DO UPDATE SET run_id = excluded.run_id, experiment_id = excluded.experiment_id, "
             "model = excluded.model, variant = excluded.variant, target_id = excluded.target_id, "
             "spec_json = excluded.spec_json, status = 'RUNNING', error = '', attempts = jobs.attempts + 1, "
             "started_at = excluded.started_at, finished_at = NULL");
    ins.text(1, job.id).text(2, job.run_id).int64(3, experiment_id).text(4, job.model).text(5, job.variant);
    ins.int64(6, target_id).text(7, job.spec_json.empty() ? std::string("{}") : job.spec_json);
    ins.text(8, job.started_at.empty() ? utc_now_iso() : job.started_at).run();
    link_job_to_run(job.run_id, job.id, false);
  });
}

void Store::finish_job(const std::string& job_id, const JobResult& result) {
  const std::string who = path_ + ": job '" + job_id + "'";
  XNN_CHECK(one_of(result.status, {job_status::kDone, job_status::kFailed}),
            who + ": final status '" + result.status + "' is not DONE or FAILED");
  {
    std::set<std::string> names;
    for (const auto& m : result.metrics)
      XNN_CHECK(names.insert(m.name).second, who + ": metric '" + m.name + "' is recorded twice");
    std::set<int64_t> nodes;
    for (const auto& p : result.op_profiles)
      XNN_CHECK(nodes.insert(p.node_index).second,
                who + ": op profile of node " + std::to_string(p.node_index) + " is recorded twice");
    std::set<std::string> paths;
    for (const auto& a : result.artifacts)
      XNN_CHECK(paths.insert(a.path).second, who + ": artifact '" + a.path + "' is recorded twice");
  }
  write_transaction([&] {
    {
      Stmt q(db_, path_, "SELECT 1 FROM jobs WHERE id = ?1");
      q.text(1, job_id);
      XNN_CHECK(q.step(), who + " does not exist (call start_job first)");
    }
    for (const char* sql : {"DELETE FROM metrics WHERE job_id = ?1", "DELETE FROM samples WHERE job_id = ?1",
                            "DELETE FROM op_profiles WHERE job_id = ?1", "DELETE FROM artifacts WHERE job_id = ?1"}) {
      Stmt d(db_, path_, sql);
      d.text(1, job_id).run();
    }
    {
      Stmt q(db_, path_, "INSERT INTO metrics(job_id, name, value, unit) VALUES (?1, ?2, ?3, ?4)");
      for (const auto& m : result.metrics) {
        q.text(1, job_id).text(2, m.name).real(3, m.value).text(4, m.unit).run();
        q.reset();
      }
    }
    {
      Stmt q(db_, path_, "INSERT INTO samples(job_id, name, seq, value) VALUES (?1, ?2, ?3, ?4)");
      for (const auto& [name, values] : result.samples) {
        for (size_t i = 0; i < values.size(); ++i) {
          q.text(1, job_id).text(2, name).int64(3, static_cast<int64_t>(i)).real(4, values[i]).run();
          q.reset();
        }
      }
    }
    {
      Stmt q(db_, path_,
             "INSERT INTO op_profiles(job_id, node_index, node_name, op_type, kernel, shapes, macs, bytes, time_ms) "
             "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)");
      for (const auto& p : result.op_profiles) {
        q.text(1, job_id).int64(2, p.node_index).text(3, p.node_name).text(4, p.op_type).text(5, p.kernel);
        q.text(6, p.shapes).int64(7, p.macs).int64(8, p.bytes).real(9, p.time_ms).run();
        q.reset();
      }
    }
    {
      Stmt q(db_, path_, "INSERT INTO artifacts(job_id, kind, path, sha256, size_bytes) VALUES (?1, ?2, ?3, ?4, ?5)");
      for (const auto& a : result.artifacts) {
        q.text(1, job_id).text(2, a.kind).text(3, a.path).text(4, a.sha256).int64(5, a.size_bytes).run();
        q.reset();
      }
    }
    Stmt u(db_, path_, "UPDATE jobs SET status = ?1, error = ?2, finished_at = ?3 WHERE id = ?4");
    u.text(1, result.status).text(2, result.error).text(3, utc_now_iso()).text(4, job_id).run();
  });
}

void Store::link_job_to_run(const std::string& run_id, const std::string& job_id, bool reused) {
  write_transaction([&] {
    {
      Stmt q(db_, path_, "SELECT 1 FROM runs WHERE id = ?1");
      q.text(1, run_id);
      XNN_CHECK(q.step(), path_ + ": no run with id '" + run_id + "'");
    }
    {
      Stmt q(db_, path_, "SELECT 1 FROM jobs WHERE id = ?1");
      q.text(1, job_id);
      XNN_CHECK(q.step(), path_ + ": no job with id '" + job_id + "'");
    }
    Stmt q(db_, path_,
           "INSERT INTO run_jobs(run_id, job_id, reused, linked_at) VALUES (?1, ?2, ?3, ?4) "
           "ON CONFLICT(run_id, job_id) DO UPDATE SET reused = excluded.reused");
    q.text(1, run_id).text(2, job_id).int64(3, reused ? 1 : 0).text(4, utc_now_iso()).run();
  });
}

// ---------------------------------------------------------------- readers

std::vector<ExperimentRecord> Store::list_experiments() {
  std::vector<ExperimentRecord> out;
  read_transaction([&] {
    std::vector<ExperimentRecord> rows;
    Stmt q(db_, path_, "SELECT id, name, config_path, created_at FROM experiments ORDER BY name");
    while (q.step()) rows.push_back({q.col_int64(0), q.col_text(1), q.col_text(2), q.col_text(3)});
    out = std::move(rows);
  });
  return out;
}

std::vector<TargetRecord> Store::list_targets() {
  std::vector<TargetRecord> out;
  read_transaction([&] {
    std::vector<TargetRecord> rows;
    Stmt q(db_, path_, "SELECT id, name, kind, simulated, spec_json FROM targets ORDER BY name");
    while (q.step()) rows.push_back({q.col_int64(0), q.col_text(1), q.col_text(2), q.col_int64(3) != 0, q.col_text(4)});
    out = std::move(rows);
  });
  return out;
}

std::optional<Environment> Store::get_environment(int64_t id) {
  std::optional<Environment> out;
  read_transaction([&] {
    out.reset();
    Stmt q(db_, path_,
           "SELECT cpu_model, isa, cores, governor, load_avg_1m, compiler, xnn_version, git_commit, os, hostname "
           "FROM environments WHERE id = ?1");
    q.int64(1, id);
    if (!q.step()) return;
    Environment e;
    e.cpu_model = q.col_text(0);
    e.isa = q.col_text(1);
    e.cores = static_cast<int>(q.col_int64(2));
    e.governor = q.col_text(3);
    e.load_avg_1m = q.col_real(4);
    e.compiler = q.col_text(5);
    e.xnn_version = q.col_text(6);
    e.git_commit = q.col_text(7);
    e.os = q.col_text(8);
    e.hostname = q.col_text(9);
    out = std::move(e);
  });
  return out;
}

std::vector<RunRecord> Store::list_runs(const std::optional<std::string>& experiment) {
  std::vector<RunRecord> out;
  read_transaction([&] {
    std::vector<RunRecord> rows;
    Stmt q(db_, path_,
           (std::string(kRunColumns) + "WHERE ?1 IS NULL OR e.name = ?1 ORDER BY r.started_at DESC, r.rowid DESC")
               .c_str());
    q.text(1, experiment);
    while (q.step()) rows.push_back(read_run(q));
    out = std::move(rows);
  });
  return out;
}

std::optional<RunRecord> Store::get_run(const std::string& id_or_prefix) {
  XNN_CHECK(!id_or_prefix.empty(), path_ + ": empty run id");
  std::optional<RunRecord> out;
  read_transaction([&] {
    out.reset();
    {
      Stmt q(db_, path_, (std::string(kRunColumns) + "WHERE r.id = ?1").c_str());
      q.text(1, id_or_prefix);
      if (q.step()) {
        out = read_run(q);
        return;
      }
    }
    Stmt q(db_, path_,
           (std::string(kRunColumns) +
            "WHERE substr(r.id, 1, length(?1)) = ?1 ORDER BY r.started_at DESC, r.rowid DESC LIMIT 6")
               .c_str());
    q.text(1, id_or_prefix);
    std::vector<RunRecord> rows;
    while (q.step()) rows.push_back(read_run(q));
    if (rows.size() > 1) {
      std::string list;
      for (size_t i = 0; i < rows.size() && i < 5; ++i) {
        if (i) list += ", ";
        list += rows[i].id;
      }
      if (rows.size() > 5) list += ", ...";
      throw Error(path_ + ": run id prefix '" + id_or_prefix + "' is ambiguous: it matches " + list);
    }
    if (rows.size() == 1) out = std::move(rows[0]);
  });
  return out;
}

std::optional<RunRecord> Store::resolve_run_selector(const std::string& sel,
                                                     const std::optional<std::string>& experiment,
                                                     const std::optional<std::string>& status) {
  const std::string expected = "expected a run id (or unique prefix), 'latest', 'commit:<sha>' or 'tag:<name>'";
  XNN_CHECK(!sel.empty(), "empty run selector; " + expected);
  std::optional<RunRecord> out;
  if (sel == "latest") {
    read_transaction([&] {
      out.reset();
      Stmt q(db_, path_,
             (std::string(kRunColumns) +
              "WHERE (?1 IS NULL OR e.name = ?1) AND (?2 IS NULL OR r.status = ?2) "
              "ORDER BY r.started_at DESC, r.rowid DESC LIMIT 1")
                 .c_str());
      q.text(1, experiment).text(2, status);
      if (q.step()) out = read_run(q);
    });
  } else if (sel.rfind("commit:", 0) == 0) {
    std::string sha = sel.substr(7);
    XNN_CHECK(!sha.empty(), "run selector '" + sel + "' has no commit; " + expected);
    std::transform(sha.begin(), sha.end(), sha.begin(), [](unsigned char c) { return std::tolower(c); });
    read_transaction([&] {
      out.reset();
      {
        Stmt q(db_, path_,
               "SELECT DISTINCT r.git_commit FROM runs r JOIN experiments e ON e.id = r.experiment_id "
               "WHERE lower(substr(r.git_commit, 1, length(?1))) = ?1 AND (?2 IS NULL OR e.name = ?2) "
               "AND (?3 IS NULL OR r.status = ?3) LIMIT 3");
        q.text(1, sha).text(2, experiment).text(3, status);
        std::vector<std::string> commits;
        while (q.step()) commits.push_back(q.col_text(0));
        if (commits.size() > 1) {
          throw Error(path_ + ": run selector '" + sel + "' is ambiguous: commits " + commits[0] + ", " + commits[1] +
                      (commits.size() > 2 ? ", ..." : "") + " match; give more of the sha");
        }
      }
      Stmt q(db_, path_,
             (std::string(kRunColumns) +
              "WHERE lower(substr(r.git_commit, 1, length(?1))) = ?1 AND (?2 IS NULL OR e.name = ?2) "
              "AND (?3 IS NULL OR r.status = ?3) ORDER BY r.started_at DESC, r.rowid DESC LIMIT 1")
                 .c_str());
      q.text(1, sha).text(2, experiment).text(3, status);
      if (q.step()) out = read_run(q);
    });
  } else if (sel.rfind("tag:", 0) == 0) {
    const std::string tag = sel.substr(4);
    XNN_CHECK(!tag.empty(), "run selector '" + sel + "' has no tag name; " + expected);
    read_transaction([&] {
      out.reset();
      Stmt q(db_, path_,
             (std::string(kRunColumns) +
              "WHERE r.tag = ?1 AND (?2 IS NULL OR e.name = ?2) AND (?3 IS NULL OR r.status = ?3) "
              "ORDER BY r.started_at DESC, r.rowid DESC LIMIT 1")
                 .c_str());
      q.text(1, tag).text(2, experiment).text(3, status);
      if (q.step()) out = read_run(q);
    });
  } else {
    XNN_CHECK(sel.find(':') == std::string::npos, "unknown run selector '" + sel + "'; " + expected);
    out = get_run(sel);
    if (out && experiment && out->experiment != *experiment) out.reset();
  }
  return out;
}

bool Store::is_run_orphaned(const RunRecord& run) {
  if (run.status != run_status::kRunning || run.pid <= 0 || run.hostname != this_hostname()) return false;
  return kill(static_cast<pid_t>(run.pid), 0) == -1 && errno == ESRCH;
}

std::optional<JobRecord> Store::get_job(const std::string& job_id) {
  std::optional<JobRecord> out;
  read_transaction([&] {
    out.reset();
    Stmt q(db_, path_, (std::string(kJobColumns) + "FROM jobs j " + kJobJoins + "WHERE j.id = ?1").c_str());
    q.text(1, job_id);
    if (q.step()) out = read_job(q);
  });
  return out;
}

std::vector<RunJob> Store::jobs_of_run(const std::string& run_id) {
  std::vector<RunJob> out;
  read_transaction([&] {
    std::vector<RunJob> rows;
    Stmt q(db_, path_,
           (std::string(kJobColumns) + ", rj.reused FROM run_jobs rj JOIN jobs j ON j.id = rj.job_id " + kJobJoins +
            "WHERE rj.run_id = ?1 ORDER BY rj.rowid")
               .c_str());
    q.text(1, run_id);
    while (q.step()) rows.push_back({read_job(q), q.col_int64(12) != 0});
    out = std::move(rows);
  });
  return out;
}

std::vector<MetricValue> Store::metrics_of_job(const std::string& job_id) {
  std::vector<MetricValue> out;
  read_transaction([&] {
    std::vector<MetricValue> rows;
    Stmt q(db_, path_, "SELECT name, value, unit FROM metrics WHERE job_id = ?1 ORDER BY id");
    q.text(1, job_id);
    while (q.step()) rows.push_back({q.col_text(0), q.col_real(1), q.col_text(2)});
    out = std::move(rows);
  });
  return out;
}

std::vector<double> Store::samples_of_job(const std::string& job_id, const std::string& name) {
  std::vector<double> out;
  read_transaction([&] {
    std::vector<double> rows;
    Stmt q(db_, path_, "SELECT value FROM samples WHERE job_id = ?1 AND name = ?2 ORDER BY seq");
    q.text(1, job_id).text(2, name);
    while (q.step()) rows.push_back(q.col_real(0));
    out = std::move(rows);
  });
  return out;
}

std::map<std::string, std::vector<double>> Store::samples_of_job(const std::string& job_id) {
  std::map<std::string, std::vector<double>> out;
  read_transaction([&] {
    std::map<std::string, std::vector<double>> rows;
    Stmt q(db_, path_, "SELECT name, value FROM samples WHERE job_id = ?1 ORDER BY name, seq");
    q.text(1, job_id);
    while (q.step()) rows[q.col_text(0)].push_back(q.col_real(1));
    out = std::move(rows);
  });
  return out;
}

std::vector<OpProfileRow> Store::op_profiles_of_job(const std::string& job_id) {
  std::vector<OpProfileRow> out;
  read_transaction([&] {
    std::vector<OpProfileRow> rows;
    Stmt q(db_, path_,
           "SELECT node_index, node_name, op_type, kernel, shapes, macs, bytes, time_ms FROM op_profiles "
           "WHERE job_id = ?1 ORDER BY node_index");
    q.text(1, job_id);
    while (q.step()) {
      rows.push_back({q.col_int64(0), q.col_text(1), q.col_text(2), q.col_text(3), q.col_text(4), q.col_int64(5),
                      q.col_int64(6), q.col_real(7)});
    }
    out = std::move(rows);
  });
  return out;
}

std::vector<ArtifactRecord> Store::artifacts_of_job(const std::string& job_id) {
  std::vector<ArtifactRecord> out;
  read_transaction([&] {
    std::vector<ArtifactRecord> rows;
    Stmt q(db_, path_, "SELECT kind, path, sha256, size_bytes FROM artifacts WHERE job_id = ?1 ORDER BY id");
    q.text(1, job_id);
    while (q.step()) rows.push_back({q.col_text(0), q.col_text(1), q.col_text(2), q.col_int64(3)});
    out = std::move(rows);
  });
  return out;
}

std::vector<LatestResult> Store::latest_results() {
  std::vector<LatestResult> out;
  read_transaction([&] {
    std::vector<LatestResult> rows;
    Stmt q(db_, path_,
           (std::string("WITH ranked AS (SELECT j.*, ROW_NUMBER() OVER (PARTITION BY j.experiment_id, j.model, "
                        "j.variant, j.target_id ORDER BY j.finished_at DESC, j.rowid DESC) AS rn "
                        "FROM jobs j WHERE j.status = 'DONE') ") +
            kJobColumns + ", t.simulated, r.git_commit FROM ranked j " + kJobJoins +
            "JOIN runs r ON r.id = j.run_id WHERE j.rn = 1 ORDER BY e.name, j.model, j.variant, t.name")
               .c_str());
    while (q.step()) {
      LatestResult res;
      res.job = read_job(q);
      res.simulated = q.col_int64(12) != 0;
      res.git_commit = q.col_text(13);
      rows.push_back(std::move(res));
    }
    for (auto& r : rows) r.metrics = metrics_of_job(r.job.id);
    out = std::move(rows);
  });
  return out;
}

}  // namespace xnn
