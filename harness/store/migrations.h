// The results store's schema as an append-only list of forward migrations. Entry i brings a
// database from PRAGMA user_version i to i + 1; Store applies the pending ones in order, each
// in the same BEGIN IMMEDIATE transaction, with foreign keys off (so a script may rebuild a
// table) and a foreign_key_check before COMMIT.
//
// To change the schema: append a new script, bump Store::kSchemaVersion, document the change
// in harness/store/README.md. Never edit a script that has shipped: databases in the field
// already ran it.
#pragma once
#include <string_view>

namespace xnn::store_schema {

struct Migration {
  int version;  // user_version after this script
  std::string_view name;
  std::string_view sql;
};

inline constexpr Migration kMigrations[] = {
    {1, "initial", R"sql(
CREATE TABLE schema_history (
  version    INTEGER PRIMARY KEY,
  name       TEXT NOT NULL,
  applied_at TEXT NOT NULL
);

CREATE TABLE experiments (
  id          INTEGER PRIMARY KEY,
  name        TEXT NOT NULL UNIQUE,
  config_path TEXT NOT NULL DEFAULT '',
  created_at  TEXT NOT NULL
);

CREATE TABLE environments (
  id          INTEGER PRIMARY KEY,
  fingerprint TEXT NOT NULL UNIQUE,
  cpu_model   TEXT NOT NULL DEFAULT '',
  isa         TEXT NOT NULL DEFAULT '',
  cores       INTEGER NOT NULL DEFAULT 0,
  governor    TEXT NOT NULL DEFAULT '',
  load_avg_1m REAL,
  compiler    TEXT NOT NULL DEFAULT '',
  xnn_version TEXT NOT NULL DEFAULT '',
  git_commit  TEXT NOT NULL DEFAULT '',
  os          TEXT NOT NULL DEFAULT '',
  hostname    TEXT NOT NULL DEFAULT '',
  created_at  TEXT NOT NULL
);

CREATE TABLE targets (
  id         INTEGER PRIMARY KEY,
  name       TEXT NOT NULL UNIQUE,
  kind       TEXT NOT NULL DEFAULT '',
  simulated  INTEGER NOT NULL DEFAULT 0 CHECK (simulated IN (0, 1)),
  spec_json  TEXT NOT NULL DEFAULT '{}',
  updated_at TEXT NOT NULL
);

CREATE TABLE runs (
  id             TEXT PRIMARY KEY,
  experiment_id  INTEGER NOT NULL REFERENCES experiments(id),
  config_path    TEXT NOT NULL DEFAULT '',
  config_hash    TEXT NOT NULL DEFAULT '',
  config_text    TEXT NOT NULL DEFAULT '',
  git_commit     TEXT NOT NULL DEFAULT '',
  tag            TEXT,
  status         TEXT NOT NULL CHECK (status IN ('RUNNING', 'FINISHED', 'FAILED', 'KILLED')),
  started_at     TEXT NOT NULL,
  finished_at    TEXT,
  environment_id INTEGER REFERENCES environments(id),
  command        TEXT NOT NULL DEFAULT '',
  pid            INTEGER NOT NULL DEFAULT 0,
  hostname       TEXT NOT NULL DEFAULT ''
);
CREATE INDEX runs_by_started ON runs(started_at);
CREATE INDEX runs_by_experiment ON runs(experiment_id, started_at);
CREATE INDEX runs_by_commit ON runs(git_commit, started_at);
CREATE INDEX runs_by_tag ON runs(tag, started_at) WHERE tag IS NOT NULL;

CREATE TABLE jobs (
  id            TEXT PRIMARY KEY,
  run_id        TEXT NOT NULL REFERENCES runs(id),
  experiment_id INTEGER NOT NULL REFERENCES experiments(id),
  model         TEXT NOT NULL,
  variant       TEXT NOT NULL DEFAULT '',
  target_id     INTEGER NOT NULL REFERENCES targets(id),
  spec_json     TEXT NOT NULL DEFAULT '{}',
  status        TEXT NOT NULL CHECK (status IN ('RUNNING', 'DONE', 'FAILED')),
  error         TEXT NOT NULL DEFAULT '',
  attempts      INTEGER NOT NULL DEFAULT 1,
  started_at    TEXT NOT NULL,
  finished_at   TEXT
);
CREATE INDEX jobs_by_run ON jobs(run_id);
CREATE INDEX jobs_by_target ON jobs(target_id);
CREATE INDEX jobs_latest ON jobs(experiment_id, model, variant, target_id, status, finished_at);

CREATE TABLE run_jobs (
  run_id    TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  job_id    TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  reused    INTEGER NOT NULL DEFAULT 0 CHECK (reused IN (0, 1)),
  linked_at TEXT NOT NULL,
  PRIMARY KEY (run_id, job_id)
);
CREATE INDEX run_jobs_by_job ON run_jobs(job_id);

CREATE TABLE metrics (
  id     INTEGER PRIMARY KEY,
  job_id TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  name   TEXT NOT NULL,
  value  REAL,
  unit   TEXT NOT NULL DEFAULT '',
  UNIQUE (job_id, name)
);

CREATE TABLE samples (
  job_id TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  name   TEXT NOT NULL,
  seq    INTEGER NOT NULL,
  value  REAL,
  PRIMARY KEY (job_id, name, seq)
) WITHOUT ROWID;

CREATE TABLE op_profiles (
  job_id     TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  node_index INTEGER NOT NULL,
  node_name  TEXT NOT NULL DEFAULT '',
  op_type    TEXT NOT NULL DEFAULT '',
  kernel     TEXT NOT NULL DEFAULT '',
  shapes     TEXT NOT NULL DEFAULT '',
  macs       INTEGER NOT NULL DEFAULT 0,
  bytes      INTEGER NOT NULL DEFAULT 0,
  time_ms    REAL,
  PRIMARY KEY (job_id, node_index)
) WITHOUT ROWID;

CREATE TABLE artifacts (
  id         INTEGER PRIMARY KEY,
  job_id     TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  kind       TEXT NOT NULL DEFAULT '',
  path       TEXT NOT NULL,
  sha256     TEXT NOT NULL,
  size_bytes INTEGER NOT NULL,
  UNIQUE (job_id, path)
);
CREATE INDEX artifacts_by_sha256 ON artifacts(sha256);
)sql"},
    // Black-box search studies (nas/study/study_store.h), after Optuna's storage model.
    {2, "studies", R"sql(
CREATE TABLE studies (
  id              INTEGER PRIMARY KEY,
  name            TEXT NOT NULL UNIQUE,
  strategy        TEXT NOT NULL,
  strategy_config TEXT NOT NULL DEFAULT '{}',
  pruner          TEXT NOT NULL DEFAULT '',
  pruner_config   TEXT NOT NULL DEFAULT '{}',
  space_json      TEXT NOT NULL,
  seed            INTEGER NOT NULL,
  created_at      TEXT NOT NULL
);

CREATE TABLE study_objectives (
  study_id  INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
  objective INTEGER NOT NULL,
  name      TEXT NOT NULL DEFAULT '',
  direction TEXT NOT NULL CHECK (direction IN ('minimize', 'maximize')),
  PRIMARY KEY (study_id, objective)
) WITHOUT ROWID;

CREATE TABLE trials (
  id          INTEGER PRIMARY KEY,
  study_id    INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
  number      INTEGER NOT NULL,
  draw        INTEGER NOT NULL,
  state       TEXT NOT NULL CHECK (state IN ('RUNNING', 'COMPLETE', 'PRUNED', 'FAIL')),
  interrupted INTEGER NOT NULL DEFAULT 0 CHECK (interrupted IN (0, 1)),
  error       TEXT NOT NULL DEFAULT '',
  started_at  TEXT NOT NULL,
  finished_at TEXT,
  UNIQUE (study_id, number)
);
CREATE INDEX trials_by_state ON trials(study_id, state);

CREATE TABLE trial_params (
  trial_id INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE,
  name     TEXT NOT NULL,
  internal REAL NOT NULL,
  value    TEXT NOT NULL,
  PRIMARY KEY (trial_id, name)
) WITHOUT ROWID;

CREATE TABLE trial_values (
  trial_id  INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE,
  objective INTEGER NOT NULL,
  value     REAL,
  PRIMARY KEY (trial_id, objective)
) WITHOUT ROWID;

CREATE TABLE trial_constraints (
  trial_id INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE,
  idx      INTEGER NOT NULL,
  value    REAL,
  PRIMARY KEY (trial_id, idx)
) WITHOUT ROWID;

CREATE TABLE trial_intermediate_values (
  trial_id INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE,
  step     INTEGER NOT NULL,
  value    REAL,
  PRIMARY KEY (trial_id, step)
) WITHOUT ROWID;

CREATE TABLE trial_user_attrs (
  trial_id INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE,
  key      TEXT NOT NULL,
  value    TEXT NOT NULL,
  PRIMARY KEY (trial_id, key)
) WITHOUT ROWID;
)sql"},
};

}  // namespace xnn::store_schema
