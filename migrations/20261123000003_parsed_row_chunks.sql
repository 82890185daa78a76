-- Parsed rows are stored in chunks: one tuple holds up to 256 consecutive rows of a sheet (fewer
-- when they are wide; see `shared::db::rows::CopyRows`) as a JSON array of the rows' arrays.
--
-- One tuple per row made Postgres the bottleneck of every large parse: per row it paid a tuple
-- header, an index entry and WAL for both. Loading 1M rows of the 12-column benchmark table
-- with COPY took 3.8-4.2 s of server time as one row per tuple, and 1.2-1.5 s as 256-row chunks
-- compressed with lz4 (the default pglz made the same chunks cost 3.6-4.0 s). Reads are keyset
-- pages of at most 1,000 rows: a few chunks each. With a few thousand tuples per million rows,
-- the foreign key the per-row table could not afford is cheap.
CREATE TABLE parsed_row_chunks (
    source_file_id uuid    NOT NULL REFERENCES source_files (id) ON DELETE CASCADE,
    sheet_index    integer NOT NULL,
    -- Index of the chunk's first row in its sheet; the chunk holds rows
    -- first_row .. first_row + row_count - 1.
    first_row      bigint  NOT NULL CHECK (first_row >= 0),
    row_count      integer NOT NULL CHECK (row_count > 0),
    "rows"         json    NOT NULL,
    PRIMARY KEY (source_file_id, sheet_index, first_row)
);
-- lz4 needs a server built with it (Debian's packages and the official images are); elsewhere the
-- chunks keep the default pglz, slower to write but correct.
DO $$
BEGIN
    ALTER TABLE parsed_row_chunks ALTER COLUMN "rows" SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
    RAISE NOTICE 'this server has no lz4: parsed_row_chunks keeps pglz compression';
END
$$;

INSERT INTO parsed_row_chunks (source_file_id, sheet_index, first_row, row_count, "rows")
SELECT source_file_id, sheet_index, min(row_index), count(*), json_agg("values" ORDER BY row_index)
FROM parsed_rows r
WHERE EXISTS (SELECT 1 FROM source_files f WHERE f.id = r.source_file_id)
GROUP BY source_file_id, sheet_index, row_index / 256;

DROP TABLE parsed_rows;
