"""Non-blocking concurrency control (Hudi 1.x, ``hoodie.write.concurrency.mode=
NON_BLOCKING_CONCURRENCY_CONTROL``) on a version 8 merge-on-read table with the bucket index: a
bucket's file group has the fixed id every writer gives it and starts with a log file, delta
commits never conflict with each other nor with a compaction planned while they ran (their logs
go to the slice their completion time falls in), and what cannot work so is refused in one line.
Concurrent writer processes: ``test_concurrency.py::test_non_blocking_writers_and_a_compactor_all_commit``.
"""

from __future__ import annotations

import re

import pytest

from conftest import hudiql_rows, official_rows
from hudiql.errors import OptionError
from hudiql.table.table import HudiTable
from hudiql.timeline.active import DELTA_COMMIT
from hudiql.transaction.write_transaction import WriteTransaction

NBCC_KEY = "hoodie.write.concurrency.mode=NON_BLOCKING_CONCURRENCY_CONTROL"
NBCC = "'hoodie.write.concurrency.mode'='NON_BLOCKING_CONCURRENCY_CONTROL'"
QUERY = "SELECT id, name, ts, dt FROM t"
COLUMNS = ["id", "name", "ts", "dt"]
FIXED = "0000000{}-0000-0000-0000-000000000000-0"  # bucket b's file id


def _table(session, *props: str) -> None:
    options = ["primaryKey='id'", "preCombineField='ts'", "type='mor'", "'hoodie.write.table.version'='8'",
               "'hoodie.index.type'='BUCKET'", "'hoodie.bucket.index.num.buckets'='2'", NBCC, *props]
    session.sql(f"CREATE TABLE t (id INT, name STRING, ts INT, dt STRING) USING hudi PARTITIONED BY (dt) "
                f"TBLPROPERTIES ({', '.join(options)})")


def _data_files(table) -> list[tuple[str, str]]:
    """(partition, file name) of every data file."""
    return sorted((p.parent.name, p.name) for p in table.rglob("*") if p.is_file() and ".hoodie" not in p.parts
                  and not p.name.startswith(".hoodie_partition"))


def test_buckets_start_with_log_files_under_their_fixed_ids(session, warehouse):
    _table(session)
    counts = session.sql("INSERT INTO t VALUES (1, 'a', 1, 'x'), (2, 'b', 1, 'x'), (3, 'c', 1, 'y')").collect()
    assert counts[0]["num_inserted_rows"] == 3 and counts[0]["num_updated_rows"] == 0
    session.sql("INSERT INTO t VALUES (1, 'a2', 2, 'x'), (4, 'd', 1, 'y'), (2, 'old', 0, 'x')")
    session.sql("UPDATE t SET name = 'u' WHERE id = 3")
    session.sql("DELETE FROM t WHERE id = 4")
    expected = [(1, "a2", 2, "x"), (2, "b", 1, "x"), (3, "u", 1, "y")]
    assert hudiql_rows(session, QUERY) == expected
    files = _data_files(warehouse / "t")
    # Only log files, in both partitions, all of them in the buckets' fixed file groups (the same ids
    # in both partitions: rows of one id in two partitions are written apart).
    assert files and all(name.startswith("." + FIXED.format(0)) or name.startswith("." + FIXED.format(1))
                         for _, name in files), files
    assert {p for p, _ in files} == {"dt=x", "dt=y"}
    assert hudiql_rows(session, "SELECT id FROM t WHERE dt = 'y'") == [(3,)]

    # Compaction gives the log-only file groups their base files; the official reader then agrees.
    session.sql("CALL run_compaction(table => 't')").collect()
    assert hudiql_rows(session, QUERY) == expected
    assert official_rows(warehouse / "t", COLUMNS) == expected
    assert {name.split("_")[0] for _, name in _data_files(warehouse / "t") if name.endswith(".parquet")} <= {
        FIXED.format(0), FIXED.format(1)}


