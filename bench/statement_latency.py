#!/usr/bin/env python
"""Benchmark: the latency of everyday statements on hudiql COW and MOR tables vs Spark SQL on parquet vs delta-rs.

Usage:
    python bench/statement_latency.py [--rows 100000] [--partitions 10] [--repeats 3] [--warmup 1]
                                      [--table-version 6|8|9] [--metadata true|false] [--record-index]
                                      [--table-option KEY=VALUE ...]
                                      [--workdir DIR] [--hudiql-ref HEAD] [--skip-build] [--quick]
                                      [--json FILE]

What it measures, in one process with one local[2] SparkSession, on tables of ``--rows`` rows in
``--partitions`` partitions (``id`` 0..N-1, ``part`` = p<id mod partitions>, ``ts`` = 1):

* systems: a hudiql copy-on-write and a hudiql merge-on-read table (``CREATE TABLE ... USING hudi
  PARTITIONED BY (part) TBLPROPERTIES (primaryKey='id', preCombineField='ts', type=...)``, loaded
  untimed with ``bulk_insert``; the MOR table keeps its defaults, inline compaction included; in
  table version ``--table-version``, whose 8 and 9 keep the metadata table unless ``--metadata
  false``; ``--record-index``: with the metadata table's record index, which writes and
  ``WHERE id = k`` use to find keys), a
  partitioned parquet table in Spark's own catalog (``CREATE TABLE pq ... USING parquet``), and a
  partitioned Delta table written and changed with delta-rs (``deltalake``).
* statements, each timed on its own, interleaved over the systems, ``--warmup`` untimed runs then
  ``--repeats`` timed runs (medians reported):

  ========================  ========================================  =======================================  ==========================
  statement                 hudiql (``session.sql``)                  Spark SQL on parquet                     delta-rs
  ========================  ========================================  =======================================  ==========================
  insert 10 rows            ``INSERT INTO t VALUES`` 5 upd + 5 new    ``INSERT INTO pq VALUES`` same rows      ``merge`` of the rows
  merge 1k rows             ``MERGE INTO t USING src`` 500 + 500      ``INSERT INTO pq SELECT * FROM src``     ``merge`` of the rows
  update 1 row              ``UPDATE t SET name = 'x' WHERE id = k``  ``INSERT INTO pq VALUES`` one row (*)    ``DeltaTable.update``
  delete 1 row              ``DELETE FROM t WHERE id = k``            ``INSERT INTO pq VALUES`` one row (*)    ``DeltaTable.delete``
  count                     ``SELECT count(*) FROM t``                ``SELECT count(*) FROM pq``              dataset ``count_rows()``
  point lookup              ``SELECT * FROM t WHERE id = k``          ``SELECT * FROM pq WHERE id = k``        filtered dataset read
  ========================  ========================================  =======================================  ==========================

  (*) a parquet table cannot UPDATE or DELETE a row: the baseline is the smallest write Spark SQL
  can do on it, a one-row INSERT (of the changed row). Updated and deleted ids, and new ids, are fresh in every run and
  spread over the partitions (consecutive ids), the same for every system. ``src`` is a cached
  Spark temporary view (materialized before the timer starts; delta-rs gets it as an Arrow table).
  A hudiql write's time covers ``session.sql`` and ``.collect()`` of its one-row result; a query's
  time covers ``session.sql(...).collect()``; delta-rs times include opening the table.

* the Spark jobs of every hudiql (and Spark SQL) statement: a job group is set on the calling
  thread before the statement and ``statusTracker().getJobIdsForGroup`` read after it; jobs that
  started meanwhile outside the group (another thread) are added and reported. (Checked against
  the job ids: a marker job before and after a statement are that many ids apart.)
* ``hudiql build --project-dir models_example``, first and second run, each a fresh CLI process on
  a copy of the project in the work dir (the repository's folder is not touched), with the
  project's default profile (local Spark, ``<project>/warehouse``), before the benchmark's own
  SparkSession starts; the per-node times of ``target/run_results.json`` go to ``--json``.
  ``--skip-build`` skips it.

Every write is verified outside the timed region: the statement's result (DML counts, delta-rs
metrics), sampled ids carry the new values (or are gone), and after each write run every table
holds exactly the expected number of rows; the queries' results are checked too. A failed
statement or check stops the run: what was measured is still reported (and written to
``--json``), with the error, and the exit code is 1. hudiql is imported from a snapshot of its
package taken at start (working tree, or ``--hudiql-ref``), so that edits to the package during a
run cannot mix two versions; the build CLI runs the same snapshot. ``--quick`` is a smoke run
(10,000 rows, one timed run, no warm-up). A default run takes about 10 minutes on 2 cores. The
shared helpers (data, Spark session, snapshot, timing, the delta-rs merge) are in ``bench/common.py``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession

from common import (
    ARROW_SCHEMA, COLUMNS_DDL, REPO, base_rows, delta_merge, deltalake, fmt, hudi_table_ddl, part_name,
    snapshot_hudiql, spark_session, timed,
)

hudiql: Any = None  # imported by main() from the snapshot (see common.snapshot_hudiql)

HUDI_TABLES = {"cow": "bench_cow", "mor": "bench_mor"}
PARQUET_TABLE = "pq"

# (key, label, what the Spark baseline does, time goal as a ratio to it, job goal)
STATEMENTS = [
    ("insert", "INSERT 10 rows (5 upd, 5 new)", "INSERT INTO pq VALUES (10 rows)", 2.0, 4),
    ("merge", "MERGE 1k rows (500 upd, 500 new)", "INSERT INTO pq SELECT * FROM src", 2.0, 6),
    ("update", "UPDATE 1 row", "INSERT INTO pq VALUES (1 row)*", 2.0, 4),
    ("delete", "DELETE 1 row", "INSERT INTO pq VALUES (1 row)*", 2.0, 4),
    ("count", "SELECT count(*)", "SELECT count(*) FROM pq", None, None),
    ("lookup", "point lookup by id", "SELECT * FROM pq WHERE id = k", None, None),
]
WRITES = {"insert", "merge", "update", "delete"}


# ---------------------------------------------------------------------------------------------
# setup
# ---------------------------------------------------------------------------------------------
def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=None, help="rows of each table (default 100000; --quick: 10000)")
    p.add_argument("--partitions", type=int, default=10)
    p.add_argument("--merge-rows", type=int, default=1000, help="rows of the MERGE source (half updates, half new)")
    p.add_argument("--repeats", type=int, default=None, help="timed runs per statement and system (default 3; --quick: 1)")
    p.add_argument("--warmup", type=int, default=None, help="untimed runs before them (default 1; --quick: 0)")
    p.add_argument("--shuffle-partitions", type=int, default=2)
    p.add_argument("--table-version", default="6", choices=["6", "8", "9"], help="the hudiql tables' version")
    p.add_argument("--metadata", default="true", choices=["true", "false"],
                   help="hoodie.metadata.enable of the hudiql tables (versions 8 and 9: the metadata table)")
    p.add_argument("--record-index", action="store_true",
                   help="hoodie.metadata.record.index.enable=true on the hudiql tables (version 8 or 9)")
    p.add_argument("--table-option", action="append", default=[], metavar="KEY=VALUE",
                   help="another table option of the hudiql tables (repeatable), e.g. hoodie.index.type=BLOOM")
    p.add_argument("--workdir", default=None, help="default: a temp dir, deleted at the end (a given dir is kept)")
    p.add_argument("--hudiql-ref", default=None,
                   help="benchmark hudiql as of this git ref (default: a snapshot of the working tree)")
    p.add_argument("--skip-build", action="store_true", help="do not time `hudiql build` of models_example")
    p.add_argument("--quick", action="store_true", help="smoke run: 10,000 rows, 1 timed run, no warm-up")
    p.add_argument("--json", default=None, help="write every figure to this file")
    args = p.parse_args(argv)
    quick = args.quick
    args.rows = args.rows or (10_000 if quick else 100_000)
    args.repeats = args.repeats or (1 if quick else 3)
    args.warmup = args.warmup if args.warmup is not None else (0 if quick else 1)
    runs = args.warmup + args.repeats
    needed = runs * (5 + args.merge_rows // 2 + 2) + args.partitions
    if args.rows < needed:
        raise SystemExit(f"--rows {args.rows} is too small: the runs update or delete {needed} distinct existing ids")
    return args


# ---------------------------------------------------------------------------------------------
# timing and job counting
# ---------------------------------------------------------------------------------------------
class Stopwatch:
    """Times one statement and counts the Spark jobs it launched.

    The job group is a property of the calling thread, so jobs started from another thread would
    escape it: those are caught by comparing the jobs outside any group before and after the
    statement, and added (``stray``). Spark's status store is fed asynchronously, so the job ids
    are read once they have stopped changing and every job among them has ended.
    """

    def __init__(self, spark: SparkSession) -> None:
        self.sc = spark.sparkContext
        self.tracker = self.sc.statusTracker()
        self.n = 0
        self.stray_total = 0

    def _ended(self, job: int) -> bool:
        info = self.tracker.getJobInfo(job)
        return info is not None and info.status in ("SUCCEEDED", "FAILED")

    def _settled(self, group: str | None) -> tuple[set[int], set[int]]:
        """(job ids of ``group``, job ids outside any group), once the status store has caught up."""
        last, since = None, time.perf_counter()
        deadline = since + 10
        while True:
            ids = (set(self.tracker.getJobIdsForGroup(group)) if group else set(),
                   set(self.tracker.getJobIdsForGroup(None)))
            now = time.perf_counter()
            if ids != last:
                last, since = ids, now
            elif (all(self._ended(j) for j in ids[0]) and now - since >= 0.1) or now > deadline:
                return ids
            time.sleep(0.02)

    def run(self, fn: Callable[[], Any]) -> tuple[float, Any, int, int]:
        """(seconds, fn's result, Spark jobs, how many of them ran outside the job group)."""
        self.n += 1
        group = f"bench-statement-{self.n}"
        _, before = self._settled(None)
        self.sc.setJobGroup(group, group)
        start = time.perf_counter()
        try:
            result = fn()
        finally:
            seconds = time.perf_counter() - start
            self.sc.setLocalProperty("spark.jobGroup.id", None)
            self.sc.setLocalProperty("spark.job.description", None)
        grouped, after = self._settled(group)
        stray = len(after - before)
        self.stray_total += stray
        return seconds, result, len(grouped) + stray, stray


# ---------------------------------------------------------------------------------------------
# data: which ids each run touches, and what the upsert tables must hold
# ---------------------------------------------------------------------------------------------
class Data:
    """Hands out fresh ids and keeps the expected content of the hudiql and Delta tables.

    Existing ids come in order from a cursor (consecutive ids lie in consecutive partitions), new
    ids count up from ``rows``; no id is touched twice, so every run of a statement does the same
    work. The hudiql and Delta tables get the same changes, so one model serves both.
    """

    def __init__(self, rows: int, partitions: int) -> None:
        self.rows, self.partitions = rows, partitions
        self.cursor = 0
        self.next_new = rows
        self.version = 1  # ts of the latest batch: a later batch wins the preCombine comparison
        self.changed: dict[int, tuple[str, float, int]] = {}  # id -> (name, value, ts) not the base values
        self.deleted: set[int] = set()
        self.count = rows

    def existing(self, n: int) -> list[int]:
        ids = list(range(self.cursor, self.cursor + n))
        self.cursor += n
        return ids

    def new(self, n: int) -> list[int]:
        ids = list(range(self.next_new, self.next_new + n))
        self.next_new += n
        return ids

    def batch(self, n_upd: int, n_new: int) -> list[tuple]:
        """Rows (id, name, value, ts, part): ``n_upd`` updates of existing ids, ``n_new`` new ids."""
        self.version += 1
        return [(i, f"v{self.version}_{i}", float(-i), self.version, part_name(i, self.partitions))
                for i in self.existing(n_upd) + self.new(n_new)]

    def expected(self, i: int) -> tuple[str, float, int] | None:
        """(name, value, ts) that id ``i`` holds now, or None when it is not in the table."""
        if i in self.deleted:
            return None
        if i in self.changed:
            return self.changed[i]
        return (f"name_{i}", i * 1.5, 1) if i < self.rows else None

    def apply(self, run: Run) -> None:
        """Record what ``run`` did (after every system ran it)."""
        if run.key in ("insert", "merge"):
            for i, name, value, ts, _ in run.rows:
                self.count += self.expected(i) is None
                self.changed[i] = (name, value, ts)
        elif run.key == "update":
            _, value, ts = self.expected(run.id)
            self.changed[run.id] = ("x", value, ts)
        elif run.key == "delete":
            self.deleted.add(run.id)
            self.count -= 1


@dataclass
class Run:
    """The input of one run of a statement, built before any timer starts."""

    key: str
    rows: list[tuple] = field(default_factory=list)  # INSERT / MERGE: the upsert rows
    id: int | None = None  # UPDATE / DELETE / lookup: the id
    parquet_rows: list[tuple] = field(default_factory=list)  # what the parquet baseline inserts
    arrow: Any = None  # delta-rs merge source
    cleanup: Callable[[], None] = lambda: None

    def sample_after(self, data: Data) -> dict[int, tuple | None]:
        """Some ids the write touched and what each must hold after it (None: gone)."""
        if self.key in ("insert", "merge"):
            rows = self.rows if len(self.rows) <= 10 else self.rows[:3] + self.rows[len(self.rows) // 2 - 2:][:4] + self.rows[-3:]
            return {i: (name, value, ts) for i, name, value, ts, _ in rows}
        if self.key == "update":
            _, value, ts = data.expected(self.id)
            return {self.id: ("x", value, ts)}
        return {self.id: None}


def prepare(spark: SparkSession, key: str, data: Data, args: argparse.Namespace) -> Run:
    if key in ("insert", "merge"):
        n = 10 if key == "insert" else args.merge_rows
        rows = data.batch(n // 2, n - n // 2)
        run = Run(key, rows=rows, parquet_rows=rows, arrow=arrow_rows(rows) if deltalake else None)
        if key == "merge":
            src = spark.createDataFrame(rows, COLUMNS_DDL).cache()
            assert src.count() == len(rows)
            src.createOrReplaceTempView("src")

            def cleanup() -> None:
                spark.catalog.dropTempView("src")
                src.unpersist()
            run.cleanup = cleanup
        return run
    (k,) = data.existing(1)  # an id still holding its base values
    run = Run(key, id=k)
    if key in ("update", "delete"):
        # parquet cannot change a row in place: its baseline writes the changed row once more
        _, value, ts = data.expected(k)
        run.parquet_rows = [(k, "x", value, ts, part_name(k, data.partitions))]
    return run


def sql_values(rows: list[tuple]) -> str:
    def lit(v: Any) -> str:
        if isinstance(v, str):
            return "'" + v.replace("'", "''") + "'"
        if isinstance(v, float):
            return f"CAST({v!r} AS DOUBLE)"
        return str(v)
    return ", ".join("(" + ", ".join(lit(v) for v in row) + ")" for row in rows)


def arrow_rows(rows: list[tuple]) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(ARROW_SCHEMA.names, r)) for r in rows], schema=ARROW_SCHEMA)


