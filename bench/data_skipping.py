#!/usr/bin/env python
"""Benchmark: a selective query on a non-partition column, with and without column stats.

Usage:
    python bench/data_skipping.py [--rows 5000000] [--batches 20] [--partitions 4] [--repeats 3]
                                  [--kind cow|mor] [--workdir DIR] [--hudiql-ref HEAD] [--json FILE]

What it measures, in one process with one local[2] SparkSession: the benchmark's rows (``id``
0..N-1 over ``--partitions`` partitions), loaded in ``--batches`` inserts whose ``id`` ranges do
not overlap (each insert writes new files: ``hoodie.parquet.small.file.limit=0``), untimed, into
two version 9 tables of ``--kind``, one keeping the metadata table's column stats
(``hoodie.metadata.index.column.stats.enable=true``) and one not, and into a plain parquet table
(Spark SQL, the same batches appended). On merge-on-read an untimed ``UPDATE`` of one row in a
thousand then gives every file group a log, so that a read merges every slice it does not skip.
Then one warm-up and ``--repeats`` timed runs (medians) of

* ``SELECT count(*), sum(value) FROM t WHERE id BETWEEN a AND b`` (one batch's ids: one file per
  partition of the many),
* ``SELECT count(*) FROM t WHERE name = 'name_<k>'`` (one row),

on each table. It prints each median and the ratios to plain Spark SQL (whose parquet reader skips
row groups by their footers); the answers must agree. hudiql is imported from a snapshot of its
package taken at start (``common.py``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from typing import Any

from common import base_rows, fmt, hudi_table_ddl, ratio, save_json, snapshot_hudiql, spark_session, timed

hudiql: Any = None


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=5_000_000)
    p.add_argument("--batches", type=int, default=20)
    p.add_argument("--partitions", type=int, default=4)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--kind", choices=["cow", "mor"], default="cow")
    p.add_argument("--workdir", default=None)
    p.add_argument("--hudiql-ref", default=None)
    p.add_argument("--json", default=None)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    global hudiql
    args = parse_args(argv)
    workdir = args.workdir or tempfile.mkdtemp(prefix="hudiql-data-skipping-")
    hudiql, _ = snapshot_hudiql(workdir, args.hudiql_ref)
    spark = spark_session("data-skipping", 2)
    session = hudiql.connect(warehouse=f"{workdir}/warehouse", spark=spark)
    common = [f"type='{args.kind}'", "'hoodie.compact.inline'='false'", "'hoodie.write.table.version'='9'", "'hoodie.parquet.small.file.limit'='0'"]
    session.sql(hudi_table_ddl("ranged", [*common, "'hoodie.metadata.index.column.stats.enable'='true'"]))
    session.sql(hudi_table_ddl("unranged", common))
    session.sql("SET hoodie.spark.sql.insert.into.operation=bulk_insert")
    rows = base_rows(spark, args.rows, args.partitions)
    step = args.rows // args.batches
    plain = f"{workdir}/plain"
    for batch in range(args.batches):
        part = rows.where(f"id >= {batch * step} AND id < {(batch + 1) * step}")
        part.createOrReplaceTempView("batch_rows")
        for name in ("ranged", "unranged"):
            session.sql(f"INSERT INTO {name} SELECT id, name, value, ts, part FROM batch_rows").collect()
        part.write.mode("append").partitionBy("part").parquet(plain)
    if args.kind == "mor":
        session.sql("SET hoodie.spark.sql.insert.into.operation=upsert")
        for name in ("ranged", "unranged"):
            session.sql(f"UPDATE {name} SET ts = 2 WHERE id % 1000 = 0").collect()
        spark.read.parquet(plain).selectExpr("id", "name", "value", "IF(id % 1000 = 0, 2L, ts) AS ts", "part") \
            .write.mode("overwrite").partitionBy("part").parquet(plain + "_updated")
        plain += "_updated"
    spark.read.parquet(plain).createOrReplaceTempView("plain")
    print(f"loaded {args.rows:,} rows in {args.batches} inserts", flush=True)
    low = (args.batches // 2) * step
    queries = {
        "id range": f"SELECT count(*), sum(value) FROM {{t}} WHERE id BETWEEN {low} AND {low + step - 1}",
        "one name": f"SELECT count(*) FROM {{t}} WHERE name = 'name_{low + 7}'",
    }
    results: dict[str, Any] = {}
    for label, text in queries.items():
        medians, answers = {}, {}
        for table, run in (("plain", spark.sql), ("ranged", session.sql), ("unranged", session.sql)):
            times = []
            for i in range(args.repeats + 1):
                elapsed, found = timed(lambda: [tuple(r) for r in run(text.format(t=table)).collect()])
                if i:  # the first run warms up
                    times.append(elapsed)
            medians[table], answers[table] = statistics.median(times), found
        if len({str(a) for a in answers.values()}) != 1:
            raise AssertionError(f"{label}: the tables disagree: {answers}")
        print(f"{label:9s} Spark SQL {fmt(medians['plain'])}  column stats {fmt(medians['ranged'])} "
              f"({ratio(medians['ranged'], medians['plain'])})  without {fmt(medians['unranged'])} "
              f"({ratio(medians['unranged'], medians['plain'])})", flush=True)
        results[label] = medians
    save_json(args.json, args, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
