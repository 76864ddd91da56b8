#include "nas/study/study_store.h"

#include <sqlite3.h>

#include <cmath>
#include <limits>

#include "engine/core/error.h"

namespace xnn::nas {

namespace {

// A prepared statement on the Store's connection; values go in through bound parameters.
class Query {
 public:
  Query(Store& store, const char* sql) : store_(store), db_(store.connection()) {
    if (sqlite3_prepare_v2(db_, sql, -1, &stmt_, nullptr) != SQLITE_OK) fail("preparing");
  }
  ~Query() { sqlite3_finalize(stmt_); }
  Query(const Query&) = delete;
  Query& operator=(const Query&) = delete;

  Query& text(int i, const std::string& v) {
    check(sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT));
    return *this;
  }
  Query& int64(int i, int64_t v) {
    check(sqlite3_bind_int64(stmt_, i, v));
    return *this;
  }
  Query& real(int i, double v) {  // NaN is stored as NULL
    check(std::isnan(v) ? sqlite3_bind_null(stmt_, i) : sqlite3_bind_double(stmt_, i, v));
    return *this;
  }
  bool step() {
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    fail("running");
  }
  void run() {
    while (step()) {
    }
  }
  void reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  std::string col_text(int i) {
    const unsigned char* p = sqlite3_column_text(stmt_, i);
    return p ? std::string(reinterpret_cast<const char*>(p), sqlite3_column_bytes(stmt_, i)) : std::string();
  }
  int64_t col_int64(int i) { return sqlite3_column_int64(stmt_, i); }
  double col_real(int i) {
    return sqlite3_column_type(stmt_, i) == SQLITE_NULL ? std::numeric_limits<double>::quiet_NaN()
                                                        : sqlite3_column_double(stmt_, i);
  }
  int changes() { return sqlite3_changes(db_); }

