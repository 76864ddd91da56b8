// The SQLite results store: schema and migrations, round trips, selectors, restarts,
// rollback, several writer processes on one database, and a writer killed mid-transaction.
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "engine/core/error.h"
#include "harness/store/store.h"

namespace xnn {
namespace {
namespace fs = std::filesystem;

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "xnn_store_test_XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    db_ = (fs::path(dir_) / "results.db").string();
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // Runs one SQL query with its own raw connection and returns the first column of the first row.
  std::string raw_query(const std::string& sql) {
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open_v2(db_.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
    sqlite3_busy_timeout(db, 30000);
    sqlite3_stmt* st = nullptr;
    std::string out;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
      const unsigned char* t = sqlite3_column_text(st, 0);
      out = t ? reinterpret_cast<const char*>(t) : "";
    } else {
      ADD_FAILURE() << sql << ": " << sqlite3_errmsg(db);
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return out;
  }
  long count(const std::string& table) { return std::stol(raw_query("SELECT count(*) FROM " + table)); }

  std::string dir_, db_;
};

// Registers what a job needs (experiment via its run, target) and returns the run id.
std::string make_run(Store& s, const std::string& experiment, const std::string& commit = "abc123",
                     const std::string& started_at = "") {
  s.ensure_target({0, "host-cpu", "cpu", false, R"({"threads":1})"});
  RunRecord r;
  r.experiment = experiment;
  r.config_path = "configs/" + experiment + ".yaml";
  r.config_hash = "cfg-hash";
  r.config_text = "models: [mobilenet]";
  r.git_commit = commit;
  r.started_at = started_at;
  r.command = "xnn-lab run configs/" + experiment + ".yaml";
  return s.create_run(r);
}

JobRecord make_job(const std::string& id, const std::string& run_id, const std::string& experiment,
                   const std::string& model = "mobilenet_v2", const std::string& variant = "fp32") {
  JobRecord j;
  j.id = id;
  j.run_id = run_id;
  j.experiment = experiment;
  j.model = model;
  j.variant = variant;
  j.target = "host-cpu";
  j.spec_json = R"({"model":")" + model + R"("})";
  return j;
}

JobResult make_result(int n_samples, double base = 1.0) {
  JobResult r;
  r.metrics = {{"latency_p50", base + 0.5, "ms"}, {"top1", 0.71, "ratio"}, {"energy", std::nan(""), "J"}};
  std::vector<double> lat(n_samples);
  for (int i = 0; i < n_samples; ++i) lat[i] = base + i * 0.001 + 1e-9 * (i % 7);
  r.samples["latency_ms"] = lat;
  r.op_profiles = {{0, "conv1", "Conv", "conv_avx2_3x3", "1x3x224x224->1x32x112x112", 10838016, 1204224, 0.42},
                   {1, "relu1", "Relu", "relu_avx2", "1x32x112x112", 0, 802816, 0.03}};
  r.artifacts = {{"model", "artifacts/mobilenet.xnn", std::string(64, 'a'), 14000000}};
  return r;
}

// Runs `body` in a forked child; returns the wait status. The child never returns into gtest.
pid_t spawn(const std::function<void()>& body) {
  pid_t pid = fork();
  if (pid == 0) {
    int code = 0;
    try {
      body();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child %d: %s\n", getpid(), e.what());
      code = 1;
    }
    std::fflush(stderr);
    _exit(code);
  }
  return pid;
}
int wait_for(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}
bool exited_ok(int status) { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }

// ---------------------------------------------------------------- schema

TEST_F(StoreTest, FreshDatabaseGetsCurrentSchemaInWalMode) {
  {
    Store s(db_);
    EXPECT_EQ(s.schema_version(), Store::kSchemaVersion);
    EXPECT_EQ(s.integrity_check(), "ok");
  }
  EXPECT_EQ(raw_query("PRAGMA user_version"), "2");
  EXPECT_EQ(raw_query("PRAGMA journal_mode"), "wal");
  for (const char* table : {"schema_history", "experiments", "environments", "targets", "runs", "jobs", "run_jobs",
                            "metrics", "samples", "op_profiles", "artifacts"}) {
    EXPECT_EQ(raw_query(std::string("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = '") + table +
                        "'"),
              "1")
        << table;
  }
  EXPECT_EQ(raw_query("SELECT group_concat(version || ':' || name) FROM schema_history"), "1:initial,2:studies");
  EXPECT_EQ(raw_query("SELECT count(*) FROM pragma_table_info('targets') WHERE name = 'simulated'"), "1");
}

TEST_F(StoreTest, ReopenIsIdempotent) {
  {
    Store s(db_);
    s.ensure_experiment("exp", "configs/exp.yaml");
  }
  for (int i = 0; i < 3; ++i) {
    Store s(db_);
    EXPECT_EQ(s.schema_version(), Store::kSchemaVersion);
    ASSERT_EQ(s.list_experiments().size(), 1u);
    EXPECT_EQ(s.list_experiments()[0].config_path, "configs/exp.yaml");
  }
  EXPECT_EQ(count("schema_history"), Store::kSchemaVersion);
  // Readers can insist on an existing file.
  StoreOptions existing;
  existing.create_if_missing = false;
  EXPECT_NO_THROW(Store(db_, existing).schema_version());
}

TEST_F(StoreTest, RefusesDatabaseFromNewerVersion) {
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(db_.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE future(x); PRAGMA user_version = 99;", nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
  }
  try {
    Store s(db_);
    FAIL() << "opened a version-99 database";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              db_ + ": database schema version 99 is newer than this xnn-lab supports (" +
                  std::to_string(Store::kSchemaVersion) + "); upgrade xnn-lab");
  }
  // Refusing changed nothing.
  EXPECT_EQ(raw_query("PRAGMA user_version"), "99");
  EXPECT_EQ(raw_query("PRAGMA journal_mode"), "delete");
  EXPECT_EQ(raw_query("SELECT count(*) FROM sqlite_master"), "1");
}

TEST_F(StoreTest, RejectsFileThatIsNotADatabase) {
  {
    std::ofstream f(db_);
    for (int i = 0; i < 100; ++i) f << "this is a results file, but it is plain text, not SQLite\n";
  }
  try {
    Store s(db_);
    FAIL() << "opened a text file";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), db_ + ": not an SQLite database (file is not a database)");
  }
  std::ofstream(db_, std::ios::trunc) << "short";
  EXPECT_THROW(
      {
        try {
          Store s(db_);
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("not an SQLite database"), std::string::npos) << e.what();
          throw;
        }
      },
      Error);
}

