-- Credentials that chains use by name. The secret fields are sealed by the
-- studio (AES-256-GCM, the credential's id and the field bound to each) before
-- they reach this table: sealed_fields is JSON of field -> base64 of the
-- sealed bytes. public_fields holds the fields that are not secret, chains
-- the ids of the chains that may use it (an empty list: every chain).
CREATE TABLE credentials (
    id            VARCHAR(36) NOT NULL PRIMARY KEY,
    name          VARCHAR(64) NOT NULL UNIQUE,
    type          VARCHAR(32) NOT NULL,
    public_fields TEXT        NOT NULL,
    sealed_fields TEXT        NOT NULL,
    chains        TEXT        NOT NULL,
    created_by    VARCHAR(64) NOT NULL,
    created_at    BIGINT      NOT NULL,
    updated_by    VARCHAR(64) NOT NULL,
    updated_at    BIGINT      NOT NULL,
    last_used_at  BIGINT
);

-- One value sealed with the key in use, so that a studio started with
-- another key says so at once instead of failing at a run.
CREATE TABLE credential_key (
    id     INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    sealed BLOB   NOT NULL
);
