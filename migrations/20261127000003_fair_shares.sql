-- Fair shares between tenants. The task queue is first in, first out, so whatever is in it when
-- an upload is relayed is what that upload waits behind. Measured before this change: with one
-- tenant's 2,000 small files in the outbox and another tenant uploading 20, the second tenant's
-- tasks took 10.6 s at p50 and 12.1 s at p99 (an idle system answers in well under a second),
-- waiting behind nearly all of the first's. Now the relay keeps no more than
-- RELAY_TENANT_IN_FLIGHT tasks of any one tenant between the outbox and a finished parse; the
-- rest of a backlog waits in the outbox, and each claim takes tenants in turn. Another tenant's
-- upload is then sent at once and waits behind at most that many tasks of each busy tenant.

-- The tenant of each message, so that a claim can go tenant by tenant. A constant default keeps
-- the column's addition instant; rows written before it are given their file's tenant below
-- (the outbox is small: sent rows are purged after OUTBOX_RETENTION).
ALTER TABLE outbox_messages ADD COLUMN tenant_id text NOT NULL DEFAULT 'default';

UPDATE outbox_messages o SET tenant_id = f.tenant_id
FROM source_files f
WHERE f.id = (o.payload ->> 'source_file_id')::uuid AND o.tenant_id <> f.tenant_id;

-- Each tenant's due rows, oldest first: the claim walks the tenants with rows waiting (one
-- probe each) and takes a short range of each.
CREATE INDEX outbox_messages_tenant_due ON outbox_messages (tenant_id, available_at)
    WHERE status IN ('PENDING', 'FAILED');

-- Tasks sent and not yet finished: the work a tenant has in flight. Bounded by the fair share
-- itself (at most RELAY_TENANT_IN_FLIGHT per tenant), so counting them is cheap.
CREATE INDEX tasks_in_flight ON tasks (source_file_id)
    WHERE status IN ('PENDING', 'RUNNING') AND relayed_at IS NOT NULL;

-- The tenants with rows waiting to be sent, one index probe each (a loose index scan): what a
-- claim walks, whatever the size of any one tenant's backlog.
CREATE VIEW outbox_waiting_tenants AS
    WITH RECURSIVE waiting (tenant_id) AS (
        (SELECT tenant_id FROM outbox_messages
         WHERE status IN ('PENDING', 'FAILED') ORDER BY tenant_id LIMIT 1)
        UNION ALL
        SELECT (SELECT o.tenant_id FROM outbox_messages o
                WHERE o.status IN ('PENDING', 'FAILED') AND o.tenant_id > w.tenant_id
                ORDER BY o.tenant_id LIMIT 1)
        FROM waiting w WHERE w.tenant_id IS NOT NULL
    )
    SELECT tenant_id FROM waiting WHERE tenant_id IS NOT NULL;

-- Each tenant's work in flight: messages being sent (claimed, lease running) and tasks sent and
-- not yet finished (queued or parsing). A message whose relay died (lease expired) counts again
-- once it is sent.
CREATE VIEW outbox_in_flight AS
    SELECT tenant_id, sum(sending)::bigint AS sending, sum(sent)::bigint AS sent,
           sum(sending + sent)::bigint AS n
    FROM (
        SELECT f.tenant_id, 0 AS sending, count(*) AS sent
        FROM tasks t JOIN source_files f ON f.id = t.source_file_id
        WHERE t.status IN ('PENDING', 'RUNNING') AND t.relayed_at IS NOT NULL
        GROUP BY f.tenant_id
        UNION ALL
        SELECT tenant_id, count(*), 0 FROM outbox_messages
        WHERE status = 'PROCESSING' AND locked_until >= now()
        GROUP BY tenant_id
    ) counts
    GROUP BY tenant_id;

-- A tenant at its share waits for one of its tasks to finish: wake the relay when one does and
-- the tenant has more waiting. Postgres delivers the NOTIFY at commit, and folds repeats within
-- one transaction into one.
CREATE FUNCTION tasks_finished_notify_relay() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (
        SELECT 1 FROM outbox_messages o JOIN source_files f ON f.tenant_id = o.tenant_id
        WHERE f.id = NEW.source_file_id AND o.status IN ('PENDING', 'FAILED')
    ) THEN
        PERFORM pg_notify('outbox_messages', '');
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER tasks_finished_notify_relay
    AFTER UPDATE OF status ON tasks
    FOR EACH ROW
    WHEN (OLD.status IN ('PENDING', 'RUNNING') AND NEW.status NOT IN ('PENDING', 'RUNNING')
          AND NEW.relayed_at IS NOT NULL)
    EXECUTE FUNCTION tasks_finished_notify_relay();
