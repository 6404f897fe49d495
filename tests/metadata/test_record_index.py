"""The record index (``index.record_index``, the metadata table's ``record_index`` partition): read
as Hudi 1.1 writes it, kept by every write of a table that asks for it, used to find keys, and
always the same answer as a full scan of the table."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import (
    HUDI_TABLES,
    damage,
    VERSIONED_COLUMNS,
    VERSIONED_QUERY,
    hudiql_rows,
    official_rows,
    unzip,
    versioned_table,
)
from hudiql.config.table_config import TableConfig
from hudiql.errors import HudiqlError, OptionError
from hudiql.formats import hfile
from hudiql.index.record_index import RecordIndex
from hudiql.io.storage import Storage
from hudiql.metadata.record_index import decode_location
from hudiql.metadata.records import file_group_index
from hudiql.sql.statements import TableName
from hudiql.table.table import HudiTable
from hudiql.write import dml

RECORD_INDEX = "'hoodie.metadata.record.index.enable'='true'"
SAMPLE = HUDI_TABLES / "sample_table" / "cow" / "v9_txns_simple_meta.zip"


def stored_places(session, name: str = "t") -> dict[str, tuple[str, str]]:
    """Each stored key's partition and file group, by a full scan."""
    rows = session.sql(f"SELECT _hoodie_record_key, _hoodie_partition_path, _hoodie_file_name FROM {name}").collect()
    return {key: (partition, file.split("_")[0]) for key, partition, file in rows}


def indexed_places(table: HudiTable, keys) -> dict[str, tuple[str, str]]:
    return {k: (loc.partition, loc.file_id) for k, loc in RecordIndex.of(table).locate(keys).items()}


def assert_index_matches_scan(session, absent=()) -> None:
    """The record index finds every stored key where a full scan finds it, and no absent key."""
    table = session.table(TableName(None, "t"))
    stored = stored_places(session)
    assert indexed_places(table, [*stored, *absent]) == stored


def test_hudis_record_index_files_map_keys_as_hudi_does(tmp_path):
    """Every key in the base HFiles Hudi 1.1 wrote for its record index sits in the file group
    Hudi's hash names, and its location decodes to a file group of the table."""
    table = unzip(SAMPLE, tmp_path)
    bases = sorted((table / ".hoodie" / "metadata" / "record_index").glob("record-index-*.hfile"))
    assert len(bases) == 10
    groups = {p.name.split("_")[0] for part in table.glob("region=*") for p in part.glob("*.parquet")}
    keys = 0
    for path in bases:
        data = hfile.HFile(path.read_bytes(), str(path))
        schema = data.file_info["schema"].decode()
        for key, value in data.entries():
            keys += 1
            assert file_group_index(key.decode(), 10) == int(path.name[13:17])
            location = decode_location(value, schema)
            assert location.partition.startswith("region=") and location.file_id in groups
    assert keys >= 6


def test_hudis_record_index_is_read_through_its_logs(session, tmp_path):
    """The record index of a Hudi 1.1 table (base files of a compaction, then logs of later
    inserts, deletes and a clustering) locates each stored key where the table holds it."""
    table_path = unzip(SAMPLE, tmp_path)
    session.sql(f"CREATE TABLE t USING hudi LOCATION '{table_path}'")
    table = session.table(TableName(None, "t"))
    stored = stored_places(session)
    located = indexed_places(table, [*stored, "TXN-002", "TXN-999"])
    assert located == stored and len(stored) == 12


