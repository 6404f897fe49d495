#!/usr/bin/env python
"""Benchmark: a table written for a long time stays the size of its data, with a short timeline
and statements that do not slow down (cleaning and archiving, issue 14).

Usage:
    python bench/longevity.py [--rows 1000000] [--commits 300] [--every 25] [--partitions 10]
                              [--tables cow,mor] [--workdir DIR] [--hudiql-ref REF] [--json FILE]
    python bench/longevity.py --report FILE      # the goals of a run saved with --json

What it does, per table type, on one local[2] SparkSession:

* loads ``--rows`` rows (``base_rows`` of ``bench/common.py``: ids 0..N-1 in ``--partitions``
  partitions) into a hudiql table with ``bulk_insert`` (untimed), with every table service at its
  default: cleaning after each commit (KEEP_LATEST_COMMITS, 10 commits retained), archiving
  (keep 20 to 30 instants), and for merge-on-read inline compaction every 5 delta commits;
* runs ``--commits`` upserts, each ``INSERT INTO t SELECT ... FROM batch`` of 1% of the rows (all
  updates of existing ids, spread over every partition, different ids from one statement to the
  next), so the live data keeps its size. The batch is cached before the timer starts; a
  statement's time is the whole ``session.sql`` call, its post-commit services included;
* every ``--every`` commits prints: the statement's time and the median of the last ``--every``,
  live data bytes (the latest file slice of every file group: what a snapshot reads), bytes of
  data files on storage, the bytes the retention policy must keep (for each of the last
  ``hoodie.cleaner.commits.retained`` commits, the slice of every file group a query as of that
  commit reads, plus the latest: computed from the files, independently of the cleaner), and the
  files in ``.hoodie/`` (instant files of the active timeline, and archived log files).

Goals (issue 14), printed at the end with what was measured:
* data bytes on storage at most 1.5x what the retention policy must keep, at every checkpoint;
* the instant files in ``.hoodie/`` flat once archiving started: at every later checkpoint at most
  what archiving bounds the active timeline to (keep.max.commits commits and as many cleans, three
  files each, and the compactions among the commits);
* the median statement time of the last ``--every`` statements within 1.2x of the first ``--every``.

Verification (untimed): after the last statement the row count equals ``--rows``, sampled ids
carry the value of the last statement that updated them, and the official Hudi reader (PyPI
``hudi``) counts the same rows. A default run takes about 45 minutes on 2 cores; ``--quick`` is a
smoke run (20,000 rows, 60 commits, every 10).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import platform
import statistics
import sys
import tempfile
import time

from common import base_rows, du, hudi_table_ddl, part_of, snapshot_hudiql, spark_session, timed
from pyspark.sql import functions as F

# The defaults the tables run with.
RETAINED_DEFAULT = 10
KEEP_MAX_DEFAULT = 30
#: What archiving bounds the active timeline to: keep.max commits and keep.max cleans, three files each
#: (requested, inflight, completed), plus the compaction plans of merge-on-read between them.
TIMELINE_FILES_BOUND = 3 * 2 * KEEP_MAX_DEFAULT + 3 * KEEP_MAX_DEFAULT // 5


def stride(rows: int, size: int, partitions: int) -> int:
    """The step between the ids of one statement: coprime with the row count (no id twice) and
    with the partition count (every partition hit)."""
    step = max(1, rows // size) + 1
    while math.gcd(step, rows) != 1 or math.gcd(step, partitions) != 1:
        step += 1
    return step


def updated_id(k: int, statement: int, rows: int, step: int) -> int:
    """The k-th id statement ``statement`` updates (Python; ``batch`` computes the same in Spark)."""
    return (k * step + statement) % rows


def batch(spark, rows: int, partitions: int, statement: int, size: int):
    """1% of the ids, updated: ``value`` = the statement's number; the ids shift by one per statement."""
    step = stride(rows, size, partitions)
    ids = spark.range(size).select(((F.col("id") * F.lit(step) + F.lit(statement)) % F.lit(rows)).cast("bigint").alias("id"))
    return ids.select(
        "id",
        F.concat(F.lit("name_"), F.col("id").cast("string")).alias("name"),
        F.lit(float(statement)).alias("value"),
        F.lit(statement + 1).cast("bigint").alias("ts"),
        part_of(F.col("id"), partitions).alias("part"),
    )


