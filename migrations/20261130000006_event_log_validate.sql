-- Partitioning the event log, step 6 of 7: validate the CHECKs of step 1. This reads every row
-- of the three tables under SHARE UPDATE EXCLUSIVE locks: reads, inserts, updates and deletes
-- go on meanwhile (only schema changes and VACUUM wait).
ALTER TABLE events VALIDATE CONSTRAINT events_legacy_range;
ALTER TABLE webhook_deliveries VALIDATE CONSTRAINT webhook_deliveries_legacy_range;
ALTER TABLE webhook_attempts VALIDATE CONSTRAINT webhook_attempts_legacy_range;