TEST_F(StoreTest, NamesMissingFolderAndMissingFile) {
  const std::string missing = dir_ + "/no/such/folder/results.db";
  try {
    Store s(missing);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), missing + ": folder '" + dir_ + "/no/such/folder' does not exist (create it first)");
  }
  StoreOptions existing;
  existing.create_if_missing = false;
  try {
    Store s(db_, existing);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), db_ + ": no such results database");
  }
  EXPECT_FALSE(fs::exists(db_));
  EXPECT_THROW(Store{dir_}, Error);  // a folder
}

// ---------------------------------------------------------------- round trip

TEST_F(StoreTest, RoundTripsRunJobSamplesMetricsProfilesArtifacts) {
  Store s(db_);
  Environment env = Environment::capture("deadbeef");
  EXPECT_FALSE(env.hostname.empty());
  EXPECT_GT(env.cores, 0);
  EXPECT_FALSE(env.compiler.empty());
  const int64_t env_id = s.ensure_environment(env);
  EXPECT_EQ(s.ensure_environment(env), env_id);  // deduped
  Environment other = env;
  other.governor = "powersave-test";
  EXPECT_NE(s.ensure_environment(other), env_id);
  const auto stored_env = s.get_environment(env_id);
  ASSERT_TRUE(stored_env);
  EXPECT_EQ(stored_env->cpu_model, env.cpu_model);
  EXPECT_EQ(stored_env->isa, env.isa);
  EXPECT_EQ(stored_env->load_avg_1m, env.load_avg_1m);
  EXPECT_EQ(stored_env->git_commit, "deadbeef");

  const int64_t sim_id = s.ensure_target({0, "sim-npu", "npu", true, R"({"tops":4})"});
  EXPECT_EQ(s.ensure_target({0, "sim-npu", "npu", true, R"({"tops":8})"}), sim_id);

  s.ensure_target({0, "host-cpu", "cpu", false, "{}"});
  RunRecord run;
  run.experiment = "mobilenets";
  run.config_path = "configs/mobilenets.yaml";
  run.config_hash = "0123abcd";
  run.config_text = "models:\n  - mobilenet_v2\n";
  run.git_commit = "deadbeef";
  run.tag = "nightly";
  run.environment_id = env_id;
  run.command = "xnn-lab run configs/mobilenets.yaml";
  const std::string run_id = s.create_run(run);
  EXPECT_EQ(run_id.size(), std::string("20261202-141503-ab12cd").size()) << run_id;
  EXPECT_EQ(run_id[8], '-');
  EXPECT_EQ(run_id[15], '-');

  JobRecord job = make_job("job-1", run_id, "mobilenets");
  EXPECT_FALSE(s.is_job_done("job-1"));
  s.start_job(job);
  EXPECT_FALSE(s.is_job_done("job-1"));
  JobResult result = make_result(1000);
  result.samples["energy_j"] = {0.5, 0.25};
  s.finish_job("job-1", result);
  EXPECT_TRUE(s.is_job_done("job-1"));

  auto got_run = s.get_run(run_id);
  ASSERT_TRUE(got_run);
  EXPECT_EQ(got_run->experiment, "mobilenets");
  EXPECT_EQ(got_run->config_path, run.config_path);
  EXPECT_EQ(got_run->config_hash, run.config_hash);
  EXPECT_EQ(got_run->config_text, run.config_text);
  EXPECT_EQ(got_run->git_commit, "deadbeef");
  EXPECT_EQ(got_run->tag, std::optional<std::string>("nightly"));
  EXPECT_EQ(got_run->status, "RUNNING");
  EXPECT_EQ(got_run->environment_id, env_id);
  EXPECT_EQ(got_run->command, run.command);
  EXPECT_EQ(got_run->pid, getpid());
  EXPECT_FALSE(got_run->started_at.empty());
  EXPECT_TRUE(got_run->finished_at.empty());
  EXPECT_FALSE(Store::is_run_orphaned(*got_run));  // this process is alive

  auto jobs = s.jobs_of_run(run_id);
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_FALSE(jobs[0].reused);
  EXPECT_EQ(jobs[0].job.id, "job-1");
  EXPECT_EQ(jobs[0].job.model, "mobilenet_v2");
  EXPECT_EQ(jobs[0].job.variant, "fp32");
  EXPECT_EQ(jobs[0].job.target, "host-cpu");
  EXPECT_EQ(jobs[0].job.status, "DONE");
  EXPECT_EQ(jobs[0].job.attempts, 1);
  EXPECT_EQ(jobs[0].job.spec_json, job.spec_json);
  EXPECT_FALSE(jobs[0].job.finished_at.empty());

  EXPECT_EQ(s.samples_of_job("job-1", "latency_ms"), result.samples["latency_ms"]);  // exact, in order
  EXPECT_EQ(s.samples_of_job("job-1"), result.samples);
  EXPECT_TRUE(s.samples_of_job("job-1", "nope").empty());

  auto metrics = s.metrics_of_job("job-1");
  ASSERT_EQ(metrics.size(), 3u);
  EXPECT_EQ(metrics[0].name, "latency_p50");
  EXPECT_EQ(metrics[0].value, 1.5);
  EXPECT_EQ(metrics[0].unit, "ms");
  EXPECT_EQ(metrics[1].name, "top1");
  EXPECT_TRUE(std::isnan(metrics[2].value));  // NaN stored as NULL

  auto ops = s.op_profiles_of_job("job-1");
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[0].node_name, "conv1");
  EXPECT_EQ(ops[0].op_type, "Conv");
  EXPECT_EQ(ops[0].kernel, "conv_avx2_3x3");
  EXPECT_EQ(ops[0].shapes, "1x3x224x224->1x32x112x112");
  EXPECT_EQ(ops[0].macs, 10838016);
  EXPECT_EQ(ops[0].bytes, 1204224);
  EXPECT_EQ(ops[0].time_ms, 0.42);
  EXPECT_EQ(ops[1].node_index, 1);

  auto arts = s.artifacts_of_job("job-1");
  ASSERT_EQ(arts.size(), 1u);
  EXPECT_EQ(arts[0].kind, "model");
  EXPECT_EQ(arts[0].path, "artifacts/mobilenet.xnn");
  EXPECT_EQ(arts[0].sha256, std::string(64, 'a'));
  EXPECT_EQ(arts[0].size_bytes, 14000000);

  // A simulated target's job shows up in latest_results with the flag.
  {
    JobRecord j = make_job("job-sim", run_id, "mobilenets", "mobilenet_v2", "int8");
    j.target = "sim-npu";
    s.start_job(j);
  }
  s.finish_job("job-sim", make_result(10, 3.0));
  s.finish_run(run_id, run_status::kFinished);
  got_run = s.get_run(run_id);
  EXPECT_EQ(got_run->status, "FINISHED");
  EXPECT_FALSE(got_run->finished_at.empty());

  auto latest = s.latest_results();
  ASSERT_EQ(latest.size(), 2u);
  EXPECT_EQ(latest[0].job.id, "job-1");
  EXPECT_FALSE(latest[0].simulated);
  EXPECT_EQ(latest[0].git_commit, "deadbeef");
  EXPECT_EQ(latest[0].metrics.size(), 3u);
  EXPECT_EQ(latest[1].job.id, "job-sim");
  EXPECT_EQ(latest[1].job.target, "sim-npu");
  EXPECT_TRUE(latest[1].simulated);

  auto targets = s.list_targets();
  ASSERT_EQ(targets.size(), 2u);
  EXPECT_EQ(targets[1].name, "sim-npu");
  EXPECT_TRUE(targets[1].simulated);
  EXPECT_EQ(targets[1].spec_json, R"({"tops":8})");
  ASSERT_EQ(s.list_experiments().size(), 1u);
  EXPECT_EQ(s.list_runs().size(), 1u);
  EXPECT_EQ(s.list_runs(std::string("other")).size(), 0u);
  EXPECT_EQ(s.integrity_check(), "ok");
}