def data_files(table_dir: str, layout) -> list[tuple[str, str, str, int]]:
    """(partition, file id, slice instant, bytes) of every data file of the table."""
    out = []
    for root, _, files in os.walk(table_dir):
        rel = os.path.relpath(root, table_dir)
        if rel.split(os.sep)[0] == ".hoodie":
            continue
        for name in files:
            parsed = layout.parse_data_file_name(name)
            if parsed is not None:
                out.append((rel, parsed.file_id, parsed.instant_time, os.path.getsize(os.path.join(root, name))))
    return out


def measure(hudiql, table_dir: str, retained: int) -> dict:
    """Live bytes, data bytes on storage, bytes the policy must keep, and ``.hoodie/`` files."""
    from hudiql import layout
    from hudiql.table.table import HudiTable

    table = HudiTable.load(table_dir)
    live = sum(s.base_file_size + s.log_size for s in table.file_system_view().read_slices())
    files = data_files(table_dir, layout)
    slices: dict[tuple[str, str], dict[str, int]] = {}
    for partition, file_id, instant, size in files:
        group = slices.setdefault((partition, file_id), {})
        group[instant] = group.get(instant, 0) + size
    commits = [i.timestamp for i in table.timeline.completed()]
    views = commits[-retained:]
    must_keep = 0
    for group in slices.values():
        needed = {max(group)}
        for commit in views:
            earlier = [t for t in group if t <= commit]
            if earlier:
                needed.add(max(earlier))
        must_keep += sum(group[t] for t in needed)
    hoodie = os.path.join(table_dir, ".hoodie")
    active = [n for n in os.listdir(hoodie) if n[:1].isdigit()]
    archived = os.listdir(os.path.join(hoodie, "archived")) if os.path.isdir(os.path.join(hoodie, "archived")) else []
    return {
        "live_bytes": live, "data_bytes": sum(f[3] for f in files), "must_keep_bytes": must_keep,
        "storage_bytes": du(table_dir), "timeline_files": len(active), "archived_files": len(archived),
        "instants": len({n.split(".", 1)[0] for n in active}),
    }


