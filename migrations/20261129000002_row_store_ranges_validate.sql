-- Partitioning the row store, step 2 of 3: validate the CHECKs the previous migration added.
-- This reads every row of the three tables, under SHARE UPDATE EXCLUSIVE locks: reads, inserts
-- and deletes go on meanwhile (only schema changes and VACUUM wait). On the benchmark's 100M
-- stored rows it took the figure in BENCHMARKS.md ("Row store partitions").
ALTER TABLE parsed_row_chunks VALIDATE CONSTRAINT parsed_row_chunks_legacy_range;
ALTER TABLE validation_errors VALIDATE CONSTRAINT validation_errors_legacy_range;
ALTER TABLE rejected_rows VALIDATE CONSTRAINT rejected_rows_legacy_range;
