-- Row values are stored as `json` (the text as written, validated) rather than `jsonb`.
-- Nothing queries inside a row: rows are written once by COPY and read back whole, in key
-- order. Converting every row to jsonb's binary form cost Postgres about a quarter of its
-- COPY time (1M-row COPY: 3.7-3.9 s as jsonb, 2.6-3.1 s as json on the 2-core benchmark
-- machine), and the rows endpoint turns the value into JSON text again on the way out.
ALTER TABLE parsed_rows ALTER COLUMN "values" TYPE json USING "values"::json;
