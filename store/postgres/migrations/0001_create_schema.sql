-- Chain Studio schema on PostgreSQL, version 1: the SQLite schema as of its
-- version 3, in PostgreSQL's types.
--
-- Times are BIGINT unix microseconds (UTC), as in SQLite, so both backends
-- share their encoding code. Documents (chains, events, checkpoint entries)
-- are TEXT holding JSON: every read decodes a whole document in Go, so jsonb
-- would cost a parse on each write and a re-serialisation on each read and
-- buy nothing. TOAST compresses the large ones.

CREATE TABLE chains (
    id              VARCHAR(64)  NOT NULL PRIMARY KEY,
    name            VARCHAR(512) NOT NULL,
    description     TEXT         NOT NULL DEFAULT '',
    current_version INTEGER      NOT NULL,
    node_count      INTEGER      NOT NULL DEFAULT 0,
    created_at      BIGINT       NOT NULL,
    updated_at      BIGINT       NOT NULL,
    deleted_at      BIGINT
);

-- A name is unique among chains that are not deleted.
CREATE UNIQUE INDEX chains_live_name ON chains (name) WHERE deleted_at IS NULL;
CREATE INDEX chains_live_lower_name ON chains (LOWER(name), id) WHERE deleted_at IS NULL;

CREATE TABLE chain_versions (
    chain_id    VARCHAR(64)  NOT NULL REFERENCES chains (id),
    version     INTEGER      NOT NULL,
    name        VARCHAR(512) NOT NULL,
    node_count  INTEGER      NOT NULL DEFAULT 0,
    message     TEXT         NOT NULL DEFAULT '',
    kind        VARCHAR(16)  NOT NULL DEFAULT 'save',
    doc         TEXT         NOT NULL,
    created_at  BIGINT       NOT NULL,
    PRIMARY KEY (chain_id, version)
);

CREATE TABLE runs (
    id            VARCHAR(64)  NOT NULL PRIMARY KEY,
    chain_id      VARCHAR(64),
    chain_version INTEGER,
    chain_name    VARCHAR(512) NOT NULL DEFAULT '',
    parent_run_id VARCHAR(64),
    kind          VARCHAR(16)  NOT NULL DEFAULT 'run',
    input         TEXT,
    status        VARCHAR(16)  NOT NULL,
    error         TEXT,
    final_output  TEXT,
    outputs       TEXT,
    nodes_run     INTEGER      NOT NULL DEFAULT 0,
    started_at    BIGINT       NOT NULL,
    ended_at      BIGINT,
    duration_ms   BIGINT
);

CREATE INDEX runs_chain_started ON runs (chain_id, started_at DESC, id);
CREATE INDEX runs_started ON runs (started_at DESC, id);
CREATE INDEX runs_status ON runs (status);
CREATE INDEX runs_parent ON runs (parent_run_id);

-- One row per run per write, holding a JSON array of the run's events
-- first_seq..last_seq in seq order.
CREATE TABLE event_batches (
    run_id     VARCHAR(64) NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    first_seq  BIGINT      NOT NULL,
    last_seq   BIGINT      NOT NULL,
    created_at BIGINT      NOT NULL,
    body       TEXT        NOT NULL,
    PRIMARY KEY (run_id, first_seq)
);

CREATE TABLE checkpoints (
    run_id       VARCHAR(64)  NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    n            BIGINT       NOT NULL,
    kind         VARCHAR(16)  NOT NULL,
    node_id      VARCHAR(256) NOT NULL DEFAULT '', -- node and pause entries
    chain_sha256 VARCHAR(64),                      -- start entries: the run's chain in run_chains
    event_seq    BIGINT       NOT NULL DEFAULT 0,
    created_at   BIGINT       NOT NULL,
    body         TEXT         NOT NULL,
    PRIMARY KEY (run_id, n)
);
CREATE INDEX checkpoints_chain ON checkpoints (chain_sha256) WHERE chain_sha256 IS NOT NULL;

CREATE TABLE run_chains (
    sha256     VARCHAR(64) NOT NULL PRIMARY KEY, -- of doc, hex
    doc        TEXT        NOT NULL,
    created_at BIGINT      NOT NULL
);

-- One row per pause checkpoint; claimed_at is set by a resume, or by an
-- "end" entry with a non-paused status.
CREATE TABLE run_interrupts (
    run_id     VARCHAR(64)  NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    n          BIGINT       NOT NULL,
    node_id    VARCHAR(256) NOT NULL,
    created_at BIGINT       NOT NULL,
    claimed_at BIGINT,
    PRIMARY KEY (run_id, n)
);
