-- A webhook endpoint that is an Azure Event Grid topic: its deliveries are CloudEvents 1.0
-- authenticated with the topic's access key, sealed under WEBHOOK_SECRET_KEY with the endpoint's
-- id like its signing secret (NULL: a Standard Webhooks endpoint).
ALTER TABLE webhook_endpoints ADD COLUMN event_grid_key bytea;
