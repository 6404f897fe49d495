"""The copy-on-write write path: upserts, precombine, merge rules, operations, file layout, failures."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from conftest import hudiql_rows, official_rows

from hudiql.errors import ColumnError, DataError, HudiqlError
from hudiql.layout import parse_data_file_name

EVENTS = (
    "CREATE TABLE ev (id INT, name STRING, ts BIGINT, dt STRING) USING hudi "
    "PARTITIONED BY (dt) TBLPROPERTIES (primaryKey='id', preCombineField='ts')"
)


def table_files(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*") if p.is_file() and ".hoodie" not in p.parts)


def completed_commits(path: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((path / ".hoodie").glob("*.commit"))]


def test_upsert_precombines_and_keeps_newer_stored_rows(session, warehouse):
    session.sql(EVENTS)
    result = session.sql(
        "INSERT INTO ev VALUES (1,'a',1,'d1'), (2,'b',1,'d2'), (1,'a-newer',2,'d1'), (1,'a-older',0,'d1')"
    ).first()
    assert result.num_inserted_rows == 2
    assert hudiql_rows(session, "SELECT id, name, ts, dt FROM ev") == [(1, "a-newer", 2, "d1"), (2, "b", 1, "d2")]

    # event time: a stored row with a greater ordering value is kept; equal or greater replaces it
    session.sql("INSERT INTO ev VALUES (1,'stale',1,'d1'), (2,'tie',1,'d2'), (3,'c',7,'d3')")
    assert hudiql_rows(session, "SELECT id, name, ts FROM ev") == [(1, "a-newer", 2), (2, "tie", 1), (3, "c", 7)]
    assert official_rows(warehouse / "ev", ["id", "name", "ts"]) == [(1, "a-newer", 2), (2, "tie", 1), (3, "c", 7)]

    commits = completed_commits(warehouse / "ev")
    assert len(commits) == 2 and commits[-1]["operationType"] == "UPSERT"
    stats = [s for ss in commits[-1]["partitionToWriteStats"].values() for s in ss]
    by_partition = {s["partitionPath"]: s for s in stats}
    assert by_partition["dt=d3"]["numInserts"] == 1 and by_partition["dt=d3"]["prevCommit"] == "null"
    assert by_partition["dt=d2"]["numUpdateWrites"] == 1 and by_partition["dt=d2"]["prevCommit"] != "null"
    assert by_partition["dt=d1"]["numUpdateWrites"] == 0  # the stale update lost
    for s in stats:
        assert (warehouse / "ev" / s["path"]).stat().st_size == s["fileSizeInBytes"] > 0
    schema = json.loads(commits[-1]["extraMetadata"]["schema"])
    assert schema["name"] == "ev_record" and [f["name"] for f in schema["fields"]] == ["id", "name", "ts", "dt"]


def test_ties_go_to_the_later_input_row(session):
    session.sql(EVENTS)
    session.sql("INSERT INTO ev VALUES (1,'first',5,'d'), (1,'second',5,'d'), (1,'third',5,'d')")
    assert hudiql_rows(session, "SELECT name FROM ev") == [("third",)]


def test_commit_time_ordering_without_ordering_field(session, warehouse):
    session.sql("CREATE TABLE ct (id INT, v STRING, ts BIGINT) USING hudi TBLPROPERTIES (primaryKey='id', "
                "'hoodie.spark.sql.insert.into.operation'='upsert')")
    props = (warehouse / "ct" / ".hoodie" / "hoodie.properties").read_text()
    assert "OverwriteWithLatestAvroPayload" in props and "hoodie.table.precombine.field" not in props
    session.sql("INSERT INTO ct VALUES (1,'a',10), (1,'b',1)")  # latest input row wins
    session.sql("INSERT INTO ct VALUES (2,'c',0)")
    session.sql("INSERT INTO ct VALUES (1,'later-but-lower-ts',0)")  # latest write wins regardless of ts
    assert hudiql_rows(session, "SELECT id, v FROM ct") == [(1, "later-but-lower-ts"), (2, "c")]
    assert official_rows(warehouse / "ct", ["id", "v"]) == [(1, "later-but-lower-ts"), (2, "c")]


def test_is_deleted_column_deletes_keys(session, warehouse):
    session.sql(
        "CREATE TABLE d (id INT, v STRING, ts INT, _hoodie_is_deleted BOOLEAN) USING hudi "
        "TBLPROPERTIES (primaryKey='id', preCombineField='ts')"
    )
    session.sql("INSERT INTO d VALUES (1,'a',1,false), (2,'b',1,false), (3,'c',1,false)")
    session.sql("INSERT INTO d VALUES (1,'x',2,true), (2,'x',0,true), (9,'never',1,true)")
    # key 1 deleted; key 2's delete is older than the stored row, so the row stays; key 9 never existed
    assert hudiql_rows(session, "SELECT id, v FROM d") == [(2, "b"), (3, "c")]
    assert official_rows(warehouse / "d", ["id", "v"]) == [(2, "b"), (3, "c")]
    stats = [s for ss in completed_commits(warehouse / "d")[-1]["partitionToWriteStats"].values() for s in ss]
    assert sum(s["numDeletes"] for s in stats) == 1


def test_incoming_meta_columns_are_ignored(session):
    session.sql(EVENTS)
    session.sql("INSERT INTO ev VALUES (1,'a',1,'d')")
    session.sql("INSERT INTO ev SELECT id, 'b', ts + 1, dt FROM ev")
    rows = session.sql("SELECT _hoodie_record_key, _hoodie_partition_path, name FROM ev").collect()
    assert [tuple(r) for r in rows] == [("1", "dt=d", "b")]


def test_insert_and_bulk_insert_operations_keep_duplicates(session):
    session.sql(EVENTS)
    session.sql("INSERT INTO ev VALUES (1,'a',1,'d')")
    session.sql("SET hoodie.spark.sql.insert.into.operation=insert")
    session.sql("INSERT INTO ev VALUES (1,'dup',2,'d')")
    session.sql("SET hoodie.spark.sql.insert.into.operation=bulk_insert")
    session.sql("INSERT INTO ev VALUES (1,'dup2',3,'d')")
    assert hudiql_rows(session, "SELECT name FROM ev") == [("a",), ("dup",), ("dup2",)]
    session.sql("SET hoodie.spark.sql.insert.into.operation=upsert")
    with pytest.raises(HudiqlError, match="insert, upsert or bulk_insert"):
        session.sql("SET hoodie.spark.sql.insert.into.operation=merge; INSERT INTO ev VALUES (1,'x',1,'d')")


def test_table_without_record_key_appends_with_generated_keys(session, warehouse):
    session.sql("CREATE TABLE logs (msg STRING, n INT) USING hudi")
    session.sql("INSERT INTO logs VALUES ('a', 1), ('a', 1)")
    session.sql("INSERT INTO logs VALUES ('a', 1)")
    rows = session.sql("SELECT _hoodie_record_key, msg FROM logs").collect()
    assert len(rows) == 3
    keys = [r[0] for r in rows]
    assert len(set(keys)) == 3 and all(k and "_" in k for k in keys)
    assert official_rows(warehouse / "logs", ["msg", "n"]) == [("a", 1)] * 3


def test_files_follow_hudi_naming_and_small_files_take_inserts(session, warehouse):
    session.sql(EVENTS)
    session.sql("INSERT INTO ev VALUES (1,'a',1,'d1')")
    session.sql("INSERT INTO ev VALUES (2,'b',1,'d1')")
    files = table_files(warehouse / "ev")
    assert "dt=d1/.hoodie_partition_metadata" in files
    meta = (warehouse / "ev" / "dt=d1" / ".hoodie_partition_metadata").read_text()
    assert "partitionDepth=1" in meta and "commitTime=" in meta
    parquet = [parse_data_file_name(Path(f).name) for f in files if f.endswith(".parquet")]
    # the second insert went into the small file group: one group, two slices
    assert len({p.file_id for p in parquet}) == 1 and len(parquet) == 2
    assert all("_" not in p.file_id and p.token.count("-") == 2 for p in parquet)


def test_max_file_size_splits_inserts_into_file_groups(session, warehouse):
    session.sql(
        "CREATE TABLE big (id BIGINT, pad STRING) USING hudi TBLPROPERTIES (primaryKey='id', "
        "'hoodie.parquet.max.file.size'='20000', 'hoodie.copyonwrite.record.size.estimate'='100')"
    )
    session.sql("INSERT INTO big SELECT id, repeat('x', 50) FROM range(1000)")
    # 1000 records, 20000 / 100 per file group (each task that writes them fills its own)
    records = [pq.read_metadata(warehouse / "big" / f).num_rows for f in table_files(warehouse / "big") if f.endswith(".parquet")]
    assert sum(records) == 1000 and max(records) == 200 and len(records) >= 5
    assert session.sql("SELECT count(*), count(DISTINCT id) FROM big").first() == (1000, 1000)


def test_null_record_key_fails_without_trace(session, warehouse):
    session.sql(EVENTS)
    session.sql("INSERT INTO ev VALUES (1,'a',1,'d')")
    before = table_files(warehouse / "ev")
    timeline_before = sorted(p.name for p in (warehouse / "ev" / ".hoodie").iterdir())
    with pytest.raises(DataError, match="record key field 'id' is null"):
        session.sql("INSERT INTO ev VALUES (2,'b',1,'d'), (NULL,'c',1,'d')")
    assert table_files(warehouse / "ev") == before
    assert sorted(p.name for p in (warehouse / "ev" / ".hoodie").iterdir()) == timeline_before
    assert hudiql_rows(session, "SELECT id, name FROM ev") == [(1, "a")]


def test_bad_cast_and_bad_columns_are_clear_errors(session, warehouse):
    session.sql(EVENTS)
    with pytest.raises(DataError, match="CAST_INVALID_INPUT"):
        session.sql("INSERT INTO ev VALUES ('not a number','a',1,'d')")
    with pytest.raises(DataError, match="expects 4"):
        session.sql("INSERT INTO ev VALUES (1,'a')")
    with pytest.raises(ColumnError, match="nope"):
        session.sql("INSERT INTO ev (id, nope) VALUES (1, 'a')")
    assert not list((warehouse / "ev" / ".hoodie").glob("*.commit"))
    assert table_files(warehouse / "ev") == []


def test_a_crashed_write_is_rolled_back_by_the_next_one(session, warehouse):
    """A pending instant with files (as a crash leaves it) is invisible, then removed."""
    session.sql(EVENTS)
    session.sql("INSERT INTO ev VALUES (1,'a',1,'d')")
    table_dir = warehouse / "ev"
    stray = "dt=d/11111111-2222-3333-4444-555555555555-0_0-1-0_20200101000000000.parquet"
    good = next(table_dir.glob("dt=d/*.parquet"))
    (table_dir / stray).write_bytes(good.read_bytes())
    (table_dir / ".hoodie" / "20200101000000000.commit.requested").write_text("")
    (table_dir / ".hoodie" / "20200101000000000.inflight").write_text("")
    marker = table_dir / ".hoodie" / ".temp" / "20200101000000000" / f"{stray}.marker.CREATE"
    marker.parent.mkdir(parents=True)
    marker.write_text("")
    assert hudiql_rows(session, "SELECT id, name FROM ev") == [(1, "a")]  # never read
    session.sql("INSERT INTO ev VALUES (2,'b',1,'d')")
    assert not (table_dir / stray).exists()
    assert not list((table_dir / ".hoodie").glob("20200101000000000*"))
    assert hudiql_rows(session, "SELECT id FROM ev") == [(1,), (2,)]


def test_partition_filters_prune_files(session):
    session.sql(EVENTS)
    session.sql("INSERT INTO ev VALUES (1,'a',1,'d1'), (2,'b',1,'d2'), (3,'c',1,'d3')")
    df = session.sql("SELECT id FROM ev WHERE dt = 'd2' AND id > 0")
    assert [r.id for r in df.collect()] == [2]
    assert len(df.inputFiles()) == 1 and "dt=d2" in df.inputFiles()[0]
    assert len(session.sql("SELECT id FROM ev WHERE dt IN ('d1', 'd3')").inputFiles()) == 2
    assert len(session.sql("SELECT id FROM ev WHERE id = 2").inputFiles()) == 3


def test_queries_join_hudi_tables_and_spark_views(session, spark):
    session.sql(EVENTS)
    session.sql("CREATE TABLE names (id INT, label STRING) USING hudi TBLPROPERTIES (primaryKey='id')")
    session.sql("INSERT INTO ev VALUES (1,'a',1,'d1'), (2,'b',5,'d1'), (3,'c',3,'d2')")
    session.sql("INSERT INTO names VALUES (1,'one'), (2,'two')")
    spark.createDataFrame([(1, 100), (3, 300)], "id int, bonus int").createOrReplaceTempView("bonus")
    rows = hudiql_rows(
        session,
        "SELECT e.id, n.label, b.bonus, sum(e.ts) OVER (PARTITION BY e.dt) AS s "
        "FROM ev e LEFT JOIN names n ON e.id = n.id LEFT JOIN bonus b ON b.id = e.id",
    )
    assert rows == [(1, "one", 100, 6), (2, "two", None, 6), (3, None, 300, 3)]
    assert session.sql("SELECT * FROM ev").columns[:6] == [
        "_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key",
        "_hoodie_partition_path", "_hoodie_file_name", "id",
    ]


@pytest.mark.parametrize(
    "ddl, columns",
    [
        ("CREATE TABLE s (id INT, v STRING, ts BIGINT) USING hudi TBLPROPERTIES (primaryKey='id', preCombineField='ts')", "id, v, ts"),
        ("CREATE TABLE s (id INT, v STRING, ts BIGINT, p STRING) USING hudi PARTITIONED BY (p) TBLPROPERTIES (primaryKey='id', preCombineField='ts')", "id, v, ts, p"),
        ("CREATE TABLE s (id INT, v STRING, ts BIGINT, p STRING) PARTITIONED BY (p) WITH ('connector'='hudi', 'hoodie.datasource.write.recordkey.field'='id', 'precombine.field'='ts')", "id, v, ts, p"),
        ("CREATE TABLE s (id INT, v STRING, ts BIGINT, p STRING, q INT) USING hudi PARTITIONED BY (p, q) TBLPROPERTIES (primaryKey='id,v', preCombineField='ts')", "id, v, ts, p, q"),
        ("CREATE TABLE s (id INT, v STRING, ts BIGINT, p DATE) USING hudi PARTITIONED BY (p) TBLPROPERTIES (primaryKey='id', preCombineField='ts')", "id, v, ts, p"),
        ("CREATE TABLE s (id INT, v STRING, ts BIGINT, p TIMESTAMP) USING hudi PARTITIONED BY (p) TBLPROPERTIES (primaryKey='id', preCombineField='ts')", "id, v, ts, p"),
    ],
    ids=["nonpartitioned", "simple-hive", "simple-flink-nonhive", "complex", "timestamp-date", "timestamp-ts"],
)
def test_official_reader_reads_every_table_shape(session, warehouse, ddl, columns):
    session.sql(ddl)
    extra = {
        "id, v, ts": "",
        "id, v, ts, p": ", p",
        "id, v, ts, p, q": ", p, q",
    }[columns]
    source = {
        "": "",
        ", p": ", CASE WHEN id % 2 = 0 THEN 'x' ELSE 'y' END",
        ", p, q": ", CASE WHEN id % 2 = 0 THEN 'x' ELSE 'y' END, id % 3",
    }[extra]
    if "DATE" in ddl:
        source = ", date_add(DATE'2024-01-01', CAST(id % 3 AS INT))"
    if "TIMESTAMP" in ddl:
        source = ", TIMESTAMP'2024-01-01 10:30:00' + make_interval(0, 0, 0, 0, CAST(id % 3 AS INT), 0, 0)"
    session.sql(f"INSERT INTO s SELECT id, concat('v', id), id{source} FROM range(10)")
    session.sql(f"INSERT INTO s SELECT id, concat('v', id), id + 100{source} FROM range(5, 15)")
    names = [c.strip() for c in columns.split(",")]
    ours = hudiql_rows(session, f"SELECT {columns} FROM s")
    assert len(ours) == 15 and sum(1 for r in ours if r[2] >= 100) == 10
    theirs = official_rows(warehouse / "s", names)
    normalize = lambda rows: sorted(tuple(str(v) for v in r) for r in rows)  # noqa: E731
    assert normalize(theirs) == normalize(ours) or _same_instants(theirs, ours)
    paths = {r[0] for r in session.sql("SELECT DISTINCT _hoodie_partition_path FROM s").collect()}
    if "DATE" in ddl:
        assert paths == {"p=20240101", "p=20240102", "p=20240103"}
    elif "TIMESTAMP" in ddl:
        assert paths == {"p=2024010110", "p=2024010111", "p=2024010112"}
    elif "connector" in ddl:
        assert paths == {"x", "y"}
    elif ", q" in columns:
        assert "p=x/q=0" in paths and len(paths) == 6
    keys = {r[0] for r in session.sql("SELECT _hoodie_record_key FROM s").collect()}
    assert ("id:1,v:v1" in keys) if "id,v" in ddl else ("1" in keys)


def _same_instants(theirs, ours) -> bool:
    """Timestamps come back from the official reader as timezone-aware values; compare instants."""
    from datetime import timezone

    def norm(rows):
        out = []
        for r in rows:
            out.append(tuple(v.astimezone(timezone.utc).replace(tzinfo=None) if hasattr(v, "astimezone") and getattr(v, "tzinfo", None) else v for v in r))
        return sorted(out)

    return norm(theirs) == norm(ours)


def test_insert_with_static_partition_and_column_list(session, warehouse):
    session.sql(EVENTS)
    session.sql("INSERT INTO ev PARTITION (dt='d9') VALUES (1,'a',1)")
    session.sql("INSERT INTO ev PARTITION (dt) SELECT 2, 'b', 1, 'd8'")
    session.sql("INSERT INTO ev (dt, id, ts) VALUES ('d7', 3, 1)")
    assert hudiql_rows(session, "SELECT id, name, ts, dt FROM ev") == [
        (1, "a", 1, "d9"), (2, "b", 1, "d8"), (3, None, 1, "d7"),
    ]
    assert official_rows(warehouse / "ev", ["id", "dt"]) == [(1, "d9"), (2, "d8"), (3, "d7")]
