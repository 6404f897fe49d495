"""DML input the write path must honour or refuse, and what an INSERT reports it did.

- ``insert_counts``: an INSERT's counts come from its write tasks (updated, deleted, inserted,
  skipped older), the same five as MERGE's, and the commit's extraMetadata records them.
- A MERGE source ``_hoodie_is_deleted`` the target lacks deletes the key under ``SET *`` / ``INSERT *``.
- An INSERT column list that leaves out a record key or partition column is refused.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import hudiql_rows
from hudiql.errors import ColumnError
from hudiql.sql import statements as S
from hudiql.write.dml import DmlCounts, insert_counts
from hudiql.services.post_commit import transaction
from hudiql.write.insert import insert_rows
from hudiql.write.writer import Operation, write_rows


def latest_extra_metadata(base: Path) -> dict:
    commits = sorted((base / ".hoodie").glob("*.commit")) + sorted((base / ".hoodie").glob("*.deltacommit"))
    latest = max(commits, key=lambda p: p.name.split(".")[0])
    return json.loads(latest.read_text())["extraMetadata"]


def upsert(session, name: str, rows: list[tuple]):
    """What ``INSERT INTO name VALUES ...`` writes: the rows, upserted by ``write_rows``."""
    with transaction(session.spark, session.table(S.TableName(None, name)), {}) as txn:
        return write_rows(txn, session.spark.createDataFrame(rows, txn.table.schema), Operation.UPSERT)


# ---- INSERT counts ------------------------------------------------------------------------------

ORDERS = (
    "CREATE TABLE orders (id INT, status STRING, ts BIGINT, day STRING) USING hudi PARTITIONED BY (day) "
    "TBLPROPERTIES (primaryKey='id', preCombineField='ts'{extra})"
)


@pytest.mark.parametrize("extra", [
    pytest.param("", id="cow_simple_index"),
    pytest.param(", 'hoodie.index.type'='BUCKET', 'hoodie.bucket.index.num.buckets'='2'", id="cow_bucket_index"),
])
def test_insert_counts_say_updated_skipped_older_and_inserted(session, warehouse, extra):
    """The README quickstart's upsert: one newer update, one older row (the stored row stays), one new key."""
    session.sql(ORDERS.format(extra=extra))
    session.sql("INSERT INTO orders VALUES (1, 'placed', 10, 'd1'), (2, 'placed', 10, 'd1'), (3, 'placed', 10, 'd2')")
    meta = upsert(session, "orders", [(1, "shipped", 20, "d1"), (2, "lost?", 5, "d1"), (4, "placed", 30, "d2")])
    counts = insert_counts(meta)
    assert counts == DmlCounts(updated=1, deleted=0, inserted=1, skipped_older=1)
    assert counts.row() == (2, 1, 0, 1, 1)
    assert latest_extra_metadata(warehouse / "orders") == {**counts.metadata(), "schema": meta.schema}
    assert hudiql_rows(session, "SELECT id, status FROM orders") == [(1, "shipped"), (2, "placed"), (3, "placed"), (4, "placed")]


def test_insert_counts_a_hoodie_is_deleted_row_as_deleted(session, warehouse):
    session.sql(
        "CREATE TABLE del (id INT, v STRING, ts INT, _hoodie_is_deleted BOOLEAN) USING hudi "
        "TBLPROPERTIES (primaryKey='id', preCombineField='ts')"
    )
    session.sql("INSERT INTO del VALUES (1, 'a', 1, false), (2, 'b', 1, false)")
    # 1 is deleted, 2 is updated, 3 is a delete of a key never stored (nothing happens), 4 is new
    meta = upsert(session, "del", [(1, "a", 2, True), (2, "B", 2, False), (3, "c", 2, True), (4, "d", 2, False)])
    assert insert_counts(meta) == DmlCounts(updated=1, deleted=1, inserted=1, skipped_older=0)
    assert hudiql_rows(session, "SELECT id, v FROM del") == [(2, "B"), (4, "d")]


def test_insert_counts_on_merge_on_read(session, warehouse):
    """Updates of existing file groups go to logs and count as updates; new keys as inserts."""
    session.sql("CREATE TABLE m (id INT, v STRING) USING hudi TBLPROPERTIES (primaryKey='id', type='mor')")
    session.sql("INSERT INTO m VALUES (1, 'a'), (2, 'b')")
    meta = upsert(session, "m", [(1, "A", ), (5, "e")])
    assert insert_counts(meta) == DmlCounts(updated=1, deleted=0, inserted=1, skipped_older=0)
    assert latest_extra_metadata(warehouse / "m")["hudiql.num_affected_rows"] == "2"
    assert hudiql_rows(session, "SELECT id, v FROM m") == [(1, "A"), (2, "b"), (5, "e")]


