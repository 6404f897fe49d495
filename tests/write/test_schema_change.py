"""A schema that grows: ALTER TABLE ... ADD COLUMNS and ALTER COLUMN ... TYPE (widening); and
ALTER TABLE ... RENAME TO.

A schema change is a commit without files whose metadata carries the new schema (operation
ALTER_SCHEMA), as Hudi records one; files written before read added columns as NULL and narrower
values widened, in hudiql and in the official reader. A change that would lose values, or touch a
key, partition or ordering column, is refused by name and writes nothing.
"""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from hudiql.errors import ColumnError, SqlError, TableExistsError, TableNotFoundError, WriteConflictError
from hudiql.sql.statements import TableName
from hudiql.services.post_commit import transaction
from hudiql.write.writer import Operation, write_rows

from conftest import hudiql_rows, instants, official_rows

DDL = ("CREATE TABLE t (id INT, v INT, f FLOAT, d DECIMAL(6,2), ts BIGINT, dt STRING) USING hudi "
       "PARTITIONED BY (dt) TBLPROPERTIES (primaryKey='id', preCombineField='ts', type='{kind}')")


@pytest.mark.parametrize("kind", ["cow", "mor"])
def test_added_and_widened_columns_read_and_write(session, warehouse, kind):
    session.sql(DDL.format(kind=kind))
    session.sql("INSERT INTO t VALUES (1, 10, 1.5, 1.25, 1, 'a'), (2, 20, 2.5, 2.50, 1, 'b')")
    session.sql("ALTER TABLE t ADD COLUMNS (note STRING, n BIGINT)")
    session.sql("ALTER TABLE t ALTER COLUMN v TYPE BIGINT")
    session.sql("ALTER TABLE t CHANGE COLUMN f f DOUBLE")
    session.sql("ALTER TABLE t ALTER COLUMN d TYPE DECIMAL(10,2)")

    described = {r[0]: r[1] for r in session.sql("DESCRIBE t").collect()}
    assert (described["v"], described["f"], described["d"], described["note"], described["n"]) == (
        "bigint", "double", "decimal(10,2)", "string", "bigint")
    old = [(1, 10, 1.5, Decimal("1.25"), None, None), (2, 20, 2.5, Decimal("2.50"), None, None)]
    columns = ["id", "v", "f", "d", "note", "n"]
    assert hudiql_rows(session, "SELECT id, v, f, d, note, n FROM t") == old
    assert official_rows(warehouse / "t", columns) == old

    # added columns go before the partition column, as Hudi and Spark keep partition columns last
    assert [r[0] for r in session.sql("DESCRIBE t").collect()][5:12] == ["id", "v", "f", "d", "ts", "note", "n"]
    assert [r[0] for r in session.sql("DESCRIBE t").collect()][12] == "dt"
    # values only the wider types hold, new columns, an update of an old row, and a delete
    session.sql("INSERT INTO t VALUES (3, 30000000000, 3.5, 12345.67, 1, 'x', 7, 'c')")
    session.sql("UPDATE t SET note = 'u' WHERE id = 2")
    session.sql("DELETE FROM t WHERE id = 1")
    expected = [(2, 20, 2.5, Decimal("2.50"), "u", None), (3, 30000000000, 3.5, Decimal("12345.67"), "x", 7)]
    assert hudiql_rows(session, "SELECT id, v, f, d, note, n FROM t") == expected
    assert official_rows(warehouse / "t", columns) == expected

    action = "deltacommit" if kind == "mor" else "commit"
    changes = [json.loads((warehouse / "t" / ".hoodie" / f"{i}.{action}").read_text()) for i in instants(warehouse / "t", action)][1:5]
    assert [c["operationType"] for c in changes] == ["ALTER_SCHEMA"] * 4
    assert all(c["partitionToWriteStats"] == {} for c in changes)
    fields = {f["name"]: f["type"] for f in json.loads(changes[-1]["extraMetadata"]["schema"])["fields"]}
    assert fields["v"] == ["null", "long"] and fields["note"] == ["null", "string"]