TEST_F(StoreTest, ErrorsNameWhatIsMissing) {
  Store s(db_);
  const std::string run_id = make_run(s, "exp");
  JobRecord j = make_job("j", run_id, "exp");
  j.target = "rpi5";
  try {
    s.start_job(j);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              db_ + ": job 'j': target 'rpi5' is not registered (call ensure_target first)");
  }
  try {
    s.finish_job("nope", make_result(1));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), db_ + ": job 'nope' does not exist (call start_job first)");
  }
  EXPECT_THROW(s.finish_run("nope", run_status::kFinished), Error);
  EXPECT_THROW(s.finish_run(run_id, "DONE"), Error);
  s.start_job(make_job("j", run_id, "exp"));
  JobResult dup = make_result(1);
  dup.metrics.push_back({"top1", 0.5, "ratio"});
  try {
    s.finish_job("j", dup);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), db_ + ": job 'j': metric 'top1' is recorded twice");
  }
}

// ---------------------------------------------------------------- selectors

TEST_F(StoreTest, ResolvesRunSelectors) {
  Store s(db_);
  RunRecord base;
  base.experiment = "exp";
  auto add = [&](const std::string& id, const std::string& commit, const std::string& at,
                 const std::string& experiment = "exp") {
    RunRecord r = base;
    r.id = id;
    r.git_commit = commit;
    r.started_at = at;
    r.experiment = experiment;
    return s.create_run(r);
  };
  add("20261201-100000-aaaaaa", "1111aaaa", "2026-12-01T10:00:00.000Z");
  add("20261201-110000-bbbbbb", "2222bbbb", "2026-12-01T11:00:00.000Z");
  add("20261201-120000-cccccc", "1111aaaa", "2026-12-01T12:00:00.000Z");
  add("20261201-130000-dddddd", "3333cccc", "2026-12-01T13:00:00.000Z", "other");
  s.set_run_tag("20261201-110000-bbbbbb", "baseline");

  auto id_of = [&](const std::string& sel, std::optional<std::string> exp = std::nullopt) {
    auto r = s.resolve_run_selector(sel, exp);
    return r ? r->id : std::string("<none>");
  };
  EXPECT_EQ(id_of("20261201-110000-bbbbbb"), "20261201-110000-bbbbbb");
  EXPECT_EQ(id_of("20261201-12"), "20261201-120000-cccccc");  // unique prefix
  EXPECT_EQ(id_of("latest"), "20261201-130000-dddddd");
  EXPECT_EQ(id_of("latest", "exp"), "20261201-120000-cccccc");
  EXPECT_EQ(id_of("commit:1111"), "20261201-120000-cccccc");  // newest at that commit
  EXPECT_EQ(id_of("commit:2222BBBB"), "20261201-110000-bbbbbb");
  EXPECT_EQ(id_of("tag:baseline"), "20261201-110000-bbbbbb");
  EXPECT_EQ(id_of("tag:nope"), "<none>");
  EXPECT_EQ(id_of("commit:9999"), "<none>");
  EXPECT_EQ(id_of("29991231"), "<none>");
  EXPECT_EQ(id_of("20261201-130000-dddddd", "exp"), "<none>");

  // Moving the tag: the newest tagged run wins; clearing removes it.
  s.set_run_tag("20261201-120000-cccccc", "baseline");
  EXPECT_EQ(id_of("tag:baseline"), "20261201-120000-cccccc");
  s.set_run_tag("20261201-120000-cccccc", std::nullopt);
  EXPECT_EQ(id_of("tag:baseline"), "20261201-110000-bbbbbb");

  try {
    s.resolve_run_selector("20261201");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("run id prefix '20261201' is ambiguous"), std::string::npos) << e.what();
  }
  EXPECT_THROW(s.resolve_run_selector("commit:"), Error);
  EXPECT_THROW(s.resolve_run_selector("commit:"), Error);
  EXPECT_THROW(s.resolve_run_selector(""), Error);
  EXPECT_THROW(s.resolve_run_selector("branch:main"), Error);
  EXPECT_THROW(s.resolve_run_selector("commit:"), Error);

  // list_runs: newest first.
  auto runs = s.list_runs();
  ASSERT_EQ(runs.size(), 4u);
  EXPECT_EQ(runs[0].id, "20261201-130000-dddddd");
  EXPECT_EQ(runs[3].id, "20261201-100000-aaaaaa");
  EXPECT_EQ(s.list_runs(std::string("exp")).size(), 3u);
}