# ---------------------------------------------------------------------------------------------
# the systems: each gives the timed call of a statement and checks its outcome (untimed)
# ---------------------------------------------------------------------------------------------
class Hudiql:
    def __init__(self, spark: SparkSession, warehouse: str, kind: str, version: str = "6",
                 metadata: str = "true", record_index: bool = False, options: tuple[str, ...] = ()) -> None:
        self.kind, self.table = kind, HUDI_TABLES[kind]
        self.name = f"hudiql {kind}"
        self.spark, self.warehouse = spark, warehouse
        self.version, self.metadata, self.record_index = version, metadata, record_index
        self.options = options
        self.session = self._connect()

    def _connect(self):
        session = hudiql.connect(warehouse=self.warehouse, spark=self.spark)
        if self.version != "6":
            session.sql(f"SET hoodie.metadata.enable={self.metadata}")
        return session

    def load(self) -> None:
        loader = self._connect()  # its SET stays its own
        loader.sql("SET hoodie.spark.sql.insert.into.operation=bulk_insert")
        # INSERT upserts in every version (Hudi 1.1's, version 9's, default is insert): the statement measured
        props = [f"type='{self.kind}'", f"'hoodie.write.table.version'='{self.version}'",
                 "'hoodie.spark.sql.insert.into.operation'='upsert'"]
        if self.record_index:
            props.append("'hoodie.metadata.record.index.enable'='true'")
        props += [f"'{key}'='{value}'" for key, value in (o.split("=", 1) for o in self.options)]
        loader.sql(hudi_table_ddl(self.table, props))
        loader.sql(f"INSERT INTO {self.table} SELECT id, name, value, ts, part FROM base_rows").collect()

    def statement(self, run: Run) -> Callable[[], Any]:
        t = self.table
        text = {
            "insert": f"INSERT INTO {t} VALUES {sql_values(run.rows)}",
            "merge": (f"MERGE INTO {t} AS t USING src AS s ON t.id = s.id "
                      "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"),
            "update": f"UPDATE {t} SET name = 'x' WHERE id = {run.id}",
            "delete": f"DELETE FROM {t} WHERE id = {run.id}",
            "count": f"SELECT count(*) AS n FROM {t}",
            "lookup": f"SELECT * FROM {t} WHERE id = {run.id}",
        }[run.key]
        return lambda: self.session.sql(text).collect()

    def check(self, run: Run, result: list, data: Data) -> None:
        where = f"{self.name} {run.key}"
        if run.key in ("insert", "merge"):
            updates = sum(1 for r in run.rows if data.expected(r[0]) is not None)
            want = {"num_affected_rows": len(run.rows), "num_updated_rows": updates,
                    "num_inserted_rows": len(run.rows) - updates}
        elif run.key in ("update", "delete"):
            want = {"num_affected_rows": 1, f"num_{run.key}d_rows": 1}
        elif run.key == "count":
            want = {"n": data.count}
        else:
            got = [(r["name"], r["value"], r["ts"]) for r in result]
            if got != [data.expected(run.id)]:
                raise AssertionError(f"{where} of id {run.id}: {got}, expected [{data.expected(run.id)}]")
            return
        got = result[0].asDict() if result else {}
        if any(got.get(k) != v for k, v in want.items()):
            raise AssertionError(f"{where}: result {got}, expected {want}")

    def rows(self, ids: list[int]) -> dict[int, tuple]:
        got = self.session.sql(f"SELECT id, name, value, ts FROM {self.table} "
                               f"WHERE id IN ({', '.join(map(str, ids))})").collect()
        return {r["id"]: (r["name"], r["value"], r["ts"]) for r in got}

    def count(self) -> int:
        return self.session.sql(f"SELECT count(*) AS n FROM {self.table}").first()["n"]

    def completed_commits(self) -> int:
        """Completed ``.commit`` instants: on a MOR table each is a compaction."""
        location = self.session.catalog.location("default", self.table)
        timeline = os.path.join(location.removeprefix("file://").removeprefix("file:"), ".hoodie")
        assert os.path.isdir(timeline), timeline
        return sum(1 for root, _, files in os.walk(timeline) if "archived" not in root
                   for f in files if f.endswith(".commit"))