# Copy-on-write here; the property test below writes merge-on-read (updates as logs).
@pytest.mark.parametrize("version, kind", [(9, "cow")])
def test_every_write_keeps_the_index_equal_to_a_scan(session, version, kind):
    table = versioned_table(session, version, kind, RECORD_INDEX, "'hoodie.metadata.compact.max.delta.commits'='3'")
    session.sql("INSERT INTO t VALUES (1, 'a', 1, 'd1'), (2, 'b', 1, 'd1'), (3, 'c', 1, 'd2')")
    assert TableConfig.load(Storage(str(table))).metadata_partitions == ["files", "record_index"]
    assert_index_matches_scan(session, absent=["4"])
    session.sql("SET hoodie.spark.sql.insert.into.operation=upsert")
    session.sql("INSERT INTO t VALUES (1, 'a2', 2, 'd1'), (4, 'd', 1, 'd2')")
    session.sql("UPDATE t SET name = 'bb', ts = 2 WHERE id = 2")
    session.sql("DELETE FROM t WHERE id = 3")
    session.sql("MERGE INTO t USING (SELECT 5 AS id, 'e' AS name, 1L AS ts, 'd3' AS dt UNION ALL "
                "SELECT 1, 'a3', 3L, 'd1') s ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
    assert_index_matches_scan(session, absent=["3"])
    assert hudiql_rows(session, VERSIONED_QUERY) == official_rows(table, VERSIONED_COLUMNS) == [
        (1, "a3", 3, "d1"), (2, "bb", 2, "d1"), (4, "d", 1, "d2"), (5, "e", 1, "d3")]
    # Three delta commits since the build: the metadata table was compacted, record index groups too.
    mdt = RecordIndex.of(session.table(TableName(None, "t"))).mdt
    assert mdt.timeline.completed(("compaction",))
    assert hudiql_rows(session, "SELECT id, name FROM t WHERE id = 4") == [(4, "d")]


def test_a_key_lookup_reads_only_its_file_group(session, monkeypatch):
    """``WHERE id = 2`` (SELECT, UPDATE, DELETE) and a MERGE ON the key read the file groups the
    index names: the statements work though another group's base file is unreadable, which a
    scan trips over. (A MERGE looks its keys up in a table larger than a lookup job is worth: any
    table, here.)"""
    monkeypatch.setattr(dml, "LOOKUP_WORTH_BYTES", 0)
    table = versioned_table(session, 9, "cow", RECORD_INDEX)
    session.sql("INSERT INTO t VALUES (1, 'a', 1, 'd1'), (2, 'b', 1, 'd2')")
    other = next(p for p in (table / "dt=d1").glob("*.parquet"))
    damage(other)
    assert hudiql_rows(session, "SELECT id, name FROM t WHERE id = 2") == [(2, "b")]
    assert hudiql_rows(session, "SELECT id, name FROM t WHERE id IN (2, 7) AND name = 'b'") == [(2, "b")]
    assert hudiql_rows(session, "SELECT id FROM t WHERE id = 7") == []
    session.sql("UPDATE t SET name = 'b2' WHERE id = 2")
    assert hudiql_rows(session, "SELECT id, name FROM t WHERE id = 2") == [(2, "b2")]
    session.sql("MERGE INTO t USING (SELECT 2 AS id, 'b3' AS name, 5L AS ts, 'd2' AS dt UNION ALL "
                "SELECT 20, 'f', 1L, 'd2') s ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
    assert hudiql_rows(session, "SELECT id, name, dt FROM t WHERE id IN (2, 20)") == [(2, "b3", "d2"), (20, "f", "d2")]
    session.sql("DELETE FROM t WHERE id = 20")
    assert hudiql_rows(session, "SELECT id, name FROM t WHERE id IN (2, 20)") == [(2, "b3")]
    with pytest.raises(Exception, match="FAILED_READ_FILE"):
        session.sql("SELECT * FROM t").collect()


def test_an_overwrite_or_a_rollback_drops_the_index_and_the_next_write_builds_it(session):
    table = versioned_table(session, 9, "cow", RECORD_INDEX)
    session.sql("INSERT INTO t VALUES (1, 'a', 1, 'd1'), (2, 'b', 1, 'd2')")
    session.sql("INSERT OVERWRITE t PARTITION (dt = 'd1') SELECT 3, 'c', 1")
    assert TableConfig.load(Storage(str(table))).metadata_partitions == ["files"]
    assert hudiql_rows(session, "SELECT id FROM t WHERE id = 3") == [(3,)]
    session.sql("INSERT INTO t VALUES (4, 'd', 1, 'd1')")
    assert TableConfig.load(Storage(str(table))).metadata_partitions == ["files", "record_index"]
    assert_index_matches_scan(session, absent=["1"])
    latest = session.sql("CALL show_commits(table => 't')").collect()[0][0]
    session.sql(f"CALL rollback_to_instant(table => 't', instant_time => '{latest}')")
    assert TableConfig.load(Storage(str(table))).metadata_partitions == ["files"]
    session.sql("INSERT INTO t VALUES (5, 'e', 1, 'd1')")
    assert_index_matches_scan(session, absent=["4"])


def test_a_hudi_table_with_a_record_index_keeps_one_when_asked(session, tmp_path):
    """The Hudi 1.1 table with a record index and secondary indexes, written with the record
    index on: its metadata table is appended to, every index kept (the column and partition stats
    and secondary indexes it had too), the record index equals a scan, and the official reader
    reads hudiql's rows."""
    table = unzip(SAMPLE, tmp_path)
    session.sql(f"CREATE TABLE t USING hudi LOCATION '{table}'")
    session.sql(f"ALTER TABLE t SET TBLPROPERTIES ({RECORD_INDEX})")
    session.sql("UPDATE t SET txn_type = 'refund', txn_ts = 1800000000000 WHERE txn_id = 'TXN-007'")
    assert TableConfig.load(Storage(str(table))).metadata_partitions == ["column_stats", "files", "partition_stats", "record_index", "secondary_index_merchant_idx", "secondary_index_txn_date_idx"]
    columns = ["txn_id", "txn_ts", "txn_type", "region"]
    rows = hudiql_rows(session, f"SELECT {', '.join(columns)} FROM t")
    assert ("TXN-007", 1800000000000, "refund", "region=apac") in [(*r[:3], f"region={r[3]}") for r in rows]
    assert rows == official_rows(table, columns)
    assert_index_matches_scan(session, absent=["TXN-002"])


@pytest.mark.parametrize("props, message", [
    ("'hoodie.write.table.version'='9', 'hoodie.index.type'='BUCKET'", "does not go with hoodie.index.type=BUCKET"),
    ("'hoodie.write.table.version'='6'", "table b is version 6"),
    ("'hoodie.write.table.version'='9', 'hoodie.metadata.enable'='false'", "set hoodie.metadata.enable=true"),
])
def test_a_record_index_the_table_cannot_keep_is_refused(session, warehouse, props, message):
    with pytest.raises(OptionError, match=f"hoodie.metadata.record.index.enable=true: .*{message}"):
        session.sql(f"CREATE TABLE b (id INT, v STRING) USING hudi TBLPROPERTIES ('primaryKey'='id', {props}, {RECORD_INDEX})")
    assert not (warehouse / "b").exists()


def test_a_record_index_of_a_table_without_a_key_is_refused(session):
    session.sql("CREATE TABLE b (id INT, v STRING) USING hudi TBLPROPERTIES ('hoodie.write.table.version'='9')")
    session.sql("SET hoodie.metadata.record.index.enable=true")
    with pytest.raises(HudiqlError, match="the record index needs a record key"):
        session.sql("INSERT INTO b VALUES (1, 'a')")
    assert hudiql_rows(session, "SELECT * FROM b") == []


_OPS = st.lists(st.tuples(st.sampled_from(["upsert", "update", "delete", "merge"]),
                          st.lists(st.integers(0, 30), min_size=1, max_size=6, unique=True)), min_size=2, max_size=5)


@settings(max_examples=2, deadline=None, suppress_health_check=list(HealthCheck))
@given(ops=_OPS, seed=st.integers(0, 1000))
def test_record_index_lookups_equal_a_full_scan(session, ops, seed):
    """Random writes of random keys (merge-on-read: updates become logs): after them, the index
    locates every key exactly where a full scan finds it, and finds no other key."""
    rng = random.Random(seed)
    session.sql("DROP TABLE IF EXISTS t")
    versioned_table(session, 9, "mor", RECORD_INDEX)
    session.sql("SET hoodie.spark.sql.insert.into.operation=upsert")
    session.sql("INSERT INTO t VALUES " + ", ".join(f"({k}, 'v', 0, 'd{k % 3}')" for k in range(0, 30, 2)))
    for step, (op, keys) in enumerate(ops, start=1):
        listed = ", ".join(map(str, keys))
        if op == "upsert":
            session.sql("INSERT INTO t VALUES " + ", ".join(f"({k}, 'u{step}', {step}, 'd{k % 3}')" for k in keys))
        elif op == "update":
            session.sql(f"UPDATE t SET name = 'x{step}', ts = {step} WHERE id IN ({listed})")
        elif op == "delete":
            session.sql(f"DELETE FROM t WHERE id = {rng.choice(keys)}")
        else:
            source = " UNION ALL ".join(f"SELECT {k} AS id, 'm{step}' AS name, {step}L AS ts, 'd{k % 3}' AS dt" for k in keys)
            session.sql(f"MERGE INTO t USING ({source}) s ON t.id = s.id "
                        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
    stored = stored_places(session)
    assert indexed_places(session.table(TableName(None, "t")), [str(k) for k in range(40)]) == stored
    for key in rng.sample(sorted(stored), min(3, len(stored))):
        assert hudiql_rows(session, f"SELECT id FROM t WHERE id = {key}") == [(int(key),)]
