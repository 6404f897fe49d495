"""Schema evolution on write: ``INSERT WITH SCHEMA EVOLUTION`` and ``MERGE WITH SCHEMA EVOLUTION``
(Spark's spelling, per statement).

Source columns the table lacks are added at the end of its schema, and values of a wider type
widen their column, in the same commit as the rows: the commit's schema is the new one, as Hudi
records a schema change. Without the clause the write is refused by name (a value too wide for
its column fails its cast, naming the column). Files written before read the new columns as
NULL, in hudiql and in the official reader; a failed write leaves schema and rows as they were.
"""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from hudiql.errors import ColumnError, DataError
from hudiql.sql.parser import parse

from conftest import hudiql_rows, instants, official_rows

DDL = ("CREATE TABLE t (id INT, v INT, ts INT, dt STRING) USING hudi {partitioned}"
       "TBLPROPERTIES (primaryKey='id', preCombineField='ts', type='{kind}')")


def commit_schema(table, kind: str) -> dict[str, object]:
    """Column -> Avro type of the schema the table's latest commit records."""
    action = "deltacommit" if kind == "mor" else "commit"
    latest = instants(table, action)[-1]
    meta = json.loads((table / ".hoodie" / f"{latest}.{action}").read_text())
    return {f["name"]: f["type"] for f in json.loads(meta["extraMetadata"]["schema"])["fields"]}


def test_the_clause_is_a_flag_of_insert_and_merge():
    evolving = parse(
        "INSERT WITH SCHEMA EVOLUTION INTO t SELECT 1;"
        "insert with schema evolution overwrite table t partition (dt = 'a') select 1;"
        "WITH s AS (SELECT 1 AS id) INSERT WITH SCHEMA EVOLUTION INTO t BY NAME SELECT * FROM s;"
        "MERGE WITH SCHEMA EVOLUTION INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE"
    )
    assert [(type(s).__name__, s.schema_evolution) for s in evolving] == [("Insert", True)] * 3 + [("Merge", True)]
    assert (evolving[1].overwrite, evolving[2].by_name) == (True, True)
    plain = parse("INSERT INTO t SELECT 1; MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE")
    assert [s.schema_evolution for s in plain] == [False, False]


@pytest.mark.parametrize("kind", ["cow", "mor"])
def test_insert_adds_columns_that_old_base_and_log_files_read_as_null(session, warehouse, kind):
    session.sql(DDL.format(kind=kind, partitioned="PARTITIONED BY (dt) "))
    session.sql("INSERT INTO t VALUES (1, 10, 1, 'a'), (2, 20, 1, 'b')")
    session.sql("UPDATE t SET v = 11 WHERE id = 1")  # merge-on-read: a log block of the old schema
    before = sorted(p.name for p in (warehouse / "t" / ".hoodie").iterdir())
    refusals = [
        ("INSERT INTO t SELECT 3, 30, 1, 'a', 'x' AS note", DataError,
         "INSERT provides 5 columns but the table has 4 (id, v, ts, dt): remove the extra column note, "
         "or add it with INSERT WITH SCHEMA EVOLUTION (or ALTER TABLE ... ADD COLUMNS)"),
        ("INSERT INTO t (id, v, ts, dt, note) VALUES (3, 30, 1, 'a', 'x')", ColumnError,
         "INSERT INTO ... (id, v, ts, dt, note): the table has no column note (its columns: id, v, ts, dt); "
         "add it with INSERT WITH SCHEMA EVOLUTION (or ALTER TABLE ... ADD COLUMNS)"),
    ]
    for sql, error, message in refusals:
        with pytest.raises(error) as info:
            session.sql(sql)
        assert str(info.value) == message
    assert sorted(p.name for p in (warehouse / "t" / ".hoodie").iterdir()) == before

    # Positional extras take the query's names; a column list names its new columns.
    session.sql("INSERT WITH SCHEMA EVOLUTION INTO t SELECT 3, 30, 1, 'a', 'x' AS note")
    assert commit_schema(warehouse / "t", kind)["note"] == ["null", "string"]
    session.sql("INSERT WITH SCHEMA EVOLUTION INTO t (id, ts, dt, n) VALUES (4, 1, 'b', CAST(7 AS TINYINT))")
    assert commit_schema(warehouse / "t", kind)["n"] == ["null", "int"]  # stored as Avro stores a TINYINT
    described = {r[0]: r[1] for r in session.sql("DESCRIBE t").collect()}
    assert (described["note"], described["n"]) == ("string", "int")
    session.sql("UPDATE t SET note = 'u' WHERE id = 1")  # a new-schema log block after the old one
    expected = [(1, 11, "a", "u", None), (2, 20, "b", None, None), (3, 30, "a", "x", None), (4, None, "b", None, 7)]
    assert hudiql_rows(session, "SELECT id, v, dt, note, n FROM t") == expected
    assert official_rows(warehouse / "t", ["id", "v", "dt", "note", "n"]) == expected


