// The study store: round trip of everything a trial records, resuming (also after a process
// running a trial is killed), refusing to resume with other settings, failing and pruned
// trials, and the schema migration from version 1 to 2.
#include "nas/study/study.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "engine/core/error.h"
#include "harness/store/migrations.h"
#include "nas/bench/bench_functions.h"
#include "nas/search/aging_evolution.h"
#include "nas/search/pruners.h"
#include "nas/search/random_search.h"
#include "nas/search/tpe.h"

namespace xnn::nas {
namespace {

namespace fs = std::filesystem;
const std::vector<Direction> kMin = {Direction::kMinimize};

class StudyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/nas_study_test_XXXXXX";
    dir_ = mkdtemp(tmpl);
    db_ = dir_ + "/results.db";
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string raw_query(const std::string& sql) {
    sqlite3* db = nullptr;
    sqlite3_open_v2(db_.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
    sqlite3_stmt* st = nullptr;
    std::string out;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
      const unsigned char* t = sqlite3_column_text(st, 0);
      out = t ? reinterpret_cast<const char*>(t) : "NULL";
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return out;
  }

  std::string dir_, db_;
};

bench::BenchFunction mixed() { return bench::make_bench_function("branin_mixed"); }

std::unique_ptr<Strategy> tpe(uint64_t seed = 5) { return std::make_unique<Tpe>(mixed().space, kMin, seed); }

TrialOutcome objective(TrialContext& t) {
  static const auto f = mixed();
  double v = f.evaluate(t.params());
  for (int64_t step = 0; step < 3; ++step) t.report(step, v + static_cast<double>(3 - step));
  t.set_user_attr("k_squared", std::to_string(t.int_param("k") * t.int_param("k")));
  return {{v}, {}};
}

// COMPLETE trials as (params, values), in number order.
std::vector<std::pair<TrialParams, std::vector<double>>> completed(Study& s) {
  std::vector<std::pair<TrialParams, std::vector<double>>> out;
  for (const Trial& t : s.trials()) {
    if (t.state == TrialState::kComplete) out.emplace_back(t.params, t.values);
  }
  return out;
}

TEST_F(StudyTest, RecordsEveryPartOfATrialAndReadsItBack) {
  Store store(db_);
  Study study(store, "mixed", tpe(), nullptr, {{"error"}});
  study.optimize(objective, 14);
  auto records = study.trial_records();
  ASSERT_EQ(records.size(), 14u);
  for (size_t i = 0; i < records.size(); ++i) {
    const TrialRecord& r = records[i];
    EXPECT_EQ(r.number, static_cast<int64_t>(i));
    EXPECT_EQ(r.draw, static_cast<int64_t>(i));
    EXPECT_EQ(r.state, TrialState::kComplete);
    EXPECT_FALSE(r.interrupted);
    ASSERT_EQ(r.params.size(), 5u);
    ASSERT_EQ(r.values.size(), 1u);
    ASSERT_EQ(r.intermediate_values.size(), 3u);
    EXPECT_DOUBLE_EQ(r.intermediate_values.at(2), r.values[0] + 1);
    EXPECT_EQ(r.user_attrs.count("k_squared"), 1u);
    EXPECT_LE(r.started_at, r.finished_at);
    EXPECT_EQ(r.finished_at.size(), 24u);  // 2026-12-02T14:15:03.123Z
  }
  // Parameters are stored with their internal value and readable text.
  auto rows = raw_query("SELECT count(*) FROM trial_params WHERE name = 'op' AND value IN ('conv','dw','skip','pool') "
                        "AND internal IN (0, 1, 2, 3)");
  EXPECT_EQ(rows, "14");
  EXPECT_EQ(raw_query("SELECT strategy || ' ' || seed || ' ' || pruner FROM studies"), "tpe 5 ");
  EXPECT_EQ(raw_query("SELECT name || ':' || direction FROM study_objectives"), "error:minimize");

  // Another connection reads exactly the same trials, decoded with the space.
  auto mine = study.trials();
  Store other(db_);
  StudyStore studies(other);
  auto rec = studies.find_study("mixed");
  ASSERT_TRUE(rec.has_value());
  EXPECT_EQ(rec->directions, kMin);
  EXPECT_EQ(rec->objective_names, std::vector<std::string>{"error"});
  EXPECT_EQ(rec->space_json, mixed().space.to_json());
  auto theirs = studies.trials(rec->id);
  ASSERT_EQ(theirs.size(), mine.size());
  for (size_t i = 0; i < mine.size(); ++i) {
    EXPECT_EQ(theirs[i].values, mine[i].values);
    EXPECT_EQ(theirs[i].intermediate_values, mine[i].intermediate_values);
  }
  auto best = study.best_trial();
  ASSERT_TRUE(best.has_value());
  for (const Trial& t : mine) EXPECT_GE(t.values[0], best->values[0]);
  EXPECT_EQ(studies.list_studies().size(), 1u);
  EXPECT_TRUE(studies.trial(rec->id, 3).has_value());
  EXPECT_FALSE(studies.trial(rec->id, 99).has_value());
}

TEST_F(StudyTest, ResumingContinuesExactlyAsAnUninterruptedRun) {
  Store store(db_);
  for (const std::string kind : {"tpe", "evolution", "random"}) {
    auto make = [&]() -> std::unique_ptr<Strategy> {
      if (kind == "tpe") return tpe(21);
      if (kind == "random") return std::make_unique<RandomSearch>(mixed().space, kMin, 21);
      AgingEvolutionOptions o;
      o.population_size = 8;
      o.sample_size = 3;
      return std::make_unique<AgingEvolution>(mixed().space, kMin, 21, o);
    };
    std::vector<std::pair<TrialParams, std::vector<double>>> straight, resumed;
    {
      Study s(store, kind + "-straight", make());
      s.optimize(objective, 30);
      straight = completed(s);
    }
    {
      Study s(store, kind + "-resumed", make());
      s.optimize(objective, 9);
    }
    {
      Study s(store, kind + "-resumed", make());  // re-played from the database
      s.optimize(objective, 21);
      resumed = completed(s);
    }
    ASSERT_EQ(resumed.size(), straight.size()) << kind;
    for (size_t i = 0; i < straight.size(); ++i) ASSERT_EQ(resumed[i], straight[i]) << kind << " trial " << i;
  }
}

// enqueue (Optuna's enqueue_trial): queued sets are asked first, in order, with the draws they
// take; a set the study already ran or holds in its queue is skipped unless asked otherwise; a
// set outside the space is refused by name; a resumed study given the same sets runs exactly as
// an uninterrupted one.
TEST_F(StudyTest, EnqueuedParametersAreAskedFirstAndAResumedStudySkipsThoseItRan) {
  const TrialParams p1 = {{"x1", 3.14159}, {"x2", 2.275}, {"op", std::string("dw")}, {"k", int64_t{3}}, {"lr", 0.01}};
  const TrialParams p2 = {{"x1", -2.0}, {"x2", 9.0}, {"op", std::string("pool")}, {"k", int64_t{7}}, {"lr", 0.5}};
  const auto evolution = [] {
    AgingEvolutionOptions o;
    o.population_size = 4;
    o.sample_size = 2;
    return std::make_unique<AgingEvolution>(mixed().space, kMin, 3, o);
  };
  Store store(db_);
  {
    Study s(store, "queued", evolution());
    EXPECT_TRUE(s.enqueue(p1));
    EXPECT_TRUE(s.enqueue(p2));
    EXPECT_FALSE(s.enqueue(p1));  // already queued
    EXPECT_EQ(s.queued(), 2u);
    s.optimize(objective, 2);
    EXPECT_EQ(s.queued(), 0u);
    const std::vector<Trial> t = s.trials();
    ASSERT_EQ(t.size(), 2u);
    EXPECT_EQ(t[0].params, p1);
    EXPECT_EQ(t[1].params, p2);
    EXPECT_EQ(s.trial_records()[1].draw, 1);
    EXPECT_FALSE(s.enqueue(p1));        // the study ran it
    EXPECT_TRUE(s.enqueue(p1, false));  // unless asked to run it again
    s.optimize(objective, 1);
    EXPECT_EQ(s.trials()[2].params, p1);

    TrialParams missing = p1;
    missing.erase("k");
    try {
      s.enqueue(missing);
      ADD_FAILURE() << "a set without 'k' was queued";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("study 'queued': enqueued parameters: parameter 'k' is missing"),
                std::string::npos)
          << e.what();
    }
  }
  std::vector<std::pair<TrialParams, std::vector<double>>> straight, resumed;
  {
    Study s(store, "seeded-straight", evolution());
    s.enqueue(p1);
    s.enqueue(p2);
    s.optimize(objective, 10);
    straight = completed(s);
  }
  {
    Study s(store, "seeded-resumed", evolution());
    s.enqueue(p1);
    s.enqueue(p2);
    s.optimize(objective, 1);
  }
  {
    Study s(store, "seeded-resumed", evolution());
    EXPECT_FALSE(s.enqueue(p1));  // ran before the restart
    EXPECT_TRUE(s.enqueue(p2));
    s.optimize(objective, 9);
    resumed = completed(s);
  }
  ASSERT_EQ(resumed.size(), straight.size());
  for (size_t i = 0; i < straight.size(); ++i) EXPECT_EQ(resumed[i], straight[i]) << "trial " << i;
}

TEST_F(StudyTest, AProcessKilledMidTrialLeavesARunningTrialThatResumesAsFail) {
  std::vector<std::pair<TrialParams, std::vector<double>>> straight;
  {
    Store store(db_);
    Study s(store, "straight", tpe(8));
    s.optimize(objective, 25);
    straight = completed(s);
  }
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    Store store(db_);
    Study s(store, "crashy", tpe(8));
    s.optimize(
        [](TrialContext& t) {
          if (t.number() == 12) {
            t.report(0, 1.0);
            kill(getpid(), SIGKILL);  // dies mid-trial, no unwinding
          }
          return objective(t);
        },
        25);
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(raw_query("SELECT state FROM trials t JOIN studies s ON s.id = t.study_id "
                      "WHERE s.name = 'crashy' AND number = 12"),
            "RUNNING");

  Store store(db_);
  Study s(store, "crashy", tpe(8));
  auto records = s.trial_records();
  ASSERT_EQ(records.size(), 13u);
  EXPECT_EQ(records[12].state, TrialState::kFail);
  EXPECT_TRUE(records[12].interrupted);
  EXPECT_NE(records[12].error.find("interrupted"), std::string::npos);
  EXPECT_EQ(records[12].intermediate_values.at(0), 1.0);  // what it reported survives
  s.optimize(objective, 13);
  records = s.trial_records();
  EXPECT_EQ(records[13].draw, 12);  // the interrupted trial's draw is asked again
  EXPECT_EQ(records[13].params.size(), records[12].params.size());
  auto resumed = completed(s);
  ASSERT_EQ(resumed.size(), straight.size());
  for (size_t i = 0; i < straight.size(); ++i) ASSERT_EQ(resumed[i], straight[i]) << "trial " << i;
}

TEST_F(StudyTest, RefusesToResumeWithOtherSettings) {
  Store store(db_);
  { Study s(store, "fixed", tpe(1)); }
  auto message = [&](auto make) {
    try {
      Study s(store, "fixed", make());
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message([] { return tpe(2); }).find("was created with seed 1, not 2"), std::string::npos);
  EXPECT_NE(message([] { return std::make_unique<RandomSearch>(mixed().space, kMin, 1); })
                .find("was created with strategy tpe, not random"),
            std::string::npos);
  EXPECT_NE(message([] {
              TpeOptions o;
              o.n_startup_trials = 5;
              return std::make_unique<Tpe>(mixed().space, kMin, 1, o);
            }).find("strategy settings"),
            std::string::npos);
  EXPECT_NE(message([] {
              SearchSpace other;
              other.add_float("x1", -5, 10);
              return std::make_unique<Tpe>(other, kMin, 1);
            }).find("search space"),
            std::string::npos);
  EXPECT_NE(message([] { return std::make_unique<Tpe>(mixed().space, std::vector{Direction::kMaximize}, 1); })
                .find("directions minimize, not maximize"),
            std::string::npos);
  try {
    Study s(store, "fixed", tpe(1), std::make_unique<MedianPruner>(Direction::kMinimize));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("pruner (none), not median"), std::string::npos) << e.what();
  }
}

TEST_F(StudyTest, FailedAndPrunedTrialsAreRecordedAndTheStudyGoesOn) {
  Store store(db_);
  MedianPrunerOptions po;
  po.n_startup_trials = 2;
  Study study(store, "pruned", tpe(3), std::make_unique<MedianPruner>(Direction::kMinimize, po));
  int calls = 0;
  study.optimize(
      [&](TrialContext& t) -> TrialOutcome {
        int n = calls++;
        if (n == 2) throw std::runtime_error("diverged at epoch 3");
        if (n == 3) return {{NAN}, {}};
        if (n == 4) return {{1.0, 2.0}, {}};
        // Learning curves: trials 0, 1 good; later ones alternate bad (pruned) and good.
        bool bad = n >= 5 && n % 2 == 1;
        for (int64_t step = 0; step < 4; ++step) {
          if (t.report(step, (bad ? 10.0 : 1.0) - 0.1 * static_cast<double>(step))) throw TrialPruned();
        }
        return {{bad ? 9.6 : 0.6}, {}};
      },
      10);
  auto r = study.trial_records();
  ASSERT_EQ(r.size(), 10u);
  EXPECT_EQ(r[2].state, TrialState::kFail);
  EXPECT_EQ(r[2].error, "diverged at epoch 3");
  EXPECT_EQ(r[3].state, TrialState::kFail);
  EXPECT_NE(r[3].error.find("not finite"), std::string::npos);
  EXPECT_EQ(r[4].state, TrialState::kFail);
  EXPECT_NE(r[4].error.find("2 values, expected 1"), std::string::npos);
  for (int n : {5, 7, 9}) {
    EXPECT_EQ(r[static_cast<size_t>(n)].state, TrialState::kPruned) << n;
    EXPECT_EQ(r[static_cast<size_t>(n)].intermediate_values.size(), 1u) << n;  // stopped at step 0
  }
  for (int n : {0, 1, 6, 8}) EXPECT_EQ(r[static_cast<size_t>(n)].state, TrialState::kComplete) << n;
  EXPECT_EQ(raw_query("SELECT pruner FROM studies"), "median");
  // Telling a finished trial again is an error.
  TrialContext t = study.ask();
  study.tell(t, {{1.0}, {}});
  EXPECT_THROW(study.tell(t, {{1.0}, {}}), Error);
}

TEST_F(StudyTest, MultiObjectiveWithConstraintsKeepsTheFeasibleParetoFront) {
  Store store(db_);
  SearchSpace space;
  space.add_float("x", 0, 4);
  std::vector<Direction> dirs = {Direction::kMinimize, Direction::kMinimize};
  Study study(store, "mo", std::make_unique<Tpe>(space, dirs, 2), nullptr, {{"f1", "f2"}});
  study.optimize(
      [](TrialContext& t) -> TrialOutcome {
        double x = t.number_param("x");
        return {{x * x, (x - 2) * (x - 2)}, {x - 1.5}};  // feasible: x <= 1.5
      },
      40);
  auto front = study.best_trials();
  ASSERT_FALSE(front.empty());
  for (const Trial& t : front) {
    double x = std::get<double>(t.params.at("x"));
    EXPECT_LE(x, 1.5);  // infeasible trials never make the front while feasible ones exist
    EXPECT_GE(x, 0.0);
  }
  EXPECT_THROW(study.best_trial(), Error);
  EXPECT_EQ(raw_query("SELECT count(*) FROM trial_constraints"), "40");
}

TEST_F(StudyTest, MigrationFromVersion1KeepsExistingData) {
  {
    // A version-1 database as a released xnn-lab left it.
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(db_.c_str(), &db), SQLITE_OK);
    std::string v1(store_schema::kMigrations[0].sql);
    ASSERT_EQ(sqlite3_exec(db, v1.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db,
                           "INSERT INTO schema_history VALUES (1, 'initial', '2026-12-01T00:00:00.000Z');"
                           "INSERT INTO experiments(name, config_path, created_at) "
                           "VALUES ('old', 'configs/old.yaml', '2026-12-01T00:00:00.000Z');"
                           "PRAGMA user_version = 1;",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
  }
  EXPECT_EQ(raw_query("PRAGMA user_version"), "1");
  Store store(db_);
  EXPECT_EQ(store.schema_version(), 2);
  ASSERT_EQ(store.list_experiments().size(), 1u);
  EXPECT_EQ(store.list_experiments()[0].config_path, "configs/old.yaml");
  EXPECT_EQ(raw_query("SELECT group_concat(version || ':' || name) FROM schema_history"), "1:initial,2:studies");
  EXPECT_EQ(store.integrity_check(), "ok");
  Study s(store, "after-migration", tpe());
  s.optimize(objective, 3);
  EXPECT_EQ(raw_query("SELECT count(*) FROM trials"), "3");
}

}  // namespace
}  // namespace xnn::nas
