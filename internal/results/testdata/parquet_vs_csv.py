"""Reads a tlab run directory's Parquet files with pyarrow, as a user
would, and checks every value against the CSV beside it. Prints one line
per mismatch and a summary; exits 1 on any mismatch."""
import csv
import sys

import pyarrow.parquet as pq

def same(value, text):
    if value is None:
        return text in ("", "NA")
    if isinstance(value, bool):
        return text == ("true" if value else "false")
    if isinstance(value, (int, float)):
        try:
            return abs(float(text) - value) <= 1e-9 * max(1.0, abs(value))
        except ValueError:
            return False
    return value == text

def check(parquet_path, csv_path):
    table = pq.read_table(parquet_path)
    meta = table.schema.metadata or {}
    bad = 0
    if b"tlab.format" not in meta:
        print(f"{parquet_path}: no tlab.format metadata")
        bad += 1
    with open(csv_path, newline="") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    if table.column_names != header:
        print(f"{parquet_path}: columns {table.column_names}, CSV {header}")
        return bad + 1
    if table.num_rows != len(body):
        print(f"{parquet_path}: {table.num_rows} rows, CSV {len(body)}")
        return bad + 1
    cols = table.to_pydict()
    for i, row in enumerate(body):
        for name, text in zip(header, row):
            if not same(cols[name][i], text):
                print(f"{parquet_path}: row {i + 1} {name}: {cols[name][i]!r} against CSV {text!r}")
                bad += 1
    types = ",".join(f"{n}:{t}" for n, t in zip(table.column_names, table.schema.types))
    print(f"{parquet_path}: {table.num_rows} rows; {types}; scenario metadata: {b'tlab.scenario' in meta}")
    return bad

bad = sum(check(p, c) for p, c in zip(sys.argv[1::2], sys.argv[2::2]))
print(f"mismatches: {bad}")
sys.exit(1 if bad else 0)
