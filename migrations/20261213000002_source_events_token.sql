-- A Blob source's events token: a credential that may only post Event Grid events for its own
-- source (POST/OPTIONS /api/v1/sources/{id}/events), so that an Event Grid subscription holds
-- that rather than a tenant's API key. Stored as its SHA-256, like API keys and session tokens;
-- NULL until one is made (sources made before this have none).
ALTER TABLE sources ADD COLUMN events_token_hash bytea;
CREATE UNIQUE INDEX sources_events_token ON sources (events_token_hash)
    WHERE events_token_hash IS NOT NULL;