def test_a_bulk_insert_writes_base_files_under_the_fixed_ids(session, warehouse):
    _table(session)
    session.sql("SET hoodie.spark.sql.insert.into.operation=bulk_insert")
    rows = [(i, f"n{i}", 1, ("x", "y", "z")[i % 3]) for i in range(1, 31)]
    session.sql(f"INSERT INTO t VALUES {', '.join(map(str, rows))}")
    session.sql("SET hoodie.spark.sql.insert.into.operation=upsert")
    session.sql("INSERT INTO t VALUES (1, 'a2', 2, 'y'), (31, 'new', 1, 'x')")
    files = _data_files(warehouse / "t")
    assert {p for p, name in files if name.endswith(".parquet")} == {"dt=x", "dt=y", "dt=z"}
    assert all(name.split("_")[0].lstrip(".") in (FIXED.format(0), FIXED.format(1)) for _, name in files), files
    # Each partition's rows in its own files: a fixed id repeats in every partition.
    assert hudiql_rows(session, "SELECT DISTINCT dt, _hoodie_partition_path FROM t") == [
        ("x", "dt=x"), ("y", "dt=y"), ("z", "dt=z")]
    expected = sorted([(1, "a2", 2, "y"), *rows[1:], (31, "new", 1, "x")])
    assert hudiql_rows(session, QUERY) == expected == official_rows(warehouse / "t", COLUMNS)


def test_a_bucket_begun_again_after_its_partition_was_dropped_is_read(session, warehouse):
    """DROP PARTITION and TRUNCATE replace the buckets' fixed file groups; a bucket begun again
    takes the next fixed id (a group of a replaced id would stay hidden)."""
    _table(session)
    session.sql("INSERT INTO t VALUES (1, 'a', 1, 'x'), (2, 'b', 1, 'x'), (3, 'c', 1, 'y')")
    session.sql("ALTER TABLE t DROP PARTITION (dt = 'x')")
    session.sql("INSERT INTO t VALUES (1, 'again', 2, 'x')")
    assert hudiql_rows(session, QUERY) == [(1, "again", 2, "x"), (3, "c", 1, "y")]
    session.sql("TRUNCATE TABLE t")
    session.sql("INSERT INTO t VALUES (1, 'third', 3, 'x'), (3, 'c2', 2, 'y')")
    expected = [(1, "third", 3, "x"), (3, "c2", 2, "y")]
    assert hudiql_rows(session, QUERY) == expected
    ids = {name.split("_")[0].lstrip(".") for p, name in _data_files(warehouse / "t") if p == "dt=x"}
    assert {i.rsplit("-", 1)[1] for i in ids} == {"0", "1", "2"}, ids  # three generations of one bucket
    session.sql("CALL run_compaction(table => 't')").collect()
    assert hudiql_rows(session, QUERY) == expected == official_rows(warehouse / "t", COLUMNS)


def test_a_write_in_flight_when_a_compaction_is_planned_commits_into_the_new_slice(session, warehouse, monkeypatch):
    from hudiql.services import compaction

    _table(session, "'hoodie.compact.inline'='false'")
    session.sql("INSERT INTO t VALUES (1, 'a', 1, 'x'), (2, 'b', 1, 'x')")
    session.sql("INSERT INTO t VALUES (1, 'a2', 2, 'x')")
    planned = []
    commit = WriteTransaction.commit

    def plan_first(self, *args, **kwargs):
        # Another writer plans a compaction after this delta commit wrote its logs, before it commits.
        if self.instant.action == DELTA_COMMIT and not planned:
            planned.append(compaction.schedule(HudiTable.load(str(warehouse / "t"))))
        return commit(self, *args, **kwargs)

    monkeypatch.setattr(WriteTransaction, "commit", plan_first)
    session.sql("SET hoodie.write.num.retries.on.conflict.failures=0")  # it commits at once, or fails
    session.sql("INSERT INTO t VALUES (2, 'b2', 2, 'x'), (3, 'c', 1, 'x')")
    monkeypatch.undo()
    [plan] = planned
    expected = [(1, "a2", 2, "x"), (2, "b2", 2, "x"), (3, "c", 1, "x")]
    assert hudiql_rows(session, QUERY) == expected  # the plan is pending: readers merge both slices

    session.sql(f"CALL run_compaction(table => 't', op => 'run', timestamp => '{plan.timestamp}')").collect()
    assert hudiql_rows(session, QUERY) == expected
    assert official_rows(warehouse / "t", COLUMNS) == expected
    # The compaction left the in-flight write's logs alone: they are on top of its base files.
    assert official_rows(warehouse / "t", COLUMNS, read_optimized=True) == [(1, "a2", 2, "x"), (2, "b", 1, "x")]
    session.sql("CALL run_compaction(table => 't')").collect()
    assert official_rows(warehouse / "t", COLUMNS, read_optimized=True) == expected


