"""Merge-on-read tables: DDL, log files and blocks, the write buffer, snapshot / read-optimized
queries, compaction (inline, scheduled, failed, CLI), DML, bad input, and the official reader."""

from __future__ import annotations

import io
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import hudiql_rows, instants, logs, official_rows, timeline
from hudiql.errors import HudiqlError
from hudiql.formats.log_file import TruncatedLogError
from hudiql.formats import log_file as L

LOG_NAME = re.compile(r"^\.(?P<fid>[^_]+)_(?P<base>\d{17})\.log\.(?P<version>\d+)_(?P<token>\d+-\d+-\d+)$")
BASE_NAME = re.compile(r"^(?P<fid>[^_]+)_(?P<token>\d+-\d+-\d+)_(?P<instant>\d{17})\.parquet$")
META = ["_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key", "_hoodie_partition_path", "_hoodie_file_name"]
COLS = ["id", "name", "ts", "dt"]
SELECT = "SELECT id, name, ts, dt FROM "


def mor_ddl(name: str, *props: str, precombine: bool = True, partitioned: bool = True) -> str:
    options = ["primaryKey='id'", "type='mor'"] + (["preCombineField='ts'"] if precombine else []) + list(props)
    part = "PARTITIONED BY (dt) " if partitioned else ""
    return (f"CREATE TABLE {name} (id INT, name STRING, ts BIGINT, dt STRING) USING hudi {part}"
            f"TBLPROPERTIES ({', '.join(options)})")


# ---- file helpers -------------------------------------------------------------------------------

def bases(table: Path) -> list[Path]:
    return sorted(p for p in table.rglob("*.parquet") if ".hoodie" not in p.relative_to(table).parts)


def parse_log(p: Path) -> dict:
    m = LOG_NAME.match(p.name)
    assert m, f"bad log file name {p.name}"
    return {**m.groupdict(), "version": int(m["version"]), "partition": p.parent.name}


def parse_base(p: Path) -> dict:
    m = BASE_NAME.match(p.name)
    assert m, f"bad base file name {p.name}"
    return {**m.groupdict(), "partition": p.parent.name}


def blocks(p: Path) -> list[L.LogBlock]:
    return L.read_blocks(p.read_bytes(), str(p))


def commit_doc(table: Path, name: str) -> dict:
    return json.loads((table / ".hoodie" / name).read_text())


def stats(doc: dict) -> list[dict]:
    return [s for ss in doc["partitionToWriteStats"].values() for s in ss]


def avro_records(block: L.LogBlock) -> list[dict]:
    return L.read_avro_records(block, "block")


def parquet_records(block: L.LogBlock) -> list[dict]:
    return pq.read_table(io.BytesIO(block.content)).to_pylist()


def snapshot_and_ro(session, table: str, cols: str = "id, name, ts, dt") -> tuple[list, list]:
    return hudiql_rows(session, f"SELECT {cols} FROM {table}"), hudiql_rows(session, f"SELECT {cols} FROM {table}_ro")


def assert_official(path: Path, snapshot: list, ro: list, cols: list[str] = COLS) -> None:
    assert official_rows(path, cols) == snapshot
    assert official_rows(path, cols, read_optimized=True) == ro


# ---- 1. DDL -------------------------------------------------------------------------------------

def test_mor_ddl_spark_and_flink_describe(session, warehouse):
    session.sql(mor_ddl("m"))
    session.sql(
        "CREATE TABLE f (id INT, name STRING, ts BIGINT, PRIMARY KEY (id) NOT ENFORCED) "
        "WITH ('connector'='hudi', 'table.type'='MERGE_ON_READ', 'precombine.field'='ts')"
    )
    session.sql(mor_ddl("off", "'hoodie.compact.inline'='false'"))
    session.sql("CREATE TABLE c (id INT, ts BIGINT) USING hudi TBLPROPERTIES (primaryKey='id')")
    described = {}
    for name in ("m", "f", "off", "c"):
        described[name] = {r.col_name: r.data_type for r in session.sql(f"DESCRIBE EXTENDED {name}").collect()}
    for name in ("m", "f"):
        assert described[name]["Table Type"] == "MERGE_ON_READ"
        assert described[name]["hoodie.table.type"] == "MERGE_ON_READ"
        assert described[name]["hoodie.compact.inline"] == "true"
        props = (warehouse / name / ".hoodie" / "hoodie.properties").read_text()
        assert "hoodie.table.type=MERGE_ON_READ" in props and "hoodie.compact.inline=true" in props
    assert described["off"]["hoodie.compact.inline"] == "false"  # an explicit value is kept
    assert described["c"]["Table Type"] == "COPY_ON_WRITE" and "hoodie.compact.inline" not in described["c"]
    create = session.sql("SHOW CREATE TABLE f").first()[0]
    assert "type='mor'" in create
    assert official_rows(warehouse / "m", COLS) == []
    # compaction procedures: nothing to plan on an empty table; refused on copy-on-write; ops validated
    assert session.sql("CALL run_compaction(op => 'schedule', table => 'm')").collect() == []
    assert session.sql("CALL show_compaction(table => 'm')").collect() == []
    with pytest.raises(HudiqlError, match="copy-on-write"):
        session.sql("CALL run_compaction(op => 'schedule', table => 'c')")
    with pytest.raises(HudiqlError, match="scheduleandexecute"):
        session.sql("CALL run_compaction(op => 'compact', table => 'm')")


# ---- 2, 3, 5. Log files, blocks, snapshot / read-optimized ------------------------------------------

