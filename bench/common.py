"""What every benchmark in bench/ shares: the environment, the hudiql snapshot, the SparkSession,
the generated data, timing, formatting, the delta-rs baseline's merge and ``--profile``.

The scripts import from here (``from common import ...``; ``python bench/<script>.py`` puts bench/
first on ``sys.path``) and keep only what they measure. Importing this module points Spark's Python
workers at the running interpreter, so do it before a SparkSession starts.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
import time
from types import ModuleType
from typing import Any, Callable, TypeVar

# Spark's Python workers must run the venv's interpreter (its pyarrow, pandas and hudiql).
os.environ["PYSPARK_PYTHON"] = sys.executable
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the snapshot's source

import pyarrow as pa  # noqa: E402
from pyspark.sql import Column, DataFrame, SparkSession  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

deltalake: ModuleType | None
try:
    import deltalake
except ImportError:  # optional baseline: pip install -e '.[bench]'
    deltalake = None

T = TypeVar("T")

# ---------------------------------------------------------------------------------------------
# the data of every benchmark: ids 0..N-1, part = p<id mod partitions>, ts = 1
# ---------------------------------------------------------------------------------------------
COLUMNS = ["id", "name", "value", "ts", "part"]
COLUMNS_DDL = "id BIGINT, name STRING, value DOUBLE, ts BIGINT, part STRING"
ARROW_SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("value", pa.float64()),
                          ("ts", pa.int64()), ("part", pa.string())])
# One format for Spark's format_string and Python's %, so generated rows and checks agree.
PART_FORMAT = "p%03d"


def part_of(id_col: Column, partitions: int) -> Column:
    """The partition value of an id column (Spark expression)."""
    return F.format_string(PART_FORMAT, (id_col % F.lit(partitions)).cast("int"))


def part_name(i: int, partitions: int) -> str:
    """The partition value of one id (Python), equal to ``part_of`` of that id."""
    return PART_FORMAT % (i % partitions)


def base_rows(spark: SparkSession, rows: int, partitions: int) -> DataFrame:
    """The base table: ids 0..rows-1, name 'name_<id>', value id * 1.5, ts 1, part ``part_of(id)``."""
    r = spark.range(rows)
    return r.select(
        F.col("id").cast("bigint").alias("id"),
        F.concat(F.lit("name_"), F.col("id").cast("string")).alias("name"),
        (F.col("id").cast("double") * F.lit(1.5)).alias("value"),
        F.lit(1).cast("bigint").alias("ts"),
        part_of(F.col("id"), partitions).alias("part"),
    )


def arrow_base(rows: int, partitions: int):
    """The base rows of ``base_rows`` built directly in Arrow (for delta-rs), without Spark."""
    import numpy as np
    import pyarrow.compute as pc

    ids = pa.array(np.arange(rows, dtype=np.int64))
    names = pc.binary_join_element_wise("name_", pc.cast(ids, pa.string()), "")
    labels = pa.array([part_name(i, partitions) for i in range(partitions)])
    part = pc.take(labels, pa.array(np.arange(rows, dtype=np.int64) % partitions))
    return pa.table({"id": ids, "name": names, "value": pc.multiply(pc.cast(ids, pa.float64()), 1.5),
                     "ts": pa.array(np.ones(rows, dtype=np.int64)), "part": part})


def hudi_table_ddl(name: str, props: list[str] | None = None) -> str:
    """``CREATE TABLE`` of a hudiql table with the benchmark's columns, keyed on id, partitioned by part."""
    tblprops = ["primaryKey='id'", "preCombineField='ts'", *(props or [])]
    return (f"CREATE TABLE {name} ({COLUMNS_DDL}) USING hudi "
            f"PARTITIONED BY (part) TBLPROPERTIES ({', '.join(tblprops)})")


# ---------------------------------------------------------------------------------------------
# hudiql snapshot and Spark
# ---------------------------------------------------------------------------------------------
def snapshot_hudiql(workdir: str, ref: str | None) -> tuple[ModuleType, str]:
    """Copy the hudiql package (working tree, or git ``ref``) into ``workdir`` and import it from there.

    The package may be edited while a benchmark runs; the driver, Spark's Python workers and any
    CLI process must all run the same code, so each gets the snapshot first on its path. Returns
    the imported package and a description of the snapshot.
    """
    root = os.path.join(workdir, "_hudiql_src")
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    if ref:
        # The package's folder at ``ref``: src/hudiql, adapter/hudiql before the source root's rename.
        folder = next(f for f in ("src/hudiql", "adapter/hudiql")
                      if subprocess.run(["git", "-C", REPO, "cat-file", "-e", f"{ref}:{f}"]).returncode == 0)
        archive = subprocess.run(["git", "-C", REPO, "archive", ref, folder],
                                 check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", root, "--strip-components=1"], input=archive, check=True)
    else:
        shutil.copytree(os.path.join(REPO, "src", "hudiql"), os.path.join(root, "hudiql"),
                        ignore=shutil.ignore_patterns("__pycache__"))
    sys.path.insert(0, root)
    os.environ["PYTHONPATH"] = os.pathsep.join([root, *filter(None, [os.environ.get("PYTHONPATH")])])
    import hudiql as module

    assert os.path.dirname(os.path.dirname(os.path.abspath(module.__file__))) == root, module.__file__
    head = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", ref or "HEAD"],
                          capture_output=True, text=True).stdout.strip()
    if ref:
        return module, f"git {ref} ({head})"
    dirty = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "src/hudiql"],
                           capture_output=True, text=True).stdout
    return module, f"working tree at {head}" + (" with uncommitted changes" if dirty.strip() else "")