TEST_F(StoreTest, AmbiguousCommitPrefixIsAnError) {
  Store s(db_);
  make_run(s, "exp", "abcd1111");
  make_run(s, "exp", "abcd2222");
  EXPECT_THROW(s.resolve_run_selector("commit:abcd"), Error);
  EXPECT_TRUE(s.resolve_run_selector("commit:abcd1"));
}

// ---------------------------------------------------------------- restarts and reuse

TEST_F(StoreTest, RestartingAFailedJobClearsItsOldRows) {
  Store s(db_);
  const std::string run1 = make_run(s, "exp");
  s.start_job(make_job("j", run1, "exp"));
  JobResult failed = make_result(200);
  failed.status = job_status::kFailed;
  failed.error = "kernel crashed";
  s.finish_job("j", failed);
  EXPECT_FALSE(s.is_job_done("j"));
  EXPECT_EQ(s.get_job("j")->error, "kernel crashed");
  EXPECT_EQ(count("samples"), 200);

  // An interrupted second attempt (left RUNNING) and a third that finishes.
  const std::string run2 = make_run(s, "exp");
  s.start_job(make_job("j", run2, "exp"));
  EXPECT_EQ(count("samples"), 0);
  EXPECT_EQ(count("metrics"), 0);
  EXPECT_EQ(count("op_profiles"), 0);
  EXPECT_EQ(count("artifacts"), 0);
  auto j = s.get_job("j");
  EXPECT_EQ(j->status, "RUNNING");
  EXPECT_EQ(j->error, "");
  EXPECT_EQ(j->attempts, 2);
  EXPECT_EQ(j->run_id, run2);
  EXPECT_TRUE(j->finished_at.empty());

  const std::string run3 = make_run(s, "exp");
  s.start_job(make_job("j", run3, "exp"));
  s.finish_job("j", make_result(50));
  EXPECT_TRUE(s.is_job_done("j"));
  EXPECT_EQ(s.get_job("j")->attempts, 3);
  EXPECT_EQ(s.samples_of_job("j", "latency_ms").size(), 50u);
  EXPECT_EQ(count("samples"), 50);

  // A fourth run reuses the DONE job; every run lists it.
  const std::string run4 = make_run(s, "exp");
  s.link_job_to_run(run4, "j", true);
  auto jobs = s.jobs_of_run(run4);
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_TRUE(jobs[0].reused);
  EXPECT_EQ(jobs[0].job.run_id, run3);  // produced by run 3
  EXPECT_EQ(s.jobs_of_run(run1).size(), 1u);
  EXPECT_FALSE(s.jobs_of_run(run3)[0].reused);
  EXPECT_EQ(count("jobs"), 1);
}