def test_upserts_append_new_log_file_versions_avro(session, warehouse):
    path = warehouse / "ev"
    # No small files: the new key must start its own file group (packing has its own test).
    session.sql(mor_ddl("ev", "'hoodie.compact.inline'='false', 'hoodie.parquet.small.file.limit'='0'"))
    session.sql("INSERT INTO ev VALUES (1,'a',5,'d1'), (2,'b',5,'d1'), (3,'c',5,'d2'), (4,'d',5,'d2')")
    [t1] = instants(path, "deltacommit")
    assert timeline(path) == [f"{t1}.deltacommit", f"{t1}.deltacommit.inflight", f"{t1}.deltacommit.requested"]
    assert logs(path) == []
    base1 = {parse_base(p)["partition"]: parse_base(p) for p in bases(path)}
    assert sorted(base1) == ["dt=d1", "dt=d2"] and all(b["instant"] == t1 for b in base1.values())
    doc = commit_doc(path, f"{t1}.deltacommit")
    assert doc["operationType"] == "UPSERT" and doc["compacted"] is False
    assert sum(s["numInserts"] for s in stats(doc)) == 4 and all(s["logFiles"] == [] for s in stats(doc))

    # updates: an older one (2), an equal one (3), a newer one (1), plus a new key (5)
    session.sql("INSERT INTO ev VALUES (1,'a-new',6,'d1'), (2,'b-old',4,'d1'), (3,'c-tie',5,'d2'), (5,'e',1,'d1')")
    t2 = instants(path, "deltacommit")[-1]
    assert f"{t2}.deltacommit.requested" in timeline(path) and f"{t2}.deltacommit.inflight" in timeline(path)
    first_logs = {p: p.read_bytes() for p in logs(path)}
    parsed = {parse_log(p)["partition"]: parse_log(p) for p in first_logs}
    assert sorted(parsed) == ["dt=d1", "dt=d2"]
    for partition, log in parsed.items():
        assert (log["fid"], log["base"], log["version"]) == (base1[partition]["fid"], t1, 1)
    # a new key starts a new file group with a base file, never a log
    new_bases = [parse_base(p) for p in bases(path) if parse_base(p)["instant"] == t2]
    assert [(b["partition"]) for b in new_bases] == ["dt=d1"] and new_bases[0]["fid"] != base1["dt=d1"]["fid"]
    doc = commit_doc(path, f"{t2}.deltacommit")
    log_stats = {s["partitionPath"]: s for s in stats(doc) if s["logFiles"]}
    for p in first_logs:
        s = log_stats[p.parent.name]
        assert s["logFiles"] == [p.name] and s["path"] == f"{p.parent.name}/{p.name}"
        assert s["prevCommit"] == t1 and s["fileId"] == parse_log(p)["fid"]
        assert s["fileSizeInBytes"] == p.stat().st_size > 0 and s["totalLogBlocks"] == len(blocks(p)) == 1
    assert log_stats["dt=d1"]["numUpdateWrites"] == 2 and log_stats["dt=d2"]["numUpdateWrites"] == 1

    d1_log = next(p for p in first_logs if p.parent.name == "dt=d1")
    [block] = blocks(d1_log)
    assert block.block_type == L.AVRO_DATA and block.instant_time == t2
    schema = json.loads(block.header[L.SCHEMA])
    assert [f["name"] for f in schema["fields"]] == META + COLS
    records = sorted(avro_records(block), key=lambda r: r["id"])
    assert [(r["id"], r["name"], r["ts"]) for r in records] == [(1, "a-new", 6), (2, "b-old", 4)]
    assert {r["_hoodie_commit_time"] for r in records} == {t2}
    assert [r["_hoodie_record_key"] for r in records] == ["1", "2"]
    assert {(r["_hoodie_partition_path"], r["_hoodie_file_name"]) for r in records} == {("dt=d1", base1["dt=d1"]["fid"])}

    expected = [(1, "a-new", 6, "d1"), (2, "b", 5, "d1"), (3, "c-tie", 5, "d2"), (4, "d", 5, "d2"), (5, "e", 1, "d1")]
    assert hudiql_rows(session, SELECT + "ev") == expected

    # DELETE FROM: a delete block in a new log file version; committed log files are never touched
    session.sql("DELETE FROM ev WHERE id = 4")
    t3 = instants(path, "deltacommit")[-1]
    assert all(p.read_bytes() == data for p, data in first_logs.items())
    [d2_log2] = [p for p in logs(path) if p not in first_logs]
    assert parse_log(d2_log2)["version"] == 2 and parse_log(d2_log2)["base"] == t1 and d2_log2.parent.name == "dt=d2"
    [delete] = blocks(d2_log2)
    assert delete.block_type == L.DELETE and delete.instant_time == t3
    assert L.read_deletes(delete, str(d2_log2)) == [L.DeleteRecord("4", "dt=d2", None)]
    assert stats(commit_doc(path, f"{t3}.deltacommit"))[0]["numDeletes"] == 1

    # MERGE ... THEN DELETE and an update in the same commit: a data block then a delete block
    session.sql(
        "MERGE INTO ev t USING (SELECT * FROM VALUES (2, 'x', 9, 'del'), (1, 'a-merge', 7, 'upd') AS v(id, name, ts, op)) s "
        "ON t.id = s.id WHEN MATCHED AND s.op = 'del' THEN DELETE WHEN MATCHED THEN UPDATE SET name = s.name, ts = s.ts"
    )
    t4 = instants(path, "deltacommit")[-1]
    before = set(first_logs) | {d2_log2}
    [d1_log2] = [p for p in logs(path) if p not in before]
    assert (d1_log2.parent.name, parse_log(d1_log2)["version"], parse_log(d1_log2)["base"]) == ("dt=d1", 2, t1)
    kinds = [(b.block_type, b.instant_time) for b in blocks(d1_log2)]
    assert kinds == [(L.AVRO_DATA, t4), (L.DELETE, t4)]
    assert [r["name"] for r in avro_records(blocks(d1_log2)[0])] == ["a-merge"]
    assert [d.record_key for d in L.read_deletes(blocks(d1_log2)[1], "")] == ["2"]

    session.sql("UPDATE ev SET name = 'c-upd' WHERE id = 3")
    [d2_log3] = [p for p in logs(path) if p not in before | {d1_log2}]
    assert parse_log(d2_log3)["version"] == 3
    for p, data in first_logs.items():
        assert p.read_bytes() == data

    deltas = instants(path, "deltacommit")
    assert len(deltas) == 5 and instants(path, "commit") == []
    for t in deltas:
        assert {f"{t}.deltacommit", f"{t}.deltacommit.inflight", f"{t}.deltacommit.requested"} <= set(timeline(path))
    snapshot = [(1, "a-merge", 7, "d1"), (3, "c-upd", 5, "d2"), (5, "e", 1, "d1")]
    ro = [(1, "a", 5, "d1"), (2, "b", 5, "d1"), (3, "c", 5, "d2"), (4, "d", 5, "d2"), (5, "e", 1, "d1")]
    assert snapshot_and_ro(session, "ev") == (snapshot, ro)
    assert hudiql_rows(session, SELECT + "ev_rt") == snapshot
    session.sql("SET hoodie.datasource.query.type=read_optimized")
    assert hudiql_rows(session, SELECT + "ev") == ro
    session.sql("SET hoodie.datasource.query.type=snapshot")
    assert hudiql_rows(session, SELECT + "ev WHERE dt = 'd1'") == [r for r in snapshot if r[3] == "d1"]
    assert_official(path, snapshot, ro)


def test_inserts_fill_small_base_only_file_groups(session, warehouse):
    """As Hudi's delta commit with an index that cannot see logs: new keys go to a small file
    group without logs, whose base file is rewritten with them (and with that group's updates);
    groups with logs never take inserts, so every key stays findable in a base file."""
    path = warehouse / "sf"
    session.sql(mor_ddl("sf", "'hoodie.compact.inline'='false'"))
    session.sql("INSERT INTO sf VALUES (1,'a',5,'d1'), (2,'b',5,'d2')")
    [t1] = instants(path, "deltacommit")
    group = {parse_base(p)["partition"]: parse_base(p)["fid"] for p in bases(path)}
    # d1: an update and a new key in the same small group -> one new base file, no log
    session.sql("INSERT INTO sf VALUES (1,'a2',6,'d1'), (3,'c',5,'d1')")
    t2 = instants(path, "deltacommit")[-1]
    assert logs(path) == []
    d1 = sorted((parse_base(p)["instant"], parse_base(p)["fid"]) for p in bases(path) if p.parent.name == "dt=d1")
    assert d1 == [(t1, group["dt=d1"]), (t2, group["dt=d1"])]
    # d2: an update alone goes to a log; then a new key must not join that group
    session.sql("INSERT INTO sf VALUES (2,'b2',6,'d2')")
    session.sql("INSERT INTO sf VALUES (4,'d',5,'d2')")
    d2_groups = {parse_base(p)["fid"] for p in bases(path) if p.parent.name == "dt=d2"}
    assert [parse_log(p)["fid"] for p in logs(path)] == [group["dt=d2"]] and len(d2_groups) == 2
    snapshot = [(1, "a2", 6, "d1"), (2, "b2", 6, "d2"), (3, "c", 5, "d1"), (4, "d", 5, "d2")]
    ro = [(1, "a2", 6, "d1"), (2, "b", 5, "d2"), (3, "c", 5, "d1"), (4, "d", 5, "d2")]
    assert snapshot_and_ro(session, "sf") == (snapshot, ro)
    assert_official(path, snapshot, ro)


