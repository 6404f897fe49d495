#!/usr/bin/env python
"""Benchmark: the storage requests hudiql's driver makes for one statement (lists / reads / probes,
of which reads of ``hoodie.properties`` and listings of the timeline), on COW and MOR.

Usage:
    python bench/storage_requests.py [--rows 100000] [--partitions 10] [--table-version 6|8|9]
                                     [--metadata true|false] [--record-index] [--hudiql-ref REF]
                                     [--workdir DIR]

The table: ``--rows`` rows in ``--partitions`` partitions, loaded in four commits (the first holds
most rows), primary key ``id``, ordering field ``ts``; the MOR table keeps inline compaction for
later (``hoodie.compact.inline.max.delta.commits=20``) so that each statement is measured alone.
``--table-version`` 8 or 9 writes Hudi 1.x tables, with the metadata table's files partition unless
``--metadata false`` (``hoodie.metadata.enable``); its requests are counted with the table's.
``--record-index``: with its record index too (``hoodie.metadata.record.index.enable``).
Then, in order, each statement once: a 10-row INSERT (5 updates, 5 new keys), a 1,000-row MERGE
(500 updates, 500 inserts), a one-row UPDATE, a one-row DELETE, ``SELECT count(*)`` and a point
query. Requests are counted in this process, the driver (``hudiql/io/requests.py`` of the working
tree, applied to the snapshot's ``Storage``: so that ``--hudiql-ref`` measures an older hudiql the
same way); Spark's tasks and Spark's parquet reads are not counted. On an object store each request
is a round trip of 20-100 ms. The wall time of each statement is printed for orientation only (one
run; ``bench/statement_latency.py`` times statements properly). Takes about two minutes.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import sys
import tempfile

from common import REPO, snapshot_hudiql, spark_session, timed

STATEMENTS = [
    ("insert 10 rows", "INSERT INTO t SELECT id, 'x', 9, CAST(id % {p} AS STRING) FROM range({n} - 5, {n} + 5)"),
    ("merge 1,000 rows", "MERGE INTO t USING (SELECT id, 'm' AS v, 10 AS ts, CAST(id % {p} AS STRING) AS part "
                         "FROM range({n} - 500, {n} + 500)) s ON t.id = s.id "
                         "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"),
    ("update one row", "UPDATE t SET v = 'u' WHERE id = 17"),
    ("delete one row", "DELETE FROM t WHERE id = 18"),
    ("count", "SELECT count(*) FROM t"),
    ("point query", "SELECT * FROM t WHERE id = 5"),
]


def load_counter():
    """The working tree's ``hudiql/io/requests.py``, bound to whichever ``hudiql`` is imported."""
    spec = importlib.util.spec_from_file_location(
        "bench_requests", os.path.join(REPO, "src", "hudiql", "io", "requests.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks itself up there
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--partitions", type=int, default=10)
    parser.add_argument("--table-version", default="6", choices=["6", "8", "9"])
    parser.add_argument("--metadata", default="true", choices=["true", "false"],
                        help="hoodie.metadata.enable (versions 8 and 9)")
    parser.add_argument("--record-index", action="store_true", help="hoodie.metadata.record.index.enable=true")
    parser.add_argument("--hudiql-ref", default=None, help="a git ref to measure instead of the working tree")
    parser.add_argument("--workdir", default=None)
    args = parser.parse_args()
    workdir = args.workdir or tempfile.mkdtemp(prefix="hudiql-requests-")
    hudiql, described = snapshot_hudiql(workdir, args.hudiql_ref)
    requests = load_counter()
    spark = spark_session("hudiql-storage-requests", 4)
    print(f"hudiql: {described}; {args.rows} rows in {args.partitions} partitions, four commits; table version "
          f"{args.table_version}" + (f", metadata table {args.metadata}" if args.table_version != "6" else ""))
    print(f"{'table':5} {'statement':18} {'lists':>6} {'reads':>6} {'probes':>7} {'props reads':>12} "
          f"{'timeline lists':>15} {'seconds':>8}")
    for kind in ("cow", "mor"):
        warehouse = os.path.join(workdir, f"warehouse_{kind}")
        shutil.rmtree(warehouse, ignore_errors=True)
        session = hudiql.connect(warehouse=warehouse, spark=spark)
        session.sql(f"SET hoodie.write.table.version={args.table_version}")
        if args.table_version != "6":
            session.sql(f"SET hoodie.metadata.enable={args.metadata}")
        if args.record_index:
            session.sql("SET hoodie.metadata.record.index.enable=true")
        session.sql(f"""CREATE TABLE t (id BIGINT, v STRING, ts BIGINT, part STRING) USING hudi PARTITIONED BY (part)
            TBLPROPERTIES (primaryKey = 'id', preCombineField = 'ts', type = '{kind}',
                           'hoodie.compact.inline.max.delta.commits' = '20')""")
        bounds = [0, args.rows - 3000, args.rows - 2000, args.rows - 1000, args.rows]
        for commit in range(4):
            session.sql(f"INSERT INTO t SELECT id, 'v{commit}', {commit}, CAST(id % {args.partitions} AS STRING) "
                        f"FROM range({bounds[commit]}, {bounds[commit + 1]})").collect()
        for name, template in STATEMENTS:
            statement = template.format(p=args.partitions, n=args.rows)
            with requests.counted_requests() as count:
                seconds, _ = timed(lambda: session.sql(statement).collect())
            print(f"{kind:5} {name:18} {count.lists:6d} {count.reads:6d} {count.probes:7d} "
                  f"{count.reads_of('.hoodie/hoodie.properties'):12d} {count.lists_of('.hoodie'):15d} {seconds:8.2f}")
    spark.stop()


if __name__ == "__main__":
    main()
