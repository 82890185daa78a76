-- The lineage of a task, in one place: when its message was relayed and first received, how
-- often it was delivered, how far a running parse has read, and every failed attempt's error.

ALTER TABLE tasks
    -- When the relay sent the task's outbox message (set by the trigger below).
    ADD COLUMN relayed_at     timestamptz,
    -- When a consumer first took the task from the queue.
    ADD COLUMN received_at    timestamptz,
    -- The queue's dequeue count at the task's latest start.
    ADD COLUMN dequeue_count  integer NOT NULL DEFAULT 0 CHECK (dequeue_count >= 0),
    -- While RUNNING: rows stored and input bytes read so far by the current attempt.
    ADD COLUMN progress_rows  bigint CHECK (progress_rows >= 0),
    ADD COLUMN progress_bytes bigint CHECK (progress_bytes >= 0),
    ADD COLUMN progress_at    timestamptz,
    -- The upload's trace (32 hex digits), when tracing was on.
    ADD COLUMN trace_id       text CHECK (trace_id ~ '^[0-9a-f]{32}$');

-- One row per failed attempt: a transient failure that released the task for a retry, or the
-- final failure. River keeps the same history on its jobs.
CREATE TABLE task_attempt_errors (
    task_id     uuid        NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    attempt     integer     NOT NULL CHECK (attempt >= 0),
    -- `final` failed the task; `transient` released it to be tried again.
    kind        text        NOT NULL CHECK (kind IN ('transient', 'final')),
    code        text,
    message     text        NOT NULL,
    at          timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT final_has_a_code CHECK (kind = 'transient' OR code IS NOT NULL)
);
CREATE INDEX task_attempt_errors_task ON task_attempt_errors (task_id, at);

-- relayed_at follows the outbox: the relay marks a message COMPLETED when the queue took it.
-- A trigger keeps the relay's hot batch statement unchanged and covers every way a row is sent.
-- The relay records its sends after the batch, so a fast consumer may already have received the
-- message: the send happened no later than that, and the timeline stays in order.
CREATE FUNCTION tasks_relayed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE tasks SET relayed_at = COALESCE(relayed_at, LEAST(NEW.processed_at, received_at))
    WHERE id = (NEW.payload ->> 'task_id')::uuid;
    RETURN NULL;
END;
$$;

CREATE TRIGGER outbox_messages_relayed
    AFTER UPDATE OF status ON outbox_messages
    FOR EACH ROW
    WHEN (NEW.status = 'COMPLETED' AND OLD.status IS DISTINCT FROM 'COMPLETED')
    EXECUTE FUNCTION tasks_relayed();
