-- Triggers (issue #17): schedules and webhooks that start runs of a chain.
--
-- They are records of their own, not part of the chain document: a hook's
-- secret must never reach an exported chain or its versions, and a
-- schedule's firings are state, not design (docs/design.md, "Triggers").
--
-- schedules:       a cron expression in a time zone, the run's input, the
--                  overlap and catch-up policies.
-- hooks:           the HMAC secret (stored as is: verifying an HMAC needs
--                  the key itself; docs/design.md says what that risks).
-- trigger_firings: one row per schedule tick (fired, skipped, missed,
--                  failed) and per hook call. (trigger_id, tick) is unique, and
--                  the row of a tick that starts a run is inserted in the run's
--                  own transaction: a tick fires once however many processes
--                  tick. Hook calls have no tick (NULL never clashes).
-- runs.trigger_*:  what started a run ('schedule' / 'webhook' and the id).

CREATE TABLE schedules (
    id         VARCHAR(64)  NOT NULL PRIMARY KEY,
    chain_id   VARCHAR(64)  NOT NULL REFERENCES chains (id),
    cron       VARCHAR(200) NOT NULL,
    time_zone  VARCHAR(64)  NOT NULL DEFAULT '',
    input      TEXT         NOT NULL,
    overlap    VARCHAR(16)  NOT NULL,
    catch_up   VARCHAR(16)  NOT NULL,
    enabled    INTEGER      NOT NULL DEFAULT 1,
    created_at BIGINT       NOT NULL,
    updated_at BIGINT       NOT NULL
);
CREATE INDEX schedules_chain ON schedules (chain_id, created_at);

CREATE TABLE hooks (
    id              VARCHAR(64)  NOT NULL PRIMARY KEY,
    chain_id        VARCHAR(64)  NOT NULL REFERENCES chains (id),
    secret          VARCHAR(128) NOT NULL,
    sync            INTEGER      NOT NULL DEFAULT 0,
    sync_timeout_ms INTEGER      NOT NULL DEFAULT 0,
    created_at      BIGINT       NOT NULL
);
CREATE INDEX hooks_chain ON hooks (chain_id, created_at);

CREATE TABLE trigger_firings (
    trigger_id VARCHAR(64) NOT NULL,
    tick       BIGINT,
    run_id     VARCHAR(64),
    outcome    VARCHAR(16) NOT NULL,
    message    TEXT        NOT NULL DEFAULT '',
    created_at BIGINT      NOT NULL
);
CREATE UNIQUE INDEX trigger_firings_tick ON trigger_firings (trigger_id, tick);
CREATE INDEX trigger_firings_recent ON trigger_firings (trigger_id, created_at DESC);

ALTER TABLE runs ADD COLUMN trigger_kind VARCHAR(16);
ALTER TABLE runs ADD COLUMN trigger_id VARCHAR(64);
CREATE INDEX runs_chain_status ON runs (chain_id, status);
