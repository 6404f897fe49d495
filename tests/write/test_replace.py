"""Replace commits: INSERT OVERWRITE (whole table, static and dynamic partitions, Hudi's and
Spark's overwrite settings), TRUNCATE TABLE, ALTER TABLE ... DROP PARTITION and SHOW PARTITIONS.

Each is one ``replacecommit`` in Hudi's format, checked on the timeline files; the rows are
checked with hudiql and with the official reader. The statement sequences of Apache Hudi's own
Spark SQL tests for these statements (insert overwrite, truncate, drop partition, show
partitions) give the rows those tests expect.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hudiql.errors import HudiqlError, SqlError, TableNotFoundError
from hudiql.timeline.replace_plan import decode_requested
from hudiql.transaction.write_transaction import WriteTransaction

from conftest import hudiql_rows, instants, official_rows

TYPES = ["cow", "mor"]


def table_ddl(name: str, kind: str, partitioned: str | None = "dt", extra: str = "") -> str:
    columns = "id INT, name STRING, price DOUBLE, ts BIGINT" + ("".join(f", {c} STRING" for c in partitioned.split(", ")) if partitioned else "")
    part = f"PARTITIONED BY ({partitioned}) " if partitioned else ""
    return (f"CREATE TABLE {name} ({columns}) USING hudi {part}"
            f"TBLPROPERTIES (primaryKey='id', preCombineField='ts', type='{kind}'{extra})")


def replace_commits(path: Path) -> list[dict]:
    return [json.loads((path / ".hoodie" / f"{t}.replacecommit").read_text()) for t in instants(path, "replacecommit")]


def rows(session, table: str, columns: str = "id, name, dt") -> list[tuple]:
    return hudiql_rows(session, f"SELECT {columns} FROM {table}")


def check_official(warehouse: Path, table: str, expected: list[tuple], columns=("id", "name", "dt")) -> None:
    assert official_rows(warehouse / table, list(columns)) == sorted(expected)


@pytest.mark.parametrize("kind", TYPES)
def test_insert_overwrite_follows_hudis_settings(session, warehouse, kind):
    """Hudi's "Test Insert Overwrite": Spark's mode, Hudi's mode, Hudi's operation, in that order of precedence."""
    session.sql(table_ddl("t", kind))
    session.sql("INSERT INTO t VALUES (1,'a1',10,1000,'2021-01-05'), (2,'a2',10,1000,'2021-01-06')")

    # nothing set: Spark's STATIC: the whole table
    result = session.sql("INSERT OVERWRITE TABLE t VALUES (3,'a3',10,1000,'2021-01-06'), (4,'a4',10,1000,'2021-01-07')").first()
    assert result.num_inserted_rows == 2
    expected = [(3, "a3", "2021-01-06"), (4, "a4", "2021-01-07")]
    assert rows(session, "t") == expected
    check_official(warehouse, "t", expected)

    session.sql("SET spark.sql.sources.partitionOverwriteMode=dynamic")
    try:
        session.sql("INSERT OVERWRITE TABLE t VALUES (5,'a5',10,1000,'2021-01-07')")
        assert rows(session, "t") == [(3, "a3", "2021-01-06"), (5, "a5", "2021-01-07")]
        session.sql("INSERT OVERWRITE TABLE t PARTITION (dt='2021-01-06') SELECT 6,'a6',10,1000")
        assert rows(session, "t") == [(5, "a5", "2021-01-07"), (6, "a6", "2021-01-06")]
        session.sql("SET spark.sql.sources.partitionOverwriteMode=static")
        session.sql("SET hoodie.datasource.overwrite.mode=dynamic")  # Hudi's key beats Spark's
        session.sql("INSERT OVERWRITE TABLE t VALUES (7,'a7',10,1000,'2021-01-07')")
        assert rows(session, "t") == [(6, "a6", "2021-01-06"), (7, "a7", "2021-01-07")]
        session.sql("SET hoodie.datasource.overwrite.mode=static")
        session.sql("INSERT OVERWRITE TABLE t VALUES (8,'a8',10,1000,'2021-01-07'), (9,'a9',10,1000,'2021-01-08')")
        assert rows(session, "t") == [(8, "a8", "2021-01-07"), (9, "a9", "2021-01-08")]
        session.sql("SET hoodie.datasource.write.operation=insert_overwrite")  # the operation beats the mode
        session.sql("INSERT OVERWRITE TABLE t VALUES (10,'a10',10,1000,'2021-01-08')")
        assert rows(session, "t") == [(8, "a8", "2021-01-07"), (10, "a10", "2021-01-08")]
        with pytest.raises(SqlError, match="replaces rows: write INSERT OVERWRITE"):
            session.sql("INSERT INTO t VALUES (11,'a11',10,1000,'2021-01-08')")
        session.sql("SET hoodie.datasource.write.operation=insert_overwrite_table")
        session.sql("INSERT OVERWRITE TABLE t VALUES (11,'a11',10,1000,'2021-01-08'), (12,'a12',10,1000,'2021-01-09')")
        expected = [(11, "a11", "2021-01-08"), (12, "a12", "2021-01-09")]
        assert rows(session, "t") == expected
        check_official(warehouse, "t", expected)
    finally:
        session.spark.conf.unset("spark.sql.sources.partitionOverwriteMode")

    commits = replace_commits(warehouse / "t")
    assert [c["operationType"] for c in commits] == [
        "INSERT_OVERWRITE_TABLE", "INSERT_OVERWRITE", "INSERT_OVERWRITE", "INSERT_OVERWRITE",
        "INSERT_OVERWRITE_TABLE", "INSERT_OVERWRITE", "INSERT_OVERWRITE_TABLE",
    ]
    first = commits[0]
    # the first overwrite replaced the two file groups the INSERT wrote, and wrote new ones
    replaced = first["partitionToReplaceFileIds"]
    assert sorted(replaced) == ["dt=2021-01-05", "dt=2021-01-06"] and all(len(ids) == 1 for ids in replaced.values())
    written = {s["fileId"] for stats in first["partitionToWriteStats"].values() for s in stats}
    assert written and not written & {f for ids in replaced.values() for f in ids}
    assert all(s["prevCommit"] == "null" for stats in first["partitionToWriteStats"].values() for s in stats)
    assert json.loads(first["extraMetadata"]["schema"])["type"] == "record"
    # the requested file is Hudi's HoodieRequestedReplaceMetadata with every field null (not a clustering plan)
    requested = (warehouse / "t" / ".hoodie" / f"{instants(warehouse / 't', 'replacecommit')[0]}.replacecommit.requested").read_bytes()
    assert decode_requested(requested) == {"operationType": None, "clusteringPlan": None, "extraMetadata": None, "version": None}
    if kind == "mor":
        # an overwrite writes base files only, never logs
        assert all(s["path"].endswith(".parquet") for c in commits for ss in c["partitionToWriteStats"].values() for s in ss)


def test_insert_overwrite_without_partitions_replaces_the_table(session, warehouse):
    session.sql(table_ddl("n", "cow", partitioned=None))
    session.sql("INSERT INTO n VALUES (1,'a1',10,1000)")
    session.sql("SET spark.sql.sources.partitionOverwriteMode=dynamic")  # no partitions: the table all the same
    try:
        session.sql("INSERT OVERWRITE TABLE n SELECT 2,'a2',10,1000")
    finally:
        session.spark.conf.unset("spark.sql.sources.partitionOverwriteMode")
    assert rows(session, "n", "id, name") == [(2, "a2")]
    check_official(warehouse, "n", [(2, "a2")], ("id", "name"))
    [commit] = replace_commits(warehouse / "n")
    assert list(commit["partitionToReplaceFileIds"]) == [""]
    # rows with duplicate keys are combined, as an upsert combines them (the greater ts wins)
    session.sql("INSERT OVERWRITE n VALUES (3,'old',10,1), (3,'new',10,2), (4,'b',10,1)")
    assert rows(session, "n", "id, name") == [(3, "new"), (4, "b")]


@pytest.mark.parametrize("mode", ["dynamic", "static"])
def test_insert_overwrite_of_multi_level_partitions(session, warehouse, mode):
    """Hudi's "Test insert overwrite for multi partitioned table"."""
    session.sql(table_ddl("m", "cow", partitioned="dt, hh"))
    session.sql("INSERT INTO m VALUES (0,'a0',10,1000,'2023-12-05','00'), (1,'a1',10,1000,'2023-12-06','00'), "
                "(2,'a2',10,1000,'2023-12-06','01')")
    session.sql(f"SET hoodie.datasource.overwrite.mode={mode}")
    session.sql("INSERT OVERWRITE TABLE m PARTITION (dt='2023-12-06', hh) VALUES (3,'a3',10,1000,'00'), (4,'a4',10,1000,'02')")
    got = hudiql_rows(session, "SELECT id, dt, hh FROM m")
    if mode == "dynamic":
        expected = [(0, "2023-12-05", "00"), (2, "2023-12-06", "01"), (3, "2023-12-06", "00"), (4, "2023-12-06", "02")]
    else:  # every stored partition of dt=2023-12-06 is replaced, hh=01 too
        expected = [(0, "2023-12-05", "00"), (3, "2023-12-06", "00"), (4, "2023-12-06", "02")]
    assert got == expected
    assert official_rows(warehouse / "m", ["id", "dt", "hh"]) == expected

    session.sql("INSERT OVERWRITE TABLE m VALUES (5,'a5',10,1000,'2023-12-06','02')")
    got = hudiql_rows(session, "SELECT id FROM m")
    assert got == ([(0,), (2,), (3,), (5,)] if mode == "dynamic" else [(5,)])

    session.sql("SET hoodie.datasource.write.operation=insert_overwrite_table")
    session.sql("INSERT OVERWRITE TABLE m PARTITION (dt='2023-12-06', hh) VALUES (6,'a6',10,1000,'00')")
    assert hudiql_rows(session, "SELECT id, dt, hh FROM m") == [(6, "2023-12-06", "00")]


