"""``spark.read.format("hudi")`` from plain PySpark (``hudiql.datasource``): each read returns what the
same read in hudiql SQL returns, on copy-on-write and merge-on-read tables; bad options, and writes
through a data source registered without a session, are refused with one line."""

from __future__ import annotations

from pathlib import Path

import hudiql
import hudiql.datasource
import pytest

from tests.conftest import official_rows, timeline

QUERY_TYPE = "hoodie.datasource.query.type"
BEGIN = "hoodie.datasource.read.begin.instanttime"
END = "hoodie.datasource.read.end.instanttime"


@pytest.fixture
def hudi(spark):
    """``spark.read.format("hudi")`` with hudiql's data source registered."""
    hudiql.datasource.register(spark)
    return lambda **options: spark.read.format("hudi").options(**options)


def _rows(df) -> list[tuple]:
    return sorted(tuple(r) for r in df.collect())


def _commits(path) -> list[str]:
    return [n.split(".")[0] for n in timeline(path) if n.endswith((".commit", ".deltacommit"))]


def test_cow_snapshot_time_travel_and_incremental_read_as_sql_does(session, hudi, warehouse):
    session.sql("CREATE TABLE c (id INT, v STRING, day STRING) USING hudi PARTITIONED BY (day) TBLPROPERTIES (primaryKey = 'id', 'hoodie.spark.sql.insert.into.operation'='upsert')")
    session.sql("INSERT INTO c VALUES (1, 'a', 'd1'), (2, 'b', 'd1'), (3, 'c', 'd2')")
    session.sql("INSERT INTO c VALUES (2, 'b2', 'd1'), (4, 'd', 'd2')")
    path = str(warehouse / "c")
    first, second = _commits(warehouse / "c")

    snapshot = hudi().load(path)
    assert snapshot.columns == session.sql("SELECT * FROM c").columns  # the meta columns first, as SQL shows them
    assert _rows(snapshot) == _rows(session.sql("SELECT * FROM c"))
    assert _rows(snapshot.select("id", "v")) == [(1, "a"), (2, "b2"), (3, "c"), (4, "d")]
    past = hudi(**{"as.of.instant": first}).load(path)
    assert _rows(past) == _rows(session.sql(f"SELECT * FROM c TIMESTAMP AS OF '{first}'"))
    assert _rows(past.select("id", "v")) == [(1, "a"), (2, "b"), (3, "c")]
    changed = hudi(**{QUERY_TYPE: "incremental", BEGIN: first}).load(path)
    assert _rows(changed) == _rows(session.sql(f"SELECT * FROM hudi_table_changes('c', 'latest_state', '{first}')"))
    assert _rows(changed.select("id", "_hoodie_commit_time")) == [(2, second), (4, second)]
    assert _rows(hudi(**{QUERY_TYPE: "incremental", BEGIN: "earliest", END: first}).load(path).select("id")) == [(1,), (2,), (3,)]


def test_mor_snapshot_merges_logs_and_read_optimized_reads_base_files(session, hudi, warehouse):
    session.sql("CREATE TABLE m (id INT, v STRING, ts INT) USING hudi TBLPROPERTIES (primaryKey = 'id', preCombineField = 'ts', "
                "type = 'mor', 'hoodie.compact.inline' = 'false')")
    session.sql("INSERT INTO m VALUES (1, 'a', 1), (2, 'b', 1), (3, 'c', 1)")
    session.sql("MERGE INTO m USING (SELECT 2 AS id, 'b2' AS v, 2 AS ts UNION ALL SELECT 1, 'old', 0) s "
                "ON m.id = s.id WHEN MATCHED THEN UPDATE SET *")
    session.sql("INSERT INTO m VALUES (4, 'd', 1)")
    session.sql("DELETE FROM m WHERE id = 3")
    path = str(warehouse / "m")
    first, second, third, _ = _commits(warehouse / "m")
    assert len(list((warehouse / "m").glob(".*.log.*"))) == 2, "the update and the delete went to log files"

    snapshot = hudi().load(path)
    assert _rows(snapshot) == _rows(session.sql("SELECT * FROM m"))
    # 1 keeps its stored row (newer by event time), 2 is updated from a log, 3 deleted by one, 4 inserted
    assert _rows(snapshot.select("id", "v", "ts")) == [(1, "a", 1), (2, "b2", 2), (4, "d", 1)]
    assert _rows(snapshot.select("id", "v", "ts")) == official_rows(path, ["id", "v", "ts"])
    read_optimized = hudi(**{QUERY_TYPE: "read_optimized"}).load(path)
    assert _rows(read_optimized) == _rows(session.sql("SELECT * FROM m_ro"))
    assert _rows(read_optimized.select("id", "v")) == [(1, "a"), (2, "b"), (3, "c"), (4, "d")]
    changed = hudi(**{QUERY_TYPE: "incremental", BEGIN: first, END: second}).load(path)
    assert _rows(changed) == _rows(session.sql(f"SELECT * FROM hudi_table_changes('m', 'latest_state', '{first}', '{second}')"))
    assert _rows(changed.select("id", "v")) == [(2, "b2")]
    past = hudi(**{"as.of.instant": third}).load(path)
    assert _rows(past) == _rows(session.sql(f"SELECT * FROM m TIMESTAMP AS OF '{third}'"))
    assert _rows(past.select("id", "v")) == [(1, "a"), (2, "b2"), (3, "c"), (4, "d")]  # before the delete


