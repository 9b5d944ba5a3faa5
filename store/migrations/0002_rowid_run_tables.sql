-- Rebuild three per-run tables (run_nodes, events, checkpoints) as ordinary rowid tables.
--
-- 0001 made them WITHOUT ROWID. SQLite's own guidance is that WITHOUT ROWID
-- suits rows well under a twentieth of a page; a run's rows are not: the start
-- checkpoint carries the whole chain (hundreds of KB for a large chain), and
-- node inputs and outputs, event bodies and checkpoint bodies are routinely
-- several KB. Every seek in such a b-tree that lands on an overflowing row
-- copies the whole row to compare keys: a 1,000-node run spent 6 ms of its
-- 50 ms doing that. As rowid tables, the (run_id, …) primary key lives in a
-- small separate index and big rows are never read to find a key
-- (docs/benchmarks.md: the persisted 1,000-node run went from 51 to 38 ms).

CREATE TABLE run_nodes_new (
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
);
INSERT INTO run_nodes_new (run_id, node_id, ord, status, input, output, error, error_code, reason, matched, attempts, iteration, started_at, ended_at, prompt) SELECT run_id, node_id, ord, status, input, output, error, error_code, reason, matched, attempts, iteration, started_at, ended_at, prompt FROM run_nodes;
DROP TABLE run_nodes;
ALTER TABLE run_nodes_new RENAME TO run_nodes;

CREATE TABLE events_new (
    run_id     VARCHAR(64)  NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq        BIGINT       NOT NULL,
    node_id    VARCHAR(256) NOT NULL DEFAULT '',
    phase      VARCHAR(16)  NOT NULL DEFAULT '',
    created_at BIGINT       NOT NULL,
    body       TEXT         NOT NULL,
    PRIMARY KEY (run_id, seq)
);
INSERT INTO events_new (run_id, seq, node_id, phase, created_at, body) SELECT run_id, seq, node_id, phase, created_at, body FROM events;
DROP TABLE events;
ALTER TABLE events_new RENAME TO events;

CREATE TABLE checkpoints_new (
    run_id     VARCHAR(64) NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    n          BIGINT      NOT NULL,
    kind       VARCHAR(16) NOT NULL,
    event_seq  BIGINT      NOT NULL DEFAULT 0,
    created_at BIGINT      NOT NULL,
    body       TEXT        NOT NULL,
    PRIMARY KEY (run_id, n)
);
INSERT INTO checkpoints_new (run_id, n, kind, event_seq, created_at, body) SELECT run_id, n, kind, event_seq, created_at, body FROM checkpoints;
DROP TABLE checkpoints;
ALTER TABLE checkpoints_new RENAME TO checkpoints;

-- run_interrupts keeps WITHOUT ROWID: its rows are a few ids and times.
