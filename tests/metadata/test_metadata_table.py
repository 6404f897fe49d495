"""The metadata table's files partition (``table.metadata_table``), kept by every action on
version 8 and 9 tables (``hoodie.metadata.enable``, true by default): the official reader, which lists those
tables through it, reads what hudiql reads, and it lists exactly the data files on storage."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

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
from hudiql.formats import hfile
from hudiql.formats import log_file as L
from hudiql.io.storage import Storage
from hudiql.layout import PARTITION_METADATA_FILE
from hudiql.table.metadata_table import MetadataTable
from hudiql.timeline.active import Timeline

COLUMNS, QUERY = VERSIONED_COLUMNS, VERSIONED_QUERY




def listed(table: Path) -> dict[str, dict[str, int]]:
    """The files partition's listing, as hudiql reads it."""
    storage = Storage(str(table))
    return MetadataTable.load(storage).listing(Timeline.load(storage, TableConfig.load(storage)))


def on_storage(table: Path) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for path in table.rglob("*"):
        if path.is_file() and ".hoodie" not in path.relative_to(table).parts and path.name != PARTITION_METADATA_FILE:
            partition = str(path.parent.relative_to(table)).replace(".", "")
            out.setdefault(partition, {})[path.name] = path.stat().st_size
    return dict(sorted(out.items()))


def consistent(session, table: Path, step: str) -> list[tuple]:
    """hudiql's rows are the official reader's (which lists through the metadata table), and the
    metadata table lists every data file on storage with its size, and no other."""
    rows = hudiql_rows(session, QUERY)
    assert rows == official_rows(table, COLUMNS), f"after {step}"
    assert {p: f for p, f in listed(table).items() if f} == on_storage(table), f"after {step}"
    assert TableConfig.load(Storage(str(table))).metadata_partitions == ["files"]
    return rows