def test_mor_inserts_rewrite_only_the_smallest_base_only_group_of_a_partition(session, warehouse):
    path = warehouse / "sm"
    session.sql(mor_ddl("sm", "'hoodie.compact.inline'='false'"))
    session.sql("SET hoodie.parquet.small.file.limit=0")  # two file groups in one partition
    session.sql("INSERT INTO sm VALUES (1,'a',5,'d1'), (2,'b',5,'d1'), (3,'c',5,'d1')")
    session.sql("INSERT INTO sm VALUES (4,'d',5,'d1')")
    session.sql("SET hoodie.parquet.small.file.limit=104857600")
    big, small = (parse_base(p)["fid"] for p in sorted(bases(path), key=lambda p: -p.stat().st_size))
    session.sql("INSERT INTO sm VALUES (1,'a2',6,'d1'), (4,'d2',6,'d1'), (5,'e',5,'d1')")
    t3 = instants(path, "deltacommit")[-1]
    assert [parse_base(p)["fid"] for p in bases(path) if parse_base(p)["instant"] == t3] == [small]
    assert [parse_log(p)["fid"] for p in logs(path)] == [big]
    snapshot = [(1, "a2", 6, "d1"), (2, "b", 5, "d1"), (3, "c", 5, "d1"), (4, "d2", 6, "d1"), (5, "e", 5, "d1")]
    ro = [(1, "a", 5, "d1"), (2, "b", 5, "d1"), (3, "c", 5, "d1"), (4, "d2", 6, "d1"), (5, "e", 5, "d1")]
    assert snapshot_and_ro(session, "sm") == (snapshot, ro)
    assert_official(path, snapshot, ro)


def test_parquet_blocks_and_is_deleted_deletes(session, warehouse):
    path = warehouse / "pq"
    session.sql(
        "CREATE TABLE pq (id INT, name STRING, ts INT, _hoodie_is_deleted BOOLEAN) USING hudi TBLPROPERTIES "
        "(primaryKey='id', preCombineField='ts', type='mor', 'hoodie.compact.inline'='false', "
        "'hoodie.logfile.data.block.format'='parquet')"
    )
    session.sql("INSERT INTO pq VALUES (1,'a',5,false), (2,'b',5,false), (3,'c',5,false), (4,'d',5,false)")
    # 2: deleted (newer); 3: its delete is older than the stored row, so it stays; 4: equal deletes
    session.sql("INSERT INTO pq VALUES (1,'a2',6,false), (2,'x',7,true), (3,'x',4,true), (4,'x',5,true)")
    t2 = instants(path, "deltacommit")[-1]
    [log] = logs(path)
    assert log.parent == path and parse_log(log)["version"] == 1
    data, delete = blocks(log)
    assert data.block_type == L.PARQUET_DATA and data.instant_time == t2 and data.content[:4] == b"PAR1"
    assert [f["name"] for f in json.loads(data.header[L.SCHEMA])["fields"]] == META + ["id", "name", "ts", "_hoodie_is_deleted"]
    [record] = parquet_records(data)
    assert (record["id"], record["name"], record["_hoodie_commit_time"], record["_hoodie_record_key"]) == (1, "a2", t2, "1")
    assert delete.block_type == L.DELETE and delete.instant_time == t2
    assert sorted((d.record_key, d.ordering_value) for d in L.read_deletes(delete, str(log))) == [("2", 7), ("3", 4), ("4", 5)]
    expected = [(1, "a2", 6), (3, "c", 5)]
    assert hudiql_rows(session, "SELECT id, name, ts FROM pq") == expected
    assert official_rows(path, ["id", "name", "ts"]) == expected

    # a re-insert newer than the delete comes back; one older than it stays deleted
    session.sql("INSERT INTO pq VALUES (2,'back',8,false), (4,'stale',4,false)")
    [log2] = [p for p in logs(path) if p != log]
    assert parse_log(log2)["version"] == 2 and [b.block_type for b in blocks(log2)] == [L.PARQUET_DATA]
    expected = [(1, "a2", 6), (2, "back", 8), (3, "c", 5)]
    assert hudiql_rows(session, "SELECT id, name, ts FROM pq") == expected
    assert official_rows(path, ["id", "name", "ts"]) == expected
    ro = [(1, "a", 5), (2, "b", 5), (3, "c", 5), (4, "d", 5)]
    assert hudiql_rows(session, "SELECT id, name, ts FROM pq_ro") == ro
    assert official_rows(path, ["id", "name", "ts"], read_optimized=True) == ro


def test_commit_time_ordering_latest_write_wins(session, warehouse):
    path = warehouse / "ct"
    session.sql(mor_ddl("ct", "'hoodie.compact.inline'='false', 'hoodie.spark.sql.insert.into.operation'='upsert'",
                        precombine=False, partitioned=False))
    props = (path / ".hoodie" / "hoodie.properties").read_text()
    assert "OverwriteWithLatestAvroPayload" in props and "COMMIT_TIME_ORDERING" in props
    session.sql("INSERT INTO ct VALUES (1,'a',10,'x'), (2,'b',10,'x'), (3,'c',10,'x')")
    session.sql("INSERT INTO ct VALUES (1,'lower-ts',1,'x')")
    session.sql("DELETE FROM ct WHERE id = 2")
    session.sql("INSERT INTO ct VALUES (2,'again',0,'x'), (3,'c2',-5,'x')")
    versions = sorted(parse_log(p)["version"] for p in logs(path))
    assert versions == [1, 2, 3]
    delete_blocks = [b for p in logs(path) for b in blocks(p) if b.block_type == L.DELETE]
    assert [L.read_deletes(b, "") for b in delete_blocks] == [[L.DeleteRecord("2", "", None)]]
    expected = [(1, "lower-ts", 1, "x"), (2, "again", 0, "x"), (3, "c2", -5, "x")]
    ro = [(1, "a", 10, "x"), (2, "b", 10, "x"), (3, "c", 10, "x")]
    assert snapshot_and_ro(session, "ct") == (expected, ro)
    assert_official(path, expected, ro)


# ---- 4. Write buffer --------------------------------------------------------------------------------