def spark_session(app: str, shuffle_partitions: int, *, driver_memory: str = "4g", arrow: bool = True,
                  event_log: str | None = None, configs: dict[str, str] | None = None) -> SparkSession:
    """The benchmarks' local[2] SparkSession (no UI, UTC); each script states what differs.

    ``arrow``: Arrow conversions between Spark and pandas. ``event_log``: a directory for Spark's
    event log (``--profile`` reads the jobs and stages from it). ``configs``: further settings.
    """
    settings = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.memory": driver_memory,
        "spark.sql.shuffle.partitions": str(shuffle_partitions),
        "spark.sql.session.timeZone": "UTC",
    }
    if arrow:
        settings["spark.sql.execution.arrow.pyspark.enabled"] = "true"
    if event_log:
        os.makedirs(event_log, exist_ok=True)
        settings.update({
            "spark.eventLog.enabled": "true",
            "spark.eventLog.dir": "file://" + event_log,
            "spark.eventLog.compress": "false",
            "spark.eventLog.rolling.enabled": "false",
        })
    settings.update(configs or {})
    builder = SparkSession.builder.master("local[2]").appName(app)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


# ---------------------------------------------------------------------------------------------
# timing, files, formatting
# ---------------------------------------------------------------------------------------------
def timed(fn: Callable[[], T]) -> tuple[float, T]:
    """(wall seconds, result) of ``fn()``."""
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def copy_tree(src: str, dst: str) -> None:
    """Replace ``dst`` with a copy of ``src``: every timed run starts from a fresh base table."""
    if os.path.exists(dst):
        shutil.rmtree(dst)
    shutil.copytree(src, dst)


def du(path: str) -> int:
    """Bytes of every file under ``path``."""
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            total += os.path.getsize(os.path.join(root, f))
    return total


def fmt(seconds: float | None) -> str:
    """Seconds for a table column ("-" when not measured)."""
    return "-" if seconds is None else f"{seconds:7.2f}s"


def save_json(path: str | None, args: Any, results: dict) -> None:
    """The run's arguments and results as JSON at ``path`` (``--json``), when given."""
    if path:
        with open(path, "w") as f:
            json.dump({"args": vars(args), "results": results}, f, indent=2)


def ratio(a: float | None, b: float | None) -> str:
    """``a / b`` for a table column ("-" when either is missing)."""
    return "-" if a is None or b is None or b == 0 else f"{a / b:5.2f}x"


# ---------------------------------------------------------------------------------------------
# the delta-rs baseline
# ---------------------------------------------------------------------------------------------
def delta_merge(path: str, source: pa.Table) -> dict[str, Any]:
    """Upsert ``source`` into the Delta table at ``path``; returns delta-rs's metrics.

    The predicate names the partition column too and ``streamed_exec=False`` lets delta-rs prune
    the target's partitions from the source's values: its best case.
    """
    assert deltalake is not None, "delta-rs baseline without deltalake installed"
    return (
        deltalake.DeltaTable(path)
        .merge(source=source, predicate="t.id = s.id AND t.part = s.part",
               source_alias="s", target_alias="t", streamed_exec=False)
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )


# ---------------------------------------------------------------------------------------------
# --profile: driver timings of hudiql's statements, matched against Spark's event log
# ---------------------------------------------------------------------------------------------
class Profile:
    """Time windows of hudiql writes, matched afterwards against the Spark event log."""

    def __init__(self) -> None:
        self.windows: list[tuple[str, float, float]] = []
        self.collects: list[tuple[str, str, float]] = []  # (label, call site, seconds)
        self.listings: list[tuple[str, float]] = []
        self.current: str | None = None

    def install(self) -> None:
        """Time every DataFrame.collect and file-system-view listing made by hudiql's driver."""
        from hudiql.table import fsview

        from pyspark.sql.classic.dataframe import DataFrame as ClassicDataFrame

        profile = self
        original_collect = ClassicDataFrame.collect

        def collect(df):
            frame = sys._getframe(1)
            site = f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno} {frame.f_code.co_name}"
            start = time.perf_counter()
            df.sparkSession.sparkContext.setJobDescription(site)
            try:
                return original_collect(df)
            finally:
                df.sparkSession.sparkContext.setJobDescription(None)
                if profile.current:
                    profile.collects.append((profile.current, site, time.perf_counter() - start))

        ClassicDataFrame.collect = collect
        original_load = fsview.FileSystemView.load.__func__

        def load(cls, storage, timeline, partitions=None):
            start = time.perf_counter()
            try:
                return original_load(cls, storage, timeline, partitions)
            finally:
                if profile.current:
                    profile.listings.append((profile.current, time.perf_counter() - start))

        fsview.FileSystemView.load = classmethod(load)

    def run(self, label: str, fn: Callable[[], T]) -> T:
        """``fn()``, recorded as the window ``label``."""
        self.current = label
        start = time.time()
        try:
            return fn()
        finally:
            self.windows.append((label, start * 1000, time.time() * 1000))
            self.current = None