// ---------------------------------------------------------------- transactions

TEST_F(StoreTest, ExceptionInTransactionRollsEverythingBack) {
  Store s(db_);
  s.ensure_target({0, "host-cpu", "cpu", false, "{}"});
  EXPECT_THROW(s.write_transaction([&] {
    const std::string run = make_run(s, "exp");
    s.start_job(make_job("j", run, "exp"));
    s.finish_job("j", make_result(100));
    throw std::runtime_error("boom");
  }),
               std::runtime_error);
  EXPECT_EQ(count("runs"), 0);
  EXPECT_EQ(count("experiments"), 0);
  EXPECT_EQ(count("jobs"), 0);
  EXPECT_EQ(count("samples"), 0);
  EXPECT_EQ(count("run_jobs"), 0);

  // finish_job's rows vanish with the transaction around it: the job stays RUNNING, empty.
  const std::string run = make_run(s, "exp");
  s.start_job(make_job("j", run, "exp"));
  EXPECT_THROW(s.write_transaction([&] {
    s.finish_job("j", make_result(100));
    throw Error("interrupted");
  }),
               Error);
  EXPECT_EQ(s.get_job("j")->status, "RUNNING");
  EXPECT_EQ(count("samples"), 0);
  EXPECT_EQ(count("metrics"), 0);

  // A nested failure caught inside the outer transaction undoes only its own part.
  s.write_transaction([&] {
    s.ensure_experiment("kept", "");
    try {
      s.write_transaction([&] {
        s.ensure_experiment("dropped", "");
        throw std::runtime_error("inner");
      });
    } catch (const std::runtime_error&) {
    }
  });
  std::set<std::string> names;
  for (const auto& e : s.list_experiments()) names.insert(e.name);
  EXPECT_EQ(names, (std::set<std::string>{"exp", "kept"}));
  EXPECT_EQ(s.integrity_check(), "ok");
}

