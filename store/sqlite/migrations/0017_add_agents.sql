-- Reusable agents kept in the store, every version of each. agents holds
-- one row per agent: its latest version and description (for lists);
-- agent_versions holds each version's source (YAML or JSON, as an agent
-- file holds it) and why it was made.
CREATE TABLE agents (
    name        VARCHAR(64)  NOT NULL PRIMARY KEY,
    version     INTEGER      NOT NULL,
    description TEXT         NOT NULL,
    created_by  VARCHAR(64)  NOT NULL,
    created_at  BIGINT       NOT NULL,
    updated_by  VARCHAR(64)  NOT NULL,
    updated_at  BIGINT       NOT NULL
);
CREATE TABLE agent_versions (
    name       VARCHAR(64)  NOT NULL,
    version    INTEGER      NOT NULL,
    source     TEXT         NOT NULL,
    message    TEXT         NOT NULL,
    created_by VARCHAR(64)  NOT NULL,
    created_at BIGINT       NOT NULL,
    PRIMARY KEY (name, version)
);