def test_write_buffer_settings_split_a_log_file_into_blocks(session, spark, warehouse):
    path = warehouse / "wb"
    session.sql(mor_ddl("wb", "'hoodie.compact.inline'='false'"))
    rows = [(i, "a", 1, "d1" if i <= 4 else "d2") for i in range(1, 7)]

    def upsert(name: str, ts: int) -> dict[str, Path]:
        before = set(logs(path))
        session.sql("INSERT INTO wb VALUES " + ", ".join(f"({i},'{name}',{ts},'{d}')" for i, _, _, d in rows))
        return {p.parent.name: p for p in logs(path) if p not in before}

    session.sql("INSERT INTO wb VALUES " + ", ".join(f"({i},'{n}',{t},'{d}')" for i, n, t, d in rows))
    key = "spark.sql.execution.arrow.maxRecordsPerBatch"
    old = spark.conf.get(key)
    try:
        session.sql(f"SET {key}=1")  # every row reaches the append task in its own Arrow batch
        new = upsert("default-buffer", 2)  # default sizes: one flush per file group at the end
        assert {p: len(blocks(f)) for p, f in new.items()} == {"dt=d1": 1, "dt=d2": 1}
        session.sql("SET write.batch.size=0.000001")  # MB: about one byte
        new = upsert("batch-size", 3)  # each group's buffer is full after every row
        assert {p: len(blocks(f)) for p, f in new.items()} == {"dt=d1": 4, "dt=d2": 2}
        assert all(b.block_type == L.AVRO_DATA and len(avro_records(b)) == 1 for f in new.values() for b in blocks(f))
        doc = commit_doc(path, f"{instants(path, 'deltacommit')[-1]}.deltacommit")
        assert sorted((s["partitionPath"], s["totalLogBlocks"], s["numUpdateWrites"]) for s in stats(doc)) == [
            ("dt=d1", 4, 4), ("dt=d2", 2, 2)]
        session.conf.pop("write.batch.size")
        session.sql("SET write.task.max.size=0.000001")
        new = upsert("task-max", 4)  # all buffers together are over the limit after every row
        assert {p: len(blocks(f)) for p, f in new.items()} == {"dt=d1": 4, "dt=d2": 2}
        records = sorted(r["id"] for f in new.values() for b in blocks(f) for r in avro_records(b))
        assert records == [1, 2, 3, 4, 5, 6]
    finally:
        spark.conf.set(key, old)
        session.conf.pop("write.task.max.size", None)
    assert sorted(parse_log(p)["version"] for p in logs(path) if p.parent.name == "dt=d1") == [1, 2, 3]
    expected = [(i, "task-max", 4, d) for i, _, _, d in rows]
    assert snapshot_and_ro(session, "wb") == (expected, rows)
    assert_official(path, expected, rows)


def _append_task(tmp_path: Path, batch_size: int, task_max_size: int):
    from hudiql.record.schema import to_arrow, to_avro, with_meta_columns
    from hudiql.write.append_handle import AppendTask, LogTarget
    from pyspark.sql import types as T

    data = T.StructType([T.StructField("id", T.IntegerType()), T.StructField("name", T.StringType()),
                         T.StructField("ts", T.LongType()), T.StructField("dt", T.StringType())])
    full = with_meta_columns(data)
    avro = to_avro(full, "u")
    targets = {("dt=p", f): LogTarget(f"{f}_0-1-0_20240101000000000.parquet", "20240101000000000", 1) for f in ("aaaa-0", "bbbb-0")}
    return AppendTask(base_uri=str(tmp_path / "u"), instant_time="20240101000000001", arrow_schema=to_arrow(full),
                      avro_schema=avro, ordering_field="ts", ordering_wrapper="LongWrapper", targets=targets,
                      batch_size=batch_size, task_max_size=task_max_size)


def _batch(file_id: str, ids: list[int], seq: int, name: str = "n") -> pa.RecordBatch:
    from hudiql.write.handle import FILE_ID, SEQUENCE

    n = len(ids)
    return pa.RecordBatch.from_pydict({
        "id": pa.array(ids, pa.int32()), "name": [name] * n, "ts": pa.array([1] * n, pa.int64()), "dt": ["p"] * n,
        "_hoodie_record_key": [str(i) for i in ids], "_hoodie_partition_path": ["dt=p"] * n,
        SEQUENCE: pa.array(range(seq, seq + n), pa.int64()), FILE_ID: [file_id] * n,
    })


def _buffered_size(batch: pa.RecordBatch) -> int:
    return pa.Table.from_batches([batch]).nbytes  # what the task adds to a group's buffer


def _blocks_by_group(root: Path, stats_batches: list[pa.RecordBatch]) -> dict[str, list[list[int]]]:
    out = {}
    for r in pa.Table.from_batches(stats_batches).to_pylist():
        log = root / r["path"]
        assert log.name == f".{r['file_id']}_20240101000000000.log.1_0-20240101000000001-0" and r["total_log_blocks"] == len(blocks(log))
        out[r["file_id"]] = [[rec["id"] for rec in avro_records(b)] for b in blocks(log)]
    return out


def test_task_max_size_flushes_the_largest_buffer_first(tmp_path):
    a2, b1, b2 = _batch("aaaa-0", [1, 2], 0), _batch("bbbb-0", [10], 2), _batch("bbbb-0", [11], 3)
    a1 = _batch("aaaa-0", [3], 4, name="n" * 20)
    sa2, sb1, sa1 = _buffered_size(a2), _buffered_size(b1), _buffered_size(a1)
    limit = sa2 + sb1
    # b1 reaches the limit with A the largest buffer; b2 stays under it once A is flushed; a1 reaches it again,
    # now with B (two rows) the largest
    assert sb1 < sa2 and sb1 + sa1 > sa2 and 2 * sb1 > sa1
    task = _append_task(tmp_path, batch_size=1 << 30, task_max_size=limit)
    # flushing the group just written to, the smallest, or all groups would split B into [[10], [11]]
    assert _blocks_by_group(tmp_path / "u", list(task.run(iter([a2, b1, b2, a1])))) == {
        "aaaa-0": [[1, 2], [3]], "bbbb-0": [[10, 11]]}

    # write.batch.size alone: a group flushes when its own buffer is full, whatever the others hold
    task = _append_task(tmp_path / "bs", batch_size=sa2, task_max_size=1 << 30)
    assert _blocks_by_group(tmp_path / "bs" / "u", list(task.run(iter([a2, b1, b2, a1])))) == {
        "aaaa-0": [[1, 2], [3]], "bbbb-0": [[10, 11]]}


def test_task_max_size_zero_does_not_hang(tmp_path):
    def timeout(*_):
        raise TimeoutError("AppendTask.run did not finish in 3 s")

    previous = signal.signal(signal.SIGALRM, timeout)
    signal.alarm(3)
    try:
        task = _append_task(tmp_path, batch_size=1 << 30, task_max_size=0)
        out = list(task.run(iter([_batch("aaaa-0", [1, 2], 0)])))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert sum(b.num_rows for b in out) == 1


# ---- 6. Compaction ------------------------------------------------------------------------------------

