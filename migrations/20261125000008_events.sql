-- Events: what happened to a tenant's tasks and files, written by the statement that made it
-- happen, and the webhooks that deliver them.
--
-- An event row is written by the same statement as the change it reports: a trigger on the
-- task's status for `task.*` (whatever code moves a task, its event cannot be forgotten or
-- written alone), the file delete's own statement for `file.deleted` (retention deletes files
-- without one). Inserting an event fans it out, in the same transaction again, into one
-- delivery row per enabled webhook endpoint of the tenant that takes its type: an event is
-- never lost between commit and delivery, and never delivered without its commit.

CREATE TABLE events (
    id             uuid        PRIMARY KEY,
    -- The event's place in its feed, assigned after commit and in commit order by
    -- `events_sequence()` (see below). NULL until then.
    position       bigint      UNIQUE,
    tenant_id      text        NOT NULL CHECK (tenant_id ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$'),
    type           text        NOT NULL
        CHECK (type IN ('task.completed', 'task.failed', 'task.needs_review', 'file.deleted')),
    -- No foreign keys: a file's events outlive a delete of the file (`file.deleted` is one).
    source_file_id uuid        NOT NULL,
    task_id        uuid        NOT NULL,
    -- The event's `data` as the contract spells it.
    data           jsonb       NOT NULL CHECK (jsonb_typeof(data) = 'object'),
    -- The upload's trace, continued by the deliveries.
    trace_id       text        CHECK (trace_id ~ '^[0-9a-f]{32}$'),
    -- The wall clock when the change was written (not now(), which is the start of a
    -- transaction that may have parsed for minutes): the event's `timestamp`, and where the
    -- delivery lag is measured from.
    created_at     timestamptz NOT NULL DEFAULT clock_timestamp()
);
-- The feed and the stream: a tenant's sequenced events in order.
CREATE INDEX events_tenant_position ON events (tenant_id, position) WHERE position IS NOT NULL;
-- What the sequencer stamps.
CREATE INDEX events_unsequenced ON events (created_at) WHERE position IS NULL;
-- Replay since a time, and retention.
CREATE INDEX events_tenant_created ON events (tenant_id, created_at);
CREATE INDEX events_created ON events (created_at);
-- A file's events go with it when a tenant's retention deletes the file.
CREATE INDEX events_source_file ON events (source_file_id);

CREATE SEQUENCE events_position AS bigint;

-- Feed positions in commit order. A sequence value taken at insert would not do: transactions
-- commit in another order than they took their values, so a reader paging by position could
-- pass a position whose event commits later and never see it. Instead positions are stamped
-- after commit, on committed rows only, by one stamper at a time (the advisory lock): every
-- stamper sees the stamps of the one before it and takes higher values, so the stamped events a
-- reader sees are always a prefix of the feed. Readers (the feed, the api's stream listener)
-- call this before reading. Returns how many events it stamped.
CREATE FUNCTION events_sequence() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    stamped bigint;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('events_sequence'));
    -- A statement of its own, so its snapshot is taken after the lock: it sees what the
    -- previous stamper committed.
    WITH unstamped AS (
        SELECT id FROM events WHERE position IS NULL ORDER BY created_at, id FOR UPDATE
    ), numbered AS (
        SELECT id, nextval('events_position') AS position FROM unstamped
    )
    UPDATE events e SET position = n.position FROM numbered n WHERE e.id = n.id;
    GET DIAGNOSTICS stamped = ROW_COUNT;
    RETURN stamped;
END;
$$;

-- The `data` of an event about task `t`: its status, error and row counts. `summary` comes from
-- the task's result (a FAILED task rejected by its template has one too); a file without a
-- template had every row accepted.
CREATE FUNCTION task_event_data(t tasks) RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
        'task_id', t.id,
        'source_file_id', t.source_file_id,
        'status', t.status::text,
        'error', CASE WHEN t.error_code IS NULL THEN NULL
                      ELSE jsonb_build_object('code', t.error_code, 'message', t.error_message) END,
        'summary', CASE WHEN t.result IS NULL THEN NULL
                        ELSE jsonb_build_object(
                            'rows_total', t.result -> 'rows_total',
                            'rows_valid', COALESCE(t.result -> 'validation' -> 'rows_valid',
                                                   t.result -> 'rows_total'),
                            'rows_rejected', COALESCE(t.result -> 'validation' -> 'rows_rejected',
                                                      '0'::jsonb)) END)
