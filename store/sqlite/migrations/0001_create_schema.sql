-- Chain Studio schema, version 1.
-- Portable SQL: plain types, times as BIGINT unix microseconds (UTC), JSON
-- documents as TEXT. The same schema is meant to run on PostgreSQL.

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

CREATE TABLE chain_versions (
    chain_id    VARCHAR(64)  NOT NULL REFERENCES chains (id),
    version     INTEGER      NOT NULL,
    name        VARCHAR(512) NOT NULL,
    node_count  INTEGER      NOT NULL DEFAULT 0,
    message     TEXT         NOT NULL DEFAULT '',
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

CREATE TABLE run_nodes (
    run_id      VARCHAR(64)  NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    node_id     VARCHAR(256) NOT NULL,
    ord         BIGINT       NOT NULL,
    status      VARCHAR(16)  NOT NULL,
    input       TEXT,
    output      TEXT,
    error       TEXT         NOT NULL DEFAULT '',
    error_code  VARCHAR(64)  NOT NULL DEFAULT '',
    reason      VARCHAR(64)  NOT NULL DEFAULT '',
    matched     VARCHAR(256) NOT NULL DEFAULT '',
    attempts    INTEGER      NOT NULL DEFAULT 0,
    iteration   INTEGER      NOT NULL DEFAULT 0,
    started_at  BIGINT,
    ended_at    BIGINT,
    prompt      TEXT,
    PRIMARY KEY (run_id, node_id)
) WITHOUT ROWID;

CREATE TABLE events (
    run_id     VARCHAR(64)  NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq        BIGINT       NOT NULL,
    node_id    VARCHAR(256) NOT NULL DEFAULT '',
    phase      VARCHAR(16)  NOT NULL DEFAULT '',
    created_at BIGINT       NOT NULL,
    body       TEXT         NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;

CREATE TABLE checkpoints (
    run_id     VARCHAR(64) NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    n          BIGINT      NOT NULL,
    kind       VARCHAR(16) NOT NULL,
    event_seq  BIGINT      NOT NULL DEFAULT 0,
    created_at BIGINT      NOT NULL,
    body       TEXT        NOT NULL,
    PRIMARY KEY (run_id, n)
) WITHOUT ROWID;

-- One row per pause checkpoint (n is the pause entry's checkpoint number, so
-- the oldest pause has the smallest n). claimed_at is set by a resume, or by
-- an "end" entry with a non-paused status.
CREATE TABLE run_interrupts (
    run_id     VARCHAR(64)  NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    n          BIGINT       NOT NULL,
    node_id    VARCHAR(256) NOT NULL,
    created_at BIGINT       NOT NULL,
    claimed_at BIGINT,
    PRIMARY KEY (run_id, n)
) WITHOUT ROWID;
