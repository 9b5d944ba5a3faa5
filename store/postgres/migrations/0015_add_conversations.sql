-- Agents' conversations (their memory): one row a turn, the user's message
-- or the agent's final answer, kept by scope (the agent, or chain:node of an
-- agent defined in its node) and session (the value of the agent's
-- memory.session_key). append_key and item make an append idempotent: a
-- node replayed after a crash appends under the same key. at is Unix
-- microseconds.
CREATE TABLE conversation_turns (
    id         BIGSERIAL    NOT NULL PRIMARY KEY,
    scope      VARCHAR(600) NOT NULL,
    session    VARCHAR(200) NOT NULL,
    append_key VARCHAR(200) NOT NULL,
    item       INTEGER      NOT NULL,
    role       VARCHAR(16)  NOT NULL,
    text       TEXT         NOT NULL,
    at         BIGINT       NOT NULL
);

CREATE UNIQUE INDEX conversation_turns_append ON conversation_turns (scope, session, append_key, item);
CREATE INDEX conversation_turns_session ON conversation_turns (scope, session, id);
-- Pruned with the runs (--retain-days): by age.
CREATE INDEX conversation_turns_at ON conversation_turns (at);