$$;

-- One event per status change into COMPLETED, FAILED or NEEDS_REVIEW (compared as text, so the
-- review status has its event from the day it exists).
CREATE FUNCTION tasks_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO events (id, tenant_id, type, source_file_id, task_id, data, trace_id)
    SELECT gen_random_uuid(), f.tenant_id,
           CASE NEW.status::text WHEN 'COMPLETED' THEN 'task.completed'
                                 WHEN 'FAILED' THEN 'task.failed'
                                 ELSE 'task.needs_review' END,
           NEW.source_file_id, NEW.id, task_event_data(NEW), NEW.trace_id
    FROM source_files f WHERE f.id = NEW.source_file_id;
    RETURN NULL;
END;
$$;

CREATE TRIGGER tasks_event
    AFTER UPDATE OF status ON tasks
    FOR EACH ROW
    WHEN (NEW.status IS DISTINCT FROM OLD.status
          AND NEW.status::text IN ('COMPLETED', 'FAILED', 'NEEDS_REVIEW'))
    EXECUTE FUNCTION tasks_event();

-- Webhook endpoints: where a tenant wants its events POSTed.
CREATE TABLE webhook_endpoints (
    id                  uuid        PRIMARY KEY,
    tenant_id           text        NOT NULL CHECK (tenant_id ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$'),
    url                 text        NOT NULL CHECK (length(url) BETWEEN 1 AND 2048),
    -- The event types it takes.
    events              text[]      NOT NULL
        CHECK (cardinality(events) >= 1
               AND events <@ ARRAY['task.completed', 'task.failed', 'task.needs_review',
                                   'file.deleted']),
    description         text        CHECK (length(description) <= 1024),
    enabled             boolean     NOT NULL DEFAULT true,
    -- Why the worker disabled it: `gone` (it answered 410) or `failing` (every attempt failed
    -- for WEBHOOK_DISABLE_AFTER). NULL when enabled or disabled by its owner.
    disabled_reason     text        CHECK (disabled_reason IN ('gone', 'failing')),
    disabled_at         timestamptz,
    -- The signing secret's key, sealed with the WEBHOOK_SECRET_KEY (AES-256-GCM, bound to the
    -- endpoint's id): a copy of the database alone cannot sign, nor read it back.
    secret              bytea       NOT NULL,
    -- The key before the last rotation, still signed with until `previous_secret_until`.
    previous_secret     bytea,
    previous_secret_until timestamptz,
    -- Since when every attempt has failed (NULL once one succeeds).
    failing_since       timestamptz,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT disabled_reason_only_when_disabled CHECK (enabled = (disabled_at IS NULL)
        AND (disabled_reason IS NULL OR NOT enabled)),
    CONSTRAINT previous_secret_has_an_end
        CHECK ((previous_secret IS NULL) = (previous_secret_until IS NULL))
);
CREATE INDEX webhook_endpoints_tenant ON webhook_endpoints (tenant_id, id);

CREATE TYPE delivery_status AS ENUM ('PENDING', 'PROCESSING', 'DELIVERED', 'FAILED', 'DEAD');

-- One event to one endpoint: the delivery queue the worker claims from, as the relay claims
-- outbox messages. `FAILED` waits for its retry at `available_at`; `DEAD` used up the retry
-- schedule (a replay revives it).
CREATE TABLE webhook_deliveries (
    id           uuid            PRIMARY KEY DEFAULT gen_random_uuid(),
    event_id     uuid            NOT NULL REFERENCES events (id) ON DELETE CASCADE,
    endpoint_id  uuid            NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    status       delivery_status NOT NULL DEFAULT 'PENDING',
    -- Requests made, ever: they number the attempt log.
    attempts     integer         NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    -- Failed requests since the delivery was (re)queued: the step of the retry schedule.
    failures     integer         NOT NULL DEFAULT 0 CHECK (failures >= 0),
    -- Not sent because its endpoint was found down by another request of the same batch.
    deferrals    integer         NOT NULL DEFAULT 0 CHECK (deferrals >= 0),
    available_at timestamptz     NOT NULL DEFAULT now(),
    locked_until timestamptz,
    last_error   text,
    created_at   timestamptz     NOT NULL DEFAULT now(),
    delivered_at timestamptz,
    UNIQUE (endpoint_id, event_id),
    CONSTRAINT processing_exactly_when_leased
        CHECK ((status = 'PROCESSING') = (locked_until IS NOT NULL)),
    CONSTRAINT delivered_exactly_when_delivered_at
        CHECK ((status = 'DELIVERED') = (delivered_at IS NOT NULL))
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (available_at)
    WHERE status IN ('PENDING', 'FAILED');
CREATE INDEX webhook_deliveries_leased ON webhook_deliveries (locked_until)
    WHERE status = 'PROCESSING';
CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_id);

-- What a delivery loop may claim right now, as `outbox_claimable` is for the relay: due rows of
-- enabled endpoints, and PROCESSING rows whose claim expired. The scalers' backlog query reads
-- it too.
CREATE VIEW webhook_deliveries_claimable AS
    SELECT d.id, d.endpoint_id, d.available_at
    FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
    WHERE e.enabled
      AND ((d.status IN ('PENDING', 'FAILED') AND d.available_at <= now())
           OR (d.status = 'PROCESSING' AND d.locked_until < now()));

-- Every request made: the attempt log. `outcome` is `delivered` (2xx), `failed` (another
-- answer), `timeout`, `unreachable` (no answer: connect or transport error, or an address that
-- is not allowed), or `gone` (410).
CREATE TABLE webhook_attempts (
    id           bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    endpoint_id  uuid        NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    event_id     uuid        NOT NULL,
    attempt      integer     NOT NULL CHECK (attempt >= 1),
    status_code  integer     CHECK (status_code BETWEEN 100 AND 599),
    outcome      text        NOT NULL
        CHECK (outcome IN ('delivered', 'failed', 'timeout', 'unreachable', 'gone')),
    duration_ms  integer     NOT NULL CHECK (duration_ms >= 0),
    error        text,
    at           timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_attempts_endpoint ON webhook_attempts (endpoint_id, id);
CREATE INDEX webhook_attempts_at ON webhook_attempts (at);

-- Fan-out: an event becomes one delivery per enabled endpoint of its tenant that takes its type.
CREATE FUNCTION events_fan_out() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO webhook_deliveries (event_id, endpoint_id)
    SELECT NEW.id, e.id FROM webhook_endpoints e
    WHERE e.tenant_id = NEW.tenant_id AND e.enabled AND NEW.type = ANY (e.events);
    RETURN NULL;
END;
$$;

CREATE TRIGGER events_fan_out
    AFTER INSERT ON events
    FOR EACH ROW EXECUTE FUNCTION events_fan_out();

-- Wake the api's stream listeners (payload: the tenant) and idle delivery loops the moment
-- an event commits (NOTIFY is delivered at commit, and only then).
CREATE FUNCTION events_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('events', NEW.tenant_id);
    RETURN NULL;
END;
$$;

CREATE TRIGGER events_notify
    AFTER INSERT ON events
    FOR EACH ROW EXECUTE FUNCTION events_notify();

CREATE FUNCTION webhook_deliveries_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('webhook_deliveries', '');
    RETURN NULL;
END;
$$;

CREATE TRIGGER webhook_deliveries_notify
    AFTER INSERT ON webhook_deliveries
    FOR EACH STATEMENT EXECUTE FUNCTION webhook_deliveries_notify();