def test_insert_operation_counts_every_row_as_inserted(session, warehouse):
    session.sql("CREATE TABLE logs (msg STRING, n INT) USING hudi")
    with transaction(session.spark, session.table(S.TableName(None, "logs")), {}) as txn:
        rows = session.spark.createDataFrame([("a", 1), ("a", 1)], txn.table.schema)
        meta = write_rows(txn, rows, Operation.INSERT)
    assert insert_counts(meta) == DmlCounts(inserted=2)


# ---- MERGE: a source _hoodie_is_deleted the target lacks -----------------------------------------

@pytest.mark.parametrize("kind", ["cow", "mor"])
def test_merge_source_hoodie_is_deleted_deletes_the_key(session, kind):
    session.sql(
        f"CREATE TABLE t (id INT, v STRING, ts INT) USING hudi TBLPROPERTIES (primaryKey='id', preCombineField='ts', type='{kind}')"
    )
    session.sql("INSERT INTO t VALUES (1, 'a', 1), (2, 'b', 1), (3, 'c', 1)")
    source = (
        "(SELECT 1 AS id, 'x' AS v, 2 AS ts, true AS _hoodie_is_deleted UNION ALL "
        "SELECT 2, 'keep', 2, true UNION ALL SELECT 3, 'C', 2, false UNION ALL "
        "SELECT 4, 'new-deleted', 2, true UNION ALL SELECT 5, 'new', 2, CAST(NULL AS BOOLEAN))"
    )
    counts = session.sql(
        f"MERGE INTO t USING {source} s ON t.id = s.id "
        "WHEN MATCHED AND s.v = 'keep' THEN UPDATE SET v = s.v "  # an explicit clause: the flag is not assigned
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    ).collect()
    # 1 deleted; 2 updated by the explicit clause; 3 updated; 4 a deleted new key (nothing); 5 inserted
    assert tuple(counts[0]) == (4, 2, 1, 1, 0)
    assert hudiql_rows(session, "SELECT id, v, ts FROM t") == [(2, "keep", 1), (3, "C", 2), (5, "new", 2)]


# ---- INSERT column lists ------------------------------------------------------------------------

@pytest.mark.parametrize("columns, partition, needle", [
    pytest.param(["id", "v", "ts"], None, "partition column day", id="partition_column_left_out"),
    pytest.param(["v", "ts", "day"], None, "record key column id", id="record_key_left_out"),
    pytest.param(["V", "TS", "Day"], None, "record key column id", id="names_any_case"),
    pytest.param(None, {"dday": None}, "INSERT INTO ... PARTITION", id="unknown_dynamic_partition_column"),
])
def test_insert_column_list_must_give_key_and_partition_columns(session, columns, partition, needle):
    session.sql("CREATE TABLE p (id INT, v STRING, ts INT, day STRING) USING hudi PARTITIONED BY (day) "
                "TBLPROPERTIES (primaryKey='id')")
    table = session.table(S.TableName(None, "p"))
    width = len(columns) if columns else 3  # no list: the query gives every column but the partition's
    source = session.spark.createDataFrame([tuple(range(width))], [f"c{i}" for i in range(width)])
    with pytest.raises(ColumnError) as info:
        insert_rows(table.schema, source, columns, partition, table.config.record_key_fields, table.config.partition_fields)
    assert needle in str(info.value) and "\n" not in str(info.value)


def test_insert_column_list_with_a_static_partition_or_no_key_is_accepted(session):
    from sqlglot import exp

    session.sql("CREATE TABLE p (id INT, v STRING, day STRING) USING hudi PARTITIONED BY (day) TBLPROPERTIES (primaryKey='id')")
    session.sql("CREATE TABLE nokey (msg STRING, n INT) USING hudi")
    table = session.table(S.TableName(None, "p"))
    source = session.spark.createDataFrame([(1,)], "c0 int")
    rows = insert_rows(table.schema, source, ["id"], {"day": exp.Literal.string("d1")},
                       table.config.record_key_fields, table.config.partition_fields)
    assert [tuple(r) for r in rows.collect()] == [(1, None, "d1")]
    nokey = session.table(S.TableName(None, "nokey"))
    rows = insert_rows(nokey.schema, source.selectExpr("'m' AS c0"), ["msg"], None,
                       nokey.config.record_key_fields, nokey.config.partition_fields)
    assert [tuple(r) for r in rows.collect()] == [("m", None)]