// ---------------------------------------------------------------- processes

TEST_F(StoreTest, ConcurrentWriterProcessesNeverFail) {
  constexpr int kWriters = 4, kJobs = 50, kSamples = 100;
  {
    Store s(db_);
    s.ensure_target({0, "host-cpu", "cpu", false, "{}"});
  }
  const std::string done_flag = dir_ + "/writers_done";
  std::vector<pid_t> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.push_back(spawn([&, w] {
      Store s(db_);
      RunRecord r;
      r.experiment = "concurrent";
      r.environment_id = s.ensure_environment(Environment::capture("c0ffee"));
      const std::string run = s.create_run(r);
      for (int i = 0; i < kJobs; ++i) {
        const std::string id = "w" + std::to_string(w) + "-job" + std::to_string(i);
        s.start_job(make_job(id, run, "concurrent", "model" + std::to_string(i), "w" + std::to_string(w)));
        s.finish_job(id, make_result(kSamples, w + i * 0.01));
      }
      s.finish_run(run, run_status::kFinished);
    }));
  }
  pid_t reader = spawn([&] {
    Store s(db_);
    size_t reads = 0;
    for (;;) {
      const bool last = fs::exists(done_flag);
      for (const auto& run : s.list_runs()) {
        for (const auto& rj : s.jobs_of_run(run.id)) {
          if (rj.job.status == job_status::kDone && s.samples_of_job(rj.job.id, "latency_ms").size() != kSamples)
            throw Error("reader saw a DONE job without all its samples: " + rj.job.id);
        }
      }
      s.latest_results();
      ++reads;
      if (last) break;
    }
    if (reads < 2) throw Error("reader did not loop");
  });
  bool all_ok = true;
  for (pid_t p : writers) {
    int st = wait_for(p);
    EXPECT_TRUE(exited_ok(st)) << "writer " << p << " status " << st;
    all_ok = all_ok && exited_ok(st);
  }
  std::ofstream(done_flag) << "done";
  EXPECT_TRUE(exited_ok(wait_for(reader))) << "reader failed";
  ASSERT_TRUE(all_ok);

  EXPECT_EQ(count("runs"), kWriters);
  EXPECT_EQ(count("jobs"), kWriters * kJobs);
  EXPECT_EQ(count("run_jobs"), kWriters * kJobs);
  EXPECT_EQ(count("samples"), kWriters * kJobs * kSamples);
  EXPECT_EQ(count("metrics"), kWriters * kJobs * 3);
  EXPECT_EQ(count("op_profiles"), kWriters * kJobs * 2);
  EXPECT_EQ(raw_query("SELECT count(*) FROM jobs WHERE status = 'DONE'"), std::to_string(kWriters * kJobs));
  EXPECT_EQ(raw_query("SELECT count(*) FROM runs WHERE status = 'FINISHED'"), std::to_string(kWriters));
  EXPECT_EQ(raw_query("PRAGMA integrity_check"), "ok");
  Store s(db_);
  EXPECT_EQ(s.latest_results().size(), static_cast<size_t>(kWriters * kJobs));
}