@pytest.mark.parametrize("kind", ["cow", "mor"])
def test_insert_widens_columns_and_names_a_value_too_wide_without_the_clause(session, warehouse, kind):
    session.sql("CREATE TABLE t (id INT, v INT, f FLOAT, d DECIMAL(6,2), ts INT) USING hudi "
                f"TBLPROPERTIES (primaryKey='id', preCombineField='ts', type='{kind}')")
    session.sql("INSERT INTO t VALUES (1, 10, 1.5, 1.25, 1)")
    wide = "SELECT 2, 30000000000, CAST(2.5 AS DOUBLE), CAST(123456.78 AS DECIMAL(8,2)), 1"
    with pytest.raises(DataError) as info:
        session.sql(f"INSERT INTO t {wide}")
    assert str(info.value) == (
        'column v: [CAST_OVERFLOW] The value 30000000000L of the type "BIGINT" cannot be cast to "INT" due to an overflow; '
        "INSERT WITH SCHEMA EVOLUTION widens the column (v to bigint)"
    )
    with pytest.raises(ColumnError) as info:  # as ALTER TABLE refuses it
        session.sql("INSERT WITH SCHEMA EVOLUTION INTO t SELECT 2L, 20, 2.5, 2.5, 1")
    assert str(info.value) == "column id is a record key, partition or ordering field; its type cannot change"

    session.sql(f"INSERT WITH SCHEMA EVOLUTION INTO t {wide}")
    schema = commit_schema(warehouse / "t", kind)
    assert (schema["v"], schema["f"], schema["d"][1]["precision"]) == (["null", "long"], ["null", "double"], 8)
    session.sql("UPDATE t SET v = 40000000000 WHERE id = 1")  # merge-on-read: a log on the old base file
    expected = [(1, 40000000000, 1.5, Decimal("1.25")), (2, 30000000000, 2.5, Decimal("123456.78"))]
    assert hudiql_rows(session, "SELECT id, v, f, d FROM t") == expected
    assert official_rows(warehouse / "t", ["id", "v", "f", "d"]) == expected


