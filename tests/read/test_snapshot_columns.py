"""Queries read only the columns they name: merged (merge-on-read) slices are read in Python
tasks, so the query planner tells the snapshot which columns to carry (``needed_columns``)."""

from __future__ import annotations

import pytest
import sqlglot
from conftest import hudiql_rows

from hudiql.read.query import needed_columns
from hudiql.sql.parser import DIALECT

COLUMNS = ["_hoodie_record_key", "id", "name", "ts", "dt"]


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT count(*) FROM t", []),
        ("SELECT count(*), sum(ts) FROM t", ["ts"]),
        ("SELECT NAME FROM t WHERE `Id` = 1", ["id", "name"]),
        ("SELECT a.name FROM t a JOIN u b USING (dt)", ["name", "dt"]),
        ("WITH x AS (SELECT ts AS n FROM t) SELECT n FROM x", ["ts"]),
        ("SELECT _hoodie_record_key FROM t ORDER BY ts", ["_hoodie_record_key", "ts"]),
        ("SELECT * FROM t", None),
        ("SELECT * EXCEPT (name) FROM t", None),
        ("SELECT t.* FROM t", None),
        ("SELECT count(t.*) FROM t", None),
        ("SELECT id FROM t NATURAL JOIN u", None),
        ("SELECT * FROM t PIVOT (sum(ts) FOR dt IN ('d1', 'd2'))", None),
        ("SELECT id FROM t UNPIVOT (v FOR k IN (ts, id))", None),
    ],
)
def test_needed_columns(sql, expected):
    got = needed_columns(sqlglot.parse_one(sql, read=DIALECT), COLUMNS)
    assert got == (None if expected is None else [c for c in COLUMNS if c in expected])


@pytest.fixture
def mor_table(session):
    """A merge-on-read table whose slices have logs (updates, a delete), plus a base-only slice."""
    session.sql(
        "CREATE TABLE m (id INT, name STRING, ts BIGINT, dt STRING) USING hudi PARTITIONED BY (dt) "
        "TBLPROPERTIES (primaryKey='id', preCombineField='ts', type='mor', 'hoodie.compact.inline'='false', "
        "'hoodie.parquet.small.file.limit'='0')"
    )
    session.sql("INSERT INTO m VALUES (1,'a',1,'d1'), (2,'b',1,'d1'), (3,'c',1,'d2'), (4,'d',1,'d3')")
    session.sql("INSERT INTO m VALUES (1,'a2',2,'d1'), (3,'c0',0,'d2'), (5,'e',1,'d2')")
    session.sql("DELETE FROM m WHERE id = 2")
    return session


def _view_columns(session, sql: str) -> list[str]:
    """The columns of the snapshot view the planner registers for ``m`` in ``sql``."""
    query, views = session.planner.with_snapshots(sqlglot.parse_one(sql, read=DIALECT))
    try:
        return session.spark.table(views[0]).columns
    finally:
        session.planner.drop(views)


def test_snapshot_views_carry_only_the_named_columns(mor_table):
    session = mor_table
    assert _view_columns(session, "SELECT count(*) FROM m") == []
    assert _view_columns(session, "SELECT sum(ts) FROM m WHERE dt = 'd2'") == ["ts", "dt"]
    assert _view_columns(session, "SELECT * FROM m") == [
        "_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key", "_hoodie_partition_path",
        "_hoodie_file_name", "id", "name", "ts", "dt",
    ]


def test_projected_queries_agree_with_full_rows(mor_table):
    session = mor_table
    full = hudiql_rows(session, "SELECT id, name, ts, dt, _hoodie_record_key FROM m")
    assert [r[:4] for r in full] == [(1, "a2", 2, "d1"), (3, "c", 1, "d2"), (4, "d", 1, "d3"), (5, "e", 1, "d2")]
    assert hudiql_rows(session, "SELECT count(*) FROM m") == [(len(full),)]
    assert hudiql_rows(session, "SELECT count(*) FROM m WHERE dt = 'd2'") == [(2,)]
    assert hudiql_rows(session, "SELECT sum(ts) FROM m") == [(sum(r[2] for r in full),)]
    assert hudiql_rows(session, "SELECT NAME FROM m WHERE id = 3") == [("c",)]
    assert hudiql_rows(session, "SELECT _hoodie_record_key FROM m") == [(r[4],) for r in full]
    assert hudiql_rows(session, "SELECT a.name, b.ts FROM m a JOIN m b USING (id)") == sorted((r[1], r[2]) for r in full)
    assert hudiql_rows(session, "WITH x AS (SELECT id AS k, upper(name) AS n FROM m) SELECT k, n FROM x") == [
        (r[0], r[1].upper()) for r in full
    ]


def test_pinned_keys_read_only_their_rows_of_merged_slices(mor_table):
    """A query (or a statement) that pins the record key gets only those keys' rows out of a merged
    slice; the merge of each key is the same: an updated key's latest version, a deleted key
    nothing, a key of a base-only slice its row."""
    from hudiql.read.snapshot import snapshot
    from hudiql.table.table import HudiTable

    session = mor_table
    for keys, expected in (({"1"}, [(1, "a2")]), ({"2"}, []), ({"3", "5", "4"}, [(3, "c"), (4, "d"), (5, "e")]),
                           ({"9"}, [])):
        table = HudiTable.load(session.catalog.location("default", "m"))
        rows = snapshot(session.spark, table, columns=["id", "name"], keys=keys).collect()
        # (base-only slices are Spark's parquet reads, which the query's filter narrows)
        assert sorted(tuple(r) for r in rows if str(r.id) in keys) == expected
        merged = [r for r in rows if r.id in (1, 2, 3)]  # the slices with logs hold these keys
        assert sorted(tuple(r) for r in merged) == [e for e in expected if e[0] in (1, 2, 3)]
        listed = ", ".join(sorted(keys))
        assert hudiql_rows(session, f"SELECT id, name FROM m WHERE id IN ({listed})") == expected
    session.sql("UPDATE m SET name = 'x' WHERE id = 5")
    session.sql("DELETE FROM m WHERE id = 1")
    assert hudiql_rows(session, "SELECT id, name FROM m") == [(3, "c"), (4, "d"), (5, "x")]
