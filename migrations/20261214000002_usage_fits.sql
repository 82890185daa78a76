-- The rule of api::uploads::limits::check_quota within a usage shard's grant, named once for
-- the three statements of shared::db::uploads that apply it (the shard an upload takes, the one
-- it waits for, and the look an upload takes after waiting for another's regrant): `size` more
-- bytes fit beside `stored` within `room`, and a shard at its room stores nothing more, not even
-- an empty file. A SQL expression, inlined where it is used: plans and indexes are as before.
CREATE FUNCTION usage_fits(stored bigint, room bigint, size bigint) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN stored + size <= room AND (size > 0 OR stored < room);