TEST_F(StoreTest, ConcurrentProcessesCreatingAFreshDatabase) {
  std::vector<pid_t> kids;
  for (int k = 0; k < 4; ++k) {
    kids.push_back(spawn([&] {
      Store s(db_);
      make_run(s, "fresh");
    }));
  }
  for (pid_t p : kids) EXPECT_TRUE(exited_ok(wait_for(p)));
  EXPECT_EQ(raw_query("PRAGMA user_version"), "2");
  EXPECT_EQ(count("schema_history"), Store::kSchemaVersion);
  EXPECT_EQ(count("runs"), 4);
  EXPECT_EQ(raw_query("PRAGMA integrity_check"), "ok");
}

TEST_F(StoreTest, WriterKilledMidTransactionLeavesNothing) {
  {
    Store s(db_);
    const std::string run = make_run(s, "exp");
    s.start_job(make_job("kept", run, "exp"));
    s.finish_job("kept", make_result(10));
  }
  pid_t child = spawn([&] {
    Store s(db_);
    s.write_transaction([&] {
      const std::string run = make_run(s, "doomed");
      s.start_job(make_job("doomed-job", run, "doomed"));
      s.finish_job("doomed-job", make_result(5000));
      s.start_job(make_job("kept", run, "exp"));  // would clear the committed job's rows
      raise(SIGKILL);
    });
  });
  int st = wait_for(child);
  ASSERT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) << st;

  Store s(db_);
  EXPECT_EQ(s.integrity_check(), "ok");
  EXPECT_EQ(s.list_runs().size(), 1u);
  EXPECT_FALSE(s.get_job("doomed-job"));
  EXPECT_TRUE(s.is_job_done("kept"));
  EXPECT_EQ(s.samples_of_job("kept", "latency_ms").size(), 10u);
  EXPECT_EQ(count("samples"), 10);
  for (const auto& e : s.list_experiments()) EXPECT_NE(e.name, "doomed");
  // The store is writable again at once (the dead writer's lock is gone).
  make_run(s, "after");
  EXPECT_EQ(s.list_runs().size(), 2u);
}