# v8 merge-on-read here; tests/write/test_table_versions.py runs every action on v9 copy-on-write too, with the
# metadata table on by default, each step checked by the official reader (which lists through it).
@pytest.mark.parametrize("version, kind", [(8, "mor")])
def test_every_action_that_changes_files_keeps_the_listing(session, version, kind):
    table = versioned_table(session, version, kind)
    session.sql("INSERT INTO t VALUES (1, 'a', 1, 'd1'), (2, 'b', 1, 'd1'), (3, 'c', 1, 'd2')")
    consistent(session, table, "INSERT")
    session.sql("UPDATE t SET name = 'bb', ts = 2 WHERE id = 2")
    session.sql("DELETE FROM t WHERE id = 3")
    session.sql("MERGE INTO t USING (SELECT 4 AS id, 'd' AS name, 1L AS ts, 'd2' AS dt) s ON t.id = s.id "
                "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
    consistent(session, table, "UPDATE, DELETE, MERGE")
    if kind == "mor":
        session.sql("CALL run_compaction(op => 'scheduleAndExecute', table => 't')")
        consistent(session, table, "compaction")
    session.sql("CALL create_savepoint(table => 't')")
    saved = consistent(session, table, "savepoint")
    session.sql("INSERT INTO t VALUES (5, 'e', 1, 'd3')")
    latest = session.sql("CALL show_commits(table => 't')").collect()[0][0]
    session.sql(f"CALL rollback_to_instant(table => 't', instant_time => '{latest}')")
    assert consistent(session, table, "rollback") == saved
    session.sql("INSERT OVERWRITE t PARTITION (dt = 'd2') SELECT 7, 'g', 1")
    consistent(session, table, "INSERT OVERWRITE")
    savepoint_time = session.sql("CALL show_savepoints(table => 't')").collect()[0][0]
    session.sql(f"CALL rollback_to_savepoint(table => 't', instant_time => '{savepoint_time}')")
    assert consistent(session, table, "restore") == saved
    session.sql(f"CALL delete_savepoint(table => 't', instant_time => '{savepoint_time}')")
    session.sql("UPDATE t SET name = 'b3', ts = 7 WHERE id = 2")
    session.sql("SET hoodie.cleaner.commits.retained=1")
    assert session.sql("CALL run_clean(table => 't')").collect()[0]["total_files_deleted"] > 0
    consistent(session, table, "clean")
    session.sql("CALL run_clustering(table => 't')")
    consistent(session, table, "clustering")


def test_the_files_partition_is_compacted_and_its_old_slices_deleted(session):
    table = versioned_table(session, 8, "cow", "'hoodie.metadata.compact.max.delta.commits'='3'")
    for i in range(8):
        session.sql(f"INSERT INTO t VALUES ({i}, 'n{i}', 1, 'd{i % 3}')")
    consistent(session, table, "eight inserts")
    files = table / ".hoodie" / "metadata" / "files"
    bases = sorted(p.name for p in files.glob("*.hfile"))
    compactions = sorted((table / ".hoodie" / "metadata" / ".hoodie" / "timeline").glob("*.commit"))
    # three delta commits per slice (the build's first): compacted after the 2nd, 5th and 8th insert
    assert len(compactions) == 3
    # the latest slice and the one before it are kept; the initial one and the first compaction's went
    assert [b.rsplit("_", 1)[1].split(".")[0] for b in bases] == [p.name.split("_")[0] for p in compactions[1:]]
    assert not list(files.glob(".files-0000-0_00000000000000000.log.*"))
    # deleted by clean instants of the metadata table's own, as Hudi's metadata table cleaner does
    cleans = sorted((table / ".hoodie" / "metadata" / ".hoodie" / "timeline").glob("*_*.clean"))
    assert len(cleans) == 2 and all(c.name.split("_")[0] > compactions[0].name.split("_")[0] for c in cleans)


def test_a_table_gets_a_metadata_table_at_its_first_write_with_the_option(session, warehouse):
    session.sql("SET hoodie.metadata.enable=false")
    session.sql("CREATE TABLE t (id INT, name STRING, ts BIGINT, dt STRING) USING hudi PARTITIONED BY (dt) "
                "TBLPROPERTIES (primaryKey='id', preCombineField='ts', 'hoodie.write.table.version'='9')")
    session.sql("INSERT INTO t VALUES (1, 'a', 1, 'd1'), (2, 'b', 1, 'd2')")
    table = warehouse / "t"
    assert not (table / ".hoodie" / "metadata").exists()
    session.sql("SET hoodie.metadata.enable=true")
    session.sql("UPDATE t SET name = 'bb', ts = 2 WHERE id = 2")  # built from the listing, then this commit
    assert consistent(session, table, "UPDATE") == [(1, "a", 1, "d1"), (2, "bb", 2, "d2")]
    session.sql("SET hoodie.metadata.enable=false")
    session.sql("DELETE FROM t WHERE id = 1")  # removed, as Hudi's writer removes it
    assert not (table / ".hoodie" / "metadata").exists()
    assert TableConfig.load(Storage(str(table))).metadata_partitions == []
    assert hudiql_rows(session, QUERY) == official_rows(table, COLUMNS) == [(2, "bb", 2, "d2")]


def test_the_option_on_a_version_6_table_is_refused_in_one_line(session, warehouse):
    session.sql("CREATE TABLE t (id INT, ts BIGINT) USING hudi TBLPROPERTIES (primaryKey='id', preCombineField='ts')")
    session.sql("SET hoodie.metadata.enable=true")
    with pytest.raises(OptionError, match="version 6; upgrade it"):
        session.sql("INSERT INTO t VALUES (1, 1)")
    assert not (warehouse / "t" / ".hoodie" / "metadata").exists()


def test_a_hudi_table_keeps_the_indexes_it_has_unless_told_otherwise(session, tmp_path):
    """A Hudi 1.1 table with column stats, partition stats, a record index and secondary indexes:
    written without index options, its metadata table is appended to, every index kept (its record
    schema names strings with Java properties: the same encoding as hudiql's, so hudiql's files name
    Hudi's schema text); written with them off, with the files partition alone; the official
    reader reads hudiql's rows through it."""
    table = unzip(HUDI_TABLES / "sample_table" / "cow" / "v9_txns_simple_meta.zip", tmp_path)
    columns = ["txn_id", "txn_ts", "txn_type", "region"]
    query = f"SELECT {', '.join(columns)} FROM t"
    partitions = TableConfig.load(Storage(str(table))).metadata_partitions
    mdt_timeline = table / ".hoodie" / "metadata" / ".hoodie" / "timeline"
    hudi_instants = {p.name for p in mdt_timeline.iterdir() if p.is_file()}
    hudi_base = max((table / ".hoodie" / "metadata" / "files").glob("files-0000-0_*.hfile"))
    hudi_schema = hfile.HFile(hudi_base.read_bytes(), str(hudi_base)).file_info["schema"]
    session.sql(f"CREATE TABLE t USING hudi LOCATION '{table}'")
    before = hudiql_rows(session, query)
    assert before == official_rows(table, columns)
    session.sql("UPDATE t SET txn_type = 'refund', txn_ts = 1800000000000 WHERE txn_id = 'TXN-007'")
    after = hudiql_rows(session, query)
    assert after != before and after == official_rows(table, columns)
    assert TableConfig.load(Storage(str(table))).metadata_partitions == partitions
    assert hudi_instants < {p.name for p in mdt_timeline.iterdir() if p.is_file()}  # appended to, not rebuilt
    log = max((table / ".hoodie" / "metadata" / "files").glob(".files-0000-0_*.log.*"))
    block = next(iter(L.read_blocks(log.read_bytes(), str(log), (L.HFILE_DATA,))))
    assert block.header[L.SCHEMA].encode() == hudi_schema
    merchants = official_rows(table, ["txn_id", "merchant_name"])
    merchant = merchants[-1][1]
    assert hudiql_rows(session, f"SELECT txn_id FROM t WHERE merchant_name = '{merchant}'") == [
        (i,) for i, m in merchants if m == merchant]
    moved, was = merchants[0]  # Hudi's secondary index, kept up by hudiql's write
    session.sql(f"UPDATE t SET merchant_name = 'Hudiql Books' WHERE txn_id = '{moved}'")
    merchants = official_rows(table, ["txn_id", "merchant_name"])
    for name in (was, "Hudiql Books"):
        assert hudiql_rows(session, f"SELECT txn_id FROM t WHERE merchant_name = '{name}'") == [
            (i,) for i, m in merchants if m == name], name
    session.sql("SET hoodie.metadata.record.index.enable=false")
    session.sql("SET hoodie.metadata.index.column.stats.enable=false")
    session.sql("UPDATE t SET txn_type = 'refund' WHERE txn_id = 'TXN-008'")
    assert hudiql_rows(session, query) == official_rows(table, columns)
    assert TableConfig.load(Storage(str(table))).metadata_partitions == ["files"]
    assert sorted(p.name for p in (table / ".hoodie" / "metadata").iterdir() if p.is_dir()) == [".hoodie", "files"]
    assert {p: f for p, f in listed(table).items() if f} == on_storage(table)


_KILLED_WRITER = textwrap.dedent("""
    import os, signal, sys
    import hudiql
    from hudiql.timeline.active import Timeline
    session = hudiql.connect(warehouse=sys.argv[1])
    complete = Timeline.complete

    def die_at_the_data_commit(self, instant, content):
        if "/.hoodie/metadata" not in self.storage.base_uri:  # the metadata delta commit completed
            os.kill(os.getpid(), signal.SIGKILL)
        return complete(self, instant, content)

    Timeline.complete = die_at_the_data_commit
    session.sql("UPDATE t SET name = 'killed', ts = 9 WHERE id = 1")
""")


def test_a_writer_killed_between_the_two_commits_leaves_nothing_readers_see(session, warehouse):
    table = versioned_table(session, 8, "mor", "'hoodie.client.heartbeat.interval_in_ms'='500'")
    session.sql("INSERT INTO t VALUES (1, 'a', 1, 'd1'), (2, 'b', 1, 'd1')")
    before = consistent(session, table, "INSERT")
    killed = subprocess.run([sys.executable, "-c", _KILLED_WRITER, str(warehouse)],
                            capture_output=True, text=True, timeout=300)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    mdt_timeline = table / ".hoodie" / "metadata" / ".hoodie" / "timeline"
    assert len(list(mdt_timeline.glob("*_*.deltacommit"))) == 3  # the build, the INSERT and the dead UPDATE
    assert hudiql_rows(session, QUERY) == official_rows(table, COLUMNS) == before

    time.sleep(1.5)  # past the dead writer's two missed heartbeats: the next write rolls it back in both tables
    session.sql("INSERT INTO t VALUES (3, 'c', 1, 'd2')")
    assert consistent(session, table, "INSERT after the kill") == sorted([*before, (3, "c", 1, "d2")])
    assert len(list(mdt_timeline.glob("*_*.deltacommit"))) == 3
    assert not [p for p in mdt_timeline.iterdir() if p.name.endswith((".inflight", ".requested"))
                and not list(mdt_timeline.glob(p.name.split(".")[0] + "_*"))]  # nothing left pending


def test_the_metadata_tables_timeline_is_archived_with_the_data_tables(session):
    table = versioned_table(session, 9, "mor", "'hoodie.metadata.compact.max.delta.commits'='3'",
                            "'hoodie.clean.automatic'='true'", "'hoodie.cleaner.commits.retained'='1'",
                            "'hoodie.keep.min.commits'='2'", "'hoodie.keep.max.commits'='3'")
    for i in range(10):
        session.sql(f"INSERT INTO t VALUES ({i}, 'n{i}', 1, 'd{i % 2}')")
    consistent(session, table, "ten inserts")
    mdt = table / ".hoodie" / "metadata" / ".hoodie" / "timeline"
    active = sorted(p.name.split("_")[0] for p in mdt.glob("*_*.deltacommit"))
    # archived up to the data table's oldest active instant (readers tell a metadata delta commit valid by its
    # data instant), the build's instant first
    data_active = sorted(p.name.split("_")[0].split(".")[0] for p in (table / ".hoodie" / "timeline").iterdir()
                         if p.is_file())
    assert (mdt / "history" / "_version_").exists() and active[0] >= data_active[0] > "00000000000000000"
    assert len(active) < 20  # one per data instant (its writes and cleans) and the build's


def test_a_damaged_metadata_table_is_read_around_and_refuses_writes_until_rebuilt(session, capsys, monkeypatch):
    from hudiql.errors import FormatError
    from hudiql.io.cache import ProcessCache
    from hudiql.table import metadata_table

    table = versioned_table(session, 8, "cow")
    session.sql("INSERT INTO t VALUES (1, 'a', 1, 'd1'), (2, 'b', 1, 'd2')")
    session.sql("INSERT INTO t VALUES (3, 'c', 1, 'd1')")
    rows = consistent(session, table, "INSERT")
    log = sorted((table / ".hoodie" / "metadata" / "files").glob(".files-0000-0_2*.log.*"))[-1]
    log.write_bytes(log.read_bytes()[:-20])  # cut short
    monkeypatch.setattr(metadata_table, "_MERGED", ProcessCache(16))  # as a process that did not read it before
    capsys.readouterr()

    assert hudiql_rows(session, QUERY) == rows  # listed on storage instead
    warning = [line for line in capsys.readouterr().err.splitlines() if "listing storage instead" in line]
    assert len(warning) == 1 and log.name in warning[0] and "CALL delete_metadata_table(table => 't')" in warning[0]
    with pytest.raises(FormatError, match="writes are refused until it is rebuilt"):
        session.sql("INSERT INTO t VALUES (4, 'd', 1, 'd2')")
    assert hudiql_rows(session, QUERY) == rows and not [
        p for p in (table / ".hoodie" / "timeline").iterdir() if p.name.endswith((".inflight", ".requested"))
        and not list((table / ".hoodie" / "timeline").glob(p.name.split(".")[0] + "_*"))]

    assert "Deleted Metadata Table" in session.sql("CALL delete_metadata_table(table => 't')").collect()[0][0]
    assert "Created Metadata Table" in session.sql("CALL create_metadata_table(table => 't')").collect()[0][0]
    session.sql("INSERT INTO t VALUES (4, 'd', 1, 'd2')")
    assert consistent(session, table, "rebuilt") == sorted([*rows, (4, "d", 1, "d2")])
    assert session.sql("CALL show_metadata_table_partitions(table => 't')").collect() == [("dt=d1",), ("dt=d2",)]
    assert len(session.sql("CALL show_metadata_table_files(table => 't', partition => 'dt=d1')").collect()) == 2
    with pytest.raises(Exception, match="is not empty; CALL delete_metadata_table first"):
        session.sql("CALL create_metadata_table(table => 't')")


def test_a_version_step_drops_the_metadata_table_and_the_next_write_builds_it_in_the_new_version(session):
    table = versioned_table(session, 8, "cow")
    session.sql("INSERT INTO t VALUES (1, 'a', 1, 'd1')")
    session.sql("CALL upgrade_table(table => 't', to_version => 9)")
    assert not (table / ".hoodie" / "metadata").exists()
    assert TableConfig.load(Storage(str(table))).metadata_partitions == []
    session.sql("INSERT INTO t VALUES (2, 'b', 1, 'd2')")
    assert consistent(session, table, "upgrade") == [(1, "a", 1, "d1"), (2, "b", 1, "d2")]
    mdt = TableConfig.load(Storage(str(table / ".hoodie" / "metadata")))
    assert mdt.version == 9
    session.sql("CALL downgrade_table(table => 't', to_version => 6)")
    assert not (table / ".hoodie" / "metadata").exists()
    assert hudiql_rows(session, QUERY) == official_rows(table, COLUMNS) == [(1, "a", 1, "d1"), (2, "b", 1, "d2")]
