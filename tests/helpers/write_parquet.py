"""Writes a parquet file the way verl's examples/data_preprocess scripts do: a list of row dicts -> a pyarrow
table (column types inferred from the rows, as datasets' to_parquet does) -> parquet, snappy-compressed.

Usage: write_parquet.py <out.parquet> [compression], the rows as a JSON list on stdin (compression: snappy by
default, as pyarrow's and so verl's; none, zstd, gzip … for files written otherwise). Prints the table's schema.
"""
import json
import sys

import pyarrow as pa
import pyarrow.parquet as pq


def main() -> None:
    rows = json.load(sys.stdin)
    table = pa.Table.from_pylist(rows)
    pq.write_table(table, sys.argv[1], compression=sys.argv[2] if len(sys.argv) > 2 else "snappy")
    print(table.schema)


if __name__ == "__main__":
    main()
