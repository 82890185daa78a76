"""The reference verdict on a file: what `frictionless` reports for it against a Table Schema.

    verdict.py DATA_FILE SCHEMA_JSON [--sheet NAME]

Prints one JSON array of error records in file order, each normalised to the vocabulary of
sheetrelay's error report (api-contract.md, "Validation result and error report"):

    {"row": int|null, "column": str|null, "field": str|null, "code": str, "constraint": str|null}

`row` is the row number frictionless gives (the header is row 1), `column` the header text of
the cell's column as in the file, `field` the schema field. Frictionless error types that have no
counterpart in that vocabulary keep their frictionless name as `code` (and their message goes to
stderr), so a test sees them instead of losing them. Exits non-zero on bad arguments or when
frictionless itself fails. Run it with the venv's python (tests/stack/test.sh installs it and
exports SHEETRELAY_FRICTIONLESS).
"""

import argparse
import json
import os
import re
import sys

import frictionless
from frictionless import Dialect, Schema, formats
from frictionless.resources import TableResource

# Frictionless's type names that are ours too: the same words mean the same thing.
CELL_CODES = {"type-error", "constraint-error", "unique-error", "missing-cell", "extra-cell"}
ROW_CODES = {"blank-row", "primary-key"}
LABEL_CODES = {"missing-label", "duplicate-label"}

# A constraint-error names its constraint only in its note, written by Field.create_cell_reader
# as `constraint "<name>" is "<value>"`. Anchored, so a change of wording fails loudly below
# instead of naming the wrong constraint.
CONSTRAINT_NOTE = re.compile(r'^constraint "([A-Za-z]+)" is ')


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data_file")
    parser.add_argument("schema_json")
    parser.add_argument("--sheet", help="the worksheet of a workbook to validate")
    args = parser.parse_args()
    print(f"verdict.py: frictionless {frictionless.__version__}", file=sys.stderr)

    with open(args.schema_json, encoding="utf-8") as f:
        schema = Schema.from_descriptor(json.load(f))
    # sheetrelay maps template fields to the file's columns by NAME, in any order, ignores
    # columns no field names and reports a field that no column names as a missing label.
    # Frictionless's default ("exact") pairs fields and columns by POSITION, so a reordered or
    # extra column would be read as the wrong field. `fieldsMatch: "subset"` (Table Schema v2)
    # pairs them by name, tolerates extra columns and reports every unmatched field as
    # missing-label: what we do. The older `Detector(schema_sync=True)` is deprecated and now
    # means "partial", which would stay silent about a missing column whose field is optional.
    # Any `fieldsMatch` the template declares is overridden: sheetrelay always maps by name.
    schema.fields_match = "subset"

    dialect = Dialect()
    if args.sheet is not None:
        dialect = Dialect(controls=[formats.ExcelControl(sheet=args.sheet)])
    # Frictionless refuses absolute paths as unsafe unless given as a base path.
    data_file = os.path.abspath(args.data_file)
    resource = TableResource(
        path=os.path.basename(data_file),
        basepath=os.path.dirname(data_file),
        schema=schema,
        dialect=dialect,
    )
    # Every error, not the first 1,000 (frictionless's default limit).
    report = resource.validate(limit_errors=sys.maxsize)

    records = [normalise(error, []) for error in report.errors]
    for task in report.tasks:
        records.extend(normalise(error, task.labels) for error in task.errors)
    # Frictionless reports the header first and then the rows in order; a stable sort by row
    # keeps that order and makes "file order" a property of the output, not an assumption.
    records.sort(key=lambda r: 0 if r["row"] is None else r["row"])
    json.dump(records, sys.stdout)
    sys.stdout.write("\n")


def normalise(error, labels):
    """One frictionless error as a record of our vocabulary."""
    code = error.type
    record = {"row": None, "column": None, "field": None, "code": code, "constraint": None}
    if code in CELL_CODES:
        record["row"] = error.row_number
        # Fields are matched to labels by name, one expected field per label in label order,
        # so a cell's field number is its column's position in the header. An extra cell lies
        # past the header: it has no column text and no field.
        if error.field_number <= len(labels):
            record["column"] = labels[error.field_number - 1]
        record["field"] = error.field_name or None
        if code == "constraint-error":
            record["constraint"] = constraint_of(error.note)
    elif code in ROW_CODES:
        record["row"] = error.row_number
    elif code in LABEL_CODES:
        record["row"] = error.row_numbers[0] if error.row_numbers else None
        record["column"] = error.label or None
        record["field"] = error.field_name or None
    else:
        # Not one of ours: keep whatever place frictionless gives it, and say what it is.
        record["row"] = getattr(error, "row_number", None)
        if record["row"] is None and getattr(error, "row_numbers", None):
            record["row"] = error.row_numbers[0]
        record["field"] = getattr(error, "field_name", None) or None
        print(f"verdict.py: frictionless {code}: {error.message}", file=sys.stderr)
    return record


def constraint_of(note):
    match = CONSTRAINT_NOTE.match(note)
    if match is None:
        raise SystemExit(f"verdict.py: a constraint-error whose note names no constraint: {note!r}")
    return match.group(1)


if __name__ == "__main__":
    main()
