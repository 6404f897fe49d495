"""``df.write.format("hudi")`` from plain PySpark (``hudiql.datasource.writer``): the tasks stage the
rows, the session that registered the data source writes them as one commit with hudiql's write
path. Each write is read back by hudiql SQL, by ``format("hudi")`` and by the official reader;
bad options fail before anything is written, and a failing write leaves nothing behind."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from hudiql.datasource.options import check_table_options, write_options
from hudiql.errors import OptionError
from hudiql.config.table_config import TableConfig
from hudiql.io.storage import Storage
from hudiql.table.table import HudiTable
from hudiql.transaction.heartbeat import Heartbeat
from pyspark.sql import functions as F

from tests.conftest import official_rows, timeline

NAME = "hoodie.table.name"
KEY = "hoodie.datasource.write.recordkey.field"
PARTITION = "hoodie.datasource.write.partitionpath.field"
ORDERING = "hoodie.datasource.write.precombine.field"
TABLE_TYPE = "hoodie.datasource.write.table.type"
OPERATION = "hoodie.datasource.write.operation"
SCHEMA = "id INT, v STRING, ts INT, day STRING"


def _rows(df, *columns: str) -> list[tuple]:
    return sorted(tuple(r) for r in df.select(*columns).collect())


def _write(spark, rows: list[tuple], path: Path, mode: str = "append", schema: str = SCHEMA, **options: str) -> None:
    spark.createDataFrame(rows, schema).write.format("hudi").options(**options).mode(mode).save(str(path))


def _staged(path: Path) -> list[Path]:
    """Staging folders of df.write, of a table or of a path without one."""
    return [*path.glob(".hoodie/.temp/hudiql-write-*"), *path.glob(".hudiql-staging")]


def test_cow_create_upsert_and_overwrite_keep_the_timeline(spark, session, tmp_path):
    path = tmp_path / "cow"
    create = {NAME: "cow", KEY: "id", PARTITION: "day", ORDERING: "ts"}
    _write(spark, [(1, "a", 1, "d1"), (2, "b", 1, "d1"), (3, "c", 1, "d2")], path, **create)
    config = HudiTable.load(str(path)).config
    assert (config.name, config.record_key_fields, config.partition_fields, config.ordering_field, config.table_type) == (
        "cow", ["id"], ["day"], "ts", "COPY_ON_WRITE")
    assert sorted(p.name for p in path.iterdir()) == [".hoodie", "d1", "d2"]  # Hudi's data source paths; no staging left

    # The table says how to write it: no option needed. The greater ordering value wins, within the
    # rows written (3) and against the stored ones (1 is older: skipped).
    _write(spark, [(1, "old", 0, "d1"), (2, "b2", 5, "d1"), (3, "x", 2, "d2"), (3, "y", 9, "d2"), (4, "d", 1, "d2")], path)
    expected = [(1, "a", 1, "d1"), (2, "b2", 5, "d1"), (3, "y", 9, "d2"), (4, "d", 1, "d2")]
    assert _rows(spark.read.format("hudi").load(str(path)), "id", "v", "ts", "day") == expected
    session.sql(f"CREATE TABLE cow USING hudi LOCATION '{path}'")
    assert _rows(session.sql("SELECT * FROM cow"), "id", "v", "ts", "day") == expected
    assert official_rows(str(path), ["id", "v", "ts", "day"]) == expected
    first, second = [n.split(".")[0] for n in timeline(path) if n.endswith(".commit")]

    # Overwrite: the new rows replace every row in one replacecommit; the history stays readable.
    _write(spark, [(7, "n", 1, "d3")], path, mode="overwrite")
    assert _rows(session.sql("SELECT * FROM cow"), "id", "v", "ts", "day") == [(7, "n", 1, "d3")]
    assert official_rows(str(path), ["id", "v", "ts", "day"]) == [(7, "n", 1, "d3")]
    replaces = [n for n in timeline(path) if n.endswith(".replacecommit")]
    assert len(replaces) == 1 and {f"{first}.commit", f"{second}.commit"} <= set(timeline(path))
    past = spark.read.format("hudi").option("as.of.instant", second).load(str(path))
    assert _rows(past, "id", "v", "ts", "day") == expected
    assert _staged(path) == []


def test_mor_create_upsert_and_delete(spark, session, tmp_path):
    path = tmp_path / "mor"
    create = {NAME: "mor", KEY: "id", PARTITION: "day", ORDERING: "ts", TABLE_TYPE: "MERGE_ON_READ",
              "hoodie.compact.inline": "false"}
    _write(spark, [(1, "a", 1, "d1"), (2, "b", 1, "d1"), (3, "c", 1, "d2")], path, **create)
    assert HudiTable.load(str(path)).config.table_type == "MERGE_ON_READ"
    _write(spark, [(1, "a2", 2, "d1"), (4, "d", 1, "d2")], path, **{OPERATION: "upsert"})
    assert list(path.glob("d1/.*.log.*")), "the update went to a log file"

    # Hudi's delete: the keys of the rows (record key and partition) go, whatever their other columns.
    _write(spark, [(2, "d1"), (3, "d2"), (9, "d2")], path, schema="id INT, day STRING", **{OPERATION: "delete"})
    expected = [(1, "a2", 2, "d1"), (4, "d", 1, "d2")]
    assert _rows(spark.read.format("hudi").load(str(path)), "id", "v", "ts", "day") == expected
    session.sql(f"CREATE TABLE mor USING hudi LOCATION '{path}'")
    assert _rows(session.sql("SELECT * FROM mor"), "id", "v", "ts", "day") == expected
    assert official_rows(str(path), ["id", "v", "ts", "day"]) == expected
    assert [n.split(".", 1)[1] for n in timeline(path) if n.count(".") == 1] == ["deltacommit"] * 3  # one instant per write
    assert _staged(path) == []


def test_bad_writes_are_refused_before_anything_is_written(spark, session, tmp_path):
    table = tmp_path / "t"
    _write(spark, [(1, "a", 1, "d1")], table, **{NAME: "t", KEY: "id", PARTITION: "day"})
    before = timeline(table)
    other = tmp_path / "other"
    (tmp_path / "files").mkdir()
    (tmp_path / "files" / "data.csv").write_text("1\n")
    refused = [
        (table, "append", {KEY: "v"}, "hoodie.datasource.write.recordkey.field=v differs from the table at"),
        (table, "append", {NAME: "u"}, f"the table at {table} is named t, not u"),
        (table, "append", {"hoodie.datasource.write.recordkey.feild": "id"}, "did you mean 'hoodie.datasource.write.recordkey.field'?"),
        (table, "errorifexists", {}, 'cannot be written in the "ErrorIfExists" mode'),
        (other, "append", {KEY: "id"}, 'name it with .option("hoodie.table.name", "<name>")'),
        (other, "append", {NAME: "o", KEY: "key"}, "record key column 'key' is not a column of the table"),
        (tmp_path / "files", "append", {NAME: "f"}, "is not empty and holds no Hudi table"),
    ]
    for path, mode, options, message in refused:
        with pytest.raises(Exception) as error:
            _write(spark, [(2, "b", 1, "d1")], path, mode=mode, **options)
        assert message in str(error.value), (options, str(error.value)[:2000])
    assert timeline(table) == before and _staged(table) == []
    assert not other.exists()
    assert [p.name for p in (tmp_path / "files").iterdir()] == ["data.csv"]


@pytest.mark.parametrize(("options", "overwrite", "message"), [
    ({OPERATION: "delete_partition"}, False, "ALTER TABLE <table> DROP PARTITION"),
    ({OPERATION: "merge"}, False, "hoodie.datasource.write.operation=merge is not valid; use upsert, insert"),
    ({OPERATION: "delete"}, True, "cannot run in save mode overwrite"),
    ({"hoodie.parquet.max.file.size": "big"}, False, "hoodie.parquet.max.file.size=big is not valid"),
    ({"hoodie.datasource.query.typ": "snapshot"}, False, "did you mean 'hoodie.datasource.query.type'?"),
    ({"primarykey": "id", "recordkey": "id"}, False, "unknown option 'recordkey' of df.write.format(\"hudi\")"),
    ({NAME: "a", "hoodie.datasource.write.table.name": "b"}, False, "name different tables (a, b)"),
])
def test_write_options_are_checked_in_one_line(options, overwrite, message):
    with pytest.raises(OptionError) as error:
        write_options({"path": "/t", **options}, overwrite)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_partition_and_key_options_differing_from_the_table_are_named():
    config = TableConfig({"hoodie.table.name": "t", "hoodie.table.recordkey.fields": "id",
                          "hoodie.table.partition.fields": "day", "hoodie.table.type": "MERGE_ON_READ"})
    for option, given, named in ((PARTITION, "v", PARTITION), (TABLE_TYPE, "cow", TABLE_TYPE), ("primarykey", "v", "primaryKey")):
        with pytest.raises(OptionError, match=f"{named}={given} differs from the table at /t, which has"):
            check_table_options(write_options({"path": "/t", option: given}, False), config)
    check_table_options(write_options({"path": "/t", KEY: "ID", TABLE_TYPE: "mor", NAME: "T"}, False), config)  # the same
    # A date format is text, compared as written: minutes (mm) are not months (MM).
    dated = TableConfig({**config.props, "hoodie.keygen.timebased.input.dateformat": "yyyy-MM-dd"})
    with pytest.raises(OptionError, match="dateformat=yyyy-mm-dd differs from the table at /t, which has .*=yyyy-MM-dd"):
        check_table_options(write_options({"path": "/t", "hoodie.keygen.timebased.input.dateformat": "yyyy-mm-dd"}, False), dated)
    check_table_options(write_options({"path": "/t", "hoodie.keygen.timebased.input.dateformat": "yyyy-MM-dd"}, False), dated)
    # Class names may be given without their package, in any case.
    keyed = TableConfig({**config.props, "hoodie.table.keygenerator.class": "org.apache.hudi.keygen.SimpleKeyGenerator"})
    check_table_options(write_options({"path": "/t", "hoodie.datasource.write.keygenerator.class": "simplekeygenerator"}, False), keyed)


def test_a_failing_write_leaves_nothing(spark, session, tmp_path):
    table = tmp_path / "t"
    _write(spark, [(1, "a", 1, "d1")], table, **{NAME: "t", KEY: "id", PARTITION: "day"})
    before = timeline(table)
    # The last task fails after the others staged their rows: Spark aborts, and the staged rows go.
    # (A task still writing when Spark aborts can stage its file after that: the next write removes
    # it, test_staging_left_by_an_ended_write_is_removed_by_the_next.)
    rows = spark.sparkContext.parallelize([(i, "v", 1, "d1") for i in range(20)], 4)

    @F.udf("string")
    def fail_late(v, i):
        if i == 19:  # in the last of the four partitions
            time.sleep(2)
            raise ValueError("boom")
        return v

    failing = spark.createDataFrame(rows, SCHEMA).withColumn("v", fail_late(F.col("v"), F.col("id")))
    with pytest.raises(Exception, match="boom"):
        failing.write.format("hudi").mode("append").save(str(table))
    assert timeline(table) == before and _staged(table) == []
    assert _rows(spark.read.format("hudi").load(str(table)), "id", "v") == [(1, "a")]

    # The driver's write fails (a record key is null): the table the write created goes too.
    new = tmp_path / "new"
    with pytest.raises(Exception) as error:
        _write(spark, [(1, "a", 1, "d1"), (None, "b", 1, "d1")], new, **{NAME: "n", KEY: "id"})
    assert "null" in str(error.value) and "id" in str(error.value)
    assert not new.exists()


def _plant_staging(folder: Path, heartbeat_age_s: float | None) -> Path:
    """A staging folder with one staged file, as a write left it: its heartbeat last beaten
    ``heartbeat_age_s`` ago (``None``: no heartbeat, as a task that staged after the abort leaves it)."""
    folder.mkdir(parents=True)
    (folder / "part-00000-7-0123456789ab.parquet").write_bytes(b"PAR1")
    if heartbeat_age_s is not None:
        (folder / ".heartbeat").write_text("1000")  # beats every second
        beaten = time.time() - heartbeat_age_s
        os.utime(folder / ".heartbeat", (beaten, beaten))
    return folder


def test_staging_left_by_an_ended_write_is_removed_by_the_next(spark, tmp_path):
    """Staging whose heartbeat stopped (a task that staged after Spark aborted its write, or a
    registering process that died) goes at the next df.write to the path; a live write's stays."""
    table = tmp_path / "t"
    _write(spark, [(1, "a", 1, "d1")], table, **{NAME: "t", KEY: "id", PARTITION: "day"})
    temp = table / ".hoodie" / ".temp"
    after_abort = _plant_staging(temp / "hudiql-write-aborted", None)
    died = _plant_staging(temp / "hudiql-write-died", heartbeat_age_s=10)  # two misses of a second long past
    live = Heartbeat(Storage(str(table)), ".hoodie/.temp/hudiql-write-live/.heartbeat", 1000)
    assert live.start()
    try:
        _write(spark, [(2, "b", 1, "d1")], table)
        assert not after_abort.exists() and not died.exists()
        assert [p.name for p in _staged(table)] == ["hudiql-write-live"]
    finally:
        live.stop()
    assert _rows(spark.read.format("hudi").load(str(table)), "id", "v") == [(1, "a"), (2, "b")]

    # A path without a table: the staging of a first write that ended is no table content.
    new = tmp_path / "new"
    _plant_staging(new / ".hudiql-staging" / "hudiql-write-aborted", None)
    _write(spark, [(1, "a", 1, "d1")], new, **{NAME: "n", KEY: "id"})
    assert _staged(new) == [] and _rows(spark.read.format("hudi").load(str(new)), "id", "v") == [(1, "a")]


