"""Table versions 8 and 9 (Hudi 1.0 and 1.1), written as Hudi writes them: ``hoodie.write.table.version``
picks a new table's version; timeline layout 2 (``.hoodie/timeline/``, completed instants named with
their completion time, commit metadata in Avro); log files named by their delta commit; a clustering
as its own action. Every step is checked against the official reader (PyPI ``hudi``).

The statement and service matrix runs whole on v8 merge-on-read and v9 copy-on-write, and the
statements alone on v8 copy-on-write and v9 merge-on-read (the v6 matrix is the rest of the suite).
"""

from __future__ import annotations

import io
import json
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import fastavro
import pyarrow.parquet as pq
import pytest
from conftest import (
    HUDI_TABLES,
    VERSIONED_COLUMNS,
    VERSIONED_QUERY,
    hudiql_rows,
    official_rows,
    unzip,
    versioned_table,
)
from hudiql.config.table_config import TableConfig
from hudiql.errors import OptionError
from hudiql.io.storage import Storage
from hudiql.sql.parser import split_statements
from hudiql.sql.statements import TableName

COLUMNS, QUERY = VERSIONED_COLUMNS, VERSIONED_QUERY




def timeline_files(table: Path) -> list[str]:
    return sorted(p.name for p in (table / ".hoodie" / "timeline").iterdir() if p.is_file())


def completed(table: Path, action: str) -> list[tuple[str, str]]:
    """(instant time, completion time) of the completed ``<t>_<c>.<action>`` files."""
    out = []
    for name in timeline_files(table):
        stem, _, suffix = name.partition(".")
        if suffix == action and "_" in stem:
            requested, completion = stem.split("_")
            out.append((requested, completion))
    return out


def pending(table: Path) -> set[str]:
    """Instant times with a requested or inflight file and no completed one."""
    names = timeline_files(table)
    done = {n.split(".")[0].split("_")[0] for n in names if "_" in n.split(".")[0]}
    return {n.split(".")[0] for n in names if n.endswith((".inflight", ".requested"))} - done


def same_rows(session, table: Path, step: str) -> list[tuple]:
    rows = hudiql_rows(session, QUERY)
    assert rows == official_rows(table, COLUMNS), f"after {step}"
    return rows


@pytest.mark.parametrize("version", [8, 9])
def test_a_new_table_has_the_properties_and_folders_of_its_version(session, version):
    table = versioned_table(session, version, "mor")
    props = TableConfig.parse((table / ".hoodie" / "hoodie.properties").read_bytes()).props
    assert props["hoodie.table.version"] == props["hoodie.table.initial.version"] == str(version)
    assert props["hoodie.timeline.layout.version"] == "2" and props["hoodie.timeline.path"] == "timeline"
    assert props["hoodie.table.keygenerator.type"] == "SIMPLE" and "hoodie.table.keygenerator.class" not in props
    assert props["hoodie.record.merge.mode"] == "EVENT_TIME_ORDERING"
    if version == 8:
        assert props["hoodie.table.precombine.field"] == "ts"
        assert props["hoodie.record.merge.strategy.id"] == "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5"
    else:
        assert props["hoodie.table.ordering.fields"] == "ts" and props["hoodie.table.format"] == "native"
        assert not {"hoodie.table.precombine.field", "hoodie.compaction.payload.class"} & set(props)
    assert (table / ".hoodie" / "timeline" / "history").is_dir() and not (table / ".hoodie" / "archived").exists()
    assert "hoodie.write.table.version" not in props


def test_the_session_picks_the_version_and_a_table_keeps_its_own(session):
    session.sql("SET hoodie.write.table.version=9")
    session.sql("CREATE TABLE n (id INT, v STRING) USING hudi TBLPROPERTIES (primaryKey='id')")
    session.sql("CREATE TABLE c USING hudi TBLPROPERTIES (primaryKey='id') AS SELECT 1 AS id, 'a' AS v")
    session.sql("SET hoodie.write.table.version=6")
    session.sql("INSERT INTO n VALUES (1, 'a')")  # written as v9: a table is never upgraded silently
    for name in ("n", "c"):
        table = session.table(TableName(None, name))
        assert (table.config.version, table.timeline.layout_version) == (9, 2)
        assert official_rows(table.base_uri.removeprefix("file://"), ["id", "v"]) == [(1, "a")]


