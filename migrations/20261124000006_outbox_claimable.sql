-- Job semantics that survive a scaler: one definition of the claimable outbox backlog, and
-- outage deferrals that do not spend a message's attempts.

-- Sends that failed because the queue service was unavailable (transport errors, timeouts,
-- 408/429/5xx): each backs the message off for longer, but none counts toward `max_attempts`,
-- which only failures caused by the message itself use up.
ALTER TABLE outbox_messages
    ADD COLUMN deferrals integer NOT NULL DEFAULT 0 CHECK (deferrals >= 0);

-- What a relay may claim right now: due PENDING and FAILED rows, and PROCESSING rows whose claim
-- expired (their relay died; a live relay renews its claims while it sends). The relay's claim
-- statement reads this view, and so does the scaler's backlog query
-- (`shared::db::outbox::SCALER_BACKLOG_QUERY`, KEDA's postgresql trigger), so the two cannot
-- disagree about what is waiting.
CREATE VIEW outbox_claimable AS
    SELECT id, available_at
    FROM outbox_messages
    WHERE (status IN ('PENDING', 'FAILED') AND available_at <= now())
       OR (status = 'PROCESSING' AND locked_until < now());
