-- A template's bytes count toward its tenant's storage quota, as a file's do: every stored
-- version (the JSON text of its schema) is in tenant_usage.stored_bytes, kept by a trigger like
-- the one on source_files. Before, 1 MiB templates could be stored by a tenant with a 1,000-byte
-- quota, and the versions kept per name (up to 100 unused ones, and every one an upload names)
-- made a tenant's templates unbounded in total.
CREATE FUNCTION template_bytes(schema jsonb) RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN octet_length(schema::text);

CREATE FUNCTION tenant_usage_follows_templates() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO tenant_usage (tenant_id, stored_bytes)
        VALUES (NEW.tenant_id, template_bytes(NEW.schema))
        ON CONFLICT (tenant_id)
            DO UPDATE SET stored_bytes = tenant_usage.stored_bytes + EXCLUDED.stored_bytes;
    ELSE
        UPDATE tenant_usage
        SET stored_bytes = greatest(stored_bytes - template_bytes(OLD.schema), 0)
        WHERE tenant_id = OLD.tenant_id;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER templates_usage AFTER INSERT OR DELETE ON templates
    FOR EACH ROW EXECUTE FUNCTION tenant_usage_follows_templates();

INSERT INTO tenant_usage (tenant_id, stored_bytes)
    SELECT tenant_id, sum(template_bytes(schema)) FROM templates GROUP BY tenant_id
ON CONFLICT (tenant_id)
    DO UPDATE SET stored_bytes = tenant_usage.stored_bytes + EXCLUDED.stored_bytes;
