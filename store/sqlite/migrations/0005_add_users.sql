-- Named users (issue #17): each signs in with its own token, of which only
-- the SHA-256 is kept (64 hex digits). Removing a user keeps its row
-- (removed_at) so that audit records keep naming someone who existed; the
-- name is free again for a new user.
CREATE TABLE users (
    id         INTEGER     NOT NULL PRIMARY KEY,
    name       VARCHAR(64) NOT NULL,
    role       VARCHAR(16) NOT NULL,
    token_hash VARCHAR(64) NOT NULL,
    created_at BIGINT      NOT NULL,
    removed_at BIGINT
);

CREATE UNIQUE INDEX users_live_name ON users (name) WHERE removed_at IS NULL;
CREATE UNIQUE INDEX users_token_hash ON users (token_hash);