def test_a_static_partition_is_emptied_by_an_empty_query(session, warehouse):
    session.sql(table_ddl("s", "cow"))
    session.sql("INSERT INTO s VALUES (1,'a',1,1,'d1'), (2,'b',1,1,'d2')")
    result = session.sql("INSERT OVERWRITE s PARTITION (dt='d1') SELECT id, name, price, ts FROM s WHERE id < 0").first()
    assert result.num_affected_rows == 0
    assert rows(session, "s") == [(2, "b", "d2")]
    check_official(warehouse, "s", [(2, "b", "d2")])
    assert hudiql_rows(session, "SHOW PARTITIONS s") == [("dt=d2",)]


@pytest.mark.parametrize("kind", TYPES)
def test_insert_overwrite_into_a_bucket_index_table(session, warehouse, kind):
    """Hudi's "Test Insert Overwrite Into Bucket Index Table": the new file group takes the bucket."""
    session.sql(table_ddl("b", kind, extra=", 'hoodie.index.type'='BUCKET', 'hoodie.bucket.index.num.buckets'='4'"))
    session.sql("INSERT INTO b VALUES " + ", ".join(f"({i},'a{i}',10,1000,'2021-01-05')" for i in range(1, 10)))
    session.sql("INSERT OVERWRITE TABLE b PARTITION (dt='2021-01-05') SELECT 13,'a2',12,1000")
    assert hudiql_rows(session, "SELECT id, name, price, dt FROM b") == [(13, "a2", 12.0, "2021-01-05")]
    session.sql("INSERT OVERWRITE TABLE b PARTITION (dt='2021-01-05') SELECT 13,'a3',12,1000")
    assert official_rows(warehouse / "b", ["id", "name"]) == [(13, "a3")]
    # later upserts find the key in the overwrite's file group of its bucket
    session.sql("INSERT INTO b VALUES (13,'a4',12,2000,'2021-01-05'), (14,'a5',1,1,'2021-01-05')")
    assert hudiql_rows(session, "SELECT id, name FROM b") == [(13, "a4"), (14, "a5")]


