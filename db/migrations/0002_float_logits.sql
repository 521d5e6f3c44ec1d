-- 0002_float_logits.sql: the step-0 logits of float contrast rows (engine = float), what the
-- float rows' cushion is computed from (verdict/, float_contrast/). One row per float run that
-- produced steps; int8 runs have none (their agreement is exact, their logits need no keeping).
-- A DB of schema 1 reads as one without float logits: its float rows show no cushion.

CREATE TABLE float_logits (
  run_id  TEXT PRIMARY KEY NOT NULL REFERENCES runs (id),
  step    INTEGER NOT NULL CHECK (step = 0),  -- the step the logits are of (step 0 only)
  vocab   INTEGER NOT NULL CHECK (vocab >= 1),
  logits  BLOB NOT NULL CHECK (length(logits) = 4 * vocab),  -- float32 little-endian [vocab]
  sha256  TEXT NOT NULL CHECK (length(sha256) = 64)  -- of logits; the run id covers it
) WITHOUT ROWID;
