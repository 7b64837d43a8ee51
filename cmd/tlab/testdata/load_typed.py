"""Loads a tlab run directory in pandas, polars and DuckDB and checks the
column types each reader gives (TestRunDirectoryLoadsTyped)."""
import json
import math
import sys

import duckdb
import pandas as pd
import polars as pl

d = sys.argv[1]
failures = []


def check(what, ok, detail=""):
    print(("ok   " if ok else "FAIL ") + what + (": " + str(detail) if detail and not ok else ""))
    if not ok:
        failures.append(what)


def numeric_text(values):
    """The values of a text column that read as numbers (inf and nan too)."""
    out = []
    for v in values:
        if v is None or isinstance(v, bool) or (isinstance(v, float) and math.isnan(v)) or v == "":
            continue
        try:
            float(v)
        except (TypeError, ValueError):
            continue
        if v not in ("true", "false", "True", "False"):
            out.append(v)
    return out


def duck_types(sql):
    return {r[0]: r[1] for r in duckdb.sql("DESCRIBE " + sql).fetchall()}


# CSV and JSON: no column is text because of a value that is a number.
for name, duck_src, pd_read, pl_read in [
    ("summary.csv", f"SELECT * FROM read_csv('{d}/summary.csv')", lambda p: pd.read_csv(p), lambda p: pl.read_csv(p, infer_schema_length=None)),
    ("records.csv", f"SELECT * FROM read_csv('{d}/records.csv')", lambda p: pd.read_csv(p), lambda p: pl.read_csv(p, infer_schema_length=None)),
    ("summary.json", f"SELECT * FROM read_json('{d}/summary.json')", lambda p: pd.read_json(p), lambda p: pl.read_json(p)),
]:
    path = f"{d}/{name}"
    types = duck_types(duck_src)
    rel = duckdb.sql(duck_src)
    for col, typ in types.items():
        if typ == "VARCHAR":
            vals = [r[0] for r in duckdb.sql(f'SELECT "{col}"::VARCHAR FROM ({duck_src})').fetchall()]
            bad = numeric_text(vals)
            check(f"duckdb {name} {col} is text holding no number", not bad, bad[:3])
    df = pd_read(path)
    for col in df.columns:
        if df[col].dtype == object or str(df[col].dtype) in ("str", "string"):
            bad = numeric_text(df[col].tolist())
            check(f"pandas {name} {col} is text holding no number", not bad, bad[:3])
    pf = pl_read(path)
    for col, typ in pf.schema.items():
        if typ == pl.String:
            bad = numeric_text(pf[col].to_list())
            check(f"polars {name} {col} is text holding no number", not bad, bad[:3])
    # Columns every reader must type as numbers, booleans or integers.
    want = {
        "summary.csv": {"requests": "int", "delay_p99_ms": "float", "rep": "int", "seed": "int"},
        "summary.json": {"requests": "int", "delay_p99_ms": "float", "rep": "int", "seed": "int"},
        "records.csv": {"seq": "int", "attempt": "int", "delay_ms": "float", "warmup": "bool", "in_summary": "bool", "sent_unix_ns": "int"},
    }[name]
    for col, kind in want.items():
        dt, pt, pdt = types.get(col, "missing"), str(pf.schema.get(col, "missing")), str(df[col].dtype) if col in df else "missing"
        ok = {
            "int": dt in ("BIGINT", "UBIGINT", "HUGEINT", "INTEGER") and pt in ("Int64", "UInt64", "Int128") and pdt in ("int64", "uint64"),
            "float": dt == "DOUBLE" and pt == "Float64" and pdt == "float64",
            "bool": dt == "BOOLEAN" and pt == "Boolean" and pdt == "bool",
        }[kind]
        check(f"{name} {col} is {kind} in duckdb ({dt}), polars ({pt}), pandas ({pdt})", ok)

# Parquet: typed by tlab, whatever the values.
for name, want in [
    ("summary.parquet", {"requests": ("BIGINT", "Int64"), "errors": ("BIGINT", "Int64"), "attempt": ("BIGINT", "Int64"),
                         "delay_p99_ms": ("DOUBLE", "Float64"), "delay_p95_ci_high_ms": ("DOUBLE", "Float64"),
                         "rep": ("BIGINT", "Int64"), "seed": ("UBIGINT", "UInt64"), "tcp_ecn": ("BOOLEAN", "Boolean"),
                         "protocol": ("VARCHAR", "String")}),
    ("records.parquet", {"seq": ("BIGINT", "Int64"), "attempt": ("BIGINT", "Int64"), "delay_ms": ("DOUBLE", "Float64"),
                         "warmup": ("BOOLEAN", "Boolean"), "in_summary": ("BOOLEAN", "Boolean"), "seed": ("UBIGINT", "UInt64"),
                         "sent_unix_ns": ("TIMESTAMPTZ_NS", "Datetime(time_unit='ns', time_zone='UTC')")}),
]:
    path = f"{d}/{name}"
    types = duck_types(f"SELECT * FROM '{path}'")
    pschema = pl.read_parquet(path).schema
    pdf = pd.read_parquet(path)
    for col, (dt, pt) in want.items():
        check(f"{name} {col}: duckdb {types.get(col)}, polars {pschema.get(col)}", types.get(col) == dt and str(pschema.get(col)) == pt)
    for col in pdf.columns:
        if str(pdf[col].dtype) in ("object", "str", "string"):
            bad = numeric_text(pdf[col].tolist())
            check(f"pandas {name} {col} is text holding no number", not bad, bad[:3])

# The summary's p99 from the rows marked in_summary (type 7, DuckDB's
# quantile_cont), a failed row counting as beyond any bound: equal to the
# 0.1 us records.csv keeps of each delay (four decimals of a ms).
summary = {r["cell"]: r for r in json.load(open(f"{d}/summary.json"))}
for cell, p99 in duckdb.sql(
        f"SELECT cell, quantile_cont(coalesce(delay_ms, 'inf'::DOUBLE), 0.99) FROM '{d}/records.parquet' WHERE in_summary GROUP BY cell").fetchall():
    want = summary[cell]["delay_p99_ms"]
    check(f"{cell}: p99 over in_summary rows {p99} is the summary's {want}", p99 == want or abs(p99 - want) <= 1e-4)

# Absolute times: every record was sent between the run's start and end
# as the manifest has them (the wall clock's, as a capture's).
m = json.load(open(f"{d}/manifest.json"))
lo, hi = pd.Timestamp(m["started"]), pd.Timestamp(m["finished"])
sent = pd.read_parquet(f"{d}/records.parquet")["sent_unix_ns"]
check(f"records sent between {lo} and {hi}: {sent.min()} to {sent.max()}", sent.notna().all() and lo <= sent.min() and sent.max() <= hi)

print(f"{len(failures)} failed")
sys.exit(1 if failures else 0)
