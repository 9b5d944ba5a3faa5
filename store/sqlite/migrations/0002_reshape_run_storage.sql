-- Run storage, second shape: cheaper to write, same content.
--
-- 1. checkpoints becomes an ordinary rowid table. 0001 made it WITHOUT ROWID,
--    which SQLite recommends only for rows well under a twentieth of a page.
--    A run's rows are not: the start checkpoint carries the whole chain
--    (hundreds of KB for a large chain), and node inputs and outputs make
--    bodies several KB. Every key seek in such a b-tree that lands on an
--    overflowing row copies the whole row to compare keys: a 1,000-node run
--    spent 6 ms of its 50 ms doing that. As a rowid table the (run_id, n) key
--    lives in a small separate index.
--
-- 2. run_nodes is dropped. It repeated, row by row, what the checkpoint log
--    already holds (every node result and pause), and keeping it up to date
--    was the largest single cost of persisting a run. Node results are now
--    folded from the log when a run is read (store/runs.go); checkpoints gain
--    a node_id column so one node's entries can be read on their own.
--
-- 3. events become event_batches: one row per run per write, holding a JSON
--    array of events (store/events.go says why).
--
-- 4. A run's start entry no longer carries its own copy of the chain: the
--    document is stored once in run_chains, by the SHA-256 of its JSON, and
--    the entry names it (chain_sha256). Every run of a chain version used to
--    repeat the whole document (hundreds of KB for a large chain). Entries
--    written by schema 1 keep their copy and read as before.
--
-- docs/benchmarks.md has the figures.

CREATE TABLE event_batches (
    run_id     VARCHAR(64) NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    first_seq  BIGINT      NOT NULL,
    last_seq   BIGINT      NOT NULL,
    created_at BIGINT      NOT NULL,
    body       TEXT        NOT NULL, -- JSON array of the run's events first_seq..last_seq, in seq order
    PRIMARY KEY (run_id, first_seq)
);
INSERT INTO event_batches (run_id, first_seq, last_seq, created_at, body)
    SELECT run_id, seq, seq, created_at, '[' || body || ']' FROM events;
DROP TABLE events;

CREATE TABLE checkpoints_new (
    run_id     VARCHAR(64)  NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    n          BIGINT       NOT NULL,
    kind       VARCHAR(16)  NOT NULL,
    node_id    VARCHAR(256) NOT NULL DEFAULT '', -- node and pause entries
    chain_sha256 VARCHAR(64),                     -- start entries: the run's chain in run_chains
    event_seq  BIGINT       NOT NULL DEFAULT 0,
    created_at BIGINT       NOT NULL,
    body       TEXT         NOT NULL,
    PRIMARY KEY (run_id, n)
);
INSERT INTO checkpoints_new (run_id, n, kind, node_id, event_seq, created_at, body)
    SELECT run_id, n, kind,
           COALESCE(CASE kind WHEN 'node' THEN json_extract(body, '$.node.node_id')
                              WHEN 'pause' THEN json_extract(body, '$.pause.node_id') END, ''),
           event_seq, created_at, body
    FROM checkpoints;
DROP TABLE checkpoints;
ALTER TABLE checkpoints_new RENAME TO checkpoints;
CREATE INDEX checkpoints_chain ON checkpoints (chain_sha256) WHERE chain_sha256 IS NOT NULL;

CREATE TABLE run_chains (
    sha256     VARCHAR(64) NOT NULL PRIMARY KEY, -- of doc, hex
    doc        TEXT        NOT NULL,
    created_at BIGINT      NOT NULL
);

DROP TABLE run_nodes;

-- run_interrupts keeps WITHOUT ROWID: its rows are a few ids and times.
