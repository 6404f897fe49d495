#!/usr/bin/env python
"""Benchmark: statements by key on a small and a large hudiql table, with and without the record index.

Usage:
    python bench/key_scaling.py [--small 100000] [--large 10000000] [--partitions 10] [--repeats 3]
                                [--kinds cow,mor] [--workdir DIR] [--hudiql-ref HEAD] [--json FILE]

What it measures, in one process with one local[2] SparkSession: for each table kind (copy-on-
write, merge-on-read) and each size (``--small`` and ``--large`` rows, ``id`` 0..N-1 over
``--partitions`` partitions, loaded untimed with ``bulk_insert``, table version 9 with the metadata
table), two tables, one with the record index (``hoodie.metadata.record.index.enable=true``) and
one without; on each, one warm-up then ``--repeats`` timed runs (medians) of

* ``UPDATE t SET name = 'x' WHERE id = k``,
* ``DELETE FROM t WHERE id = k``,
* ``SELECT * FROM t WHERE id = k``,

with fresh ids k spread over the partitions. It prints each median and the ratio large / small per
statement: the issue's goal is at most 1.5x with the record index (a statement by key costs what
its key costs, not what the table holds). Every statement is checked (the row changed, is gone, or
is found). hudiql is imported from a snapshot of its package taken at start (``common.py``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from typing import Any

from common import base_rows, fmt, hudi_table_ddl, ratio, save_json, snapshot_hudiql, spark_session, timed

hudiql: Any = None
STATEMENTS = ("update", "delete", "lookup")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--small", type=int, default=100_000)
    p.add_argument("--large", type=int, default=10_000_000)
    p.add_argument("--partitions", type=int, default=10)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--kinds", default="cow,mor")
    p.add_argument("--workdir", default=None)
    p.add_argument("--hudiql-ref", default=None)
    p.add_argument("--json", default=None)
    return p.parse_args(argv)


def load(session, spark, name: str, kind: str, rows: int, partitions: int, record_index: bool) -> None:
    props = [f"type='{kind}'", "'hoodie.write.table.version'='9'"]
    if record_index:
        props.append("'hoodie.metadata.record.index.enable'='true'")
    session.sql("SET hoodie.spark.sql.insert.into.operation=bulk_insert")
    session.sql(hudi_table_ddl(name, props))
    base_rows(spark, rows, partitions).createOrReplaceTempView("base_rows")
    session.sql(f"INSERT INTO {name} SELECT id, name, value, ts, part FROM base_rows").collect()
    session.sql("SET hoodie.spark.sql.insert.into.operation=upsert")


def statement_text(name: str, statement: str, key: int) -> str:
    return {
        "update": f"UPDATE {name} SET name = 'x' WHERE id = {key}",
        "delete": f"DELETE FROM {name} WHERE id = {key}",
        "lookup": f"SELECT id, name FROM {name} WHERE id = {key}",
    }[statement]


def check(session, name: str, statement: str, key: int, result: list) -> None:
    """The statement did what it says (untimed)."""
    if statement == "lookup":
        if [tuple(r)[0] for r in result] != [key]:
            raise AssertionError(f"{name}: lookup of id {key} returned {result}")
        return
    found = [tuple(r) for r in session.sql(f"SELECT name FROM {name} WHERE id = {key}").collect()]
    if found != {"update": [("x",)], "delete": []}[statement]:
        raise AssertionError(f"{name}: {statement} of id {key} left {found} (result {result})")


def main(argv: list[str] | None = None) -> int:
    global hudiql
    args = parse_args(argv)
    workdir = args.workdir or tempfile.mkdtemp(prefix="hudiql-key-scaling-")
    hudiql, _ = snapshot_hudiql(workdir, args.hudiql_ref)
    spark = spark_session("key-scaling", 2)
    session = hudiql.connect(warehouse=f"{workdir}/warehouse", spark=spark)
    results: dict[str, Any] = {}
    for kind in args.kinds.split(","):
        for record_index in (True, False):
            label = f"{kind} {'record index' if record_index else 'no index'}"
            medians = {}
            for size in ("small", "large"):
                rows = getattr(args, size)
                name = f"t_{kind}_{size}_{'ri' if record_index else 'plain'}"
                seconds, _ = timed(lambda: load(session, spark, name, kind, rows, args.partitions, record_index))
                print(f"{label}: loaded {rows:,} rows in {fmt(seconds)}", flush=True)
                for statement in STATEMENTS:
                    times = []
                    for i in range(args.repeats + 1):
                        key = (rows // 7) * (i + 1) + STATEMENTS.index(statement)
                        text = statement_text(name, statement, key)
                        elapsed, result = timed(lambda: session.sql(text).collect())
                        check(session, name, statement, key, result)
                        if i:  # the first run warms up
                            times.append(elapsed)
                    medians[(size, statement)] = statistics.median(times)
            for statement in STATEMENTS:
                small, large = medians[("small", statement)], medians[("large", statement)]
                print(f"{label:24s} {statement:7s} small {fmt(small)}  large {fmt(large)}  "
                      f"large/small {ratio(large, small)}", flush=True)
                results[f"{label} {statement}"] = {"small": small, "large": large, "ratio": large / small}
    save_json(args.json, args, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