def test_changes_that_lose_values_or_touch_keys_are_refused_and_write_nothing(session, warehouse):
    session.sql(DDL.format(kind="cow"))
    session.sql("INSERT INTO t VALUES (1, 10, 1.5, 1.25, 1, 'a')")
    before = sorted(p.name for p in (warehouse / "t" / ".hoodie").iterdir())
    refusals = [
        ("ALTER TABLE t ALTER COLUMN v TYPE SMALLINT", ColumnError,
         "column v cannot change from int to smallint: only a wider type"),
        ("ALTER TABLE t ALTER COLUMN d TYPE DECIMAL(6,3)", ColumnError,
         "column d cannot change from decimal(6,2) to decimal(6,3)"),
        ("ALTER TABLE t ALTER COLUMN v TYPE STRING", ColumnError, "column v cannot change from int to string"),
        ("ALTER TABLE t ALTER COLUMN id TYPE BIGINT", ColumnError,
         "column id is a record key, partition or ordering field; its type cannot change"),
        ("ALTER TABLE t ALTER COLUMN ts TYPE DECIMAL(20,0)", ColumnError, "column ts is a record key, partition or ordering field"),
        ("ALTER TABLE t ALTER COLUMN nope TYPE BIGINT", ColumnError, "nope"),
        ("ALTER TABLE t ADD COLUMNS (V BIGINT)", ColumnError, "column v already exists; ADD COLUMNS takes new names"),
        ("ALTER TABLE t ADD COLUMNS (_hoodie_extra INT)", ColumnError, "names starting with _hoodie_ are Hudi's meta columns"),
        ("ALTER TABLE t CHANGE COLUMN v w BIGINT", SqlError, "RENAME COLUMN needs SET hoodie.schema.on.read.enable=true"),
        ("ALTER TABLE t DROP COLUMN v", SqlError, "DROP COLUMN needs SET hoodie.schema.on.read.enable=true, as in Hudi"),
    ]
    for sql, error, message in refusals:
        with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
            session.sql(sql)
    assert sorted(p.name for p in (warehouse / "t" / ".hoodie").iterdir()) == before
    assert hudiql_rows(session, "SELECT id, v FROM t") == [(1, 10)]


def test_a_write_that_started_before_a_schema_change_conflicts_with_it(session, warehouse):
    """Whichever of the two commits last would set the table's schema: the later one is refused."""
    session.sql(DDL.format(kind="cow"))
    session.sql("INSERT INTO t VALUES (1, 10, 1.5, 1.25, 1, 'a')")
    table = session.table(TableName(None, "t"))
    with transaction(session.spark, table, dict(session.conf)) as txn:
        session.sql("ALTER TABLE t ADD COLUMNS (note STRING)")
        rows = session.spark.sql("SELECT 2 AS id, 20 AS v, CAST(2.5 AS FLOAT) AS f, CAST(2 AS DECIMAL(6,2)) AS d, "
                                 "1L AS ts, 'b' AS dt")
        with pytest.raises(WriteConflictError, match="the table's schema"):
            write_rows(txn, rows, Operation.UPSERT)
    assert hudiql_rows(session, "SELECT id, note FROM t") == [(1, None)]
    session.sql("INSERT INTO t VALUES (2, 20, 2.5, 2, 1, 'retried', 'b')")  # a retry sees the new schema
    assert hudiql_rows(session, "SELECT id, note FROM t") == [(1, None), (2, "retried")]


@pytest.mark.parametrize("external", [False, True])
def test_rename_table(session, warehouse, tmp_path, external):
    location = f" LOCATION '{tmp_path / 'ext'}'" if external else ""
    session.sql(DDL.format(kind="cow") + location)
    session.sql("INSERT INTO t VALUES (1, 10, 1.5, 1.25, 1, 'a')")
    session.sql("CREATE DATABASE other")
    with pytest.raises(TableNotFoundError, match="database nope does not exist"):
        session.sql("ALTER TABLE t RENAME TO nope.u")
    session.sql("CREATE TABLE taken (id INT) USING hudi")
    with pytest.raises(TableExistsError, match="default.taken already exists"):
        session.sql("ALTER TABLE t RENAME TO taken")

    session.sql("ALTER TABLE t RENAME TO other.u")
    assert hudiql_rows(session, "SHOW TABLES IN other") == [("other", "u", False)]
    with pytest.raises(TableNotFoundError):
        session.sql("SELECT * FROM t")
    assert hudiql_rows(session, "SELECT id, v FROM other.u") == [(1, 10)]
    folder = tmp_path / "ext" if external else warehouse / "other.db" / "u"
    assert not (warehouse / "t").exists()
    assert "hoodie.table.name=u" in (folder / ".hoodie" / "hoodie.properties").read_text()
    assert official_rows(folder, ["id", "v"]) == [(1, 10)]
    session.sql("INSERT INTO other.u VALUES (2, 20, 2.5, 2, 1, 'b')")  # writes go on under the new name
    assert hudiql_rows(session, "SELECT id FROM other.u") == [(1,), (2,)]
