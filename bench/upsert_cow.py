#!/usr/bin/env python
"""Benchmark: hudiql copy-on-write upsert vs a plain Spark rewrite vs delta-rs MERGE.

Usage:
    python bench/upsert_cow.py [--rows 2000000] [--partitions 20] [--workdir DIR]
                               [--repeats 1] [--warmup 1] [--hudiql-ref HEAD] [--profile] [--json FILE]

What it measures (all on one local[2] SparkSession, same generated data for every system):

* initial load: a table of ``--rows`` rows in ``--partitions`` partitions, generated with
  ``spark.range`` + expressions and written with hudiql (``bulk_insert``), as a plain
  partitioned parquet dataset (Spark), and as a partitioned Delta table (delta-rs, from Arrow);
* phase A: an upsert of 1% of the rows (half updates of existing ids, half new ids) spread
  over every partition;
* phase B: an upsert of the same size confined to 2 partitions.

Every phase of every system starts from a fresh copy of the same base table (copying is not
timed), so the phases are independent and each system writes into the identical state.
The upsert batch is generated once per phase, cached in Spark (and, for delta-rs, converted to
one Arrow table) before any timer starts. Per system and phase:

* hudiql: ``INSERT INTO bench SELECT id, name, value, ts, part FROM batch`` (upsert; index join on the touched
  partitions, merge of the touched file groups);
* plain Spark rewrite: read the whole parquet dataset, left-anti join the batch's ids, union the
  batch, write the result to a new directory (partitioned by ``part``). This rewrites every
  partition in both phases: that is what a plain rewrite costs;
* delta-rs: ``DeltaTable.merge(batch, "t.id = s.id AND t.part = s.part")`` with
  ``when_matched_update_all().when_not_matched_insert_all()``, ``streamed_exec=False`` so that
  delta-rs may prune partitions from the source's values (its best case).

One untimed warm-up round of all three systems (``--warmup``) precedes phase A's timed runs;
with ``--repeats N`` the median and the best of N runs are reported, with the 1-minute load
average at the start of each run (the timings are only as quiet as the machine).
hudiql is imported from a snapshot of the package taken at start (working tree, or
``--hudiql-ref``), so that edits to the package during a run cannot mix two versions.

Each hudiql write is verified (row count, a few updated ids carry the new value, a new id is
present) before its time is reported; the baselines get the same row-count check.
``--profile`` also records a Spark event log and prints, for each hudiql write, the driver's
collect() calls, the Spark jobs / stages with their wall and task times, the per-file-group
merge times from the commit, and a cProfile of one extra (untimed) write per phase.
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

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from common import (
    ARROW_SCHEMA, COLUMNS, Profile, base_rows, copy_tree, delta_merge, deltalake, du, fmt, hudi_table_ddl,
    part_of, ratio, report_profile, snapshot_hudiql, spark_session, timed,
)

hudiql: Any = None  # imported by main() from a snapshot of the package (see common.snapshot_hudiql)


# ---------------------------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------------------------
class Batch:
    """One phase's upsert batch: ``n_upd`` updates of existing ids, ``n_new`` new ids.

    Phase A spreads both over every partition, phase B puts them in partitions 0 and 1 only.
    Updated rows carry ts = 2, name 'upd_<id>' and value = -id, so they are easy to check.
    """

    def __init__(self, rows: int, partitions: int, phase: str) -> None:
        size = max(2, rows // 100)
        self.n_upd = size // 2
        self.n_new = size - self.n_upd
        self.rows, self.partitions, self.phase = rows, partitions, phase
        self.spread = partitions if phase == "A" else min(2, partitions)
        # Updated ids: k * stride + (k mod spread), stride a multiple of the partition count, so
        # id mod partitions = k mod spread; all ids stay below ``rows``.
        self.stride = (rows // self.n_upd) // partitions * partitions
        if self.stride < partitions:
            raise SystemExit(f"--rows {rows} is too small for {partitions} partitions")
        # New ids: above every existing id, starting on a multiple of the partition count.
        self.new_base = -(-rows // partitions) * partitions
        self.expected_rows = rows + self.n_new

    def updated_id(self, k: int) -> int:
        return k * self.stride + k % self.spread

    def new_id(self, k: int) -> int:
        if self.phase == "A":
            return self.new_base + k
        return self.new_base + k * self.partitions + k % self.spread

    def dataframe(self, spark: SparkSession) -> DataFrame:
        k = F.col("id")
        upd = spark.range(self.n_upd).select((k * F.lit(self.stride) + k % F.lit(self.spread)).alias("id"))
        if self.phase == "A":
            new = spark.range(self.n_new).select((F.lit(self.new_base) + k).alias("id"))
        else:
            new = spark.range(self.n_new).select(
                (F.lit(self.new_base) + k * F.lit(self.partitions) + k % F.lit(self.spread)).alias("id")
            )
        ids = upd.unionByName(new)
        return ids.select(
            F.col("id").cast("bigint").alias("id"),
            F.concat(F.lit("upd_"), F.col("id").cast("string")).alias("name"),
            (-F.col("id").cast("double")).alias("value"),
            F.lit(2).cast("bigint").alias("ts"),
            part_of(F.col("id"), self.partitions).alias("part"),
        )

    def sample_updated(self, n: int = 5) -> list[int]:
        ks = sorted({0, 1, self.n_upd // 2, self.n_upd - 2, self.n_upd - 1, *range(min(n, self.n_upd))})
        return [self.updated_id(k) for k in ks if 0 <= k < self.n_upd]

    def sample_new(self) -> list[int]:
        return [self.new_id(0), self.new_id(self.n_new - 1)]

    def partitions_touched(self) -> int:
        return self.spread


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------
def count_parquet(path: str) -> int:
    return sum(1 for _ in glob.glob(os.path.join(path, "**", "*.parquet"), recursive=True))


# ---------------------------------------------------------------------------------------------
# the three systems
# ---------------------------------------------------------------------------------------------
def hudiql_write(spark, warehouse: str, source_view: str, bulk: bool = False) -> None:
    session = hudiql.connect(warehouse=warehouse, spark=spark)
    if bulk:
        session.sql("SET hoodie.spark.sql.insert.into.operation=bulk_insert")
        session.sql(hudi_table_ddl("bench"))
    session.sql(f"INSERT INTO bench SELECT {', '.join(COLUMNS)} FROM {source_view}")


def hudiql_verify(spark, warehouse: str, batch: Batch) -> None:
    session = hudiql.connect(warehouse=warehouse, spark=spark)
    n = session.sql("SELECT count(*) AS n FROM bench").first()["n"]
    if n != batch.expected_rows:
        raise AssertionError(f"hudiql phase {batch.phase}: {n} rows, expected {batch.expected_rows}")
    upd = batch.sample_updated()
    new = batch.sample_new()
    ids = ", ".join(str(i) for i in upd + new)
    got = {r["id"]: (r["value"], r["ts"], r["name"]) for r in
           session.sql(f"SELECT id, value, ts, name FROM bench WHERE id IN ({ids})").collect()}
    for i in upd + new:
        if got.get(i) != (-float(i), 2, f"upd_{i}"):
            raise AssertionError(f"hudiql phase {batch.phase}: id {i} holds {got.get(i)}, expected new value {-float(i)}")
    dups = session.sql("SELECT count(DISTINCT id) AS n FROM bench").first()["n"]
    if dups != batch.expected_rows:
        raise AssertionError(f"hudiql phase {batch.phase}: {dups} distinct ids, expected {batch.expected_rows}")


def spark_rewrite(spark, base_dir: str, batch_df: DataFrame, out_dir: str) -> None:
    base = spark.read.parquet(base_dir).select(*COLUMNS)
    out = base.join(batch_df.select("id"), "id", "left_anti").unionByName(batch_df)
    out.write.mode("overwrite").partitionBy("part").parquet(out_dir)


def delta_verify(path: str, batch: Batch) -> None:
    import pyarrow.compute as pc

    ds = deltalake.DeltaTable(path).to_pyarrow_dataset()
    n = ds.count_rows()
    if n != batch.expected_rows:
        raise AssertionError(f"delta phase {batch.phase}: {n} rows, expected {batch.expected_rows}")
    ids = batch.sample_updated()
    t = ds.to_table(filter=pc.field("id").isin(ids), columns=["id", "value"])
    got = dict(zip(t.column("id").to_pylist(), t.column("value").to_pylist()))
    if any(got.get(i) != -float(i) for i in ids):
        raise AssertionError(f"delta phase {batch.phase}: updated ids hold {got}")


# ---------------------------------------------------------------------------------------------
# main
# ---------------------------------------------------------------------------------------------
def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=2_000_000)
    p.add_argument("--partitions", type=int, default=20)
    p.add_argument("--workdir", default=None, help="default: a temp dir, deleted at the end (a given dir is kept)")
    p.add_argument("--repeats", type=int, default=1, help="runs per system and phase, each on a fresh copy; the median is reported")
    p.add_argument("--warmup", type=int, default=1, help="untimed rounds of every system before phase A's timed runs")
    p.add_argument("--shuffle-partitions", type=int, default=8)
    p.add_argument("--hudiql-ref", default=None,
                   help="benchmark hudiql as of this git ref (default: a snapshot of the working tree)")
    p.add_argument("--profile", action="store_true", help="Spark event log + driver timings of the hudiql writes")
    p.add_argument("--json", default=None, help="also write the figures as JSON to this file")
    return p.parse_args(argv)


def main(argv=None) -> int:
    global hudiql
    args = parse_args(argv)
    own_workdir = args.workdir is None
    args.workdir = os.path.abspath(args.workdir or tempfile.mkdtemp(prefix="hudiql-bench-"))
    os.makedirs(args.workdir, exist_ok=True)
    hudiql, source = snapshot_hudiql(args.workdir, args.hudiql_ref)
    results: dict = {
        "rows": args.rows, "partitions": args.partitions, "repeats": args.repeats, "warmup": args.warmup,
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cores": os.cpu_count(), "python": platform.python_version(), "hudiql": source,
        "deltalake": getattr(deltalake, "__version__", None), "load": {}, "phases": {},
    }
    profile = Profile() if args.profile else None
    if profile:
        profile.install()
    events = os.path.join(args.workdir, "spark-events")
    spark = spark_session("hudiql-bench-upsert-cow", args.shuffle_partitions, event_log=events if profile else None)
    results["spark"] = spark.version
    try:
        run(spark, args, results, profile)
    finally:
        spark.stop()
        if profile:
            report_profile(events, profile, results)
        if own_workdir:
            shutil.rmtree(args.workdir, ignore_errors=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    return 0


def run(spark: SparkSession, args, results: dict, profile: Profile | None) -> None:
    w = args.workdir
    rows, parts = args.rows, args.partitions
    print(f"hudiql upsert benchmark: {rows:,} rows, {parts} partitions, local[2], "
          f"shuffle partitions {args.shuffle_partitions}, repeats {args.repeats}, workdir {w}")
    print(f"hudiql: {results['hudiql']}; spark {spark.version}; "
          f"deltalake {results['deltalake'] or 'not installed (skipped)'}; cores {os.cpu_count()}")

    # ---- initial load -------------------------------------------------------------------------
    base_rows(spark, rows, parts).createOrReplaceTempView("base_rows")
    base_wh = os.path.join(w, "base_hudi")
    t_hudi, _ = timed(lambda: (profile.run("load", lambda: hudiql_write(spark, base_wh, "base_rows", bulk=True))
                               if profile else hudiql_write(spark, base_wh, "base_rows", bulk=True)))
    base_table = os.path.join(base_wh, "bench")
    plain_dir = os.path.join(w, "base_parquet")
    t_plain, _ = timed(lambda: base_rows(spark, rows, parts).write.partitionBy("part").parquet(plain_dir))
    n_hudi = hudiql.connect(warehouse=base_wh, spark=spark).sql("SELECT count(*) AS n FROM bench").first()["n"]
    assert n_hudi == rows, f"hudiql base table has {n_hudi} rows, expected {rows}"
    load = {"hudiql_bulk_insert": t_hudi, "spark_parquet": t_plain,
            "hudiql_files": count_parquet(base_table), "hudiql_bytes": du(base_table),
            "parquet_files": count_parquet(plain_dir), "parquet_bytes": du(plain_dir)}
    delta_base = os.path.join(w, "base_delta")
    if deltalake is not None:
        import pyarrow.dataset as pads

        arrow_base = pads.dataset(plain_dir, format="parquet", partitioning="hive").to_table()
        arrow_base = arrow_base.select(COLUMNS).cast(ARROW_SCHEMA)
        t_delta, _ = timed(lambda: deltalake.write_deltalake(delta_base, arrow_base, partition_by=["part"]))
        del arrow_base
        assert deltalake.DeltaTable(delta_base).to_pyarrow_dataset().count_rows() == rows
        load.update(delta_rs=t_delta, delta_files=count_parquet(delta_base), delta_bytes=du(delta_base))
    results["load"] = load
    print("\ninitial load (not part of the ratios):")
    print(f"  hudiql bulk_insert   {fmt(load['hudiql_bulk_insert'])}  ({load['hudiql_files']} files, {load['hudiql_bytes'] / 2**20:.1f} MiB)")
    print(f"  spark parquet write  {fmt(load['spark_parquet'])}  ({load['parquet_files']} files, {load['parquet_bytes'] / 2**20:.1f} MiB)")
    if "delta_rs" in load:
        print(f"  delta-rs write       {fmt(load['delta_rs'])}  ({load['delta_files']} files, {load['delta_bytes'] / 2**20:.1f} MiB)")

    # ---- phases -------------------------------------------------------------------------------
    for phase, title in (("A", f"phase A: 1% upsert over all {parts} partitions"),
                         ("B", "phase B: 1% upsert confined to 2 partitions")):
        batch = Batch(rows, parts, phase)
        batch_df = batch.dataframe(spark).cache()
        assert batch_df.count() == batch.n_upd + batch.n_new
        batch_df.createOrReplaceTempView("batch")
        touched = batch_df.select("part").distinct().count()
        arrow_batch = batch_df.toArrow() if deltalake is not None else None
        times: dict[str, list[float]] = {"hudiql": [], "spark_rewrite": [], "delta_rs": []}
        loads: list[float] = []
        phase_dir = os.path.join(w, f"phase_{phase}")
        warmups = args.warmup if phase == "A" else 0
        for rep in range(warmups + args.repeats):
            record = rep >= warmups
            label = f"{phase}#{rep - warmups + 1}" if record else f"{phase}-warmup{rep + 1}"
            loads.append(os.getloadavg()[0])
            # hudiql, on a fresh copy of the base table
            wh = os.path.join(phase_dir, "hudi")
            copy_tree(base_table, os.path.join(wh, "bench"))
            t, _ = timed(lambda: (profile.run(label, lambda: hudiql_write(spark, wh, "batch"))
                                  if profile else hudiql_write(spark, wh, "batch")))
            hudiql_verify(spark, wh, batch)
            if record:
                times["hudiql"].append(t)
            if profile:
                results.setdefault("merge_stats", {})[label] = commit_stats(os.path.join(wh, "bench"))
            shutil.rmtree(wh)
            # plain Spark rewrite of the whole dataset into a new directory
            out = os.path.join(phase_dir, "rewrite")
            t, _ = timed(lambda: spark_rewrite(spark, plain_dir, batch_df, out))
            n = spark.read.parquet(out).count()
            assert n == batch.expected_rows, f"spark rewrite phase {phase}: {n} rows"
            if record:
                times["spark_rewrite"].append(t)
            shutil.rmtree(out)
            # delta-rs merge, on a fresh copy of the base Delta table
            if deltalake is not None:
                path = os.path.join(phase_dir, "delta")
                copy_tree(delta_base, path)
                t, metrics = timed(lambda: delta_merge(path, arrow_batch))
                delta_verify(path, batch)
                if record:
                    times["delta_rs"].append(t)
                results.setdefault("delta_metrics", {})[label] = metrics
                shutil.rmtree(path)
            if not record:
                print(f"  (warm-up round {rep + 1} of phase {phase} done, not counted)")
        if profile:
            results.setdefault("cprofile", {})[phase] = cprofile_hudiql(spark, base_table, os.path.join(phase_dir, "hudi"))
        batch_df.unpersist()
        med = {k: (statistics.median(v) if v else None) for k, v in times.items()}
        best = {k: (min(v) if v else None) for k, v in times.items()}
        results["phases"][phase] = {"title": title, "batch_rows": batch.n_upd + batch.n_new, "updates": batch.n_upd,
                                    "inserts": batch.n_new, "partitions_touched": touched, "runs": times,
                                    "median": med, "best": best, "load_avg_1min": loads[warmups:]}
        print(f"\n{title}: {batch.n_upd + batch.n_new:,} rows ({batch.n_upd:,} updates, {batch.n_new:,} inserts) "
              f"in {touched} partitions; fresh base copy per run; verified")
        print(f"  {'':14s}  median     best   runs")
        for name in ("hudiql", "spark_rewrite", "delta_rs"):
            runs = " ".join(f"{x:.2f}" for x in times[name])
            print(f"  {name:14s} {fmt(med[name])} {fmt(best[name])}   {runs or 'skipped (deltalake not installed)'}")
        print(f"  hudiql / spark rewrite = {ratio(med['hudiql'], med['spark_rewrite'])} (median)  "
              f"{ratio(best['hudiql'], best['spark_rewrite'])} (best)")
        print(f"  hudiql / delta-rs      = {ratio(med['hudiql'], med['delta_rs'])} (median)  "
              f"{ratio(best['hudiql'], best['delta_rs'])} (best)")
        print(f"  1-min load average at the start of each run: {' '.join(f'{x:.1f}' for x in loads[warmups:])} "
              f"(machine has {os.cpu_count()} cores)")

    b, bb = results["phases"]["B"]["median"], results["phases"]["B"]["best"]
    goal = b["hudiql"] / b["spark_rewrite"]
    results["goal_ratio_B"] = goal
    results["goal_ratio_B_best"] = bb["hudiql"] / bb["spark_rewrite"]
    print(f"\ngoal: 2-partition upsert <= 0.30x the plain rewrite: {goal:.2f}x (median), "
          f"{results['goal_ratio_B_best']:.2f}x (best) -> {'MET' if goal <= 0.3 else 'MISSED'}")


def cprofile_hudiql(spark, base_table: str, wh: str) -> str:
    """One extra (untimed) hudiql write under cProfile: where the driver's wall time goes."""
    import cProfile
    import io
    import pstats

    copy_tree(base_table, os.path.join(wh, "bench"))
    prof = cProfile.Profile()
    prof.enable()
    hudiql_write(spark, wh, "batch")
    prof.disable()
    shutil.rmtree(wh)
    out = io.StringIO()
    stats = pstats.Stats(prof, stream=out).sort_stats("cumulative")
    stats.print_stats(r"hudiql|py4j.*send_command|sqlglot/(parser|generator)", 45)
    return out.getvalue()


def commit_stats(table_dir: str) -> dict:
    """Per-file-group times of the table's latest commit (measured inside the merge tasks)."""
    commits = sorted(glob.glob(os.path.join(table_dir, ".hoodie", "*.commit")))
    doc = json.load(open(commits[-1]))
    stats = [s for ps in doc["partitionToWriteStats"].values() for s in ps]
    upsert = [(s.get("runtimeStats") or {}).get("totalUpsertTime") or 0 for s in stats]
    create = [(s.get("runtimeStats") or {}).get("totalCreateTime") or 0 for s in stats]
    return {"file_groups": len(stats), "upsert_ms": upsert, "create_ms": create,
            "rows_written": sum(s["numWrites"] for s in stats)}


if __name__ == "__main__":
    sys.exit(main())