def report_profile(event_log: str, profile: Profile, results: dict) -> None:
    """Print, per recorded window, the driver's collects and listings and the Spark jobs / stages
    of the newest event log in ``event_log`` (plus ``results``' cProfile texts and merge stats)."""
    logs = [p for p in glob.glob(os.path.join(event_log, "*")) if not p.endswith(".inprogress")]
    if not logs:
        print("no event log found")
        return
    jobs, stages, tasks = {}, {}, {}
    with open(max(logs, key=os.path.getmtime)) as f:
        for line in f:
            ev = json.loads(line)
            kind = ev.get("Event")
            if kind == "SparkListenerJobStart":
                props = ev.get("Properties", {})
                jobs[ev["Job ID"]] = {"submit": ev["Submission Time"], "stages": ev["Stage IDs"],
                                      "site": props.get("spark.job.description") or props.get("callSite.short", "")}
            elif kind == "SparkListenerJobEnd":
                jobs[ev["Job ID"]]["end"] = ev["Completion Time"]
            elif kind == "SparkListenerStageCompleted":
                info = ev["Stage Info"]
                stages[info["Stage ID"]] = {
                    "name": info["Stage Name"], "tasks": info["Number of Tasks"],
                    "submit": info.get("Submission Time"), "end": info.get("Completion Time"),
                    "rdds": [r.get("Name", "") for r in info.get("RDD Info", [])],
                }
            elif kind == "SparkListenerTaskEnd":
                m = ev.get("Task Metrics") or {}
                t = tasks.setdefault(ev["Stage ID"], {"run_ms": 0, "max_ms": 0, "n": 0, "read_recs": 0,
                                                      "shuffle_read_recs": 0})
                run_ms = m.get("Executor Run Time", 0)
                t["run_ms"] += run_ms
                t["max_ms"] = max(t["max_ms"], run_ms)
                t["n"] += 1
                t["read_recs"] += (m.get("Input Metrics") or {}).get("Records Read", 0)
                t["shuffle_read_recs"] += (m.get("Shuffle Read Metrics") or {}).get("Total Records Read", 0)
    for phase, text in results.get("cprofile", {}).items():
        print(f"\n==== cProfile of one extra hudiql write, phase {phase} (driver side, cumulative) ====")
        print(text)
    print("\n==== profile of the hudiql writes (Spark event log + driver timings) ====")
    for label, start, end in profile.windows:
        print(f"\n-- {label}: wall {(end - start) / 1000:.2f}s")
        for lab, site, sec in profile.collects:
            if lab == label:
                print(f"   driver collect {sec:6.2f}s  at {site}")
        listing = sum(sec for lab, sec in profile.listings if lab == label)
        print(f"   file system view listings: {listing:.3f}s")
        merge = results.get("merge_stats", {}).get(label)
        if merge:
            ms = merge["upsert_ms"]
            print(f"   merge tasks (from the commit): {merge['file_groups']} file groups, {merge['rows_written']:,} "
                  f"rows written, merge+write time per group sum {sum(ms) / 1000:.2f}s max {max(ms) / 1000:.2f}s")
        for jid, job in sorted(jobs.items()):
            if not (start <= job["submit"] <= end):
                continue
            print(f"   job {jid:3d} {((job.get('end') or job['submit']) - job['submit']) / 1000:6.2f}s  {job['site']}")
            for sid in sorted(job["stages"]):
                st = stages.get(sid)
                if st is None or st["submit"] is None:
                    continue  # skipped (reused shuffle)
                t = tasks.get(sid, {})
                print(f"       stage {sid:3d} {(st['end'] - st['submit']) / 1000:6.2f}s  tasks {st['tasks']:3d}  "
                      f"task time sum {t.get('run_ms', 0) / 1000:6.2f}s max {t.get('max_ms', 0) / 1000:6.2f}s  "
                      f"input recs {t.get('read_recs', 0):>9,} shuffle recs {t.get('shuffle_read_recs', 0):>9,}  "
                      f"{st['name']}")