def test_cleaning_keeps_every_log_of_a_bucket_begun_by_logs(session, warehouse):
    """The logs of a file group without a base file form one slice, begun at the oldest: cleaning
    by file versions keeps them all (each is not a version of its own)."""
    _table(session, "'hoodie.compact.inline'='false'", "'hoodie.cleaner.policy'='KEEP_LATEST_FILE_VERSIONS'",
           "'hoodie.cleaner.fileversions.retained'='1'")
    for i in range(1, 5):
        session.sql(f"INSERT INTO t VALUES ({i}, 'n{i}', 1, 'x')")
    logs = _data_files(warehouse / "t")
    session.sql("CALL run_clean(table => 't')").collect()
    assert _data_files(warehouse / "t") == logs
    expected = [(i, f"n{i}", 1, "x") for i in range(1, 5)]
    assert hudiql_rows(session, QUERY) == expected
    session.sql("CALL run_compaction(table => 't')").collect()
    assert official_rows(warehouse / "t", COLUMNS) == expected


@pytest.mark.parametrize(
    ("props", "message"),
    [
        (["type='cow'"], "it needs a merge-on-read table (table t is copy-on-write)"),
        (["type='mor'"], "it needs table version 8 or 9 (table t is version 6; CALL upgrade_table upgrades it)"),
        (["type='mor'", "'hoodie.write.table.version'='8'"], "it needs hoodie.index.type=BUCKET (table t uses SIMPLE)"),
    ],
)
def test_tables_it_cannot_run_on_are_refused(session, props, message):
    with pytest.raises(OptionError, match=re.escape(f"{NBCC_KEY}: {message}")):
        session.sql(f"CREATE TABLE t (id INT, ts INT) USING hudi TBLPROPERTIES (primaryKey='id', {', '.join(props)}, {NBCC})")


def test_set_on_a_table_it_cannot_run_on_is_refused_before_writing(session, warehouse):
    session.sql("CREATE TABLE t (id INT, name STRING, ts INT, dt STRING) USING hudi TBLPROPERTIES (primaryKey='id', type='mor')")
    session.sql("SET hoodie.write.concurrency.mode=NON_BLOCKING_CONCURRENCY_CONTROL")
    with pytest.raises(OptionError, match="it needs table version 8 or 9"):
        session.sql("INSERT INTO t VALUES (1, 'a', 1, 'x')")
    assert _data_files(warehouse / "t") == []


def test_insert_overwrite_is_refused(session, warehouse):
    _table(session)
    session.sql("INSERT INTO t VALUES (1, 'a', 1, 'x')")
    with pytest.raises(OptionError, match="^INSERT OVERWRITE is not supported under hoodie.write.concurrency.mode="
                                          "NON_BLOCKING_CONCURRENCY_CONTROL; SET hoodie.write.concurrency.mode="
                                          "OPTIMISTIC_CONCURRENCY_CONTROL for it$"):
        session.sql("INSERT OVERWRITE t SELECT 2, 'b', 1, 'x'")
    assert hudiql_rows(session, QUERY) == [(1, "a", 1, "x")]