def test_an_overwrite_is_invisible_until_it_completes(session, warehouse, monkeypatch):
    """A crash between writing the new files and completing the replacecommit: readers see the old rows."""
    session.sql(table_ddl("c", "cow"))
    session.sql("INSERT INTO c VALUES (1,'old',1,1,'d1')")

    class Crash(BaseException):
        """The process dies: nothing of the statement runs after it."""

    def crash(self, metadata, rule, index_writes=None):
        raise Crash

    monkeypatch.setattr(WriteTransaction, "commit", crash)
    monkeypatch.setattr(WriteTransaction, "abort", lambda self: self._heartbeat.stop())
    with pytest.raises(Crash):
        session.sql("INSERT OVERWRITE c VALUES (2,'new',1,1,'d1')")
    monkeypatch.undo()
    table = warehouse / "c"
    assert instants(table, "replacecommit.inflight") and not instants(table, "replacecommit")
    assert len(list((table / "dt=d1").glob("*.parquet"))) == 2  # the new base file is there, not committed
    assert rows(session, "c") == [(1, "old", "d1")]
    check_official(warehouse, "c", [(1, "old", "d1")])


def test_an_overwrite_whose_query_fails_leaves_the_table_as_it_was(session, warehouse):
    session.sql(table_ddl("f", "cow"))
    session.sql("INSERT INTO f VALUES (1,'a',1,1,'d1')")
    with pytest.raises(HudiqlError):
        session.sql("INSERT OVERWRITE f SELECT id, name, price, ts, CAST(1/0 AS STRING) FROM f")
    assert rows(session, "f") == [(1, "a", "d1")]
    assert not instants(warehouse / "f", "replacecommit") and not instants(warehouse / "f", "replacecommit.inflight")