def test_inline_compaction_after_max_delta_commits(session, warehouse):
    path = warehouse / "ic"
    session.sql(mor_ddl("ic", "'hoodie.compact.inline.max.delta.commits'='2'"))
    session.sql("INSERT INTO ic VALUES (1,'a',1,'d1'), (2,'b',1,'d1'), (3,'c',1,'d2')")
    [t1] = instants(path, "deltacommit")
    session.sql("INSERT INTO ic VALUES (1,'a2',2,'d1'), (3,'c2',2,'d2')")
    t2 = instants(path, "deltacommit")[-1]
    [c1] = instants(path, "compaction.requested")
    assert c1 > t2 and instants(path, "commit") == [c1] and instants(path, "compaction.inflight") == [c1]
    doc = commit_doc(path, f"{c1}.commit")
    assert doc["compacted"] is True and doc["operationType"] == "COMPACT"
    compacted_logs = {p.name for p in logs(path)}
    assert len(compacted_logs) == 2
    new = {p.parent.name: parse_base(p) for p in bases(path) if parse_base(p)["instant"] == c1}
    old = {p.parent.name: parse_base(p) for p in bases(path) if parse_base(p)["instant"] == t1}
    assert sorted(new) == ["dt=d1", "dt=d2"] and all(new[p]["fid"] == old[p]["fid"] for p in new)
    assert sorted(s["path"] for s in stats(doc)) == sorted(f"{p}/{b['fid']}_{b['token']}_{c1}.parquet" for p, b in new.items())
    assert {n for s in stats(doc) for n in s["logFiles"]} == compacted_logs
    assert {s["prevCommit"] for s in stats(doc)} == {t1}
    # the new base file holds the merged rows; a row keeps the commit time of the write that wrote it
    d1 = pq.read_table(path / "dt=d1" / f"{new['dt=d1']['fid']}_{new['dt=d1']['token']}_{c1}.parquet").to_pylist()
    assert sorted((r["id"], r["name"], r["_hoodie_commit_time"]) for r in d1) == [(1, "a2", t2), (2, "b", t1)]
    expected = [(1, "a2", 2, "d1"), (2, "b", 1, "d1"), (3, "c2", 2, "d2")]
    assert snapshot_and_ro(session, "ic") == (expected, expected)
    assert_official(path, expected, expected)

    # one delta commit after the compaction: not due; the log belongs to the compacted slice
    session.sql("INSERT INTO ic VALUES (2,'b3',3,'d1')")
    assert instants(path, "compaction.requested") == [c1]
    [log] = [p for p in logs(path) if p.name not in compacted_logs]
    assert parse_log(log)["base"] == c1 and parse_log(log)["version"] == 1 and parse_log(log)["fid"] == new["dt=d1"]["fid"]
    snapshot = [(1, "a2", 2, "d1"), (2, "b3", 3, "d1"), (3, "c2", 2, "d2")]
    assert snapshot_and_ro(session, "ic") == (snapshot, expected)
    assert_official(path, snapshot, expected)


def test_compacted_rows_name_their_new_base_file(session, warehouse):
    path = warehouse / "fn"
    session.sql(mor_ddl("fn", "'hoodie.compact.inline.max.delta.commits'='2'", partitioned=False))
    session.sql("INSERT INTO fn VALUES (1,'a',1,'x'), (2,'b',1,'x')")
    session.sql("INSERT INTO fn VALUES (1,'a2',2,'x')")
    [c1] = instants(path, "commit")
    [new] = [p for p in bases(path) if parse_base(p)["instant"] == c1]
    assert {r["_hoodie_file_name"] for r in pq.read_table(new).to_pylist()} == {new.name}


