#!/usr/bin/env python
"""Benchmark: hudiql ``MERGE INTO`` on a copy-on-write table vs delta-rs ``DeltaTable.merge``.

Usage:
    python bench/merge_cow.py [--rows 2000000] [--partitions 20] [--repeats 1] [--workdir DIR]
                              [--hudiql-ref REF] [--json FILE]

What it measures (one local[2] SparkSession; the same generated data for both systems, in the same run):

* base table: ``--rows`` rows in ``--partitions`` partitions (the data of every benchmark,
  ``base_rows`` of ``bench/common.py``: ``id`` 0..N-1, ``part = p%03d(id % partitions)``,
  ``ts = 1``), written once with hudiql ``bulk_insert`` into a COW table (``PARTITIONED BY (part)
  TBLPROPERTIES (primaryKey='id', preCombineField='ts')``) and once as a partitioned Delta table
  (delta-rs, from Arrow). Not timed as part of the ratios.
* a MERGE of a 1% batch: half updates of existing ids, half new ids, all with ``ts = 2``,
  ``name = upd_<id>``, ``value = -id``:
  - phase A: the batch is spread over every partition;
  - phase B: the batch is confined to partitions ``p000`` and ``p001``;
  - phase B-pruned: the same batch, hudiql's ON adds ``AND t.part IN ('p000','p001')`` so that
    hudiql can prune the target's partitions (delta-rs is not re-run: its phase B call is the
    comparison).
* hudiql: ``MERGE INTO bench t USING batch s ON t.id = s.id [AND t.part IN (...)]
  WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *``, ``batch`` being a cached Spark
  temp view on the same SparkSession (``hudiql.connect(warehouse=..., spark=spark)``).
* delta-rs: ``DeltaTable.merge(batch_arrow, predicate="t.id = s.id AND t.part = s.part",
  streamed_exec=False).when_matched_update_all().when_not_matched_insert_all().execute()``.

Every run of every system starts from a fresh copy of the base table (the copy is not timed). The
batch is generated, cached in Spark and converted to one Arrow table before any timer starts. An
untimed warm-up (one hudiql MERGE and one delta-rs merge on a tiny table) precedes the timed runs.
After each hudiql MERGE (untimed) the result row must report the expected numbers of updated /
inserted rows, and the table must hold the expected row count and distinct ids, sampled updated and
new ids must carry the batch's values and sampled untouched ids their old values. delta-rs gets
the row-count and sampled-value checks. With ``--repeats N`` the median and best are reported.

hudiql is imported from a snapshot of the package taken at start (working tree, or ``--hudiql-ref``),
so that edits to the package during a run cannot mix two versions. The shared helpers (data, Spark
session, snapshot, timing, the delta-rs merge) are in ``bench/common.py``; delta-rs is required here.
"""

from __future__ import annotations

import argparse
import datetime as dt
import glob
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
from typing import Any

import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from common import (
    ARROW_SCHEMA, COLUMNS, base_rows, copy_tree, delta_merge, deltalake, fmt, hudi_table_ddl, part_name, part_of,
    ratio, snapshot_hudiql, spark_session, timed,
)

hudiql: Any = None  # imported by main() from a snapshot of the package (see common.snapshot_hudiql)

MERGE_SQL = ("MERGE INTO bench t USING batch s ON t.id = s.id{extra} "
             "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")