@pytest.mark.parametrize("kind", TYPES)
def test_truncate_table(session, warehouse, kind):
    """Hudi's TestTruncateTable: the whole table, and one partition (every partition column given)."""
    session.sql(table_ddl("n", kind, partitioned=None))
    session.sql("INSERT INTO n VALUES (1,'a1',10,1000)")
    session.sql("TRUNCATE TABLE n")
    assert hudiql_rows(session, "SELECT count(1) FROM n") == [(0,)]
    assert official_rows(warehouse / "n", ["id"]) == []
    session.sql("INSERT INTO n VALUES (1,'a1',10,1000)")
    assert rows(session, "n", "id, name") == [(1, "a1")]

    session.sql(table_ddl("y", kind, partitioned="year, month, day"))
    session.sql("INSERT INTO y VALUES (1,'z3',1,1,'2021','10','01'), (2,'l4',1,1,'2021','10','02')")
    with pytest.raises(SqlError, match="give every partition column a value; missing day"):
        session.sql("TRUNCATE TABLE y PARTITION (year='2021', month='10')")
    with pytest.raises(TableNotFoundError, match="has no partition year=2021/month=10/day=03"):
        session.sql("TRUNCATE TABLE y PARTITION (year='2021', month='10', day='03')")
    session.sql("TRUNCATE TABLE y PARTITION (year='2021', month='10', day='01')")
    assert hudiql_rows(session, "SELECT id, day FROM y") == [(2, "02")]
    assert official_rows(warehouse / "y", ["id", "day"]) == [(2, "02")]
    session.sql("TRUNCATE TABLE y")
    assert hudiql_rows(session, "SELECT count(1) FROM y") == [(0,)]
    [first, whole] = replace_commits(warehouse / "y")
    assert first["operationType"] == whole["operationType"] == "DELETE_PARTITION"
    assert list(first["partitionToReplaceFileIds"]) == ["year=2021/month=10/day=01"]
    assert first["partitionToWriteStats"] == {} and json.loads(first["extraMetadata"]["schema"])["type"] == "record"
    assert list(whole["partitionToReplaceFileIds"]) == ["year=2021/month=10/day=02"]


@pytest.mark.parametrize("kind", TYPES)
def test_drop_partition(session, warehouse, kind):
    """Hudi's TestAlterTableDropPartition."""
    session.sql(table_ddl("p", kind))
    session.sql("INSERT INTO p VALUES (1,'z3',1,1,'2021-10-01'), (2,'l4',1,1,'2021-10-02')")
    session.sql("INSERT INTO p VALUES (3,'z5',1,2,'2021-10-01'), (4,'l5',1,2,'2021-10-02')")
    session.sql("ALTER TABLE p DROP PARTITION (dt='2021-10-01')")
    expected = [(2, "l4", "2021-10-02"), (4, "l5", "2021-10-02")]
    assert rows(session, "p") == expected
    check_official(warehouse, "p", expected)
    assert hudiql_rows(session, "SHOW PARTITIONS p") == [("dt=2021-10-02",)]
    # a later write to the dropped partition brings it back, with only the new rows
    session.sql("INSERT INTO p VALUES (5,'n',1,3,'2021-10-01')")
    assert hudiql_rows(session, "SHOW PARTITIONS p") == [("dt=2021-10-01",), ("dt=2021-10-02",)]
    assert rows(session, "p") == [*expected, (5, "n", "2021-10-01")]
    # then DELETE still works on what is left
    session.sql("DELETE FROM p WHERE dt = '2021-10-02'")
    assert rows(session, "p") == [(5, "n", "2021-10-01")]