 private:
  void check(int rc) {
    if (rc != SQLITE_OK) fail("binding a parameter of");
  }
  [[noreturn]] void fail(const char* what) {
    std::string sql = sqlite3_sql(stmt_) ? sqlite3_sql(stmt_) : "";
    throw Error(store_.path() + ": " + what + " \"" + sql.substr(0, 80) + "\": " + sqlite3_errmsg(db_));
  }
  Store& store_;
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

StudyRecord read_study(Store& store, Query& q) {
  StudyRecord s;
  s.id = q.col_int64(0);
  s.name = q.col_text(1);
  s.strategy = q.col_text(2);
  s.strategy_config = q.col_text(3);
  s.pruner = q.col_text(4);
  s.pruner_config = q.col_text(5);
  s.space_json = q.col_text(6);
  s.seed = static_cast<uint64_t>(q.col_int64(7));
  s.created_at = q.col_text(8);
  Query o(store, "SELECT name, direction FROM study_objectives WHERE study_id = ?1 ORDER BY objective");
  o.int64(1, s.id);
  bool any_name = false;
  while (o.step()) {
    s.objective_names.push_back(o.col_text(0));
    any_name = any_name || !s.objective_names.back().empty();
    s.directions.push_back(parse_direction(o.col_text(1)));
  }
  if (!any_name) s.objective_names.clear();
  return s;
}

constexpr const char* kStudyColumns =
    "SELECT id, name, strategy, strategy_config, pruner, pruner_config, space_json, seed, created_at FROM studies ";

}  // namespace

int64_t StudyStore::create_study(const StudyRecord& study) {
  XNN_CHECK(!study.name.empty(), store_.path() + ": a study name is empty");
  XNN_CHECK(!study.strategy.empty(), store_.path() + ": study '" + study.name + "' has no strategy");
  XNN_CHECK(!study.directions.empty(), store_.path() + ": study '" + study.name + "' has no objective direction");
  XNN_CHECK(study.objective_names.empty() || study.objective_names.size() == study.directions.size(),
            store_.path() + ": study '" + study.name + "': expected one objective name per direction");
  int64_t id = 0;
  store_.write_transaction([&] {
    {
      Query q(store_, "SELECT 1 FROM studies WHERE name = ?1");
      q.text(1, study.name);
      if (q.step()) throw Error(store_.path() + ": a study named '" + study.name + "' already exists");
    }
    Query q(store_,
            "INSERT INTO studies(name, strategy, strategy_config, pruner, pruner_config, space_json, seed, created_at) "
            "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
    q.text(1, study.name).text(2, study.strategy).text(3, study.strategy_config).text(4, study.pruner);
    q.text(5, study.pruner_config).text(6, study.space_json).int64(7, static_cast<int64_t>(study.seed));
    q.text(8, utc_now_iso()).run();
    id = sqlite3_last_insert_rowid(store_.connection());
    Query o(store_, "INSERT INTO study_objectives(study_id, objective, name, direction) VALUES (?1, ?2, ?3, ?4)");
    for (size_t k = 0; k < study.directions.size(); ++k) {
      o.reset();
      o.int64(1, id).int64(2, static_cast<int64_t>(k));
      o.text(3, study.objective_names.empty() ? std::string() : study.objective_names[k]);
      o.text(4, direction_name(study.directions[k])).run();
    }
  });
  return id;
}

std::optional<StudyRecord> StudyStore::find_study(const std::string& name) {
  std::optional<StudyRecord> out;
  store_.read_transaction([&] {
    out.reset();
    Query q(store_, (std::string(kStudyColumns) + "WHERE name = ?1").c_str());
    q.text(1, name);
    if (q.step()) out = read_study(store_, q);
  });
  return out;
}

std::vector<StudyRecord> StudyStore::list_studies() {
  std::vector<StudyRecord> out;
  store_.read_transaction([&] {
    out.clear();
    Query q(store_, (std::string(kStudyColumns) + "ORDER BY name").c_str());
    while (q.step()) out.push_back(read_study(store_, q));
  });
  return out;
}

TrialRecord StudyStore::create_trial(int64_t study_id) {
  TrialRecord t;
  store_.write_transaction([&] {
    Query n(store_,
            "SELECT COALESCE(MAX(number) + 1, 0), COUNT(*) - COALESCE(SUM(interrupted), 0) FROM trials "
            "WHERE study_id = ?1");
    n.int64(1, study_id);
    n.step();
    t = TrialRecord{};
    t.number = n.col_int64(0);
    t.draw = n.col_int64(1);
    t.started_at = utc_now_iso();
    Query q(store_,
            "INSERT INTO trials(study_id, number, draw, state, started_at) VALUES (?1, ?2, ?3, 'RUNNING', ?4)");
    q.int64(1, study_id).int64(2, t.number).int64(3, t.draw).text(4, t.started_at).run();
    t.id = sqlite3_last_insert_rowid(store_.connection());
  });
  return t;
}

void StudyStore::set_trial_params(int64_t trial_id, const std::vector<StoredParam>& params) {
  store_.write_transaction([&] {
    Query q(store_, "INSERT OR REPLACE INTO trial_params(trial_id, name, internal, value) VALUES (?1, ?2, ?3, ?4)");
    for (const StoredParam& p : params) {
      q.reset();
      q.int64(1, trial_id).text(2, p.name).real(3, p.internal).text(4, p.text).run();
    }
  });
}

void StudyStore::set_intermediate_value(int64_t trial_id, int64_t step, double value) {
  store_.write_transaction([&] {
    Query q(store_, "INSERT OR REPLACE INTO trial_intermediate_values(trial_id, step, value) VALUES (?1, ?2, ?3)");
    q.int64(1, trial_id).int64(2, step).real(3, value).run();
  });
}

void StudyStore::set_user_attr(int64_t trial_id, const std::string& key, const std::string& json_value) {
  XNN_CHECK(!key.empty(), store_.path() + ": a trial user attribute key is empty");
  store_.write_transaction([&] {
    Query q(store_, "INSERT OR REPLACE INTO trial_user_attrs(trial_id, key, value) VALUES (?1, ?2, ?3)");
    q.int64(1, trial_id).text(2, key).text(3, json_value).run();
  });
}

void StudyStore::finish_trial(int64_t trial_id, TrialState state, const std::vector<double>& values,
                              const std::vector<double>& constraints, const std::string& error) {
  XNN_CHECK(state != TrialState::kRunning, store_.path() + ": a trial cannot finish as RUNNING");
  store_.write_transaction([&] {
    Query u(store_,
            "UPDATE trials SET state = ?2, error = ?3, finished_at = ?4 WHERE id = ?1 AND state = 'RUNNING'");
    u.int64(1, trial_id).text(2, trial_state_name(state)).text(3, error).text(4, utc_now_iso()).run();
    if (u.changes() != 1)
      throw Error(store_.path() + ": trial id " + std::to_string(trial_id) + " is not RUNNING; cannot finish it");
    Query v(store_, "INSERT INTO trial_values(trial_id, objective, value) VALUES (?1, ?2, ?3)");
    for (size_t k = 0; k < values.size(); ++k) {
      v.reset();
      v.int64(1, trial_id).int64(2, static_cast<int64_t>(k)).real(3, values[k]).run();
    }
    Query c(store_, "INSERT INTO trial_constraints(trial_id, idx, value) VALUES (?1, ?2, ?3)");
    for (size_t k = 0; k < constraints.size(); ++k) {
      c.reset();
      c.int64(1, trial_id).int64(2, static_cast<int64_t>(k)).real(3, constraints[k]).run();
    }
  });
}

int StudyStore::fail_running_trials(int64_t study_id, const std::string& why) {
  int n = 0;
  store_.write_transaction([&] {
    Query u(store_,
            "UPDATE trials SET state = 'FAIL', interrupted = 1, error = ?2, finished_at = ?3 "
            "WHERE study_id = ?1 AND state = 'RUNNING'");
    u.int64(1, study_id).text(2, why).text(3, utc_now_iso()).run();
    n = u.changes();
  });
  return n;
}

std::vector<TrialRecord> StudyStore::read_trials(int64_t study_id, std::optional<int64_t> number) {
  std::vector<TrialRecord> out;
  store_.read_transaction([&] {
    out.clear();
    std::map<int64_t, size_t> by_id;
    const char* filter = number ? " AND number = ?2" : "";
    Query q(store_, (std::string("SELECT id, number, draw, state, interrupted, error, started_at, "
                                 "COALESCE(finished_at, '') FROM trials WHERE study_id = ?1") +
                     filter + " ORDER BY number")
                        .c_str());
    q.int64(1, study_id);
    if (number) q.int64(2, *number);
    while (q.step()) {
      TrialRecord t;
      t.id = q.col_int64(0);
      t.number = q.col_int64(1);
      t.draw = q.col_int64(2);
      t.state = parse_trial_state(q.col_text(3));
      t.interrupted = q.col_int64(4) != 0;
      t.error = q.col_text(5);
      t.started_at = q.col_text(6);
      t.finished_at = q.col_text(7);
      by_id[t.id] = out.size();
      out.push_back(std::move(t));
    }
    // Child rows of the selected trials, each table in one pass.
    auto children = [&](const char* sql, auto&& add) {
      Query c(store_, (std::string(sql) + " WHERE t.study_id = ?1" + filter + " ORDER BY 1, 2").c_str());
      c.int64(1, study_id);
      if (number) c.int64(2, *number);
      while (c.step()) add(out[by_id.at(c.col_int64(0))], c);
    };
    children("SELECT p.trial_id, p.name, p.internal, p.value FROM trial_params p "
             "JOIN trials t ON t.id = p.trial_id",
             [](TrialRecord& t, Query& c) { t.params.push_back({c.col_text(1), c.col_real(2), c.col_text(3)}); });
    children("SELECT v.trial_id, v.objective, v.value FROM trial_values v JOIN trials t ON t.id = v.trial_id",
             [](TrialRecord& t, Query& c) { t.values.push_back(c.col_real(2)); });
    children("SELECT v.trial_id, v.idx, v.value FROM trial_constraints v JOIN trials t ON t.id = v.trial_id",
             [](TrialRecord& t, Query& c) { t.constraints.push_back(c.col_real(2)); });
    children("SELECT v.trial_id, v.step, v.value FROM trial_intermediate_values v JOIN trials t ON t.id = v.trial_id",
             [](TrialRecord& t, Query& c) { t.intermediate_values[c.col_int64(1)] = c.col_real(2); });
    children("SELECT v.trial_id, v.key, v.value FROM trial_user_attrs v JOIN trials t ON t.id = v.trial_id",
             [](TrialRecord& t, Query& c) { t.user_attrs[c.col_text(1)] = c.col_text(2); });
  });
  return out;
}

std::vector<TrialRecord> StudyStore::trials(int64_t study_id) { return read_trials(study_id, std::nullopt); }

std::optional<TrialRecord> StudyStore::trial(int64_t study_id, int64_t number) {
  auto t = read_trials(study_id, number);
  if (t.empty()) return std::nullopt;
  return t.front();
}

}  // namespace xnn::nas