def run_table(hudiql, spark, args, kind: str, work: str) -> dict:
    wh = os.path.join(work, kind)
    session = hudiql.connect(warehouse=wh, spark=spark)
    size = max(1, args.rows // 100)
    base = base_rows(spark, args.rows, args.partitions)
    base.createOrReplaceTempView("base")
    session.sql(hudi_table_ddl("t", ["type='mor'"] if kind == "mor" else []))
    session.sql("SET hoodie.spark.sql.insert.into.operation = bulk_insert")
    load, _ = timed(lambda: session.sql("INSERT INTO t SELECT id, name, value, ts, part FROM base"))
    session.sql("SET hoodie.spark.sql.insert.into.operation = upsert")
    table_dir = os.path.join(wh, "t")
    print(f"\n{kind.upper()}: {args.rows:,} rows loaded in {load:.1f} s; {args.commits} upserts of {size:,} rows")
    print(f"{'commit':>6} {'stmt':>7} {'median':>7} {'live MB':>8} {'data MB':>8} {'keep MB':>8} {'ratio':>6} "
          f"{'.hoodie':>7} {'archived':>8}")
    times: list[float] = []
    checkpoints = []
    for n in range(1, args.commits + 1):
        rows = batch(spark, args.rows, args.partitions, n, size).cache()
        rows.count()
        rows.createOrReplaceTempView("batch")
        seconds, _ = timed(lambda: session.sql("INSERT INTO t SELECT id, name, value, ts, part FROM batch"))
        rows.unpersist()
        times.append(seconds)
        if n % args.every == 0 or n == args.commits:
            m = measure(hudiql, table_dir, RETAINED_DEFAULT)
            window = times[-args.every:]
            m.update(commit=n, seconds=seconds, median_seconds=statistics.median(window))
            checkpoints.append(m)
            print(f"{n:>6} {seconds:>6.2f}s {m['median_seconds']:>6.2f}s {m['live_bytes'] / 1e6:>8.1f} "
                  f"{m['data_bytes'] / 1e6:>8.1f} {m['must_keep_bytes'] / 1e6:>8.1f} "
                  f"{m['data_bytes'] / m['must_keep_bytes']:>5.2f}x {m['timeline_files']:>7} {m['archived_files']:>8}",
                  flush=True)
    verify(hudiql, session, args, table_dir, kind)
    return {"load_seconds": load, "statement_seconds": times, "checkpoints": checkpoints}


def verify(hudiql, session, args, table_dir: str, kind: str) -> None:
    count = session.sql("SELECT count(*) FROM t").first()[0]
    assert count == args.rows, f"{kind}: {count} rows, expected {args.rows}"
    size = max(1, args.rows // 100)
    step = stride(args.rows, size, args.partitions)
    last = args.commits
    for k in (0, size // 2, size - 1):
        rid = updated_id(k, last, args.rows, step)
        value = session.sql(f"SELECT value FROM t WHERE id = {rid}").first()[0]
        assert value == float(last), f"{kind}: id {rid} has value {value}, expected {last}"
    from hudi import HudiTableBuilder

    batches = HudiTableBuilder.from_base_uri(table_dir).build().read()
    official = sum(b.num_rows for b in batches)
    assert official == args.rows, f"{kind}: the official reader counts {official} rows, expected {args.rows}"
    print(f"verified: {count:,} rows (official reader: {official:,}), sampled values of the last statement")


def goals(results: dict, every: int) -> list[str]:
    lines = []
    for kind, r in results["tables"].items():
        cps = r["checkpoints"]
        worst = max(c["data_bytes"] / c["must_keep_bytes"] for c in cps)
        archiving = [c for c in cps if c["archived_files"] > 0]
        files = [c["timeline_files"] for c in archiving]
        flat = bool(files) and max(files) <= TIMELINE_FILES_BOUND
        times = r["statement_seconds"]
        first, last = statistics.median(times[:every]), statistics.median(times[-every:])
        lines += [
            f"{kind}: storage / what retention must keep: at most {worst:.2f}x (goal <= 1.5x): "
            f"{'met' if worst <= 1.5 else 'MISSED'}",
            f"{kind}: .hoodie/ instant files once archiving started: {min(files, default=0)} to {max(files, default=0)} "
            f"(goal: flat, at most {TIMELINE_FILES_BOUND}): {'met' if flat else 'MISSED'}",
            f"{kind}: median statement, last {every} vs first {every}: {last:.2f}s / {first:.2f}s = {last / first:.2f}x "
            f"(goal <= 1.2x): {'met' if last <= 1.2 * first else 'MISSED'}",
        ]
    return lines


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--commits", type=int, default=300)
    p.add_argument("--every", type=int, default=25)
    p.add_argument("--partitions", type=int, default=10)
    p.add_argument("--tables", default="cow,mor")
    p.add_argument("--workdir")
    p.add_argument("--hudiql-ref", help="benchmark this git revision of the package instead of the working tree")
    p.add_argument("--json")
    p.add_argument("--quick", action="store_true", help="20,000 rows, 60 commits, every 10")
    p.add_argument("--report", metavar="JSON", help="print the goals of a run saved with --json, and stop")
    args = p.parse_args(argv)
    if args.quick:
        args.rows, args.commits, args.every = 20_000, 60, 10
    return args


def report(path: str) -> None:
    """Print the goals of a run saved with ``--json``."""
    with open(path) as f:
        results = json.load(f)
    for line in goals(results, results["args"]["every"]):
        print("  " + line)


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.report:
        report(args.report)
        return 0
    work = args.workdir or tempfile.mkdtemp(prefix="hudiql-longevity-")
    hudiql, described = snapshot_hudiql(work, args.hudiql_ref)
    spark = spark_session("hudiql-bench-longevity", 4)
    results = {"args": vars(args), "hudiql": described, "machine": platform.platform(),
               "started": dt.datetime.now(dt.timezone.utc).isoformat(), "tables": {}}
    print(f"hudiql longevity benchmark ({described}): {args.rows:,} rows, {args.commits} commits, "
          f"tables {args.tables}, work dir {work}")
    started = time.time()
    for kind in args.tables.split(","):
        results["tables"][kind] = run_table(hudiql, spark, args, kind, work)
    print(f"\ngoals ({(time.time() - started) / 60:.0f} min):")
    for line in goals(results, args.every):
        print("  " + line)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