class SparkParquet:
    """A partitioned parquet table in Spark's catalog; it only ever gets appends."""

    name = "Spark SQL parquet"
    table = PARQUET_TABLE

    def __init__(self, spark: SparkSession, location: str) -> None:
        self.spark, self.location = spark, location
        self.expected_count = 0

    def load(self) -> None:
        self.spark.sql(f"CREATE TABLE {self.table} ({COLUMNS_DDL}) USING parquet PARTITIONED BY (part) "
                       f"LOCATION '{self.location}'")
        self.spark.sql(f"INSERT INTO {self.table} SELECT id, name, value, ts, part FROM base_rows")

    def statement(self, run: Run) -> Callable[[], Any]:
        t = self.table
        text = {
            "insert": f"INSERT INTO {t} VALUES {sql_values(run.parquet_rows)}",
            "merge": f"INSERT INTO {t} SELECT * FROM src",
            "update": f"INSERT INTO {t} VALUES {sql_values(run.parquet_rows)}",
            "delete": f"INSERT INTO {t} VALUES {sql_values(run.parquet_rows)}",
            "count": f"SELECT count(*) AS n FROM {t}",
            "lookup": f"SELECT * FROM {t} WHERE id = {run.id}",
        }[run.key]
        return lambda: self.spark.sql(text).collect()

    def check(self, run: Run, result: list, data: Data) -> None:
        self.expected_count += len(run.parquet_rows)
        if run.key == "count" and result[0]["n"] != self.expected_count:
            raise AssertionError(f"{self.name} count: {result[0]['n']}, expected {self.expected_count}")
        if run.key == "lookup" and [r["id"] for r in result] != [run.id]:
            raise AssertionError(f"{self.name} lookup of id {run.id}: {result}")

    def count(self) -> int:
        return self.spark.sql(f"SELECT count(*) AS n FROM {self.table}").first()["n"]


