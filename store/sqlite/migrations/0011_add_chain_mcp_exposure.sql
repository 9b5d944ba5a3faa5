-- Whether a chain is offered as a tool by the studio's MCP server
-- (/v1/mcp, `studio mcp`). A setting of the chain record, not of its
-- document: only an admin changes it (PUT /v1/chains/{id}/mcp), an editor
-- cannot expose a chain by saving or importing a document, and restoring an
-- old version does not change it.
ALTER TABLE chains ADD COLUMN mcp_exposed INTEGER NOT NULL DEFAULT 0;
