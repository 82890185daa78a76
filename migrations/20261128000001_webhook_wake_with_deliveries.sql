-- Wake the delivery loops only when deliveries were queued. The statement trigger of the events
-- migration fired for every INSERT statement, also those that inserted no row: the fan-out of
-- every task event runs one, so each finished task woke every delivery loop of a deployment with
-- no endpoint to deliver to, for a claim and a due check that found nothing (measured with
-- pg_stat_statements in the e2e bench: two statements and about 0.45 ms of Postgres time per task).
-- The transition table holds the rows the statement inserted. A replay that revives existing
-- deliveries (INSERT ... ON CONFLICT DO UPDATE: no row inserted) notifies by itself.
DROP TRIGGER webhook_deliveries_notify ON webhook_deliveries;

CREATE OR REPLACE FUNCTION webhook_deliveries_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT FROM inserted) THEN
        PERFORM pg_notify('webhook_deliveries', '');
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER webhook_deliveries_notify
    AFTER INSERT ON webhook_deliveries
    REFERENCING NEW TABLE AS inserted
    FOR EACH STATEMENT EXECUTE FUNCTION webhook_deliveries_notify();
