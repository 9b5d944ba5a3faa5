-- Where each credential may be sent: JSON list of allowed hosts
-- ("api.example.com", "*.example.com", "host:port") and base URLs
-- ("https://api.example.com/v1/"). An empty list sends a provider key to its
-- provider's API only and an HTTP credential nowhere, so a credential stored
-- before this column is unusable until an admin sets its hosts.
ALTER TABLE credentials ADD COLUMN hosts TEXT NOT NULL DEFAULT '[]';