@pytest.mark.parametrize("statement, message", [
    ("SET hoodie.write.table.version=7", "hoodie.write.table.version=7 is not valid; use 6, 8 or 9"),
    ("CREATE TABLE x (id INT) USING hudi TBLPROPERTIES ('hoodie.write.table.version'='10')", "use 6, 8 or 9"),
    ("CREATE TABLE x (id INT) USING hudi TBLPROPERTIES ('hoodie.write.table.version'='8', "
     "'hoodie.timeline.layout.version'='1')", "does not fit table version 8"),
])
def test_a_version_hudiql_does_not_write_is_refused_by_name(session, warehouse, statement, message):
    with pytest.raises(OptionError, match=message):
        session.sql(statement)
    assert not (warehouse / "x").exists()


def statements(session, table: Path, kind: str) -> None:
    session.sql("INSERT INTO t VALUES (1, 'a', 1, 'd1'), (2, 'b', 1, 'd1'), (3, 'c', 1, 'd2')")
    same_rows(session, table, "INSERT")
    session.sql("UPDATE t SET name = 'bb', ts = 2 WHERE id = 2")
    same_rows(session, table, "UPDATE")
    session.sql("DELETE FROM t WHERE id = 3")
    session.sql("MERGE INTO t USING (SELECT 4 AS id, 'd' AS name, 1L AS ts, 'd2' AS dt UNION ALL "
                "SELECT 1, 'aa', 5, 'd1') s ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
    assert same_rows(session, table, "MERGE") == [(1, "aa", 5, "d1"), (2, "bb", 2, "d1"), (4, "d", 1, "d2")]

    action = "deltacommit" if kind == "mor" else "commit"
    done = completed(table, action)
    assert len(done) == 4 and all(requested < completion for requested, completion in done)
    assert [c for _, c in done] == sorted(c for _, c in done)  # completion order is commit order
    content = (table / ".hoodie" / "timeline" / f"{done[-1][0]}_{done[-1][1]}.{action}").read_bytes()
    reader = fastavro.reader(io.BytesIO(content))
    assert reader.writer_schema["name"] == "org.apache.hudi.avro.model.HoodieCommitMetadata"
    assert next(iter(reader))["operationType"] == "UPSERT"
    assert not [p for p in (table / ".hoodie").iterdir() if p.name.endswith(("commit", ".inflight", ".requested"))]
    if kind == "mor":
        # a log file per delta commit that wrote one, named by it, never appended to
        logs = sorted(p.name for p in table.rglob(".*.log.*") if ".hoodie" not in p.relative_to(table).parts)
        assert logs and all(".log.1_" in n for n in logs)
        assert {n.split("_")[1].split(".")[0] for n in logs} <= {t for t, _ in done[1:]}


@pytest.mark.parametrize("version, kind", [(8, "cow"), (9, "mor")])
def test_statements(session, version, kind):
    statements(session, versioned_table(session, version, kind), kind)


@pytest.mark.parametrize("version, kind", [(8, "mor"), (9, "cow")])
def test_statements_and_services(session, version, kind):
    table = versioned_table(session, version, kind)
    statements(session, table, kind)
    if kind == "mor":
        session.sql("CALL run_compaction(op => 'scheduleAndExecute', table => 't')")
        compactions = [n for n in timeline_files(table) if ".compaction." in n]
        assert len(compactions) == 2 and len(completed(table, "commit")) == 1  # requested, inflight; done as a commit
        same_rows(session, table, "compaction")
        session.sql("UPDATE t SET name = 'a2', ts = 6 WHERE id = 1")  # a log file after the compaction's base
        same_rows(session, table, "UPDATE after compaction")

    savepoint = session.sql("CALL create_savepoint(table => 't')").collect()
    assert savepoint[0][0] is True
    saved = same_rows(session, table, "savepoint")
    session.sql("INSERT INTO t VALUES (5, 'e', 1, 'd3')")
    latest = session.sql("CALL show_commits(table => 't')").collect()[0][0]
    session.sql(f"CALL rollback_to_instant(table => 't', instant_time => '{latest}')")
    assert same_rows(session, table, "rollback_to_instant") == saved
    assert completed(table, "rollback") and not [n for n in timeline_files(table) if n.startswith(latest)]
    session.sql("INSERT OVERWRITE t PARTITION (dt = 'd2') SELECT 7, 'g', 1")
    assert same_rows(session, table, "INSERT OVERWRITE") != saved
    assert completed(table, "replacecommit")
    savepoint_time = session.sql("CALL show_savepoints(table => 't')").collect()[0][0]
    session.sql(f"CALL rollback_to_savepoint(table => 't', instant_time => '{savepoint_time}')")
    assert same_rows(session, table, "restore") == saved and completed(table, "restore")
    session.sql(f"CALL delete_savepoint(table => 't', instant_time => '{savepoint_time}')")
    assert not completed(table, "savepoint")

    session.sql("UPDATE t SET name = 'b3', ts = 7 WHERE id = 2")
    session.sql("SET hoodie.cleaner.commits.retained=1")
    cleaned = session.sql("CALL run_clean(table => 't')").collect()
    assert cleaned and cleaned[0]["total_files_deleted"] > 0 and completed(table, "clean")
    same_rows(session, table, "clean")

    session.sql("CALL run_clustering(table => 't')")
    clustered = [n for n in timeline_files(table) if ".clustering." in n]
    assert sorted(n.split(".", 1)[1] for n in clustered) == ["clustering.inflight", "clustering.requested"]
    assert clustered[0].split(".")[0] in {t for t, _ in completed(table, "replacecommit")}
    rows = same_rows(session, table, "clustering")
    session.sql("UPDATE t SET name = 'b4', ts = 8 WHERE id = 2")
    same_rows(session, table, "UPDATE after clustering")

    # incremental reads by completion time, as Hudi 1.x: after the clustering completed, or after the
    # last UPDATE's own instant time (it completed later): the last UPDATE alone
    action = "deltacommit" if kind == "mor" else "commit"
    writes = sorted(completed(table, action) + completed(table, "replacecommit"), key=lambda w: w[1])
    for begin in (writes[-2][1], writes[-1][0]):
        changed = session.sql(f"SELECT id, name FROM hudi_table_changes('t', 'latest_state', '{begin}')").collect()
        assert sorted(tuple(r) for r in changed) == [(2, "b4")], begin
    assert sorted(r[0] for r in rows) == sorted(r[0] for r in hudiql_rows(session, "SELECT id FROM t"))


# ---- a writer killed with SIGKILL -------------------------------------------------------------------------

_KILLED_WRITER = textwrap.dedent("""
    import os, signal, sys
    import hudiql
    from hudiql.timeline.active import Timeline
    from hudiql.transaction import write_transaction
    warehouse, step = sys.argv[1], sys.argv[2]
    session = hudiql.connect(warehouse=warehouse)
    session.sql("SET hoodie.client.heartbeat.interval_in_ms=500")

    def die():
        os.kill(os.getpid(), signal.SIGKILL)

    if step == "written":  # the instant requested and inflight, its files written, not completed
        Timeline.complete = lambda self, *a, **k: die()
    else:  # completed, before the post-commit services
        complete = write_transaction.WriteTransaction.commit
        def commit(self, *a, **k):
            complete(self, *a, **k)
            die()
        write_transaction.WriteTransaction.commit = commit
    session.sql("UPDATE t SET name = 'killed', ts = 9 WHERE id = 1")
""")


@pytest.mark.parametrize("step", ["written", "completed"])
def test_a_v8_writer_killed_at_each_step_leaves_a_table_the_next_writer_goes_on_with(session, warehouse, step):
    table = versioned_table(session, 8, "mor", "'hoodie.client.heartbeat.interval_in_ms'='500'")
    session.sql("INSERT INTO t VALUES (1, 'a', 1, 'd1'), (2, 'b', 1, 'd1')")
    before = same_rows(session, table, "INSERT")
    killed = subprocess.run([sys.executable, "-c", _KILLED_WRITER, str(warehouse), step],
                            capture_output=True, text=True, timeout=300)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    updated = [(1, "killed", 9, "d1"), (2, "b", 1, "d1")]
    expected = updated if step == "completed" else before
    assert hudiql_rows(session, QUERY) == official_rows(table, COLUMNS) == expected

    time.sleep(1.5)  # past the dead writer's two missed heartbeats
    session.sql("INSERT INTO t VALUES (3, 'c', 1, 'd2')")
    assert pending(table) == set()
    assert hudiql_rows(session, QUERY) == official_rows(table, COLUMNS) == sorted([*expected, (3, "c", 1, "d2")])
    # no file of the dead writer's instant is left, unless it completed
    committed = {t for t, _ in completed(table, "deltacommit")}
    data = [p.name for p in table.rglob("*") if p.is_file() and ".hoodie" not in p.parts and "partition" not in p.name]
    instants = {n.split("_")[1].split(".")[0] if n.startswith(".") else n.rsplit("_", 1)[1].split(".")[0] for n in data}
    assert instants <= committed


@pytest.mark.parametrize("version, kind", [(8, "cow"), (9, "mor")])
def test_archiving_moves_instants_into_the_lsm_timeline(session, version, kind):
    # (merge-on-read: archiving keeps the delta commits a compaction trigger counts, here 2)
    table = versioned_table(session, version, kind, "'hoodie.keep.min.commits'='2'", "'hoodie.keep.max.commits'='3'",
                   "'hoodie.cleaner.commits.retained'='1'", "'hoodie.compact.inline.max.delta.commits'='2'")
    for i in range(7):
        session.sql(f"INSERT INTO t VALUES ({i}, 'a', 1, 'd{i % 2}')")
    session.sql("UPDATE t SET name = 'b', ts = 2 WHERE id = 0")
    history = table / ".hoodie" / "timeline" / "history"
    version_now = int((history / "_version_").read_text())
    assert version_now == 3 and (history / f"manifest_{version_now}").is_file()  # runs after writes 4, 6 and 8
    manifest = json.loads((history / f"manifest_{version_now}").read_text())
    names = [f["fileName"] for f in manifest["files"]]
    assert all(re.fullmatch(r"\d{17}_\d{17}_0\.parquet", n) for n in names) and len(names) == 3
    assert [f["fileLen"] for f in manifest["files"]] == [(history / n).stat().st_size for n in names]
    action = "deltacommit" if kind == "mor" else "commit"
    assert len(completed(table, action)) == 2 and not (table / ".hoodie" / "archived").exists()
    assert same_rows(session, table, "archiving") == sorted(
        [(0, "b", 2, "d0")] + [(i, "a", 1, f"d{i % 2}") for i in range(1, 7)])

    rows = [r for n in names for r in pq.read_table(history / n).to_pylist()]
    assert pq.read_schema(history / names[0]).names == [
        "instantTime", "completionTime", "action", "metadata", "plan", "version"]
    assert [r["action"] for r in rows] == [action] * 6 and all(r["version"] == 1 for r in rows)
    assert all(r["instantTime"] < r["completionTime"] for r in rows)
    stats = next(fastavro.reader(io.BytesIO(rows[0]["metadata"])))["partitionToWriteStats"]
    assert list(stats) == ["dt=d0"] and stats["dt=d0"][0]["numInserts"] == 1
    archived = session.sql("CALL show_archived_commits(table => 't', start_ts => '0', end_ts => '99999999999999999')")
    assert sorted(r[0] for r in archived.collect()) == [r["instantTime"] for r in rows]
    # a reader as of an archived commit reads the table as it was then
    first = session.sql(f"SELECT id FROM t TIMESTAMP AS OF '{rows[0]['instantTime']}'").collect()
    assert [r.id for r in first] == [0]


def test_archiving_the_same_batch_again_after_a_crash_is_not_written_twice(session):
    table = versioned_table(session, 9, "cow", "'hoodie.keep.min.commits'='2'", "'hoodie.keep.max.commits'='3'",
                   "'hoodie.cleaner.commits.retained'='1'", "'hoodie.archive.automatic'='false'")
    for i in range(4):
        session.sql(f"INSERT INTO t VALUES ({i}, 'a', 1, 'd1')")
    timeline = table / ".hoodie" / "timeline"
    kept = {p.name: p.read_bytes() for p in timeline.iterdir() if p.is_file()}
    session.sql("CALL archive_commits(table => 't', min_commits => 2, max_commits => 3, retain_commits => 1)")
    for name, content in kept.items():  # the archiver died before it deleted the instants it archived
        (timeline / name).write_bytes(content)
    assert len(completed(table, "commit")) == 4
    session.sql("CALL archive_commits(table => 't', min_commits => 2, max_commits => 3, retain_commits => 1)")
    history = timeline / "history"
    assert (history / "_version_").read_text() == "1" and len(list(history.glob("*.parquet"))) == 1
    assert len(completed(table, "commit")) == 2
    assert same_rows(session, table, "archiving again") == [(i, "a", 1, "d1") for i in range(4)]


# ---- real v8 and v9 tables, adopted ------------------------------------------------------------------------

SAMPLE = HUDI_TABLES / "sample_table"
TRIPS = HUDI_TABLES / "quickstart_trips_table" / "mor" / "avro"
ADOPTED = {
    # name -> (zipped table, columns compared, an UPDATE, whether it is merge-on-read)
    "v8 cow": (SAMPLE / "cow" / "v8_simplekeygen_nonhivestyle.zip", ["id", "name", "isActive"],
               "UPDATE t SET name = concat(name, '+') WHERE id = 3", False),
    "v8 mor, metadata table": (TRIPS / "v8_trips_8i3u1d.zip", ["uuid", "rider", "fare", "city"],
                               "UPDATE t SET fare = fare + 1 WHERE rider = 'rider-E'", True),
    "v9 mor, metadata table": (SAMPLE / "mor" / "avro" / "v9_nonpartitioned_rollback.zip",
                               ["txn_id", "txn_ts", "txn_type"], "UPDATE t SET txn_type = 'refund' WHERE txn_id = 'TXN-003'",
                               True),
}


@pytest.mark.parametrize("name", sorted(ADOPTED))
def test_a_real_table_is_written_compacted_and_cleaned_in_its_own_version(session, tmp_path, name):
    zipped, columns, update, mor = ADOPTED[name]
    table = unzip(zipped, tmp_path)
    version = TableConfig.parse((table / ".hoodie" / "hoodie.properties").read_bytes()).version
    session.sql(f"CREATE TABLE t USING hudi LOCATION '{table}'")
    query = f"SELECT {', '.join(columns)} FROM t"
    before = hudiql_rows(session, query)
    assert before == official_rows(table, columns)
    session.sql(update)
    session.sql(update)
    after = hudiql_rows(session, query)
    assert after != before and after == official_rows(table, columns)
    if mor:
        session.sql("CALL run_compaction(op => 'scheduleAndExecute', table => 't')")
        assert completed(table, "commit") and hudiql_rows(session, query) == official_rows(table, columns) == after
        session.sql(update)  # on the compacted slice: the one before it may go
        after = hudiql_rows(session, query)
    session.sql("SET hoodie.cleaner.commits.retained=1")
    assert session.sql("CALL run_clean(table => 't')").collect()[0]["total_files_deleted"] > 0
    assert hudiql_rows(session, query) == official_rows(table, columns) == after
    props = TableConfig.parse((table / ".hoodie" / "hoodie.properties").read_bytes())
    # the metadata table kept (Hudi's default) in hudiql's record schema: the official reader lists through it
    assert props.version == version and "files" in props.metadata_partitions


def test_the_data_source_writes_a_new_table_in_the_version_it_names(session, warehouse):
    """df.write.format("hudi") with hoodie.write.table.version=8: a v8 merge-on-read table, upserted."""
    path = str(warehouse / "ds")
    options = {"hoodie.table.name": "ds", "hoodie.datasource.write.recordkey.field": "id",
               "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "dt"}
    first = session.spark.createDataFrame([(1, "a", 1, "d1"), (2, "b", 1, "d2")], "id int, name string, ts long, dt string")
    first.write.format("hudi").options(**options).option("hoodie.write.table.version", "8") \
        .option("hoodie.datasource.write.table.type", "MERGE_ON_READ").mode("overwrite").save(path)
    session.spark.createDataFrame([(1, "aa", 2, "d1")], "id int, name string, ts long, dt string") \
        .write.format("hudi").options(**options).mode("append").save(path)
    read = session.spark.read.format("hudi").load(path).select(*COLUMNS).collect()
    assert sorted(tuple(r) for r in read) == official_rows(path, COLUMNS) == [(1, "aa", 2, "d1"), (2, "b", 1, "d2")]
    assert TableConfig.load(Storage(path)).version == 8 and completed(Path(path), "deltacommit")


# ---- Hudi's own scripts, replayed --------------------------------------------------------------------------

REPLAYS = {
    # name -> (the table and its script in tests/data/hudi-tables, the version, the generating session's zone)
    "v6 mor parquet log blocks, complex key": ("sample_table/mor/parquet/v6_complexkeygen_hivestyle", 6, "UTC"),
    "v6 cow timestamp key": ("sample_table/cow/v6_timebasedkeygen_nonhivestyle", 6, "America/Chicago"),
    "v6 cow insert overwrite table": ("sample_table/cow/v6_simplekeygen_nonhivestyle_overwritetable", 6, "America/Chicago"),
    "v6 mor parquet log blocks, rollback": ("sample_table/mor/parquet/v6_nonpartitioned_rollback", 6, "UTC"),
    "v6 cow without meta fields": ("sample_table/cow/v6_simplekeygen_hivestyle_no_metafields", 6, "America/Chicago"),
    "v8 cow without meta fields": ("sample_table/cow/v8_simplekeygen_hivestyle_no_metafields", 8, "UTC"),
    "v6 mor without meta fields": ("sample_table/mor/parquet/v6_simplekeygen_hivestyle_no_metafields", 6, "UTC"),
    "v8 cow simple key": ("sample_table/cow/v8_simplekeygen_nonhivestyle", 8, "UTC"),
    "v9 cow complex key": ("sample_table/cow/v9_txns_complex_nometa", 9, "America/Chicago"),
    "v9 cow metadata table, record and secondary indexes": ("sample_table/cow/v9_txns_simple_meta", 9, "America/Chicago"),
    "v9 mor metadata table, complex key, indexes, services": ("sample_table/mor/avro/v9_txns_complex_meta", 9,
                                                               "America/Chicago"),
    "v9 cow metadata table, complex key": ("sample_table/cow/v9_txns_complex_meta", 9, "America/Chicago"),
    "v9 cow metadata table, not partitioned": ("sample_table/cow/v9_txns_nonpart_meta", 9, "America/Chicago"),
    "v9 mor metadata table, simple key": ("sample_table/mor/avro/v9_txns_simple_meta", 9, "America/Chicago"),
    "v9 mor metadata table, not partitioned": ("sample_table/mor/avro/v9_txns_nonpart_meta", 9, "America/Chicago"),
}


def _replayed(session, script: str, statement: str, tmp_path: Path) -> str:
    """``statement`` as it runs here: its LOCATION under ``tmp_path``, and a rollback of the instant
    time Hudi's run had (the latest commit then) made a rollback of this run's latest commit."""
    statement = re.sub(r"(?i)location\s+'[^']*/([^'/]+)'", lambda m: f"LOCATION '{tmp_path / 'replayed' / m[1]}'",
                       statement)
    if "rollback_to_instant" in statement:
        name = script.split("CREATE TABLE", 1)[1].split()[0]
        latest = session.table(TableName(None, name)).timeline.completed()[-1].timestamp
        statement = re.sub(r"instant_time => '\d+'", f"instant_time => '{latest}'", statement)
    return statement


@pytest.mark.parametrize("name", sorted(REPLAYS))
def test_hudis_own_script_replays_to_the_rows_hudi_wrote(session, tmp_path, name):
    """The SQL script that made a real table, run through hudiql (in the table's version and the
    generating session's time zone): the official reader reads hudiql's table as it reads Hudi's."""
    path, version, zone = REPLAYS[name]
    written_by_hudi = unzip(HUDI_TABLES / f"{path}.zip", tmp_path)
    script = (HUDI_TABLES / f"{path}.sql").read_text()
    spark = session.spark
    zone_before = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", zone)
    try:
        session.sql(f"SET hoodie.write.table.version={version}")
        for statement in split_statements(script):
            session.sql(_replayed(session, script, statement, tmp_path))
    finally:
        spark.conf.set("spark.sql.session.timeZone", zone_before)
    table = session.table(TableName(None, script.split("CREATE TABLE", 1)[1].split()[0]))
    assert table.config.version == version
    columns = [f.name for f in table.schema.fields]
    expected = official_rows(written_by_hudi, columns)
    assert expected and official_rows(table.base_uri.removeprefix("file://"), columns) == expected
