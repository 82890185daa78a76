-- A field's transforms (contract v1.3) change a cell's text before it is cast: an error record
-- keeps the text as in the file (`value`) and adds the text the transforms made of it, when they
-- changed it. Cut to 200 characters like `value`. A new nullable column without a default: a
-- catalogue change only, no rewrite of the (partitioned) report.
ALTER TABLE validation_errors ADD COLUMN transformed text CHECK (length(transformed) <= 256);
