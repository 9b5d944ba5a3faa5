-- Version 8: webhook signatures already used.
--
-- hook_signatures: the SHA-256 (hex) of each accepted webhook call's
-- signature, kept until the signature's timestamp leaves the window in
-- which the studio accepts it (expires_at, unix microseconds): a second
-- call with the same signature inside that window is a replay, refused in
-- whichever process it reaches. Housekeeping deletes expired rows.

CREATE TABLE hook_signatures (
    digest     VARCHAR(64) NOT NULL PRIMARY KEY,
    hook_id    VARCHAR(64) NOT NULL,
    expires_at BIGINT      NOT NULL
);
CREATE INDEX hook_signatures_expires ON hook_signatures (expires_at);