# ---------------------------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------------------------
class Batch:
    """A MERGE batch of 1% of the table: ``n_upd`` existing ids, ``n_new`` new ids.

    ``spread`` partitions are touched: all of them (phase A) or p000 and p001 (phase B).
    """

    def __init__(self, rows: int, partitions: int, spread: int) -> None:
        size = max(2, rows // 100)
        self.n_upd = size // 2
        self.n_new = size - self.n_upd
        self.rows, self.partitions, self.spread = rows, partitions, spread
        # Updated ids: k * stride + (k mod spread); stride is a multiple of the partition count, so
        # id mod partitions = k mod spread, and every id stays below ``rows``.
        self.stride = (rows // self.n_upd) // partitions * partitions
        if self.stride < partitions:
            raise SystemExit(f"--rows {rows} is too small for {partitions} partitions")
        # New ids: above every existing id, k * partitions + (k mod spread) past a multiple of partitions.
        self.new_base = -(-rows // partitions) * partitions
        self.expected_rows = rows + self.n_new

    def updated_id(self, k: int) -> int:
        return k * self.stride + k % self.spread

    def new_id(self, k: int) -> int:
        return self.new_base + k * self.partitions + k % self.spread

    def dataframe(self, spark: SparkSession) -> DataFrame:
        k = F.col("id")
        upd = spark.range(self.n_upd).select((k * F.lit(self.stride) + k % F.lit(self.spread)).alias("id"))
        new = spark.range(self.n_new).select(
            (F.lit(self.new_base) + k * F.lit(self.partitions) + k % F.lit(self.spread)).alias("id"))
        return upd.unionByName(new).select(
            F.col("id").cast("bigint").alias("id"),
            F.concat(F.lit("upd_"), F.col("id").cast("string")).alias("name"),
            (-F.col("id").cast("double")).alias("value"),
            F.lit(2).cast("bigint").alias("ts"),
            part_of(F.col("id"), self.partitions).alias("part"),
        )

    def sample_updated(self) -> list[int]:
        ks = {0, 1, 2, 3, self.n_upd // 2, self.n_upd - 2, self.n_upd - 1}
        return [self.updated_id(k) for k in sorted(ks) if 0 <= k < self.n_upd]

    def sample_new(self) -> list[int]:
        return [self.new_id(k) for k in sorted({0, 1, self.n_new // 2, self.n_new - 1}) if 0 <= k < self.n_new]

    def sample_untouched(self) -> list[int]:
        """Existing ids not in the batch (one per partition in the touched set, plus one outside it)."""
        updated = {self.updated_id(k) for k in range(self.n_upd)}
        out = []
        for cand in (1, 2, 3, self.rows // 2 + 1, self.rows - 1, self.rows - 3):
            if 0 <= cand < self.rows and cand not in updated:
                out.append(cand)
        return out


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------
def commit_file_groups(table_dir: str) -> tuple[int, int] | None:
    """(file groups written, rows written) of the table's latest commit, if its metadata is readable."""
    commits = sorted(glob.glob(os.path.join(table_dir, ".hoodie", "**", "*.commit"), recursive=True),
                     key=os.path.basename)
    if not commits:
        return None
    try:
        doc = json.load(open(commits[-1]))
        stats = [s for ps in doc["partitionToWriteStats"].values() for s in ps]
        return len(stats), sum(int(s.get("numWrites", 0)) for s in stats)
    except Exception:  # noqa: BLE001  (reporting only)
        return None


# ---------------------------------------------------------------------------------------------
# the two systems
# ---------------------------------------------------------------------------------------------
def hudiql_load(spark, warehouse: str, view: str) -> None:
    session = hudiql.connect(warehouse=warehouse, spark=spark)
    session.sql("SET hoodie.spark.sql.insert.into.operation=bulk_insert")
    session.sql(hudi_table_ddl("bench"))
    session.sql(f"INSERT INTO bench SELECT {', '.join(COLUMNS)} FROM {view}")


def hudiql_merge(spark, warehouse: str, extra_on: str = "") -> dict:
    session = hudiql.connect(warehouse=warehouse, spark=spark)
    return session.sql(MERGE_SQL.format(extra=extra_on)).first().asDict()


def hudiql_verify(spark, warehouse: str, batch: Batch, result: dict, label: str) -> None:
    want = {"num_updated_rows": batch.n_upd, "num_inserted_rows": batch.n_new, "num_deleted_rows": 0,
            "num_affected_rows": batch.n_upd + batch.n_new}
    for k, v in want.items():
        if result.get(k) != v:
            raise AssertionError(f"hudiql {label}: MERGE result {k} = {result.get(k)}, expected {v} ({result})")
    session = hudiql.connect(warehouse=warehouse, spark=spark)
    row = session.sql("SELECT count(*) AS n, count(DISTINCT id) AS d FROM bench").first()
    if (row["n"], row["d"]) != (batch.expected_rows, batch.expected_rows):
        raise AssertionError(f"hudiql {label}: {row['n']} rows / {row['d']} distinct ids, expected {batch.expected_rows}")
    changed = batch.sample_updated() + batch.sample_new()
    same = batch.sample_untouched()
    ids = ", ".join(str(i) for i in changed + same)
    got = {r["id"]: (r["name"], r["value"], r["ts"], r["part"]) for r in
           session.sql(f"SELECT id, name, value, ts, part FROM bench WHERE id IN ({ids})").collect()}
    for i in changed:
        exp = (f"upd_{i}", -float(i), 2, part_name(i, batch.partitions))
        if got.get(i) != exp:
            raise AssertionError(f"hudiql {label}: id {i} holds {got.get(i)}, expected {exp}")
    for i in same:
        exp = (f"name_{i}", 1.5 * i, 1, part_name(i, batch.partitions))
        if got.get(i) != exp:
            raise AssertionError(f"hudiql {label}: untouched id {i} holds {got.get(i)}, expected {exp}")


def delta_verify(path: str, batch: Batch, label: str) -> None:
    ds = deltalake.DeltaTable(path).to_pyarrow_dataset()
    n = ds.count_rows()
    if n != batch.expected_rows:
        raise AssertionError(f"delta-rs {label}: {n} rows, expected {batch.expected_rows}")
    changed = batch.sample_updated() + batch.sample_new()
    same = batch.sample_untouched()
    t = ds.to_table(filter=pc.field("id").isin(changed + same), columns=["id", "value", "ts"])
    got = dict(zip(t.column("id").to_pylist(), zip(t.column("value").to_pylist(), t.column("ts").to_pylist())))
    for i in changed:
        if got.get(i) != (-float(i), 2):
            raise AssertionError(f"delta-rs {label}: id {i} holds {got.get(i)}")
    for i in same:
        if got.get(i) != (1.5 * i, 1):
            raise AssertionError(f"delta-rs {label}: untouched id {i} holds {got.get(i)}")


# ---------------------------------------------------------------------------------------------
# main
# ---------------------------------------------------------------------------------------------
def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=2_000_000)
    p.add_argument("--partitions", type=int, default=20)
    p.add_argument("--repeats", type=int, default=1, help="runs per system and phase, each on a fresh copy")
    p.add_argument("--workdir", default=None, help="default: a temp dir, deleted at the end (a given dir is kept)")
    p.add_argument("--hudiql-ref", default=None, help="benchmark hudiql as of this git ref (default: working tree)")
    p.add_argument("--json", default=None, help="also write the figures as JSON to this file")
    return p.parse_args(argv)


def main(argv=None) -> int:
    global hudiql
    args = parse_args(argv)
    if args.partitions < 2:
        raise SystemExit("--partitions must be at least 2")
    if deltalake is None:
        raise SystemExit("merge_cow.py compares with delta-rs: install it with pip install -e '.[bench]'")
    own_workdir = args.workdir is None
    args.workdir = os.path.abspath(args.workdir or tempfile.mkdtemp(prefix="hudiql-bench-merge-"))
    os.makedirs(args.workdir, exist_ok=True)
    hudiql, source = snapshot_hudiql(args.workdir, args.hudiql_ref)
    results: dict = {
        "rows": args.rows, "partitions": args.partitions, "repeats": args.repeats,
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cores": os.cpu_count(), "python": platform.python_version(), "hudiql": source,
        "deltalake": deltalake.__version__, "phases": {},
    }
    spark = spark_session("hudiql-bench-merge-cow", 8)
    results["spark"] = spark.version
    try:
        run(spark, args, results)
    finally:
        spark.stop()
        if own_workdir:
            shutil.rmtree(args.workdir, ignore_errors=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2, default=str)
    return 0


def warm_up(spark, w: str) -> None:
    """One untimed hudiql MERGE and one delta-rs merge on a tiny table (JVM, Python workers, delta-rs)."""
    rows, parts = 20_000, 4
    wh, dpath = os.path.join(w, "warmup_hudi"), os.path.join(w, "warmup_delta")
    base_rows(spark, rows, parts).createOrReplaceTempView("warmup_rows")
    hudiql_load(spark, wh, "warmup_rows")
    deltalake.write_deltalake(dpath, base_rows(spark, rows, parts).toArrow().cast(ARROW_SCHEMA),
                              partition_by=["part"])
    batch = Batch(rows, parts, parts)
    df = batch.dataframe(spark).cache()
    df.createOrReplaceTempView("batch")
    result = hudiql_merge(spark, wh)
    hudiql_verify(spark, wh, batch, result, "warm-up")
    delta_merge(dpath, df.toArrow().cast(ARROW_SCHEMA))
    delta_verify(dpath, batch, "warm-up")
    df.unpersist()
    spark.catalog.dropTempView("batch")
    shutil.rmtree(wh)
    shutil.rmtree(dpath)


def run(spark: SparkSession, args, results: dict) -> None:
    w = args.workdir
    rows, parts = args.rows, args.partitions
    print(f"hudiql MERGE benchmark: {rows:,} rows, {parts} partitions, local[2], repeats {args.repeats}, workdir {w}")
    print(f"hudiql: {results['hudiql']}; spark {spark.version}; deltalake {results['deltalake']}; "
          f"cores {os.cpu_count()}; load avg {os.getloadavg()[0]:.1f}")

    # ---- base tables (not part of the ratios) --------------------------------------------------
    base_rows(spark, rows, parts).createOrReplaceTempView("base_rows")
    base_wh = os.path.join(w, "base_hudi")
    t_hudi, _ = timed(lambda: hudiql_load(spark, base_wh, "base_rows"))
    base_table = os.path.join(base_wh, "bench")
    n = hudiql.connect(warehouse=base_wh, spark=spark).sql("SELECT count(*) AS n FROM bench").first()["n"]
    assert n == rows, f"hudiql base table has {n} rows, expected {rows}"
    arrow_base = base_rows(spark, rows, parts).toArrow().cast(ARROW_SCHEMA)
    delta_base = os.path.join(w, "base_delta")
    t_delta, _ = timed(lambda: deltalake.write_deltalake(delta_base, arrow_base, partition_by=["part"]))
    del arrow_base
    assert deltalake.DeltaTable(delta_base).to_pyarrow_dataset().count_rows() == rows
    results["load"] = {"hudiql_bulk_insert": t_hudi, "delta_rs_write": t_delta}
    print(f"base tables (not timed as part of the ratios): hudiql bulk_insert {t_hudi:.1f}s, "
          f"delta-rs write_deltalake {t_delta:.1f}s")

    warm_up(spark, w)
    print("warm-up (tiny table, one MERGE per system) done, not counted")

    # ---- phases -------------------------------------------------------------------------------
    spread_b = 2
    part_list = ", ".join(f"'{part_name(i, parts)}'" for i in range(spread_b))
    phases = [
        ("A", f"1% MERGE spread over all {parts} partitions", parts, [("hudiql", "")]),
        ("B", f"1% MERGE confined to {spread_b} partitions",
         spread_b, [("hudiql", ""), ("hudiql_pruned", f" AND t.part IN ({part_list})")]),
    ]
    for phase, title, spread, variants in phases:
        batch = Batch(rows, parts, spread)
        batch_df = batch.dataframe(spark).cache()
        assert batch_df.count() == batch.n_upd + batch.n_new
        batch_df.createOrReplaceTempView("batch")
        touched = batch_df.select("part").distinct().count()
        assert touched == spread, (touched, spread)
        arrow_batch = batch_df.toArrow().cast(ARROW_SCHEMA)
        names = [v for v, _ in variants] + ["delta_rs"]
        times: dict[str, list[float]] = {k: [] for k in names}
        outcome: dict[str, dict] = {}
        loads: list[float] = []
        phase_dir = os.path.join(w, f"phase_{phase}")
        for rep in range(args.repeats):
            loads.append(os.getloadavg()[0])
            for name, extra in variants:
                wh = os.path.join(phase_dir, name)
                copy_tree(base_table, os.path.join(wh, "bench"))
                t, result = timed(lambda: hudiql_merge(spark, wh, extra))
                hudiql_verify(spark, wh, batch, result, f"{phase}/{name}#{rep + 1}")
                times[name].append(t)
                outcome[name] = {"result": result, "commit": commit_file_groups(os.path.join(wh, "bench"))}
                shutil.rmtree(wh)
            path = os.path.join(phase_dir, "delta")
            copy_tree(delta_base, path)
            t, metrics = timed(lambda: delta_merge(path, arrow_batch))
            delta_verify(path, batch, f"{phase}#{rep + 1}")
            times["delta_rs"].append(t)
            outcome["delta_rs"] = {"result": metrics}
            shutil.rmtree(path)
        batch_df.unpersist()
        spark.catalog.dropTempView("batch")
        med = {k: statistics.median(v) for k, v in times.items()}
        best = {k: min(v) for k, v in times.items()}
        results["phases"][phase] = {"title": title, "batch_rows": batch.n_upd + batch.n_new, "updates": batch.n_upd,
                                    "inserts": batch.n_new, "partitions_touched": touched, "runs": times,
                                    "median": med, "best": best, "load_avg_1min": loads, "outcome": outcome}
        print(f"\nphase {phase}: {title}: {batch.n_upd + batch.n_new:,} source rows ({batch.n_upd:,} matched, "
              f"{batch.n_new:,} new) in {touched} partitions; fresh base copy per run; verified")
        print(f"  {'':14s}  median     best   runs")
        for name in names:
            print(f"  {name:14s} {fmt(med[name])} {fmt(best[name])}   {' '.join(f'{x:.2f}' for x in times[name])}")
        for name, _ in variants:
            print(f"  {name} / delta_rs = {ratio(med[name], med['delta_rs'])} (median)  "
                  f"{ratio(best[name], best['delta_rs'])} (best)")
        for name, extra in variants:
            print(f"  {name} ON: t.id = s.id{extra}")
            r = outcome[name]["result"]
            print(f"    MERGE result: {', '.join(f'{k}={v}' for k, v in r.items())}")
            if outcome[name]["commit"]:
                fg, written = outcome[name]["commit"]
                print(f"    commit: {fg} file groups written, {written:,} rows written")
        m = outcome["delta_rs"]["result"]
        keys = ("num_source_rows", "num_target_rows_updated", "num_target_rows_inserted", "num_target_rows_copied",
                "num_target_files_added", "num_target_files_removed", "execution_time_ms")
        print(f"  delta-rs metrics: {', '.join(f'{k}={m.get(k)}' for k in keys if k in m)}")
        print(f"  1-min load average at the start of each run: {' '.join(f'{x:.1f}' for x in loads)} "
              f"(machine has {os.cpu_count()} cores)")


if __name__ == "__main__":
    sys.exit(main())