class Delta:
    """A partitioned Delta table changed with delta-rs (its upserts: ``common.delta_merge``)."""

    name = "delta-rs"

    def __init__(self, path: str) -> None:
        self.path = path

    def load(self, base: DataFrame) -> None:
        deltalake.write_deltalake(self.path, base.toArrow(), partition_by=["part"])

    def statement(self, run: Run) -> Callable[[], Any]:
        path = self.path
        if run.key in ("insert", "merge"):
            return lambda: delta_merge(path, run.arrow)
        if run.key == "update":
            return lambda: deltalake.DeltaTable(path).update(updates={"name": "'x'"}, predicate=f"id = {run.id}")
        if run.key == "delete":
            return lambda: deltalake.DeltaTable(path).delete(predicate=f"id = {run.id}")
        if run.key == "count":
            return lambda: deltalake.DeltaTable(path).to_pyarrow_dataset().count_rows()
        return lambda: (deltalake.DeltaTable(path).to_pyarrow_dataset()
                        .to_table(filter=pc.field("id") == run.id).to_pylist())

    def check(self, run: Run, result: Any, data: Data) -> None:
        if run.key in ("insert", "merge"):
            updates = sum(1 for r in run.rows if data.expected(r[0]) is not None)
            got = (result.get("num_target_rows_updated"), result.get("num_target_rows_inserted"))
            if got != (updates, len(run.rows) - updates):
                raise AssertionError(f"{self.name} {run.key}: metrics {result}, expected {updates} updated")
        elif run.key in ("update", "delete"):
            if result.get(f"num_{run.key}d_rows") != 1:
                raise AssertionError(f"{self.name} {run.key}: metrics {result}, expected 1 row")
        elif run.key == "count" and result != data.count:
            raise AssertionError(f"{self.name} count: {result}, expected {data.count}")
        elif run.key == "lookup":
            got = [(r["name"], r["value"], r["ts"]) for r in result]
            if got != [data.expected(run.id)]:
                raise AssertionError(f"{self.name} lookup of id {run.id}: {got}, expected [{data.expected(run.id)}]")

    def rows(self, ids: list[int]) -> dict[int, tuple]:
        t = deltalake.DeltaTable(self.path).to_pyarrow_dataset().to_table(filter=pc.field("id").isin(ids))
        return {r["id"]: (r["name"], r["value"], r["ts"]) for r in t.to_pylist()}

    def count(self) -> int:
        return deltalake.DeltaTable(self.path).to_pyarrow_dataset().count_rows()