def test_drop_partition_refusals_and_if_exists(session, warehouse):
    session.sql(table_ddl("p", "cow"))
    session.sql("INSERT INTO p VALUES (1,'a',1,1,'d1'), (2,'b',1,1,'d2'), (3,'c',1,1,'d3')")
    before = instants(warehouse / "p", "commit")
    with pytest.raises(TableNotFoundError, match="has no partition dt=nope"):
        session.sql("ALTER TABLE p DROP PARTITION (dt='nope')")
    with pytest.raises(SqlError, match="PARTITION \\(dt='d1', dt='d2'\\) names dt twice"):
        session.sql("ALTER TABLE p DROP PARTITION (dt='d1', dt='d2')")
    with pytest.raises(SqlError, match="hh is not a partition column"):
        session.sql("ALTER TABLE p DROP PARTITION (hh='1')")
    with pytest.raises(SqlError, match="PURGE is not supported"):
        session.sql("ALTER TABLE p DROP PARTITION (dt='d1') PURGE")
    assert rows(session, "p", "id") == [(1,), (2,), (3,)]
    assert instants(warehouse / "p", "commit") == before and not instants(warehouse / "p", "replacecommit")
    # several partitions in one replacecommit; IF EXISTS skips the missing one
    session.sql("ALTER TABLE p DROP IF EXISTS PARTITION (dt='d1'), PARTITION (dt='nope'), PARTITION (dt='d3')")
    assert rows(session, "p", "id") == [(2,)]
    [commit] = replace_commits(warehouse / "p")
    assert sorted(commit["partitionToReplaceFileIds"]) == ["dt=d1", "dt=d3"]
    # dropping only missing partitions changes nothing and leaves no instant
    session.sql("ALTER TABLE p DROP IF EXISTS PARTITION (dt='nope')")
    assert len(replace_commits(warehouse / "p")) == 1 and len(instants(warehouse / "p", "replacecommit.requested")) == 1

    session.sql(table_ddl("n", "cow", partitioned=None))
    with pytest.raises(SqlError, match="is not partitioned"):
        session.sql("ALTER TABLE n DROP PARTITION (dt='2021-10-01')")


def test_show_partitions_with_a_partition_filter(session):
    """Hudi's TestShowPartitions (multi-level, with NULL partition values)."""
    session.sql(table_ddl("s", "cow", partitioned="year, month, day"))
    session.sql("INSERT INTO s VALUES (1,'a',1,1,'2021','01','01'), (2,'b',1,1,'2021','02','01'), "
                "(3,'c',1,1,'2021','02',NULL), (4,'d',1,1,'2021',NULL,'01')")
    assert hudiql_rows(session, "SHOW PARTITIONS s PARTITION (year='2021', month='02')") == [
        ("year=2021/month=02/day=01",), ("year=2021/month=02/day=__HIVE_DEFAULT_PARTITION__",)]
    assert hudiql_rows(session, "SHOW PARTITIONS s PARTITION (day='01')") == [
        ("year=2021/month=01/day=01",), ("year=2021/month=02/day=01",),
        ("year=2021/month=__HIVE_DEFAULT_PARTITION__/day=01",)]
    assert hudiql_rows(session, "SHOW PARTITIONS s PARTITION (year='2020')") == []
    with pytest.raises(SqlError, match="name is not a partition column"):
        session.sql("SHOW PARTITIONS s PARTITION (name='a')")
    # partitions an overwrite replaced without rewriting them are gone
    session.sql("INSERT OVERWRITE TABLE s VALUES (5,'e',1,1,'2021','12','04')")
    assert hudiql_rows(session, "SHOW PARTITIONS s") == [("year=2021/month=12/day=04",)]


@pytest.mark.parametrize("kind", TYPES)
def test_static_overwrite_of_a_date_partition(session, warehouse, kind):
    """A DATE partition column (paths formatted by the timestamp key generator, day=20240501): a
    static PARTITION (...) value names the path its rows are written to, for INSERT OVERWRITE (even
    by an empty query) and SHOW PARTITIONS."""
    session.sql("CREATE TABLE d (id INT, name STRING, ts BIGINT, day DATE) USING hudi PARTITIONED BY (day) "
                f"TBLPROPERTIES (primaryKey='id', preCombineField='ts', type='{kind}')")
    session.sql("INSERT INTO d VALUES (1,'a',1,DATE'2024-05-01'), (2,'b',1,DATE'2024-05-01'), (3,'c',1,DATE'2024-05-02')")
    assert hudiql_rows(session, "SHOW PARTITIONS d PARTITION (day='2024-05-01')") == [("day=20240501",)]
    assert hudiql_rows(session, "SHOW PARTITIONS d PARTITION (day='2024-05-09')") == []
    session.sql("INSERT OVERWRITE d PARTITION (day='2024-05-01') SELECT 4, 'd', 1")
    expected = [(3, "c", "2024-05-02"), (4, "d", "2024-05-01")]
    assert rows(session, "d", "id, name, CAST(day AS STRING)") == expected
    session.sql("INSERT OVERWRITE d PARTITION (day='2024-05-02') SELECT id, name, ts FROM d WHERE id < 0")
    assert rows(session, "d", "id, name, CAST(day AS STRING)") == [(4, "d", "2024-05-01")]
    assert official_rows(warehouse / "d", ["id", "name"]) == [(4, "d")]
