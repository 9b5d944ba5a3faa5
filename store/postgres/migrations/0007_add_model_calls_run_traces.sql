-- Version 7: what models cost, and the trace a run belongs to.
--
-- model_calls: one row per model call of an agent node, written in the same
-- transaction as the model_usage progress event that reports it (the event
-- is the record; this is its index for cost per chain, agent and time).
-- run_traces: the W3C traceparent of a run's first span, so that a resume
-- or another worker's takeover continues the same trace.

CREATE TABLE model_calls (
    run_id        VARCHAR(64)  NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq           BIGINT       NOT NULL, -- the usage event's seq
    node_id       VARCHAR(256) NOT NULL,
    agent         VARCHAR(256) NOT NULL,
    model         VARCHAR(256) NOT NULL,
    input_tokens  BIGINT       NOT NULL,
    output_tokens BIGINT       NOT NULL,
    reported      INTEGER      NOT NULL, -- 0: the answer carried no usage
    created_at    BIGINT       NOT NULL,
    PRIMARY KEY (run_id, seq)
);
CREATE INDEX model_calls_created ON model_calls (created_at);
CREATE INDEX model_calls_agent ON model_calls (agent, created_at);

CREATE TABLE run_traces (
    run_id      VARCHAR(64) NOT NULL PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
    traceparent VARCHAR(64) NOT NULL
);