def check_write(system: Any, run: Run, data: Data) -> None:
    """Untimed, after a write: the sampled ids hold what they must (before ``data`` records the run)."""
    if not hasattr(system, "rows"):
        return  # the parquet baseline only appends; its row count is checked after the statement
    want = run.sample_after(data)
    got = system.rows(list(want))
    want = {i: v for i, v in want.items() if v is not None}
    if got != want:
        raise AssertionError(f"{system.name} after {run.key}: ids hold {got}, expected {want}")


# ---------------------------------------------------------------------------------------------
# the run
# ---------------------------------------------------------------------------------------------
def run_statements(spark: SparkSession, args: argparse.Namespace, results: dict) -> None:
    data = Data(args.rows, args.partitions)
    base = base_rows(spark, args.rows, args.partitions)
    base.createOrReplaceTempView("base_rows")
    warehouse = os.path.join(args.workdir, "warehouse")

    # ---- untimed loads ------------------------------------------------------------------------
    options = tuple(args.table_option)
    cow = Hudiql(spark, warehouse, "cow", args.table_version, args.metadata, args.record_index, options)
    mor = Hudiql(spark, warehouse, "mor", args.table_version, args.metadata, args.record_index, options)
    pq = SparkParquet(spark, os.path.join(args.workdir, "parquet"))
    delta = Delta(os.path.join(args.workdir, "delta")) if deltalake is not None else None
    load = {"hudiql_cow": timed(cow.load)[0], "hudiql_mor": timed(mor.load)[0], "spark_parquet": timed(pq.load)[0]}
    if delta is not None:
        load["delta_rs"], _ = timed(lambda: delta.load(base))
    systems: dict[str, Any] = {"hudiql_cow": cow, "hudiql_mor": mor, "spark_parquet": pq}
    if delta is not None:
        systems["delta_rs"] = delta
    pq.expected_count = args.rows
    for system in systems.values():
        n = system.count()
        assert n == args.rows, f"{system.name}: {n} rows after the load, expected {args.rows}"
    results["load_seconds"] = load
    print("initial load (not timed as a statement): " + ", ".join(f"{k} {v:.1f}s" for k, v in load.items()), flush=True)

    # ---- statements, interleaved over the systems in every run --------------------------------
    watch = Stopwatch(spark)
    figures: dict[str, dict[str, dict[str, list]]] = {}
    compactions: list[str] = []
    results["statements"], results["mor_inline_compactions"] = figures, compactions
    for key, label, _, _, _ in STATEMENTS:
        fig = figures[key] = {name: {"seconds": [], "jobs": [], "stray_jobs": [], "load_avg_1min": []} for name in systems}
        for n in range(args.warmup + args.repeats):
            counted = n >= args.warmup
            run = prepare(spark, key, data, args)
            commits_before = mor.completed_commits()
            took = {}
            for name, system in systems.items():
                loadavg = os.getloadavg()[0]
                seconds, result, jobs, stray = watch.run(system.statement(run))
                system.check(run, result, data)
                if key in WRITES:
                    check_write(system, run, data)
                took[name] = seconds
                if counted:
                    fig[name]["seconds"].append(seconds)
                    fig[name]["jobs"].append(None if name == "delta_rs" else jobs)
                    fig[name]["stray_jobs"].append(stray)
                    fig[name]["load_avg_1min"].append(loadavg)
            data.apply(run)
            run.cleanup()
            if key in WRITES:  # every table holds exactly the expected number of rows
                for system in systems.values():
                    want = pq.expected_count if system is pq else data.count
                    got = system.count()
                    assert got == want, f"{system.name} after {key}: {got} rows, expected {want}"
            if mor.completed_commits() > commits_before:
                compactions.append(f"{key} run {n + 1}")
            results["stray_jobs_total"] = watch.stray_total
            print(f"  {label:34s} run {n + 1} ({'timed' if counted else 'warm-up'}): "
                  + "  ".join(f"{name} {s:.2f}s" for name, s in took.items()), flush=True)


