-- A chain's published version: what its triggers, webhooks, API runs that
-- name no version, skill calls and MCP tools run. Edits make newer versions
-- (the draft) without changing it; publishing moves it. A chain created
-- before this has its newest version published.
ALTER TABLE chains ADD COLUMN published_version INTEGER NOT NULL DEFAULT 0;
ALTER TABLE chains ADD COLUMN published_at BIGINT;
ALTER TABLE chains ADD COLUMN published_by VARCHAR(64) NOT NULL DEFAULT '';
ALTER TABLE chains ADD COLUMN published_message TEXT NOT NULL DEFAULT '';
UPDATE chains SET published_version = current_version, published_at = updated_at;
