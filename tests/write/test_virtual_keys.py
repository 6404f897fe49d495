"""Tables without meta fields (``hoodie.populate.meta.fields=false``, Hudi's "virtual keys"), copy-on-write
and merge-on-read: base files keep the five meta columns empty but ``_hoodie_file_name``, log records
keep all five empty, as Hudi writes them, and every reader of stored rows (the merge of a file group or
a slice, compaction, the index, the conflict check, MERGE / UPDATE / DELETE) derives their record keys
from the key columns. Checked with the official reader, on tables hudiql creates and on tables Hudi
wrote; what Hudi does not allow on such tables is refused by name."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
from conftest import HUDI_TABLES, hudiql_rows, official_rows, unzip
from hudiql.errors import OptionError, SqlError
from hudiql.read.snapshot import stored_keys
from hudiql.record.schema import FILE_NAME, META_COLUMNS
from hudiql.sql.statements import TableName

COLUMNS = ["id", "name", "ts", "dt"]
QUERY = "SELECT id, name, ts, dt FROM t"


def create(session, *props: str, key: str = "id") -> Path:
    options = [f"primaryKey='{key}'", "preCombineField='ts'", "'hoodie.populate.meta.fields'='false'", *props]
    session.sql(f"CREATE TABLE t (id INT, name STRING, ts BIGINT, dt STRING) USING hudi PARTITIONED BY (dt) "
                f"TBLPROPERTIES ({', '.join(options)})")
    return Path(session.table(TableName(None, "t")).base_uri.removeprefix("file://"))


def base_files(table: Path) -> list[Path]:
    return [p for p in table.rglob("*.parquet") if ".hoodie" not in p.parts]


def same_rows(session, table: Path) -> list[tuple]:
    rows = hudiql_rows(session, QUERY)
    assert rows == official_rows(table, COLUMNS)
    return rows


@pytest.mark.parametrize("version, kind", [(6, "cow"), (9, "cow"), (6, "mor"), (8, "mor")])
def test_statements_on_a_table_without_meta_fields(session, version, kind):
    table = create(session, f"'hoodie.write.table.version'='{version}'", f"type='{kind}'", "'hoodie.compact.inline'='false'",
                   "'hoodie.spark.sql.insert.into.operation'='upsert'")  # Hudi 1.1's INSERT would insert (version 9)
    session.sql("INSERT INTO t VALUES (1, 'a', 1, 'd1'), (2, 'b', 1, 'd1'), (3, 'c', 1, 'd2')")
    session.sql("INSERT INTO t VALUES (1, 'a2', 2, 'd1'), (4, 'd', 1, 'd2')")  # an upsert: 1 is updated
    session.sql("UPDATE t SET name = 'bb', ts = 3 WHERE id = 2")
    session.sql("DELETE FROM t WHERE id = 3")
    session.sql("MERGE INTO t USING (SELECT 4 AS id, 'dd' AS name, 5L AS ts, 'd2' AS dt UNION ALL "
                "SELECT 5, 'e', 1, 'd1') s ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
    expected = [(1, "a2", 2, "d1"), (2, "bb", 3, "d1"), (4, "dd", 5, "d2"), (5, "e", 1, "d1")]
    assert same_rows(session, table) == expected
    assert session.sql("SELECT * FROM t").columns == COLUMNS  # no meta columns, as the official reader returns it
    if kind == "mor":
        logged = [p for p in table.rglob("*") if ".log." in p.name]
        assert logged  # the updates went to log files, whose records keep the meta columns empty
        session.sql("CALL run_compaction(table => 't')")
        assert same_rows(session, table) == expected

    latest = {p.name: p for p in base_files(table)}
    view = session.table(TableName(None, "t")).file_system_view()
    for s in view.latest_slices():
        stored = pq.read_table(latest[s.base_file]).to_pydict()
        assert all(v is None for c in META_COLUMNS if c != FILE_NAME for v in stored[c])
        assert set(stored[FILE_NAME]) <= {p for p in latest}  # the file's own name, or the file a kept row came from
    loaded = session.table(TableName(None, "t"))
    keys = stored_keys(session.spark, loaded, [s.base_path for s in view.latest_slices()]).collect()
    assert sorted((r[0], r[1]) for r in keys) == [("1", "dt=d1"), ("2", "dt=d1"), ("4", "dt=d2"), ("5", "dt=d1")]


def test_a_complex_key_and_clustering(session):
    table = create(session, "'hoodie.datasource.write.keygenerator.class'='org.apache.hudi.keygen.ComplexKeyGenerator'",
                   key="id,name")
    for i in range(3):
        session.sql(f"INSERT INTO t VALUES ({i}, 'n{i}', 1, 'd1')")
    session.sql("INSERT INTO t VALUES (0, 'n0', 2, 'd1')")  # the same complex key: an update
    session.sql("CALL run_clustering(table => 't')")
    assert same_rows(session, table) == [(0, "n0", 2, "d1"), (1, "n1", 1, "d1"), (2, "n2", 1, "d1")]
    session.sql("UPDATE t SET ts = 9 WHERE id = 1")
    assert same_rows(session, table) == [(0, "n0", 2, "d1"), (1, "n1", 9, "d1"), (2, "n2", 1, "d1")]


@pytest.mark.parametrize("path", ["cow/v6_simplekeygen_hivestyle_no_metafields", "cow/v8_simplekeygen_hivestyle_no_metafields",
                                  "mor/parquet/v6_simplekeygen_hivestyle_no_metafields"])
def test_a_table_hudi_wrote_without_meta_fields_is_written(session, tmp_path, path):
    table = unzip(HUDI_TABLES / "sample_table" / f"{path}.zip", tmp_path)
    session.sql(f"CREATE TABLE t USING hudi LOCATION '{table}'")
    columns = ["id", "name", "longField", "byteField"]
    query = f"SELECT {', '.join(columns)} FROM t"
    before = hudiql_rows(session, query)
    session.sql("UPDATE t SET name = 'Zed', longField = longField + 1 WHERE id = 1")
    session.sql("DELETE FROM t WHERE id = 2")
    after = hudiql_rows(session, query)
    assert after == official_rows(table, columns)
    assert [r for r in after if r[0] == 1][0][1] == "Zed" and not [r for r in after if r[0] == 2]
    assert len(after) == len(before) - 1


@pytest.mark.parametrize("statement, error, message", [
    ("CREATE TABLE x (id INT, ts BIGINT) USING hudi TBLPROPERTIES ('hoodie.populate.meta.fields'='false')",
     OptionError, "needs a record key"),
    ("CREATE TABLE x (id DOUBLE, ts BIGINT) USING hudi TBLPROPERTIES (primaryKey='id', "
     "'hoodie.populate.meta.fields'='false')", OptionError, "record key column id is double"),
    ("CREATE TABLE x (id INT, ts BIGINT) USING hudi PARTITIONED BY (ts) TBLPROPERTIES (primaryKey='id', "
     "'hoodie.populate.meta.fields'='false', 'hoodie.datasource.write.keygenerator.class'="
     "'org.apache.hudi.keygen.TimestampBasedKeyGenerator')", OptionError, "not supported with TimestampBasedKeyGenerator"),
    ("CREATE TABLE x (id INT) USING hudi TBLPROPERTIES (primaryKey='id', 'hoodie.populate.meta.fields'='maybe')",
     OptionError, "use true or false"),
])
def test_what_hudi_does_not_allow_without_meta_fields_is_refused(session, warehouse, statement, error, message):
    with pytest.raises(error, match=message):
        session.sql(statement)
    assert not (warehouse / "x").exists()


def test_incremental_queries_are_refused_as_in_hudi(session):
    create(session)
    session.sql("INSERT INTO t VALUES (1, 'a', 1, 'd1')")
    with pytest.raises(SqlError, match="no meta fields .* incremental queries are not supported"):
        session.sql("SELECT * FROM hudi_table_changes('t', 'latest_state', 'earliest')").collect()