@pytest.mark.parametrize("kind", ["cow", "mor"])
def test_merge_adds_and_widens_columns(session, warehouse, kind):
    session.sql(DDL.format(kind=kind, partitioned="PARTITIONED BY (dt) "))
    session.sql("INSERT INTO t VALUES (1, 10, 1, 'a'), (2, 20, 1, 'b')")
    source = "(SELECT 1 AS id, 30000000000 AS v, 2 AS ts, 'a' AS dt, 'x' AS note UNION ALL SELECT 3, 3, 1, 'a', 'y') s"
    star = f"MERGE {{}}INTO t USING {source} ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    before = sorted(p.name for p in (warehouse / "t" / ".hoodie").iterdir())
    refusals = [
        (f"MERGE INTO t USING {source} ON t.id = s.id WHEN MATCHED THEN UPDATE SET note = s.note", ColumnError,
         "WHEN MATCHED THEN UPDATE: column 'note' is not in the table; columns are: id, v, ts, dt "
         "(MERGE WITH SCHEMA EVOLUTION adds it)"),
        (f"MERGE INTO t USING {source} ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v", DataError,
         'column v: [CAST_OVERFLOW] The value 30000000000L of the type "BIGINT" cannot be cast to "INT" due to an '
         "overflow; MERGE WITH SCHEMA EVOLUTION widens the column (v to bigint)"),
        (f"MERGE WITH SCHEMA EVOLUTION INTO t USING {source} ON t.id = s.id WHEN MATCHED THEN UPDATE SET note = upper(s.note)",
         ColumnError, "WHEN MATCHED THEN UPDATE: table t has no column note; MERGE WITH SCHEMA EVOLUTION adds a column "
         "from the source column of its name only (note = s.note)"),
    ]
    for sql, error, message in refusals:
        with pytest.raises(error) as info:
            session.sql(sql)
        assert str(info.value) == message
    assert sorted(p.name for p in (warehouse / "t" / ".hoodie").iterdir()) == before

    session.sql(star.format("WITH SCHEMA EVOLUTION "))
    schema = commit_schema(warehouse / "t", kind)
    assert (schema["v"], schema["note"]) == (["null", "long"], ["null", "string"])
    session.sql("MERGE WITH SCHEMA EVOLUTION INTO t USING (SELECT 2 AS id, 5 AS n) s ON t.id = s.id "
                "WHEN MATCHED THEN UPDATE SET t.n = s.n")
    assert list(commit_schema(warehouse / "t", kind))[-3:] == ["dt", "note", "n"]
    expected = [(1, 30000000000, "a", "x", None), (2, 20, "b", None, 5), (3, 3, "a", "y", None)]
    assert hudiql_rows(session, "SELECT id, v, dt, note, n FROM t") == expected
    if kind == "cow":
        # (The official reader 0.5.0 refuses a merge-on-read slice whose older log block lacks a
        # column while a later one widened another: hudiql reads it, see the test above.)
        assert official_rows(warehouse / "t", ["id", "v", "dt", "note", "n"]) == expected


def test_a_failed_evolving_write_leaves_schema_and_rows_as_they_were(session, warehouse):
    session.sql(DDL.format(kind="mor", partitioned=""))
    session.sql("INSERT INTO t VALUES (1, 10, 1, 'a')")
    before = sorted(p.name for p in (warehouse / "t" / ".hoodie").iterdir() if p.is_file())
    with pytest.raises(DataError, match="every row needs a record key value"):
        session.sql("INSERT WITH SCHEMA EVOLUTION INTO t SELECT CAST(NULL AS INT), 30000000000, 1, 'a', 'x' AS note")
    with pytest.raises(ColumnError, match="new column note has no type"):
        session.sql("INSERT WITH SCHEMA EVOLUTION INTO t SELECT 2, 20, 1, 'a', NULL AS note")
    with pytest.raises(ColumnError, match="'_hoodie_note': names starting with _hoodie_ are Hudi's meta columns"):
        session.sql("INSERT WITH SCHEMA EVOLUTION INTO t SELECT 2, 20, 1, 'a', 'x' AS _hoodie_note")
    assert sorted(p.name for p in (warehouse / "t" / ".hoodie").iterdir() if p.is_file()) == before
    described = {r[0]: r[1] for r in session.sql("DESCRIBE t").collect()}
    assert ("note" in described, described["v"]) == (False, "int")
    assert hudiql_rows(session, "SELECT id, v, ts, dt FROM t") == [(1, 10, 1, "a")]


def test_insert_by_name_and_overwrite_with_schema_evolution(session, warehouse):
    session.sql(DDL.format(kind="cow", partitioned="PARTITIONED BY (dt) "))
    session.sql("INSERT INTO t VALUES (1, 10, 1, 'a'), (2, 20, 1, 'b')")
    session.sql("INSERT INTO t BY NAME SELECT 'b' AS dt, 3 AS id, 2 AS ts")  # by name, not by position
    session.sql("INSERT WITH SCHEMA EVOLUTION OVERWRITE TABLE t PARTITION (dt = 'a') SELECT 4, 40, 1, 'z' AS note")
    expected = [(2, 20, "b", None), (3, None, "b", None), (4, 40, "a", "z")]
    assert hudiql_rows(session, "SELECT id, v, dt, note FROM t") == expected
    assert official_rows(warehouse / "t", ["id", "v", "dt", "note"]) == expected