# ---------------------------------------------------------------------------------------------
# hudiql build of the example project
# ---------------------------------------------------------------------------------------------
def time_build(workdir: str) -> dict:
    """``hudiql build`` of a copy of models_example, twice, each a fresh process (the second merges).

    Also keeps, from the project's ``target/run_results.json``, the build's own elapsed time (the
    process less its start-up) and each node's execution time.
    """
    project = os.path.join(workdir, "models_example")
    shutil.copytree(os.path.join(REPO, "models_example"), project,
                    ignore=shutil.ignore_patterns("warehouse", "target", "logs", "spark-warehouse", "metastore_db"))
    cli = os.path.join(os.path.dirname(sys.executable), "hudiql")
    env = {k: v for k, v in os.environ.items() if k != "HUDIQL_PROFILES_DIR"}  # the project's default profile
    out: dict[str, Any] = {}
    for run in ("first", "second"):
        start = time.perf_counter()
        proc = subprocess.run([cli, "build", "--project-dir", project], cwd=workdir, env=env,
                              capture_output=True, text=True)
        seconds = time.perf_counter() - start
        done = [line.strip() for line in proc.stdout.splitlines() if "Done." in line]
        fig: dict[str, Any] = {"seconds": seconds, "exit": proc.returncode, "summary": done[-1] if done else None}
        results_file = os.path.join(project, "target", "run_results.json")
        if os.path.exists(results_file):
            with open(results_file) as f:
                doc = json.load(f)
            fig["elapsed_in_process"] = doc.get("elapsed_time")
            fig["nodes"] = {r["unique_id"]: r["execution_time"] for r in doc.get("results", [])}
        out[run] = fig
        slowest = sorted(fig.get("nodes", {}).items(), key=lambda kv: -kv[1])[:3]
        print(f"  hudiql build, {run} run: {seconds:.1f}s, exit {proc.returncode}, {fig['summary'] or 'no summary line'}; "
              f"slowest nodes: " + ", ".join(f"{n.split('.')[-1]} {t:.1f}s" for n, t in slowest), flush=True)
        if proc.returncode != 0:
            print(proc.stdout[-3000:], proc.stderr[-3000:], sep="\n")
    return out