TEST_F(StoreTest, OrphanedRunIsDetected) {
  Store s(db_);
  pid_t child = spawn([] {});
  wait_for(child);
  RunRecord r;
  r.experiment = "exp";
  r.pid = child;  // a process that has exited
  auto run = s.get_run(s.create_run(r));
  EXPECT_TRUE(Store::is_run_orphaned(*run));
  run->status = run_status::kFinished;
  EXPECT_FALSE(Store::is_run_orphaned(*run));
}

// A writer waits for a lock held by another process instead of failing, and gives up with a
// clear message only after its deadline.
TEST_F(StoreTest, WaitsForALockHeldByAnotherProcess) {
  { Store s(db_); }
  auto hold_lock = [&](int ms, int ready_fd) {
    sqlite3* db = nullptr;
    sqlite3_open(db_.c_str(), &db);
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) != SQLITE_OK) throw Error("no lock");
    (void)!write(ready_fd, "x", 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr);
    sqlite3_close(db);
  };
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t holder = spawn([&] { hold_lock(800, fds[1]); });
  char c;
  ASSERT_EQ(read(fds[0], &c, 1), 1);
  {
    Store s(db_);
    auto t0 = std::chrono::steady_clock::now();
    s.ensure_experiment("waited", "");
    EXPECT_GT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(300));
  }
  EXPECT_TRUE(exited_ok(wait_for(holder)));

  holder = spawn([&] { hold_lock(1000, fds[1]); });
  ASSERT_EQ(read(fds[0], &c, 1), 1);
  StoreOptions impatient;
  impatient.busy_timeout_ms = 50;
  impatient.busy_deadline_ms = 300;
  {
    Store s(db_, impatient);
    try {
      s.ensure_experiment("gave-up", "");
      ADD_FAILURE() << "wrote while another process held the lock";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), db_ +
                                           ": database is busy: could not start a write transaction within 0.3 s "
                                           "because another connection kept it locked");
    }
  }
  EXPECT_TRUE(exited_ok(wait_for(holder)));
  close(fds[0]);
  close(fds[1]);
}

}  // namespace
}  // namespace xnn
