#!/usr/bin/env python
"""Benchmark: what a merge-on-read snapshot read costs before any merge work, on a given table.

Usage:
    python bench/read_floor.py TABLE_DIR [--column value] [--repeats 5]

``TABLE_DIR`` is a hudiql merge-on-read table with log files, for example the 20M-row table
``bench/upsert_mor.py --workdir DIR`` leaves before compaction. Times (medians of ``--repeats``)
``SELECT count(*), sum(column)`` computed three ways over the same
base files (the table's latest slices), plus hudiql's own snapshot query, round robin after one
warm-up run of each:

* ``spark``: Spark's parquet reader on the base files (what a compacted table's read costs);
* ``python pass-through``: the same column read by pyarrow in Python tasks (``mapInArrow``) and
  handed to Spark, with no merge at all: the floor of any merge done in Python tasks;
* ``spark + row_index``: Spark's reader with each row's position (``_metadata.row_index``), the
  floor of dropping superseded rows by position inside Spark;
* ``hudiql snapshot``: the real merged read (base files, log decode, fold).

The ratios to ``spark`` show how much of the issue's "merged read at most 2x the compacted read"
goal each way spends before merging anything. hudiql is the installed package (not a snapshot); the
Spark session and timing come from ``bench/common.py``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile

from pyspark.sql import functions as F

import hudiql
from common import spark_session, timed
from hudiql.table.table import HudiTable


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("table_dir")
    p.add_argument("--column", default="value")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--shuffle-partitions", type=int, default=8)
    args = p.parse_args(argv)
    spark = spark_session("hudiql-bench-read-floor", args.shuffle_partitions)
    table = HudiTable.load(os.path.abspath(args.table_dir))
    slices = table.file_system_view().read_slices()
    files = [table.storage.uri(s.base_path) for s in slices if s.base_file]
    column = args.column
    base = spark.read.parquet(*files)

    def python_pass_through(batches):
        import pyarrow.parquet as pq

        for batch in batches:
            for path in batch.column(0).to_pylist():
                yield from pq.read_table(path.removeprefix("file://"), columns=[column]).to_batches()

    paths = spark.createDataFrame([(f,) for f in files], "path string").repartition(
        min(len(files), spark.sparkContext.defaultParallelism * 4))
    dtype = base.schema[column].dataType.simpleString()
    session = hudiql.connect(warehouse=tempfile.mkdtemp(prefix="read_floor_"), spark=spark)
    session.sql(f"CREATE TABLE IF NOT EXISTS read_floor USING hudi LOCATION '{os.path.abspath(args.table_dir)}'")
    ways = {
        "spark": lambda: base.agg(F.count("*"), F.sum(column)).first(),
        "python pass-through": lambda: paths.mapInArrow(python_pass_through, f"{column} {dtype}")
        .agg(F.count("*"), F.sum(column)).first(),
        "spark + row_index": lambda: base.agg(F.count("*"), F.sum(column), F.max("_metadata.row_index")).first(),
        "hudiql snapshot": lambda: session.sql(f"SELECT count(*), sum({column}) FROM read_floor").first(),
    }
    print(f"{len(files)} base files, {sum(1 for s in slices if s.log_files)} slices with logs; median of {args.repeats}")
    for fn in ways.values():  # warm-up: JVM code paths, Python workers
        fn()
    runs: dict[str, list[float]] = {name: [] for name in ways}
    rows = {}
    for _ in range(args.repeats):  # round robin, so that the machine's noise spreads over every way
        for name, fn in ways.items():
            seconds, row = timed(fn)
            runs[name].append(seconds)
            rows[name] = row[0]
    reference = statistics.median(runs["spark"])
    for name, seconds in runs.items():
        median = statistics.median(seconds)
        print(f"  {name:<22} {median:6.2f} s  {median / reference:5.2f}x   rows {rows[name]}"
              f"   ({' '.join(f'{x:.2f}' for x in seconds)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