# ---------------------------------------------------------------------------------------------
# report
# ---------------------------------------------------------------------------------------------
def median(xs: list) -> float | None:
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def report(results: dict) -> None:
    """The table of medians, the goals of issue 13 and whether each is met; also into ``results``."""
    figs = results.get("statements", {})
    print(f"\nmedians of {results['repeats']} timed run(s) after {results['warmup']} warm-up; {results['rows']:,} rows, "
          f"{results['partitions']} partitions; hudiql {results['hudiql']}")
    head = (f"{'statement':34s} {'table':5s} {'hudiql':>8s} {'jobs':>5s} {'Spark SQL parquet':>18s} "
            f"{'hudiql/Spark':>12s} {'delta-rs':>9s}  goals (issue 13)")
    print(head)
    print("-" * (len(head) + 12))
    goals: list[tuple[str, str, bool]] = []
    summary: dict[str, dict] = {}
    for key, label, baseline, time_goal, job_goal in STATEMENTS:
        f = figs.get(key)
        if not f or not f["hudiql_cow"]["seconds"]:
            continue  # not measured (the run stopped before it)
        spark_s = median(f["spark_parquet"]["seconds"])
        delta_s = median(f["delta_rs"]["seconds"]) if "delta_rs" in f else None
        for kind in HUDI_TABLES:
            h = f[f"hudiql_{kind}"]
            hs, jobs = median(h["seconds"]), median(h["jobs"])
            ratio = hs / spark_s if hs is not None and spark_s else None
            summary[f"{key}/{kind}"] = {"hudiql_s": hs, "jobs": jobs, "jobs_runs": h["jobs"], "spark_parquet_s": spark_s,
                                        "spark_parquet_jobs": median(f["spark_parquet"]["jobs"]), "ratio": ratio,
                                        "delta_rs_s": delta_s, "spark_baseline": baseline}
            cell = []
            if time_goal is not None and ratio is not None:
                met = ratio <= time_goal
                goals.append((f"{label} ({kind}): time <= {time_goal:g}x Spark SQL", f"{ratio:.2f}x", met))
                cell.append(f"<={time_goal:g}x {'met' if met else 'MISSED'}")
            if job_goal is not None and jobs is not None:
                met = jobs <= job_goal
                goals.append((f"{label} ({kind}): <= {job_goal} Spark jobs", f"{jobs:g} jobs", met))
                cell.append(f"<={job_goal} jobs {'met' if met else 'MISSED'}")
            print(f"{label:34s} {kind:5s} {fmt(hs):>8s} {fmt_n(jobs)} {fmt(spark_s):>18s} "
                  f"{(f'{ratio:.2f}x' if ratio is not None else '-'):>12s} {fmt(delta_s):>9s}  {', '.join(cell)}")
        if key in WRITES:
            cow, mor = median(f["hudiql_cow"]["jobs"]), median(f["hudiql_mor"]["jobs"])
            if cow is not None and mor is not None:
                goals.append((f"{label}: MOR no more jobs than COW", f"{mor:g} vs {cow:g}", mor <= cow))
    print("Spark SQL baselines, on the same rows:")
    for _, label, baseline, _, _ in STATEMENTS:
        print(f"  {label:34s} {baseline}")
    print("  * plain parquet cannot UPDATE or DELETE a row: the baseline is the smallest Spark SQL write, a one-row "
          "INSERT INTO pq VALUES of the changed row.")
    print("  delta-rs: merge (INSERT, MERGE), DeltaTable.update / delete, dataset count_rows(), filtered dataset read; "
          "each opens the table. Jobs: Spark jobs of the hudiql statement (.collect() of its result included).")
    if results.get("mor_inline_compactions"):
        print("  the MOR table's default inline compaction ran within: " + ", ".join(results["mor_inline_compactions"])
              + " (part of that MOR write's time)")
    if results.get("stray_jobs_total"):
        print(f"  note: {results['stray_jobs_total']} Spark job(s) started outside the statement's job group "
              "(another thread) and were added to the counts")
    build = results.get("build", {})
    if "second" in build:
        b1, b2 = build["first"], build["second"]
        print(f"\n`hudiql build --project-dir models_example` (a copy, fresh process each run): first run "
              f"{b1['seconds']:.1f}s (exit {b1['exit']}), second run {b2['seconds']:.1f}s (exit {b2['exit']}); "
              f"in-process elapsed {b1.get('elapsed_in_process')}s / {b2.get('elapsed_in_process')}s")
    print("\ngoals (issue 13):")
    for what, got, met in goals:
        print(f"  {'met   ' if met else 'MISSED'} {what}: {got}")
    if results.get("error"):
        print(f"\nthe run stopped early: {results['error'].strip().splitlines()[-1]}")
    results["summary"] = summary
    results["goals"] = [{"goal": what, "got": got, "met": met} for what, got, met in goals]


