-- 0001_init.sql: the first detverify result schema (db/README.md describes it).
-- db/migrations.cc applies each numbered file once, in order, inside one write transaction and
-- then sets PRAGMA user_version to the file's number; a file therefore holds no BEGIN/COMMIT.
-- Every id is the lowercase hex SHA-256 of the row's canonical content (artifacts: of the
-- model.safetensors file). Value sets (engine, backend, status) are checked by the library, so
-- a new value needs no table rebuild.

CREATE TABLE machines (
  id               TEXT PRIMARY KEY NOT NULL CHECK (length(id) = 64),
  fingerprint_json TEXT NOT NULL             -- canonical JSON; id = sha256 of this text
);

CREATE TABLE artifacts (
  id            TEXT PRIMARY KEY NOT NULL CHECK (length(id) = 64),  -- sha256(model.safetensors)
  source        TEXT NOT NULL,               -- "artifact:<name>" or "synthetic:<preset> seed=<n>"
  synthetic     INTEGER NOT NULL CHECK (synthetic IN (0, 1)),
  config_sha256 TEXT NOT NULL                -- sha256(config.json)
);

CREATE TABLE scenarios (
  id             TEXT PRIMARY KEY NOT NULL CHECK (length(id) = 64),
  name           TEXT NOT NULL,
  canonical_text TEXT NOT NULL               -- id = sha256 of this text
);

CREATE TABLE runs (
  id                 TEXT PRIMARY KEY NOT NULL CHECK (length(id) = 64),
  scenario_id        TEXT NOT NULL REFERENCES scenarios (id),
  machine_id         TEXT NOT NULL REFERENCES machines (id),
  artifact_id        TEXT NOT NULL REFERENCES artifacts (id),
  configuration      TEXT NOT NULL,          -- the configuration's name in the scenario
  engine             TEXT NOT NULL,          -- int8 | float
  backend            TEXT NOT NULL,          -- reference | cpu | cuda
  status             TEXT NOT NULL,          -- ok | crashed | timeout | killed | skipped | error
  status_detail      TEXT NOT NULL,
  started_at         TEXT NOT NULL,          -- UTC ISO-8601
  wall_ms            INTEGER NOT NULL CHECK (wall_ms >= 0),
  tokens_per_s_milli INTEGER NOT NULL CHECK (tokens_per_s_milli >= 0),  -- tokens/s x 1000
  n_steps            INTEGER NOT NULL CHECK (n_steps >= 0),  -- rows in steps for this run
  final_logits_chain TEXT,                   -- the last step's logits_chain; NULL without steps
  final_token_chain  TEXT,                   -- the last step's token_chain; NULL without steps
  wrap_events        INTEGER NOT NULL CHECK (wrap_events >= 0),  -- diagnostic count
  tool_version       TEXT NOT NULL,
  spec_version       TEXT NOT NULL,
  config_json        TEXT NOT NULL           -- canonical JSON of the configuration as run
);

CREATE INDEX runs_by_scenario ON runs (scenario_id, configuration);

CREATE TABLE steps (
  run_id       TEXT NOT NULL REFERENCES runs (id),
  step         INTEGER NOT NULL CHECK (step >= 0),  -- 0 is the prompt's last position
  token_id     INTEGER NOT NULL,
  logits_chain TEXT NOT NULL,                -- chain hash over this and all earlier steps' logits
  token_chain  TEXT NOT NULL,                -- chain hash over this and all earlier token ids
  PRIMARY KEY (run_id, step)
) WITHOUT ROWID;

CREATE TABLE attestations (
  id            TEXT PRIMARY KEY NOT NULL CHECK (length(id) = 64),
  envelope_json TEXT NOT NULL,               -- the DSSE envelope; id = sha256 of this text
  signer_hint   TEXT NOT NULL,
  created_at    TEXT NOT NULL                -- UTC ISO-8601
);