def test_scheduled_compaction_pending_write_failure_rerun_and_cli(session, warehouse):
    path = warehouse / "sc"
    session.sql(mor_ddl("sc", "'hoodie.compact.inline'='false'"))
    session.sql("INSERT INTO sc VALUES (1,'a',1,'d1'), (2,'b',1,'d1'), (3,'c',1,'d2')")
    session.sql("INSERT INTO sc VALUES (1,'a2',2,'d1'), (3,'c2',2,'d2')")
    planned_logs = logs(path)
    assert instants(path, "compaction.requested") == []

    [row] = session.sql("CALL run_compaction(op => 'schedule', table => 'sc')").collect()
    c1 = row.timestamp
    assert (row.operation_size, row.state) == (2, "REQUESTED")
    assert instants(path, "compaction.requested") == [c1] and instants(path, "compaction.inflight") == []
    assert instants(path, "commit") == [] and [b for b in bases(path) if parse_base(b)["instant"] == c1] == []

    # a write while the compaction is pending: a new log file of the new slice (base instant = c1)
    session.sql("INSERT INTO sc VALUES (2,'b3',3,'d1'), (4,'d',1,'d2')")
    [pending_log] = [p for p in logs(path) if p not in planned_logs]
    assert parse_log(pending_log)["base"] == c1 and parse_log(pending_log)["version"] == 1
    assert pending_log.parent.name == "dt=d1"
    snapshot = [(1, "a2", 2, "d1"), (2, "b3", 3, "d1"), (3, "c2", 2, "d2"), (4, "d", 1, "d2")]
    ro = [(1, "a", 1, "d1"), (2, "b", 1, "d1"), (3, "c", 1, "d2"), (4, "d", 1, "d2")]
    assert snapshot_and_ro(session, "sc") == (snapshot, ro)
    # hudi-rs 0.5 does not attach a log of a pending compaction's slice (no base file yet) to the slice
    # before it, as Hudi's Java readers do; only its read-optimized view is comparable here
    assert official_rows(path, COLS, read_optimized=True) == ro

    # a compaction that fails (a log file of its plan is truncated) is rolled back to requested
    victim = next(p for p in planned_logs if p.parent.name == "dt=d1")
    good = victim.read_bytes()
    victim.write_bytes(good[: len(good) // 2])
    with pytest.raises(Exception, match=re.escape(victim.name)):
        session.sql("CALL run_compaction(op => 'run', table => 'sc')").collect()
    assert instants(path, "compaction.requested") == [c1]
    assert instants(path, "compaction.inflight") == [] and instants(path, "commit") == []
    assert [b for b in bases(path) if parse_base(b)["instant"] == c1] == []
    assert not (path / ".hoodie" / ".temp" / c1).exists()
    assert [tuple(r) for r in session.sql("CALL show_compaction(table => 'sc')").collect()] == [(c1, 2, "REQUESTED")]
    # a snapshot query over the damaged file fails naming it
    with pytest.raises(Exception, match=re.escape(victim.name)) as failure:
        hudiql_rows(session, SELECT + "sc WHERE dt = 'd1'")
    assert "truncated" in str(failure.value)

    victim.write_bytes(good)
    rows = [tuple(r) for r in session.sql("CALL run_compaction(op => 'run', table => 'sc')").collect()]
    assert rows == [(c1, 2, "COMPLETED")]
    assert instants(path, "commit") == [c1] and commit_doc(path, f"{c1}.commit")["compacted"] is True
    assert sorted(parse_base(b)["partition"] for b in bases(path) if parse_base(b)["instant"] == c1) == ["dt=d1", "dt=d2"]
    compacted = [(1, "a2", 2, "d1"), (2, "b", 1, "d1"), (3, "c2", 2, "d2"), (4, "d", 1, "d2")]
    assert snapshot_and_ro(session, "sc") == (snapshot, compacted)
    assert_official(path, snapshot, compacted)

    # the command line: schedules and runs a compaction of the remaining log
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    cli = Path(sys.executable).parent / "hudiql"
    done = subprocess.run([str(cli), "compact", "--warehouse", str(warehouse), "sc"],
                          check=False, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    [line] = done.stdout.splitlines()
    c2, operations, state = line.split("\t")
    assert c2 > c1 and (operations, state) == ("1", "COMPLETED")
    assert "compacted 1 instant(s)" in done.stderr
    assert [tuple(r) for r in session.sql("CALL show_compaction(table => 'sc')").collect()] == [
        (c2, 1, "COMPLETED"), (c1, 2, "COMPLETED")]  # newest first, as Hudi lists them
    assert [parse_base(b)["partition"] for b in bases(path) if parse_base(b)["instant"] == c2] == ["dt=d1"]
    assert snapshot_and_ro(session, "sc") == (snapshot, snapshot)
    assert_official(path, snapshot, snapshot)
    # nothing left to compact: no new instant
    assert session.sql("CALL run_compaction(op => 'scheduleandexecute', table => 'sc')").collect() == []
    assert instants(path, "compaction.requested") == [c1, c2]


def test_inline_trigger_strategies(session, warehouse):
    path = warehouse / "tr"
    # table options set the strategy; session settings (SET) override them
    session.sql(mor_ddl("tr", "'hoodie.compact.inline.trigger.strategy'='TIME_ELAPSED'",
                        "'hoodie.compact.inline.max.delta.seconds'='100000'", partitioned=False))
    session.sql("INSERT INTO tr VALUES (1,'v0',0,'x'), (2,'b',0,'x')")
    steps = [  # (strategy, max delta commits, max delta seconds, compactions expected afterwards)
        (None, None, None, 0),  # the table's TIME_ELAPSED: not enough time
        ("TIME_ELAPSED", None, "0", 1),
        ("NUM_AND_TIME", "1", "100000", 1),  # enough commits, not enough time
        ("NUM_AND_TIME", "1", "0", 2),
        ("NUM_OR_TIME", "100", "100000", 2),  # neither
        ("NUM_OR_TIME", "100", "0", 3),  # time
        ("NUM_OR_TIME", "1", "100000", 4),  # commits
        ("NUM_COMMITS", "2", "0", 4),  # time does not count: one delta commit since the last compaction
        ("NUM_COMMITS", "2", "0", 5),  # two
    ]
    for n, (strategy, commits, seconds, expected) in enumerate(steps, start=1):
        for key, value in (("trigger.strategy", strategy), ("max.delta.commits", commits), ("max.delta.seconds", seconds)):
            if value is not None:
                session.sql(f"SET hoodie.compact.inline.{key}={value}")
        session.sql(f"INSERT INTO tr VALUES (1,'v{n}',{n},'x')")
        assert len(instants(path, "commit")) == expected, (n, strategy, commits, seconds)
        assert len(instants(path, "deltacommit")) == n + 1
    for c in instants(path, "commit"):
        assert commit_doc(path, f"{c}.commit")["compacted"] is True
    # the last write was compacted: base files alone hold the latest rows
    expected_rows = [(1, "v9", 9, "x"), (2, "b", 0, "x")]
    assert snapshot_and_ro(session, "tr") == (expected_rows, expected_rows)
    assert_official(path, expected_rows, expected_rows)


def test_second_schedule_while_a_compaction_is_pending_keeps_every_row(session, warehouse):
    path = warehouse / "st"
    session.sql(mor_ddl("st", "'hoodie.compact.inline'='false'", partitioned=False))
    session.sql("INSERT INTO st VALUES (1,'a',1,'x'), (2,'b',1,'x'), (3,'c',1,'x')")
    session.sql("INSERT INTO st VALUES (1,'a2',2,'x')")
    session.sql("CALL run_compaction(op => 'schedule', table => 'st')")
    session.sql("INSERT INTO st VALUES (2,'b2',2,'x')")
    session.sql("CALL run_compaction(op => 'schedule', table => 'st')")
    expected = [(1, "a2", 2, "x"), (2, "b2", 2, "x"), (3, "c", 1, "x")]
    assert hudiql_rows(session, SELECT + "st") == expected
    session.sql("INSERT INTO st VALUES (3,'c2',2,'x')")
    session.sql("CALL run_compaction(op => 'run', table => 'st')")
    expected = [(1, "a2", 2, "x"), (2, "b2", 2, "x"), (3, "c2", 2, "x")]
    assert hudiql_rows(session, SELECT + "st") == expected
    assert official_rows(path, COLS) == expected


# ---- column types in log blocks ---------------------------------------------------------------------------

TYPED_COLUMNS = ("id INT, d DECIMAL(10,2), dd DATE, t TIMESTAMP, arr ARRAY<INT>, st STRUCT<a: INT, b: STRING>, "
                 "bin BINARY, f FLOAT, sm SMALLINT, ts BIGINT")
TYPED_NAMES = ["id", "d", "dd", "t", "arr", "st", "bin", "f", "sm", "ts"]


def _plain(value):
    """Rows of hudiql (Spark Rows, naive UTC timestamps) and hudi-rs (dicts, aware timestamps) alike."""
    import datetime

    if isinstance(value, datetime.datetime) and value.tzinfo is not None:
        return value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    if hasattr(value, "asDict"):
        return tuple(sorted(value.asDict().items()))
    if isinstance(value, dict):
        return tuple(sorted(value.items()))
    if isinstance(value, list):
        return tuple(_plain(v) for v in value)
    return value


def test_avro_log_blocks_carry_every_column_type(session, warehouse):
    import datetime
    from decimal import Decimal

    path = warehouse / "ty"
    session.sql(f"CREATE TABLE ty ({TYPED_COLUMNS}) USING hudi TBLPROPERTIES (primaryKey='id', preCombineField='ts', "
                "type='mor', 'hoodie.compact.inline.max.delta.commits'='3')")
    session.sql("INSERT INTO ty SELECT * FROM VALUES (1, 1.25, DATE'2024-01-02', TIMESTAMP'2024-01-02 03:04:05', "
                "array(1, 2), named_struct('a', 1, 'b', 'x'), X'0102', 1.5, 7, 1), (2, 3.00, DATE'2024-01-01', "
                "TIMESTAMP'2024-01-01 00:00:00', array(), named_struct('a', 3, 'b', 'z'), X'', 0.0, 0, 1) AS v")
    session.sql("INSERT INTO ty SELECT * FROM VALUES (1, 2.50, DATE'2024-02-03', TIMESTAMP'2024-02-03 04:05:06', "
                "array(3), named_struct('a', 2, 'b', 'y'), X'03', 2.5, 8, 2) AS v")
    [log] = logs(path)
    [record] = avro_records(blocks(log)[0])
    assert (record["d"], record["dd"], record["arr"], record["st"], record["bin"]) == (
        Decimal("2.50"), datetime.date(2024, 2, 3), [3], {"a": 2, "b": "y"}, b"\x03")
    expected = [
        (1, Decimal("2.50"), datetime.date(2024, 2, 3), datetime.datetime(2024, 2, 3, 4, 5, 6), (3,), (("a", 2), ("b", "y")),
         b"\x03", 2.5, 8, 2),
        (2, Decimal("3.00"), datetime.date(2024, 1, 1), datetime.datetime(2024, 1, 1), (), (("a", 3), ("b", "z")),
         b"", 0.0, 0, 1),
    ]
    columns = ", ".join(TYPED_NAMES)

    def rows_now():
        mine = sorted(tuple(_plain(v) for v in r) for r in session.sql(f"SELECT {columns} FROM ty").collect())
        theirs = sorted(tuple(_plain(v) for v in r) for r in official_rows(path, TYPED_NAMES))
        return mine, theirs

    assert rows_now() == (expected, expected)
    session.sql("DELETE FROM ty WHERE id = 2")  # third delta commit: compacted inline
    assert len(instants(path, "commit")) == 1
    assert rows_now() == (expected[:1], expected[:1])


def test_avro_log_blocks_carry_map_columns(session, warehouse):
    session.sql("CREATE TABLE mp (id INT, m MAP<STRING, INT>, ts BIGINT) USING hudi TBLPROPERTIES "
                "(primaryKey='id', preCombineField='ts', type='mor', 'hoodie.compact.inline'='false')")
    session.sql("INSERT INTO mp SELECT * FROM VALUES (1, map('k', 1), 1) AS v(id, m, ts)")
    session.sql("INSERT INTO mp SELECT * FROM VALUES (1, map('k2', 2, 'k3', 3), 2) AS v(id, m, ts)")
    assert [(r.id, r.m) for r in session.sql("SELECT id, m FROM mp").collect()] == [(1, {"k2": 2, "k3": 3})]
    assert official_rows(warehouse / "mp", ["id", "m"]) == [(1, [("k2", 2), ("k3", 3)])]


# ---- 7. DML on MOR and COW -----------------------------------------------------------------------------

def test_merge_update_delete_same_table_on_mor_and_cow(session, warehouse):
    results = {}
    for kind in ("cow", "mor"):
        t = f"dml_{kind}"
        session.sql(f"CREATE TABLE {t} (id INT, name STRING, ts BIGINT, dt STRING) USING hudi PARTITIONED BY (dt) "
                    f"TBLPROPERTIES (primaryKey='id', preCombineField='ts', type='{kind}', 'hoodie.compact.inline'='false', "
                    "'hoodie.parquet.small.file.limit'='0')")  # every change of an existing group goes to a log
        session.sql(f"INSERT INTO {t} VALUES (1,'a',5,'d1'), (2,'b',5,'d1'), (3,'c',5,'d2'), (4,'d',5,'d2'), (5,'e',5,'d1')")
        session.sql(
            f"MERGE INTO {t} t USING (SELECT * FROM VALUES (1,'a-m',6,'d1','u'), (2,'b-moved',6,'d3','u'), (3,'x',1,'d2','d'), "
            "(4,'d-old',4,'d2','u'), (6,'f',1,'d2','u') AS v(id, name, ts, dt, op)) s ON t.id = s.id "
            "WHEN MATCHED AND s.op = 'd' THEN DELETE WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
        )
        session.sql(f"UPDATE {t} SET dt = 'd2', name = 'e-moved', ts = 7 WHERE id = 5")
        session.sql(f"UPDATE {t} SET name = concat(name, '!') WHERE dt = 'd1'")
        session.sql(f"DELETE FROM {t} WHERE id = 6")
        results[kind] = hudiql_rows(session, f"SELECT _hoodie_record_key, _hoodie_partition_path, id, name, ts, dt FROM {t}")
    expected = [("1", "dt=d1", 1, "a-m!", 6, "d1"), ("2", "dt=d3", 2, "b-moved", 6, "d3"),
                ("4", "dt=d2", 4, "d", 5, "d2"), ("5", "dt=d2", 5, "e-moved", 7, "d2")]
    assert results["cow"] == expected
    assert results["mor"] == expected
    path = warehouse / "dml_mor"
    assert official_rows(path, COLS) == official_rows(warehouse / "dml_cow", COLS) == [r[2:] for r in expected]
    ro = [(1, "a", 5, "d1"), (2, "b", 5, "d1"), (3, "c", 5, "d2"), (4, "d", 5, "d2"), (5, "e", 5, "d1"),
          (6, "f", 1, "d2"), (2, "b-moved", 6, "d3"), (5, "e-moved", 7, "d2")]
    assert hudiql_rows(session, SELECT + "dml_mor_ro") == sorted(ro)
    assert official_rows(path, COLS, read_optimized=True) == sorted(ro)
    # the moves deleted keys 2 and 5 at dt=d1 with delete blocks; keys 3 and 6 were deleted at dt=d2
    deleted = sorted((d.partition_path, d.record_key) for p in logs(path) for b in blocks(p) if b.block_type == L.DELETE
                     for d in L.read_deletes(b, str(p)))
    assert deleted == [("dt=d1", "2"), ("dt=d1", "5"), ("dt=d2", "3"), ("dt=d2", "6")]
    assert len(instants(path, "deltacommit")) == 5 and instants(path, "commit") == []


def test_unenforced_lower_ordering_update_applies_on_cow_and_is_refused_on_mor(session, warehouse):
    """Readers merge MOR log records by the ordering field, so enforce=false cannot hold there."""
    session.sql("SET hoodie.merge.ordering.enforce=false")
    for kind in ("cow", "mor"):
        session.sql(f"CREATE TABLE e_{kind} (id INT, name STRING, ts BIGINT, dt STRING) USING hudi "
                    f"TBLPROPERTIES (primaryKey='id', preCombineField='ts', type='{kind}', 'hoodie.compact.inline'='false')")
        session.sql(f"INSERT INTO e_{kind} VALUES (1,'a',5,'x'), (2,'b',5,'x')")
    assert session.sql("UPDATE e_cow SET name = 'low', ts = 1 WHERE id = 1").first()[0] == 1
    assert hudiql_rows(session, SELECT + "e_cow") == [(1, "low", 1, "x"), (2, "b", 5, "x")]
    deltas = instants(warehouse / "e_mor", "deltacommit")
    with pytest.raises(HudiqlError, match="merge-on-read"):
        session.sql("UPDATE e_mor SET name = 'low', ts = 1 WHERE id = 1")
    assert instants(warehouse / "e_mor", "deltacommit") == deltas
    assert hudiql_rows(session, SELECT + "e_mor") == [(1, "a", 5, "x"), (2, "b", 5, "x")]


def test_loading_a_table_reads_only_the_delta_commits_of_live_slices(session, warehouse, monkeypatch):
    """The history before a compaction adds nothing to the cost of loading the table."""
    from hudiql.table.table import HudiTable
    from hudiql.timeline.active import Timeline

    path = warehouse / "h"
    session.sql(mor_ddl("h", "'hoodie.compact.inline'='false'", "'hoodie.parquet.small.file.limit'='0'",
                        partitioned=False))
    session.sql("INSERT INTO h VALUES (1,'a',1,'x'), (2,'b',1,'x')")
    for ts in range(2, 5):
        session.sql(f"INSERT INTO h VALUES (1,'a{ts}',{ts},'x')")
    session.sql("CALL run_compaction(op => 'scheduleandexecute', table => 'h')")
    session.sql("INSERT INTO h VALUES (2,'b5',5,'x')")
    read = []
    real_read = Timeline.read
    monkeypatch.setattr(Timeline, "read", lambda self, instant: read.append(instant.action) or real_read(self, instant))
    [latest] = HudiTable.load(str(path)).file_system_view().read_slices()
    assert read == ["deltacommit"] and len(latest.log_files) == 1
    assert len(instants(path, "deltacommit")) == 5
    assert hudiql_rows(session, SELECT + "h") == [(1, "a4", 4, "x"), (2, "b5", 5, "x")]


# ---- 8. Bad input ---------------------------------------------------------------------------------------

def test_crashed_write_partial_log_is_invisible_and_rolled_back(session, warehouse):
    from datetime import timedelta

    from hudiql.timeline.active import format_instant_time, parse_instant_time

    path = warehouse / "cr"
    session.sql(mor_ddl("cr", "'hoodie.compact.inline'='false'", partitioned=False))
    session.sql("INSERT INTO cr VALUES (1,'a',1,'x'), (2,'b',1,'x')")
    session.sql("INSERT INTO cr VALUES (1,'a2',2,'x')")
    [committed] = logs(path)
    good = committed.read_bytes()
    [block] = blocks(committed)
    log = parse_log(committed)

    # a write that crashed: requested + inflight instant, its marker, a log file with one whole block
    # and one cut short
    crashed = format_instant_time(parse_instant_time(instants(path, "deltacommit")[-1]) + timedelta(seconds=1))
    hoodie = path / ".hoodie"
    (hoodie / f"{crashed}.deltacommit.requested").write_bytes(b"")
    (hoodie / f"{crashed}.deltacommit.inflight").write_bytes(b"")
    partial = path / f".{log['fid']}_{log['base']}.log.2_1-99-0"
    (hoodie / ".temp" / crashed).mkdir(parents=True)
    (hoodie / ".temp" / crashed / f"{partial.name}.marker.APPEND").write_bytes(b"")
    schema = json.loads(block.header[L.SCHEMA])
    record = {**avro_records(block)[0], "_hoodie_commit_time": crashed, "name": "crashed", "ts": 9}
    data = L.encode_block(L.LogBlock(L.AVRO_DATA, {L.INSTANT_TIME: crashed, L.SCHEMA: block.header[L.SCHEMA]},
                                     L.avro_records_content([record], schema)))
    partial.write_bytes(data + data[: len(data) // 2])
    assert hudiql_rows(session, "SELECT id, name, ts FROM cr") == [(1, "a2", 2), (2, "b", 1)]
    assert official_rows(path, ["id", "name", "ts"]) == [(1, "a2", 2), (2, "b", 1)]

    # the next write rolls the crashed one back first: its files and instant are gone
    session.sql("INSERT INTO cr VALUES (2,'b3',3,'x')")
    assert not partial.exists() and not (hoodie / ".temp" / crashed).exists()
    assert not any(n.startswith(crashed) for n in timeline(path))
    [new] = [p for p in logs(path) if p != committed]
    assert parse_log(new)["version"] == 2 and blocks(new)[0].instant_time == instants(path, "deltacommit")[-1]
    assert committed.read_bytes() == good
    expected = [(1, "a2", 2, "x"), (2, "b3", 3, "x")]
    assert hudiql_rows(session, SELECT + "cr") == expected
    assert_official(path, expected, [(1, "a", 1, "x"), (2, "b", 1, "x")])

    # a committed log file with a damaged block: the query fails naming the file
    committed.write_bytes(b"#HUDX#" + good[6:])
    with pytest.raises(Exception, match=re.escape(committed.name)) as failure:
        hudiql_rows(session, SELECT + "cr")
    assert "corrupt" in str(failure.value)
    committed.write_bytes(good)
    assert hudiql_rows(session, SELECT + "cr") == expected



def test_compaction_of_a_corrupt_log_is_a_hudiql_error_naming_the_file(session, warehouse):
    path = warehouse / "cc"
    session.sql(mor_ddl("cc", "'hoodie.compact.inline'='false'", partitioned=False))
    session.sql("INSERT INTO cc VALUES (1,'a',1,'x')")
    session.sql("INSERT INTO cc VALUES (1,'a2',2,'x')")
    [log] = logs(path)
    log.write_bytes(log.read_bytes()[:-10])
    with pytest.raises(HudiqlError) as failure:
        session.sql("CALL run_compaction(op => 'scheduleandexecute', table => 'cc')")
    first_line = str(failure.value).strip().splitlines()[0]
    assert log.name in first_line and "truncated" in first_line


def test_read_blocks_errors_name_the_file(tmp_path):
    block = L.encode_block(L.LogBlock(L.DELETE, {L.INSTANT_TIME: "20240101000000000"},
                                      L.delete_content([L.DeleteRecord("k", "p", 3)], "LongWrapper")))
    assert [L.read_deletes(b, "f") for b in L.read_blocks(block * 2, "f")] == [[L.DeleteRecord("k", "p", 3)]] * 2
    cases = {
        "truncated": block + block[:-3],
        "corrupt": block + b"garbage!" + block,
        "HFILE_DATA": L.encode_block(L.LogBlock(L.HFILE_DATA, {}, b"x")),
        "length pointer": block[:-8] + (len(block) + 1).to_bytes(8, "big"),
    }
    for expected, data in cases.items():
        with pytest.raises(HudiqlError, match=re.escape("/t/.f_1.log.1_0-0-0")) as failure:
            L.read_blocks(data, "/t/.f_1.log.1_0-0-0")
        assert expected in str(failure.value)


def test_a_block_cut_by_the_end_of_the_file_keeps_the_blocks_before_it():
    """What a reader needs to tell a failed write's partial append from damage."""
    block = L.encode_block(L.LogBlock(L.DELETE, {L.INSTANT_TIME: "20240101000000000"},
                                      L.delete_content([L.DeleteRecord("k", "p", 3)], "LongWrapper")))
    for cut, instant in [(len(block) - 5, "20240101000000000"), (30, None), (10, None)]:
        with pytest.raises(TruncatedLogError, match="truncated") as failure:
            L.read_blocks(block + block[:cut], "f")
        assert len(failure.value.blocks) == 1 and failure.value.instant_time == instant


def test_bad_write_batch_size_is_a_clear_error(session, warehouse):
    session.sql(mor_ddl("bs", "'hoodie.compact.inline'='false'", partitioned=False))
    session.sql("INSERT INTO bs VALUES (1,'a',1,'x')")
    with pytest.raises(HudiqlError, match="write.batch.size"):
        session.sql("SET write.batch.size=lots")
    session.sql("INSERT INTO bs VALUES (1,'b',2,'x')")
    assert hudiql_rows(session, "SELECT name FROM bs") == [("b",)]


def test_invalid_trigger_strategy_fails_before_anything_is_committed(session, warehouse):
    path = warehouse / "bad"
    session.sql(mor_ddl("bad", partitioned=False))
    session.sql("INSERT INTO bad VALUES (1,'a',1,'x')")
    with pytest.raises(HudiqlError, match="BOGUS"):
        session.sql("SET hoodie.compact.inline.trigger.strategy=BOGUS")
    with pytest.raises(HudiqlError, match="BOGUS"):
        session.sql(mor_ddl("bad2", "'hoodie.compact.inline.trigger.strategy'='BOGUS'", partitioned=False))
    assert len(instants(path, "deltacommit")) == 1
    assert hudiql_rows(session, "SELECT name FROM bad") == [("a",)]


def test_a_compaction_another_writer_ran_meanwhile_is_not_run_again(session, warehouse):
    """A writer that listed the timeline while a compaction was pending, and reaches it after
    another writer ran it (whose heartbeat ended with its commit), finds it done: no second base
    file of that instant in any file group (which Hudi's readers refuse), nothing rolled back."""
    from hudiql.services import compaction
    from hudiql.table.table import HudiTable

    path = warehouse / "twice"
    session.sql(mor_ddl("twice", "'hoodie.compact.inline'='false'"))
    session.sql("INSERT INTO twice VALUES (1,'a',1,'d1'), (2,'b',1,'d1'), (3,'c',1,'d2')")
    session.sql("INSERT INTO twice VALUES (1,'a2',2,'d1'), (3,'c2',2,'d2')")
    [row] = session.sql("CALL run_compaction(op => 'schedule', table => 'twice')").collect()
    stale = HudiTable.load(str(path))  # this writer's listing: the compaction is pending
    [pending] = compaction.pending_compactions(stale)
    assert session.sql("CALL run_compaction(op => 'run', table => 'twice')").collect()[0].state == "COMPLETED"
    compacted = sorted(p.name for p in bases(path) if parse_base(p)["instant"] == row.timestamp)

    assert compaction.execute(session.spark, stale, pending) is None
    assert compaction.run(session.spark, stale) == []
    assert sorted(p.name for p in bases(path) if parse_base(p)["instant"] == row.timestamp) == compacted
    rows = [(1, "a2", 2, "d1"), (2, "b", 1, "d1"), (3, "c2", 2, "d2")]
    assert hudiql_rows(session, SELECT + "twice") == rows == official_rows(path, COLS)
    assert not (path / ".hoodie" / ".heartbeat" / row.timestamp).exists()
