#!/usr/bin/env python
"""Benchmark: hudiql merge-on-read upserts (rounds, snapshot reads, compaction) vs COW vs delta-rs.

Usage:
    python bench/upsert_mor.py [--sizes 2000000,20000000 | --rows N] [--rounds 10] [--partitions 20]
                               [--workdir DIR] [--warmup 1] [--read-repeats 2] [--hudiql-ref HEAD]
                               [--profile] [--json FILE] [--storage local | s3]
                               [--table-version 6|8|9] [--metadata true|false] [--column-stats]
                               [--index simple|bucket|bloom] [--no-bloom-filters]

What it measures, per table size (all on one local[2] SparkSession, same data for every system):

* initial load: ``rows`` rows in ``--partitions`` partitions (the data of every benchmark,
  ``base_rows`` of ``bench/common.py``: ``id`` 0..N-1, ``part`` = id mod partitions, ``ts`` = 1),
  written with hudiql ``bulk_insert`` into a MOR table (``type='mor'``, inline compaction off) and
  into a COW table, and as a partitioned Delta table (delta-rs, from Arrow). Not part of the ratios.
* ``--rounds`` rounds of a 1% upsert (half updates of existing ids spread over every partition,
  different ids each round; half new ids, also over every partition). Each round is applied, in
  turn and timed separately, to the MOR table (``INSERT INTO``), the COW table (``INSERT INTO``) and
  the Delta table (``DeltaTable.merge``, as in the COW benchmark). The tables accumulate the rounds.
  After each round the MOR snapshot read ``SELECT count(*), sum(value)`` (a full scan that merges
  the log files) is timed, and the same query on the COW table for reference.
* after the last round (before compaction), the rows that round wrote, every column read
  (``count(*), sum(value), bit_xor(xxhash64(*))``): by an incremental read
  (``hudi_table_changes(..., '<instant before the round>')``) and by the full snapshot filtered on
  ``_hoodie_commit_time``, each ``--read-repeats`` times (medians); both must return the same rows.
* then compaction of the MOR table (``CALL run_compaction(op => 'scheduleandexecute')``), and the
  same snapshot read on the compacted table. The final pre-compaction and the post-compaction
  reads are each run ``--read-repeats`` times (median reported).

The batch of each round is generated and cached in Spark (and converted to Arrow for delta-rs)
before any timer starts. ``--warmup`` untimed rounds on a small separate set of tables (JVM, Python
workers, delta-rs) precede the timed rounds. Verification (untimed, not part of any figure):
every round, the MOR and COW read results (count and sum of ``value``) must equal the expected
row count and the Delta table's sum; after the last round and after compaction also sampled
updated / new ids carry the round's values and ``count(DISTINCT id)`` equals the row count.
``--storage s3`` then runs the MOR part again (load, rounds of write and read, compaction, read)
with the warehouse on S3: a moto server (``moto[server]``) the script starts on a free
127.0.0.1 port, in its own process, reached through hudiql's storage options (one writer:
``hoodie.write.concurrency.mode=SINGLE_WRITER``, as S3 has no table lock); the summary gives the
S3 / local ratio of each figure. hudiql is imported from a snapshot of the package taken at start. ``--profile`` records a Spark
event log and prints, for the MOR writes, the MOR reads and the compaction, the driver's collect()
calls and the Spark jobs / stages. The shared helpers (data, Spark session, snapshot, timing,
profile) are in ``bench/common.py``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from common import (
    COLUMNS, Profile, arrow_base, base_rows, delta_merge, deltalake, du, fmt, hudi_table_ddl, part_of,
    ratio, report_profile, snapshot_hudiql, spark_session, timed,
)

hudiql: Any = None  # imported by main() from a snapshot of the package (see common.snapshot_hudiql)

GOALS = {"mor_vs_delta": 0.5, "mor_vs_cow": 0.5, "growth": 1.5, "read_ratio": 2.0, "incremental_ratio": 0.2}


def index_props(index: str, buckets: int, bloom_filters: bool = True) -> list[str]:
    """Table options for ``--index`` (hudiql's default index, the bucket index, or the bloom index)
    and ``--no-bloom-filters`` (base file footers without a bloom filter)."""
    props = [] if bloom_filters else ["'hoodie.parquet.bloom.filter.enabled'='false'"]
    if index == "bucket":
        return [*props, "'hoodie.index.type'='BUCKET'", f"'hoodie.bucket.index.num.buckets'='{buckets}'"]
    return [*props, "'hoodie.index.type'='BLOOM'"] if index == "bloom" else props


def version_props(version: str, metadata: str, column_stats: bool = False) -> list[str]:
    """Table options for ``--table-version``, ``--metadata`` and ``--column-stats`` (versions 8 and
    9: the metadata table, and its column stats)."""
    if version == "6":
        return []
    stats = ["'hoodie.metadata.index.column.stats.enable'='true'"] if column_stats else []
    return [f"'hoodie.write.table.version'='{version}'", f"'hoodie.metadata.enable'='{metadata}'", *stats]


def ddl(name: str, mor: bool, extra: list[str]) -> str:
    return hudi_table_ddl(name, [*extra, "type='mor'", "'hoodie.compact.inline'='false'"] if mor else extra)


# ---------------------------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------------------------
class RoundBatch:
    """Round ``r``'s upsert batch (r = 0, 1, ...): 1% of the base rows, half updates, half inserts.

    Updated ids: k * stride + k mod P + (r mod R) * P, with stride a multiple of P, so id mod P =
    k mod P: every partition is hit, and rounds r < R = stride / P update different ids. New ids:
    new_base + r * n_new + k (above all base ids), also over every partition. Rows of round r carry
    ts = r + 2, value = -id - r and name 'u<r>_<id>'.
    """

    def __init__(self, rows: int, partitions: int, r: int) -> None:
        size = max(2, rows // 100)
        self.n_upd = size // 2
        self.n_new = size - self.n_upd
        self.rows, self.partitions, self.r = rows, partitions, r
        self.stride = (rows // self.n_upd) // partitions * partitions
        if self.stride < partitions:
            raise SystemExit(f"{rows} rows is too small for {partitions} partitions")
        self.shift = (r % (self.stride // partitions)) * partitions
        self.new_base = -(-rows // partitions) * partitions + r * self.n_new
        self.expected_rows = rows + (r + 1) * self.n_new
        self.ts = r + 2

    def updated_id(self, k: int) -> int:
        return k * self.stride + k % self.partitions + self.shift

    def new_id(self, k: int) -> int:
        return self.new_base + k

    def dataframe(self, spark: SparkSession) -> DataFrame:
        k = F.col("id")
        upd = spark.range(self.n_upd).select(
            (k * F.lit(self.stride) + k % F.lit(self.partitions) + F.lit(self.shift)).alias("id"))
        new = spark.range(self.n_new).select((F.lit(self.new_base) + k).alias("id"))
        return upd.unionByName(new).select(
            F.col("id").cast("bigint").alias("id"),
            F.concat(F.lit(f"u{self.r}_"), F.col("id").cast("string")).alias("name"),
            (-F.col("id").cast("double") - F.lit(float(self.r))).alias("value"),
            F.lit(self.ts).cast("bigint").alias("ts"),
            part_of(F.col("id"), self.partitions).alias("part"),
        )

    def samples(self) -> list[int]:
        ks = sorted({0, 1, self.n_upd // 2, self.n_upd - 1})
        return [self.updated_id(k) for k in ks] + [self.new_id(0), self.new_id(self.n_new - 1)]

    def expect(self, i: int) -> tuple:
        return (-float(i) - self.r, self.ts, f"u{self.r}_{i}")


# ---------------------------------------------------------------------------------------------
# systems
# ---------------------------------------------------------------------------------------------
#: ``connect()`` arguments of the warehouses on the local S3 server (``--storage s3``).
S3_SESSION: dict = {}
S3_BUCKET = "bench"


def session(spark, wh: str):
    return hudiql.connect(warehouse=wh, spark=spark, **(S3_SESSION if wh.startswith("s3://") else {}))


def start_s3_server() -> subprocess.Popen:
    """moto's S3 server on a free 127.0.0.1 port, in its own process (not competing with the
    driver for the GIL), with the bucket; sets ``S3_SESSION``."""
    import pyarrow.fs as pafs

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    endpoint = f"http://127.0.0.1:{port}"
    options = {"aws_access_key_id": "bench", "aws_secret_access_key": "bench", "aws_endpoint_url": endpoint,
               "aws_region": "us-east-1"}
    fs = pafs.S3FileSystem(access_key="bench", secret_key="bench", endpoint_override=endpoint, region="us-east-1",
                           allow_bucket_creation=True)
    for _ in range(100):
        try:
            fs.create_dir(S3_BUCKET)
            break
        except OSError:
            time.sleep(0.1)  # the server is still starting
    S3_SESSION.update(storage_options=options, conf={"hoodie.write.concurrency.mode": "SINGLE_WRITER"})
    return server


def hudi_load(spark, wh: str, table: str, mor: bool, view: str, extra: list[str]) -> None:
    s = session(spark, wh)
    s.sql("SET hoodie.spark.sql.insert.into.operation=bulk_insert")
    s.sql(ddl(table, mor, extra))
    s.sql(f"INSERT INTO {table} SELECT {', '.join(COLUMNS)} FROM {view}")


def hudi_upsert(spark, wh: str, table: str, view: str) -> None:
    session(spark, wh).sql(f"INSERT INTO {table} SELECT {', '.join(COLUMNS)} FROM {view}")


def hudi_read(spark, wh: str, table: str) -> tuple[int, float]:
    row = session(spark, wh).sql(f"SELECT count(*) AS n, sum(value) AS s FROM {table}").first()
    return row["n"], row["s"]


#: What a downstream job reads of the changed rows: every column (``xxhash64(*)`` names them all).
CHANGED_ROWS = "SELECT count(*) AS n, sum(value) AS s, bit_xor(xxhash64(*)) AS h FROM {source}"


def hudi_changes(spark, wh: str, table: str, begin: str) -> tuple[int, float, int]:
    """The rows written after ``begin``: an incremental read (``hudi_table_changes``)."""
    row = session(spark, wh).sql(CHANGED_ROWS.format(source=f"hudi_table_changes('{table}', 'latest_state', '{begin}')")).first()
    return row["n"], row["s"], row["h"]


def hudi_filtered_snapshot(spark, wh: str, table: str, begin: str) -> tuple[int, float, int]:
    """The same rows from the full snapshot, filtered on the commit time."""
    row = session(spark, wh).sql(CHANGED_ROWS.format(
        source=f"(SELECT * FROM {table} WHERE _hoodie_commit_time > '{begin}')")).first()
    return row["n"], row["s"], row["h"]


def latest_instant(table_dir: str) -> tuple[str, str]:
    """The latest completed write's instant time, and the time an incremental read begins after it:
    its completion time on table versions 8 and 9 (which incremental reads take there), else the
    instant time."""
    from hudiql.table.table import HudiTable

    latest = HudiTable.load(table_dir).timeline.completed()[-1]
    return latest.timestamp, latest.completion_time or latest.timestamp


def hudi_compact(spark, wh: str, table: str):
    return session(spark, wh).sql(f"CALL run_compaction(op => 'scheduleandexecute', table => '{table}')").collect()


def hudi_verify_full(spark, wh: str, table: str, batch: RoundBatch, what: str) -> None:
    s = session(spark, wh)
    ids = batch.samples()
    got = {r["id"]: (r["value"], r["ts"], r["name"]) for r in
           s.sql(f"SELECT id, value, ts, name FROM {table} WHERE id IN ({', '.join(map(str, ids))})").collect()}
    for i in ids:
        if got.get(i) != batch.expect(i):
            raise AssertionError(f"{what}: id {i} holds {got.get(i)}, expected {batch.expect(i)}")
    n = s.sql(f"SELECT count(DISTINCT id) AS n FROM {table}").first()["n"]
    if n != batch.expected_rows:
        raise AssertionError(f"{what}: {n} distinct ids, expected {batch.expected_rows}")


def cow_from_mor(spark, wh: str, mor_dir: str, cow_dir: str, extra: list[str]) -> None:
    """The COW table from the freshly bulk-inserted MOR table, without a second bulk_insert.

    Right after ``bulk_insert`` both table types hold the same base files and one commit (a
    ``deltacommit`` on MOR, a ``commit`` on COW) with the same metadata. So: create the empty COW
    table with its own DDL, copy the partitions' files and the commit under the COW action names.
    Saves one bulk_insert (about 10 minutes at 20M rows on 2 busy cores); ``--cow-copy``.
    """
    session(spark, wh).sql(ddl("bench_cow", False, extra))
    for name in os.listdir(mor_dir):
        if name != ".hoodie":
            shutil.copytree(os.path.join(mor_dir, name), os.path.join(cow_dir, name))
    timeline = os.path.join(mor_dir, ".hoodie")
    suffixes = {".deltacommit.requested": ".commit.requested", ".deltacommit.inflight": ".inflight",
                ".deltacommit": ".commit"}
    done = sorted(n for n in os.listdir(timeline) if n.endswith(".deltacommit"))
    assert len(done) == 1, f"expected one completed deltacommit in {timeline}: {done}"
    instant = done[0].split(".")[0]
    for src, dst in suffixes.items():
        with open(os.path.join(timeline, instant + src)) as f:
            text = f.read().replace("bench_mor", "bench_cow")
        with open(os.path.join(cow_dir, ".hoodie", instant + dst), "w") as f:
            f.write(text)


def delta_read(path: str) -> tuple[int, float]:
    import pyarrow.compute as pc

    t = deltalake.DeltaTable(path).to_pyarrow_dataset().to_table(columns=["value"])
    return t.num_rows, pc.sum(t.column("value")).as_py()


def check(what: str, got: tuple[int, float], expected_rows: int, expected_sum: float | None) -> None:
    n, s = got
    if n != expected_rows:
        raise AssertionError(f"{what}: {n} rows, expected {expected_rows}")
    if expected_sum is not None and abs(s - expected_sum) > 1e-9 * max(1.0, abs(expected_sum)):
        raise AssertionError(f"{what}: sum(value) = {s!r}, expected {expected_sum!r} (delta-rs)")


def table_files(table_dir: str) -> dict:
    """The live snapshot's file groups / slices (from hudiql's file system view) and bytes on disk."""
    from hudiql.table.table import HudiTable

    slices = HudiTable.load(table_dir).file_system_view().read_slices()
    logs = [os.path.join(table_dir, s.partition_path, name) for s in slices for name in s.log_files]
    return {"file_groups": len(slices), "slices_with_logs": sum(1 for s in slices if s.log_files),
            "base_files": sum(1 for s in slices if s.base_file), "log_files": len(logs),
            "log_bytes": sum(os.path.getsize(p) for p in logs), "bytes": du(table_dir)}


# ---------------------------------------------------------------------------------------------
# main
# ---------------------------------------------------------------------------------------------
def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default=None, help="comma-separated table sizes (default: 2000000,20000000)")
    p.add_argument("--rows", type=int, default=None, help="one table size (same as --sizes N)")
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--partitions", type=int, default=20)
    p.add_argument("--workdir", default=None, help="default: a temp dir, deleted at the end (a given dir is kept)")
    p.add_argument("--warmup", type=int, default=1, help="untimed rounds on small tables before the timed rounds")
    p.add_argument("--read-repeats", type=int, default=2,
                   help="runs of the final pre-compaction read and of the post-compaction read (median)")
    p.add_argument("--no-cow", action="store_true", help="skip the COW table")
    p.add_argument("--no-cow-read", action="store_true",
                   help="read (and check) the COW table after the last round only (saves time at 20M rows)")
    p.add_argument("--quick-verify", action="store_true",
                   help="check sampled ids / count(DISTINCT id) of the MOR table after compaction only")
    p.add_argument("--cow-copy", action="store_true",
                   help="build the COW base table by copying the bulk-inserted MOR base files (saves one bulk_insert)")
    p.add_argument("--shuffle-partitions", type=int, default=8)
    p.add_argument("--index", choices=["simple", "bucket", "bloom"], default="simple",
                   help="the MOR and COW tables' index: hudiql's default (simple), the bucket index or the bloom index")
    p.add_argument("--no-bloom-filters", action="store_true",
                   help="hoodie.parquet.bloom.filter.enabled=false: base file footers without a bloom filter")
    p.add_argument("--buckets", type=int, default=4, help="hoodie.bucket.index.num.buckets with --index bucket")
    p.add_argument("--table-version", default="6", choices=["6", "8", "9"], help="the hudiql tables' version")
    p.add_argument("--metadata", default="true", choices=["true", "false"],
                   help="hoodie.metadata.enable of the hudiql tables (versions 8 and 9: the metadata table)")
    p.add_argument("--column-stats", action="store_true",
                   help="the hudiql tables keep the metadata table's column stats (versions 8 and 9)")
    p.add_argument("--hudiql-ref", default=None,
                   help="benchmark hudiql as of this git ref (default: a snapshot of the working tree)")
    p.add_argument("--profile", action="store_true", help="Spark event log + driver timings of the MOR writes/reads")
    p.add_argument("--json", default=None, help="also write the figures as JSON to this file")
    p.add_argument("--storage", choices=["local", "s3"], default="local",
                   help="s3: also run the MOR part on a local S3 server (moto) and report S3 / local")
    args = p.parse_args(argv)
    if args.rows is not None:
        args.sizes = [args.rows]
    else:
        args.sizes = [int(x.replace("_", "")) for x in (args.sizes or "2000000,20000000").split(",")]
    return args


def main(argv=None) -> int:
    global hudiql
    args = parse_args(argv)
    own_workdir = args.workdir is None
    args.workdir = os.path.abspath(args.workdir or tempfile.mkdtemp(prefix="hudiql-bench-mor-"))
    os.makedirs(args.workdir, exist_ok=True)
    hudiql, source = snapshot_hudiql(args.workdir, args.hudiql_ref)
    results: dict = {
        "sizes": args.sizes, "rounds": args.rounds, "partitions": args.partitions,
        "index": args.index, "buckets": args.buckets if args.index == "bucket" else None,
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cores": os.cpu_count(), "python": platform.python_version(), "hudiql": source,
        "deltalake": getattr(deltalake, "__version__", None), "runs": {},
    }
    profile = Profile() if args.profile else None
    if profile:
        profile.install()
    events = os.path.join(args.workdir, "spark-events")
    spark = spark_session("hudiql-bench-upsert-mor", args.shuffle_partitions, event_log=events if profile else None)
    results["spark"] = spark.version
    print(f"hudiql MOR upsert benchmark: sizes {args.sizes}, {args.rounds} rounds, {args.partitions} partitions, "
          f"local[2], shuffle partitions {args.shuffle_partitions}, index {args.index}"
          f"{f' ({args.buckets} buckets)' if args.index == 'bucket' else ''}, workdir {args.workdir}")
    print(f"hudiql: {source}; spark {spark.version}; deltalake {results['deltalake'] or 'not installed (skipped)'}; "
          f"cores {os.cpu_count()}")
    server = start_s3_server() if args.storage == "s3" else None
    try:
        if args.warmup:
            warm_rows = min(100_000, min(args.sizes))
            print(f"\nwarm-up: {args.warmup} untimed round(s) on {warm_rows:,} rows (not counted)")
            run_size(spark, args, warm_rows, args.warmup, os.path.join(args.workdir, "warmup"), None, quiet=True)
        for rows in args.sizes:
            results["runs"][str(rows)] = run_size(spark, args, rows, args.rounds,
                                                  os.path.join(args.workdir, f"n{rows}"), profile)
        if server is not None:
            if args.warmup:
                run_on_s3(spark, args, min(100_000, min(args.sizes)), args.warmup, "warmup", quiet=True)
            results["s3"] = {str(rows): run_on_s3(spark, args, rows, args.rounds, f"n{rows}") for rows in args.sizes}
        summarize(args, results)
    finally:
        spark.stop()
        if server is not None:
            server.terminate()
            server.wait()
        if profile:
            report_profile(events, profile, results)
        if own_workdir:
            shutil.rmtree(args.workdir, ignore_errors=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    return 0


def run_size(spark, args, rows: int, rounds: int, w: str, profile: Profile | None, quiet: bool = False) -> dict:
    parts = args.partitions
    os.makedirs(w, exist_ok=True)
    wh = os.path.join(w, "hudi")
    mor_dir, cow_dir = os.path.join(wh, "bench_mor"), os.path.join(wh, "bench_cow")
    delta_dir = os.path.join(w, "delta")
    say = (lambda *a, **k: None) if quiet else print
    prof = (lambda label, fn: profile.run(label, fn)) if profile else (lambda label, fn: fn())
    out: dict = {"rows": rows, "partitions": parts, "load": {}, "rounds": []}

    # ---- initial load -------------------------------------------------------------------------
    base_rows(spark, rows, parts).createOrReplaceTempView("base_rows")
    extra = index_props(args.index, args.buckets, not args.no_bloom_filters) + version_props(
        args.table_version, args.metadata, args.column_stats)
    t_mor, _ = timed(lambda: hudi_load(spark, wh, "bench_mor", True, "base_rows", extra))
    t_cow = None
    if not args.no_cow and args.cow_copy:
        t_cow, _ = timed(lambda: cow_from_mor(spark, wh, mor_dir, cow_dir, extra))
        check("COW base (copied)", hudi_read(spark, wh, "bench_cow"), rows, None)
    elif not args.no_cow:
        t_cow, _ = timed(lambda: hudi_load(spark, wh, "bench_cow", False, "base_rows", extra))
    base_sum = 1.5 * rows * (rows - 1) / 2
    check("MOR base", hudi_read(spark, wh, "bench_mor"), rows, None)
    load = {"hudiql_mor_bulk_insert": t_mor, "hudiql_cow_bulk_insert": t_cow, **table_files(mor_dir)}
    if deltalake is not None:
        base = arrow_base(rows, parts)
        t_delta, _ = timed(lambda: deltalake.write_deltalake(delta_dir, base, partition_by=["part"]))
        del base
        check("delta base", delta_read(delta_dir), rows, base_sum)
        load["delta_rs"] = t_delta
    out["load"] = load
    say(f"\n=== {rows:,} rows, {parts} partitions: initial load (not part of the ratios) ===")
    say(f"  hudiql MOR bulk_insert {fmt(t_mor)}  ({load['file_groups']} file groups, {load['bytes'] / 2**20:.1f} MiB)")
    say(f"  hudiql COW {'copy of the MOR base' if args.cow_copy else 'bulk_insert'} {fmt(t_cow)}")
    say(f"  delta-rs write         {fmt(load.get('delta_rs'))}")

    # ---- rounds -------------------------------------------------------------------------------
    say(f"\n  {'round':>5} {'load':>5} {'MOR write':>10} {'MOR read':>9} {'COW write':>10} {'COW read':>9} "
        f"{'delta-rs':>9} {'MOR/delta':>9} {'MOR/COW':>8} {'groups':>6} {'logs':>5} {'log MiB':>7}")
    batch = None
    before_last_round = changes_after = None
    for r in range(rounds):
        if r == rounds - 1:
            before_last_round, changes_after = latest_instant(mor_dir)
        batch = RoundBatch(rows, parts, r)
        batch_df = batch.dataframe(spark).cache()
        assert batch_df.count() == batch.n_upd + batch.n_new
        batch_df.createOrReplaceTempView("batch")
        arrow_batch = batch_df.toArrow() if deltalake is not None else None
        rec: dict = {"round": r + 1, "load_avg_1min": os.getloadavg()[0], "batch_rows": batch.n_upd + batch.n_new}
        label = f"{rows}:round{r + 1}"
        # delta-rs first: its sum is the reference for the hudiql reads
        expected_sum = None
        if deltalake is not None:
            rec["delta_rs"], _ = timed(lambda: delta_merge(delta_dir, arrow_batch))
            got = delta_read(delta_dir)
            check(f"delta round {r + 1}", got, batch.expected_rows, None)
            expected_sum = got[1]
        rec["mor_write"], _ = timed(lambda: prof(f"{label} MOR write", lambda: hudi_upsert(spark, wh, "bench_mor", "batch")))
        rec["mor_read"], got = timed(lambda: prof(f"{label} MOR read", lambda: hudi_read(spark, wh, "bench_mor")))
        check(f"MOR round {r + 1}", got, batch.expected_rows, expected_sum)
        if not args.no_cow:
            rec["cow_write"], _ = timed(lambda: hudi_upsert(spark, wh, "bench_cow", "batch"))
            if not args.no_cow_read or r == rounds - 1:
                rec["cow_read"], got = timed(lambda: hudi_read(spark, wh, "bench_cow"))
                check(f"COW round {r + 1}", got, batch.expected_rows, expected_sum)
        rec.update(table_files(mor_dir))
        batch_df.unpersist()
        out["rounds"].append(rec)
        say(f"  {r + 1:5d} {rec['load_avg_1min']:5.1f} {fmt(rec['mor_write']):>10} {fmt(rec['mor_read']):>9} "
            f"{fmt(rec.get('cow_write')):>10} {fmt(rec.get('cow_read')):>9} {fmt(rec.get('delta_rs')):>9} "
            f"{ratio(rec['mor_write'], rec.get('delta_rs')):>9} {ratio(rec['mor_write'], rec.get('cow_write')):>8} "
            f"{rec['file_groups']:6d} {rec['log_files']:5d} {rec['log_bytes'] / 2**20:7.1f}")
    if quiet:
        return out
    if not args.quick_verify:  # two more merged scans of the MOR table: minutes at 20M rows
        hudi_verify_full(spark, wh, "bench_mor", batch, f"MOR after round {rounds}")
    if not args.no_cow:
        hudi_verify_full(spark, wh, "bench_cow", batch, f"COW after round {rounds}")
    sampled = [f"{t} after round {rounds}" for t, on in (("MOR", not args.quick_verify), ("COW", not args.no_cow)) if on]
    sampled += ["MOR after compaction"] if args.quick_verify else []
    say(f"  verified: the row count every round{', and sum(value) equal to delta-rs' if deltalake is not None else ''}; "
        f"sampled ids and count(DISTINCT id) on {', '.join(sampled)}")

    # ---- the last round's rows: incremental read / filtered snapshot read ---------------------
    incremental, filtered = [], []
    for i in range(max(1, args.read_repeats)):
        t_inc, got_inc = timed(lambda: prof(f"{rows}:incremental read #{i + 1}",
                                            lambda: hudi_changes(spark, wh, "bench_mor", changes_after)))
        t_snap, got_snap = timed(lambda: prof(f"{rows}:filtered snapshot read #{i + 1}",
                                              lambda: hudi_filtered_snapshot(spark, wh, "bench_mor", before_last_round)))
        if got_inc != got_snap or got_inc[0] != batch.n_upd + batch.n_new:
            raise AssertionError(f"incremental read {got_inc} != filtered snapshot {got_snap} "
                                 f"(expected {batch.n_upd + batch.n_new} rows)")
        incremental.append(t_inc)
        filtered.append(t_snap)
    out.update(incremental_read=incremental, filtered_snapshot_read=filtered)
    say(f"\n  the last round's {batch.n_upd + batch.n_new:,} rows, every column: incremental read "
        f"{' '.join(f'{x:.2f}' for x in incremental)} s; filtered snapshot read {' '.join(f'{x:.2f}' for x in filtered)} s; "
        f"ratio (median) {ratio(statistics.median(incremental), statistics.median(filtered))}; same rows (verified)")

    # ---- reads before / after compaction -------------------------------------------------------
    expected_sum = delta_read(delta_dir)[1] if deltalake is not None else None
    pre = [out["rounds"][-1]["mor_read"]]
    for i in range(args.read_repeats - 1):
        t, got = timed(lambda: prof(f"{rows}:read before compaction #{i + 2}", lambda: hudi_read(spark, wh, "bench_mor")))
        check("MOR read before compaction", got, batch.expected_rows, expected_sum)
        pre.append(t)
    before = table_files(mor_dir)
    out["compaction"], res = timed(lambda: prof(f"{rows}:compaction", lambda: hudi_compact(spark, wh, "bench_mor")))
    after = table_files(mor_dir)
    post = []
    for i in range(max(1, args.read_repeats)):
        t, got = timed(lambda: prof(f"{rows}:read after compaction #{i + 1}", lambda: hudi_read(spark, wh, "bench_mor")))
        check("MOR read after compaction", got, batch.expected_rows, expected_sum)
        post.append(t)
    hudi_verify_full(spark, wh, "bench_mor", batch, "MOR after compaction")
    out.update(read_before=pre, read_after=post, files_before=before, files_after=after,
               compaction_result=[list(r) for r in res])
    say(f"\n  compaction (scheduleandexecute): {fmt(out['compaction'])}  {[tuple(r) for r in res]}; "
        f"live snapshot before: {before['file_groups']} file groups, {before['slices_with_logs']} with logs, "
        f"{before['log_files']} log files ({before['log_bytes'] / 2**20:.1f} MiB); after: {after['file_groups']} file groups, "
        f"{after['log_files']} log files; verified")
    say(f"  snapshot read before compaction: {' '.join(f'{x:.2f}' for x in pre)} s; after: "
        f"{' '.join(f'{x:.2f}' for x in post)} s; ratio (median) "
        f"{ratio(statistics.median(pre), statistics.median(post))}")
    return out


def run_on_s3(spark, args, rows: int, rounds: int, name: str, quiet: bool = False) -> dict:
    """The MOR part of ``run_size`` with the warehouse on the local S3 server: the load, each
    round's write and snapshot read, compaction and the read after it (checked as there)."""
    wh = f"s3://{S3_BUCKET}/{name}"
    parts = args.partitions
    say = (lambda *a, **k: None) if quiet else print
    base_rows(spark, rows, parts).createOrReplaceTempView("base_rows")
    out: dict = {"rows": rows, "rounds": []}
    out["load"], _ = timed(lambda: hudi_load(spark, wh, "bench_mor", True, "base_rows",
                                                  index_props(args.index, args.buckets, not args.no_bloom_filters)))
    check("S3 MOR base", hudi_read(spark, wh, "bench_mor"), rows, None)
    say(f"\n=== on S3 (local moto server), {rows:,} rows: MOR bulk_insert {fmt(out['load'])} ===")
    say(f"  {'round':>5} {'MOR write':>10} {'MOR read':>9}")
    batch = None
    for r in range(rounds):
        batch = RoundBatch(rows, parts, r)
        batch_df = batch.dataframe(spark).cache()
        assert batch_df.count() == batch.n_upd + batch.n_new
        batch_df.createOrReplaceTempView("batch")
        rec = {"round": r + 1}
        rec["mor_write"], _ = timed(lambda: hudi_upsert(spark, wh, "bench_mor", "batch"))
        rec["mor_read"], got = timed(lambda: hudi_read(spark, wh, "bench_mor"))
        check(f"S3 MOR round {r + 1}", got, batch.expected_rows, None)
        batch_df.unpersist()
        out["rounds"].append(rec)
        say(f"  {r + 1:5d} {fmt(rec['mor_write']):>10} {fmt(rec['mor_read']):>9}")
    if quiet:
        return out
    out["compaction"], _ = timed(lambda: hudi_compact(spark, wh, "bench_mor"))
    out["read_after"], got = timed(lambda: hudi_read(spark, wh, "bench_mor"))
    check("S3 MOR read after compaction", got, batch.expected_rows, None)
    hudi_verify_full(spark, wh, "bench_mor", batch, "S3 MOR after compaction")
    say(f"  compaction {fmt(out['compaction'])}; read after compaction {fmt(out['read_after'])}; verified")
    return out


