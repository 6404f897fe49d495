"""Bulk inserts (``write.bulk_insert``): the rows of a CTAS, a bulk insert, an insert or upsert into a
table no write completed on, and an overwrite, written into new base files by the Spark tasks that
hold them. The files must be Hudi's all the same: names, meta columns, footers, commit metadata and
write stats, read by the official reader as hudiql reads them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from conftest import hudiql_rows, official_rows

from hudiql.layout import parse_data_file_name
from hudiql.table.fsview import read_commit_metadata
from hudiql.table.table import HudiTable
from hudiql.record.schema import META_COLUMNS

ROWS = 3000
#: id, k2, v, ts, dt (a string), day (a date)
SOURCE = ("SELECT id, CAST(id % 7 AS STRING) AS k2, concat('v', CAST(id AS STRING)) AS v, id * 10 AS ts, "
          "concat('2024-01-0', CAST(id % 3 + 1 AS STRING)) AS dt, date_add(DATE'2024-01-01', CAST(id % 2 AS INT)) AS day "
          f"FROM range({ROWS})")
COLUMNS = ["id", "k2", "v", "ts", "dt", "day"]

#: (name, table properties, PARTITIONED BY, the record key of a row of id i and k2 k)
KEY_GENERATORS = {
    "simple": ("primaryKey='id'", "dt", lambda i, k: str(i)),
    "complex": ("primaryKey='id,k2'", "dt, k2", lambda i, k: f"id:{i},k2:{k}"),
    "non_partitioned": ("primaryKey='id'", None, lambda i, k: str(i)),
    "timestamp": ("primaryKey='id'", "day", lambda i, k: str(i)),  # a DATE partition: TimestampBasedKeyGenerator
    "no_record_key": ("", "dt", None),
}


def ctas(session, name: str, keygen: str, extra: str = "") -> None:
    props, partitioned, _ = KEY_GENERATORS[keygen]
    props = ", ".join(p for p in (props, "preCombineField='ts'" if props else "", extra) if p)
    session.sql(f"CREATE TABLE {name} USING hudi {f'PARTITIONED BY ({partitioned})' if partitioned else ''} "
                f"TBLPROPERTIES ({props}) AS {SOURCE}")


def base_files(table: Path) -> list[Path]:
    return sorted(p for p in table.rglob("*.parquet") if ".hoodie" not in p.relative_to(table).parts)


def completed_commits(table: Path) -> list[tuple[str, dict]]:
    """(instant, metadata as Hudi's JSON) of each completed write, in order (any timeline layout)."""
    loaded = HudiTable.load(str(table))
    return [(i.timestamp, json.loads(read_commit_metadata(loaded.timeline, i).to_json()))
            for i in loaded.timeline.completed()]


def check_base_files(table: Path, instant: str, record_key=None) -> dict[str, dict]:
    """Every base file of ``instant``: its name, meta columns and footer as Hudi writes them; returns
    what each file holds, by path relative to the table (rows, keys' range)."""
    out = {}
    for path in base_files(table):
        relative = str(path.relative_to(table))
        name = parse_data_file_name(path.name)
        assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-0", name.file_id), path.name
        assert re.fullmatch(r"\d+-\d+-\d+", name.token) and name.instant_time == instant, path.name
        rows = pq.read_table(path)
        assert rows.column_names[:5] == META_COLUMNS
        data = rows.to_pylist()
        partition = str(Path(relative).parent) if Path(relative).parent != Path(".") else ""
        assert {r["_hoodie_commit_time"] for r in data} == {instant}
        assert {r["_hoodie_file_name"] for r in data} == {path.name}
        assert {r["_hoodie_partition_path"] for r in data} == {partition}
        seqnos = [r["_hoodie_commit_seqno"] for r in data]
        assert len(set(seqnos)) == len(seqnos) and all(s.startswith(f"{instant}_") for s in seqnos)
        keys = [r["_hoodie_record_key"] for r in data]
        if record_key is not None:
            assert keys == [record_key(r["id"], r.get("k2")) for r in data]
        footer = pq.read_metadata(path).metadata
        assert footer[b"hoodie_min_record_key"].decode() == min(keys)
        assert footer[b"hoodie_max_record_key"].decode() == max(keys)
        out[relative] = {"rows": len(data), "size": path.stat().st_size, "partition": partition,
                         "row_groups": pq.ParquetFile(path).num_row_groups}
    return out


@pytest.mark.parametrize(("kind", "keygen", "version"), [
    ("cow", "simple", 6), ("mor", "complex", 6), ("cow", "non_partitioned", 8), ("mor", "timestamp", 8),
    ("cow", "no_record_key", 6),
])
def test_a_ctas_writes_hudi_base_files_the_official_reader_reads(session, warehouse, kind, keygen, version):
    ctas(session, "t", keygen, f"type='{kind}', 'hoodie.write.table.version'='{version}'")
    table = warehouse / "t"
    [(instant, metadata)] = completed_commits(table)
    assert metadata["operationType"] == "BULK_INSERT"
    files = check_base_files(table, instant, KEY_GENERATORS[keygen][2])
    # A small load goes through one task: one file group per partition, of one row group.
    partitions = [f["partition"] for f in files.values()]
    assert len(partitions) == len(set(partitions)) and {f["row_groups"] for f in files.values()} == {1}
    stats = {s["path"]: s for stat in metadata["partitionToWriteStats"].values() for s in stat}
    assert set(stats) == set(files)
    for path, f in files.items():
        s = stats[path]
        assert (s["numWrites"], s["numInserts"], s["numUpdateWrites"]) == (f["rows"], f["rows"], 0)
        assert s["fileSizeInBytes"] == s["totalWriteBytes"] == f["size"] and s["partitionPath"] == f["partition"]
        assert s["prevCommit"] == "null" and s["fileId"] == parse_data_file_name(Path(path).name).file_id
    assert sum(f["rows"] for f in files.values()) == ROWS
    ours = hudiql_rows(session, f"SELECT {', '.join(COLUMNS)} FROM t")
    assert len(ours) == ROWS and ours == official_rows(table, COLUMNS)
    if keygen == "no_record_key":
        keys = [r[0] for r in session.sql("SELECT _hoodie_record_key FROM t").collect()]
        assert len(set(keys)) == ROWS and all(k.startswith(f"{instant}_") for k in keys)


def test_an_upsert_into_an_empty_table_keeps_one_row_per_key_and_leaves_deleted_rows_out(session, warehouse):
    """The rows of a write that only starts file groups are combined first (an upsert's
    precombine); a row flagged ``_hoodie_is_deleted`` is not written."""
    session.sql("CREATE TABLE u (id INT, v STRING, ts INT, _hoodie_is_deleted BOOLEAN, dt STRING) USING hudi "
                "PARTITIONED BY (dt) TBLPROPERTIES (primaryKey='id', preCombineField='ts', type='mor')")
    session.sql("INSERT INTO u VALUES (1, 'old', 1, false, 'a'), (1, 'new', 2, false, 'a'), (2, 'x', 1, false, 'b'), "
                "(3, 'gone', 1, true, 'b')")
    table = warehouse / "u"
    [(instant, metadata)] = completed_commits(table)
    assert metadata["operationType"] == "UPSERT"
    check_base_files(table, instant, lambda i, k: str(i))
    expected = [(1, "new", 2, "a"), (2, "x", 1, "b")]
    assert hudiql_rows(session, "SELECT id, v, ts, dt FROM u") == expected
    assert official_rows(table, ["id", "v", "ts", "dt"]) == expected
    # The next upsert finds the keys: it updates, not duplicates.
    session.sql("INSERT INTO u VALUES (1, 'newer', 3, false, 'a')")
    assert hudiql_rows(session, "SELECT id, v FROM u") == [(1, "newer"), (2, "x")]


def test_rows_combined_by_key_are_written_by_a_task_per_core(session, spark, warehouse):
    """The precombine's shuffle feeds the tasks that write: one task per core, so a partition gets
    at most a file per core, whatever ``spark.sql.shuffle.partitions`` says (the source's size is
    unknown to Spark: no small write's single task)."""
    spark.createDataFrame([(i, f"v{i}", 1, f"d{i % 3}") for i in range(300)] * 2, "id INT, v STRING, ts INT, dt STRING"
                          ).createOrReplaceTempView("many")
    session.sql("CREATE TABLE c (id INT, v STRING, ts INT, dt STRING) USING hudi PARTITIONED BY (dt) "
                "TBLPROPERTIES (primaryKey='id', preCombineField='ts')")
    before = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", "50")
    try:
        session.sql("INSERT INTO c SELECT * FROM many")
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", before)
    table = warehouse / "c"
    [(instant, _)] = completed_commits(table)
    files = check_base_files(table, instant, lambda i, k: str(i))
    per_partition = {}
    for f in files.values():
        per_partition[f["partition"]] = per_partition.get(f["partition"], 0) + 1
    assert len(per_partition) == 3 and max(per_partition.values()) <= spark.sparkContext.defaultParallelism
    assert hudiql_rows(session, "SELECT count(*), count(DISTINCT id) FROM c") == [(300, 300)]


def test_a_bulk_insert_rolls_files_over_at_the_max_file_size(session, warehouse):
    """A bulk insert sizes its files by the bytes written, each task starting another file in a
    partition when one reaches ``hoodie.parquet.max.file.size``; an insert into an empty table
    by the record size estimate, as Hudi's upsert partitioner does."""
    max_size = 60_000
    session.sql(f"CREATE TABLE b (id BIGINT, pad STRING, dt STRING) USING hudi PARTITIONED BY (dt) TBLPROPERTIES "
                f"(primaryKey='id', 'hoodie.parquet.max.file.size'='{max_size}', 'hoodie.spark.sql.insert.into.operation'='bulk_insert')")
    # hex digests hardly compress: about 40 bytes a row on disk
    session.sql("INSERT INTO b SELECT id, sha2(CAST(id AS STRING), 256), concat('d', CAST(id % 2 AS STRING)) FROM range(20000)")
    table = warehouse / "b"
    [(instant, _)] = completed_commits(table)
    files = check_base_files(table, instant, lambda i, k: str(i))
    assert sum(f["rows"] for f in files.values()) == 20000
    by_partition = {}
    for f in files.values():
        by_partition.setdefault(f["partition"], []).append(f["size"])
    for partition, sizes in by_partition.items():
        # (each task's last file in a partition is what is left)
        assert len(sizes) >= 4 and max(sizes) < 1.5 * max_size, (partition, sizes)
        assert sum(size >= 0.5 * max_size for size in sizes) >= len(sizes) - 2, (partition, sizes)
    assert hudiql_rows(session, "SELECT count(*), count(DISTINCT id) FROM b") == [(20000, 20000)]
    assert official_rows(table, ["id"]) == [(i,) for i in range(20000)]


def test_an_overwrite_writes_its_rows_into_new_file_groups(session, warehouse):
    ctas(session, "o", "simple")
    session.sql(f"INSERT OVERWRITE o {SOURCE.replace('range(3000)', 'range(10)')}")
    table = warehouse / "o"
    instant, metadata = completed_commits(table)[-1]
    assert metadata["operationType"].startswith("INSERT_OVERWRITE")
    written = [s for stats in metadata["partitionToWriteStats"].values() for s in stats]
    assert sum(s["numInserts"] for s in written) == 10
    assert {parse_data_file_name(Path(s["path"]).name).instant_time for s in written} == {instant}
    assert hudiql_rows(session, "SELECT id FROM o") == [(i,) for i in range(10)]
    assert official_rows(table, ["id"]) == [(i,) for i in range(10)]


def test_a_task_whose_buffers_fill_writes_the_largest_as_a_row_group(session, warehouse):
    """Past ``write.task.max.size`` buffered in all, a task writes its largest buffer out: files of
    several row groups, every row once, in input order within its file."""
    session.sql("SET write.task.max.size=0.05")  # MB: a few thousand rows
    session.sql("CREATE TABLE r USING hudi PARTITIONED BY (dt) TBLPROPERTIES (primaryKey='id') AS "
                "SELECT id, sha2(CAST(id AS STRING), 256) AS pad, concat('d', CAST(id % 4 AS STRING)) AS dt FROM range(20000)")
    table = warehouse / "r"
    [(instant, _)] = completed_commits(table)
    files = check_base_files(table, instant, lambda i, k: str(i))
    assert min(f["row_groups"] for f in files.values()) > 1
    for path in base_files(table):
        ids = pq.read_table(path, columns=["id"]).column("id").to_pylist()
        assert ids == sorted(ids)  # (range's ids arrive in order in each task)
    assert official_rows(table, ["id"]) == [(i,) for i in range(20000)]