@pytest.fixture(scope="module")
def written_table(spark, tmp_path_factory) -> str:
    """A table with one commit, shared by the tests of refusals (the last write test then writes it)."""
    warehouse = tmp_path_factory.mktemp("datasource") / "warehouse"
    session = hudiql.connect(warehouse=str(warehouse), spark=spark)
    session.sql("CREATE TABLE b (id INT, v STRING) USING hudi TBLPROPERTIES (primaryKey = 'id', 'hoodie.spark.sql.insert.into.operation'='upsert')")
    session.sql("INSERT INTO b VALUES (1, 'a')")
    return str(warehouse / "b")


@pytest.mark.parametrize(("options", "message"), [
    ({"hoodie.datasource.query.typ": "snapshot"}, "unknown option 'hoodie.datasource.query.typ' of format(\"hudi\"); did you mean 'hoodie.datasource.query.type'?"),
    ({QUERY_TYPE: "cdc"}, "hoodie.datasource.query.type=cdc"),
    ({QUERY_TYPE: "incremental"}, "an incremental read needs .option('hoodie.datasource.read.begin.instanttime'"),
    ({BEGIN: "earliest"}, "need .option('hoodie.datasource.query.type', 'incremental')"),
    ({"hoodie.datasource.write.recordkey.field": "id"}, "unknown option 'hoodie.datasource.write.recordkey.field'"),
    ({"as.of.instant": "yesterday"}, "TIMESTAMP AS OF"),
    ({"as.of.instant": "2001-01-01"}, "has no commit at or before 20010101000000000"),
    ({QUERY_TYPE: "incremental", BEGIN: "earliest", "hoodie.datasource.read.include.deletes": "true"},
     "hoodie.datasource.read.include.deletes=true is not supported by format(\"hudi\")"),
])
def test_bad_options_are_one_clear_error(hudi, written_table, options, message):
    with pytest.raises(Exception) as error:
        hudi(**options).load(written_table).collect()
    assert message in str(error.value)


def test_a_folder_without_a_table_is_named(hudi, tmp_path):
    with pytest.raises(Exception, match="no Hudi table at .*empty"):
        hudi().load(str(tmp_path / "empty")).collect()


def test_writes_need_a_session_and_change_nothing_without_one(spark, hudi, written_table, tmp_path):
    """Registered without a session (``hudiql.datasource.register(spark)``), writes are refused with the
    way to write; ``hudiql.connect(spark=spark)`` registers the data source with a session that writes
    (tests/write/test_datasource_write.py)."""
    before = timeline(Path(written_table))
    rows = spark.createDataFrame([(1, "z"), (2, "b")], "id int, v string")
    for mode in ("append", "overwrite"):
        with pytest.raises(Exception, match=r"df\.write\.format\(\"hudi\"\) writes through a hudiql session: .*hudiql\.connect\(spark=spark\)"):
            rows.write.format("hudi").mode(mode).save(written_table)
    assert timeline(Path(written_table)) == before
    assert _rows(hudi().load(written_table).select("id", "v")) == [(1, "a")]
    hudiql.connect(warehouse=str(tmp_path / "warehouse"), spark=spark)
    rows.select("v", "id").write.format("hudi").mode("append").save(written_table)  # columns by name
    assert _rows(hudi().load(written_table).select("id", "v")) == [(1, "z"), (2, "b")]