def fmt_x(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}x"


def summarize(args, results: dict) -> None:
    print("\n=== summary (medians over the rounds) ===")
    verdicts = {}
    for size, out in results["runs"].items():
        rs = out["rounds"]
        med = {k: (statistics.median([x[k] for x in rs if x.get(k) is not None]) if any(x.get(k) is not None for x in rs) else None)
               for k in ("mor_write", "mor_read", "cow_write", "cow_read", "delta_rs")}
        mx = {k: max((x[k] / x[d] for x in rs if x.get(k) and x.get(d)), default=None)
              for k, d in (("mor_write", "delta_rs"),)}
        out["median"] = med
        pre, post = statistics.median(out["read_before"]), statistics.median(out["read_after"])
        print(f"  {int(size):>11,} rows: MOR write {fmt(med['mor_write'])}, COW write {fmt(med['cow_write'])}, "
              f"delta-rs {fmt(med['delta_rs'])}; MOR/delta {ratio(med['mor_write'], med['delta_rs'])} "
              f"(worst round {fmt_x(mx['mor_write'])}), "
              f"MOR/COW {ratio(med['mor_write'], med['cow_write'])}; MOR read {fmt(med['mor_read'])}, COW read "
              f"{fmt(med['cow_read'])}; compaction {fmt(out['compaction'])}; read before/after compaction "
              f"{pre:.2f}/{post:.2f}s = {ratio(pre, post)}")
        verdicts[size] = {
            "mor_vs_delta": med["mor_write"] / med["delta_rs"] if med["delta_rs"] else None,
            "mor_vs_cow": med["mor_write"] / med["cow_write"] if med["cow_write"] else None,
            "read_ratio": pre / post,
            "incremental_ratio": statistics.median(out["incremental_read"]) / statistics.median(out["filtered_snapshot_read"]),
        }
    for size, s3 in results.get("s3", {}).items():
        local = results["runs"][size]
        figures = {
            "MOR bulk_insert": (s3["load"], local["load"]["hudiql_mor_bulk_insert"]),
            "MOR upsert round (median)": (statistics.median(r["mor_write"] for r in s3["rounds"]),
                                          local["median"]["mor_write"]),
            "MOR snapshot read (median)": (statistics.median(r["mor_read"] for r in s3["rounds"]),
                                           local["median"]["mor_read"]),
            "compaction": (s3["compaction"], local["compaction"]),
            "read after compaction": (s3["read_after"], statistics.median(local["read_after"])),
        }
        s3["vs_local"] = {name: a / b for name, (a, b) in figures.items()}
        print(f"\n  S3 (local moto server) / local disk, {int(size):,} rows:")
        for name, (a, b) in figures.items():
            print(f"    {name:28s} {fmt(a):>9} / {fmt(b):>9} = {ratio(a, b)}")
    sizes = sorted(results["runs"], key=int)
    big = sizes[-1]
    v = verdicts[big]
    print(f"\ngoals, judged at the largest size ({int(big):,} rows; the issue states them at 20M):")

    def line(name, val, goal):
        state = "-" if val is None else ("MET" if val <= goal else "MISSED")
        print(f"  {name:52s} {('-' if val is None else f'{val:.2f}x'):>8}  (goal <= {goal}x)  {state}")

    line("MOR upsert round / delta-rs merge (median)", v["mor_vs_delta"], GOALS["mor_vs_delta"])
    line("MOR upsert round / COW upsert round (median)", v["mor_vs_cow"], GOALS["mor_vs_cow"])
    line("MOR snapshot read before / after compaction", v["read_ratio"], GOALS["read_ratio"])
    line("incremental read of the last round / filtered snapshot", v["incremental_ratio"], GOALS["incremental_ratio"])
    growth = None
    if len(sizes) > 1:
        growth = results["runs"][big]["median"]["mor_write"] / results["runs"][sizes[0]]["median"]["mor_write"]
        line(f"MOR round growth {int(sizes[0]):,} -> {int(big):,} rows", growth, GOALS["growth"])
    else:
        print("  MOR round growth across sizes: needs two sizes (--sizes a,b), or compare two runs' --json")
    results["goals"] = {"at": big, **v, "growth": growth}


if __name__ == "__main__":
    sys.exit(main())
