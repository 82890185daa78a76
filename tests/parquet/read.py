"""Reads a Parquet file with pyarrow and prints it as JSON: each column's name and Arrow type,
the number of row groups, and the rows as lists (dates and times in ISO 8601)."""

import datetime
import json
import sys

import pyarrow.parquet as pq


def plain(value):
    if isinstance(value, (datetime.date, datetime.datetime, datetime.time)):
        return value.isoformat()
    return value


def main(path):
    f = pq.ParquetFile(path)
    table = f.read()
    print(json.dumps({
        "columns": [[field.name, str(field.type)] for field in table.schema],
        "row_groups": f.metadata.num_row_groups,
        "rows": [[plain(v) for v in row.values()] for row in table.to_pylist()],
    }, ensure_ascii=False))


if __name__ == "__main__":
    main(sys.argv[1])