def fmt_n(n: float | None) -> str:
    return "    -" if n is None else f"{n:5g}"


# ---------------------------------------------------------------------------------------------
# main
# ---------------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    global hudiql
    args = parse_args(argv)
    own_workdir = args.workdir is None
    args.workdir = os.path.abspath(args.workdir or tempfile.mkdtemp(prefix="hudiql-bench-latency-"))
    os.makedirs(args.workdir, exist_ok=True)
    hudiql, source = snapshot_hudiql(args.workdir, args.hudiql_ref)
    results: dict[str, Any] = {
        "rows": args.rows, "partitions": args.partitions, "merge_rows": args.merge_rows,
        "repeats": args.repeats, "warmup": args.warmup, "shuffle_partitions": args.shuffle_partitions,
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cores": os.cpu_count(), "python": platform.python_version(), "hudiql": source,
        "deltalake": getattr(deltalake, "__version__", None),
    }
    print(f"hudiql statement latency: {args.rows:,} rows, {args.partitions} partitions, local[2], "
          f"repeats {args.repeats} after {args.warmup} warm-up, workdir {args.workdir}")
    print(f"hudiql: {source}; deltalake {results['deltalake'] or 'not installed (delta-rs column skipped)'}; "
          f"cores {os.cpu_count()}; load average {os.getloadavg()[0]:.1f}", flush=True)
    try:
        try:
            if not args.skip_build:
                results["build"] = time_build(args.workdir)
            spark = spark_session(
                "hudiql-bench-statement-latency", args.shuffle_partitions, driver_memory="2g", arrow=False,
                configs={"spark.ui.retainedJobs": "100000",  # the status tracker keeps every job it counts
                         "spark.default.parallelism": "2",
                         "spark.sql.warehouse.dir": os.path.join(args.workdir, "spark-warehouse")})
            results["spark"] = spark.version
            try:
                run_statements(spark, args, results)
            finally:
                spark.stop()
        except Exception:  # a failed statement or check: report what was measured, then fail
            results["error"] = traceback.format_exc()
            print(results["error"], file=sys.stderr)
        report(results)
    finally:
        if args.json:
            with open(args.json, "w") as f:
                json.dump(results, f, indent=2, default=str)
        if own_workdir:
            shutil.rmtree(args.workdir, ignore_errors=True)
    return 1 if results.get("error") else 0


if __name__ == "__main__":
    sys.exit(main())