def test_staging_beats_while_the_tasks_write(spark, tmp_path):
    """From writer() to commit the registering process beats in the staging folder, so no other
    write takes a running write's staged rows for an ended one's."""
    table = tmp_path / "t"
    _write(spark, [(1, "a", 1, "d1")], table, **{NAME: "t", KEY: "id", PARTITION: "day"})

    @F.udf("string")
    def beating(v):  # in the write's task
        return str(len(list(table.glob(".hoodie/.temp/hudiql-write-*/.heartbeat"))))

    rows = spark.createDataFrame([(2, "b", 1, "d1")], SCHEMA).withColumn("v", beating(F.col("v")))
    rows.write.format("hudi").mode("append").save(str(table))
    assert _rows(spark.read.format("hudi").load(str(table)), "id", "v") == [(1, "a"), (2, "1")]
    assert _staged(table) == []


def test_delete_reads_only_the_partitions_its_keys_name(spark, session, tmp_path):
    path = tmp_path / "t"
    _write(spark, [(1, "a", 1, "d1"), (2, "b", 1, "d1"), (3, "c", 1, "d2")], path, **{NAME: "t", KEY: "id", PARTITION: "day"})
    [other] = (path / "d2").glob("*.parquet")
    other.write_bytes(b"x" * other.stat().st_size)  # no parquet: a delete of keys in d1 never opens it
    _write(spark, [(1, "d1")], path, schema="id INT, day STRING", **{OPERATION: "delete"})
    session.sql(f"CREATE TABLE t USING hudi LOCATION '{path}'")
    assert _rows(session.sql("SELECT * FROM t WHERE day = 'd1'"), "id", "v") == [(2, "b")]

    # A table without partitions: its one partition path is the keys' too.
    flat = tmp_path / "flat"
    _write(spark, [(1, "a", 1, "d1"), (2, "b", 1, "d1")], flat, **{NAME: "flat", KEY: "id"})
    _write(spark, [(2,)], flat, schema="id INT", **{OPERATION: "delete"})
    assert _rows(spark.read.format("hudi").load(str(flat)), "id", "v") == [(1, "a")]
    assert official_rows(str(flat), ["id", "v"]) == [(1, "a")]
