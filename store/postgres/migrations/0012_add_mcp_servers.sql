-- MCP servers the studio connects to, whose tools chains call as
-- mcp:<name>/<tool>. headers holds JSON of header -> value, the values that
-- are not secret (secret ones come from the credential named in credential,
-- resolved at connect time); args a JSON list and env JSON of variable ->
-- value, for the stdio transport. enabled is 0 or 1.
CREATE TABLE mcp_servers (
    name       VARCHAR(64)  NOT NULL PRIMARY KEY,
    transport  VARCHAR(8)   NOT NULL,
    url        TEXT         NOT NULL,
    headers    TEXT         NOT NULL,
    credential VARCHAR(64)  NOT NULL,
    command    TEXT         NOT NULL,
    args       TEXT         NOT NULL,
    env        TEXT         NOT NULL,
    enabled    INTEGER      NOT NULL,
    created_by VARCHAR(64)  NOT NULL,
    created_at BIGINT       NOT NULL,
    updated_by VARCHAR(64)  NOT NULL,
    updated_at BIGINT       NOT NULL
);
