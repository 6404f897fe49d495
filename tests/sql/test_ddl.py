"""DDL through ``Session.sql`` on a real SparkSession: CREATE / DROP / SHOW / DESCRIBE / CALL.

Every test gets a fresh warehouse (``warehouse`` fixture) and shares the one SparkSession.
``hoodie.properties`` is read back from disk with a parser written here, independent of hudiql.
"""

from __future__ import annotations

import json
import re
import zlib
from pathlib import Path

import pytest

import hudiql
from hudiql.errors import (
    ColumnError,
    DataError,
    HudiqlError,
    OptionError,
    SqlError,
    TableExistsError,
    TableNotFoundError,
)

from conftest import official_rows

DEFAULT_PAYLOAD = "org.apache.hudi.common.model.DefaultHoodieRecordPayload"
OVERWRITE_PAYLOAD = "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload"
SIMPLE = "org.apache.hudi.keygen.SimpleKeyGenerator"
COMPLEX = "org.apache.hudi.keygen.ComplexKeyGenerator"
NONPARTITIONED = "org.apache.hudi.keygen.NonpartitionedKeyGenerator"
TIMESTAMP_BASED = "org.apache.hudi.keygen.TimestampBasedKeyGenerator"
META = ["_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key", "_hoodie_partition_path",
        "_hoodie_file_name"]

#: The keys hudi-format.md section 1 says a v6 table's hoodie.properties holds (precombine only if set).
V6_KEYS = [
    "hoodie.table.name", "hoodie.database.name", "hoodie.table.type", "hoodie.table.version",
    "hoodie.timeline.layout.version", "hoodie.table.recordkey.fields", "hoodie.table.precombine.field",
    "hoodie.table.partition.fields", "hoodie.table.keygenerator.class",
    "hoodie.datasource.write.hive_style_partitioning", "hoodie.datasource.write.partitionpath.urlencode",
    "hoodie.datasource.write.drop.partition.columns", "hoodie.table.base.file.format",
    "hoodie.archivelog.folder", "hoodie.compaction.payload.class", "hoodie.record.merge.mode",
    "hoodie.table.timeline.timezone", "hoodie.populate.meta.fields", "hoodie.table.create.schema",
    "hoodie.table.checksum",
]

ORDERS_DDL = (
    "CREATE TABLE orders (id INT, name STRING, ts BIGINT, dt STRING) USING hudi "
    "PARTITIONED BY (dt) TBLPROPERTIES (primaryKey='id', preCombineField='ts')"
)


# ---- helpers ------------------------------------------------------------------------------------------


def read_properties(base: Path) -> dict[str, str]:
    """Java properties text of ``<base>/.hoodie/hoodie.properties`` (no continuation lines in ours)."""
    text = (Path(base) / ".hoodie" / "hoodie.properties").read_text(encoding="utf-8")
    props = {}
    for line in text.splitlines():
        if not line.strip() or line.lstrip()[0] in "#!":
            continue
        key, i = [], 0
        while i < len(line) and line[i] not in "=:":
            if line[i] == "\\":
                i += 1
            key.append(line[i])
            i += 1
        props["".join(key)] = _unescape(line[i + 1:])
    return props


def _unescape(value: str) -> str:
    return re.sub(r"\\u([0-9a-fA-F]{4})|\\(.)",
                  lambda m: chr(int(m[1], 16)) if m[1] else {"n": "\n", "t": "\t", "r": "\r"}.get(m[2], m[2]),
                  value)


def rows(session, sql: str) -> list[tuple]:
    return [tuple(r) for r in session.sql(sql).collect()]


def table_names(session, database: str | None = None) -> list[str]:
    sql = f"SHOW TABLES IN {database}" if database else "SHOW TABLES"
    return [r[1] for r in rows(session, sql)]


def table_properties(session, name: str) -> dict[str, str]:
    return dict(rows(session, f"CALL show_table_properties(table => '{name}')"))


def describe_columns(session, name: str) -> list[tuple[str, str]]:
    out = []
    for col, dtype, _ in rows(session, f"DESCRIBE {name}"):
        if col.startswith("#"):
            break
        out.append((col, dtype))
    return out


def table_dirs(warehouse: Path) -> list[str]:
    if not warehouse.exists():
        return []
    return sorted(p.name for p in warehouse.iterdir() if not p.name.startswith("."))


# ---- CREATE TABLE, Spark dialect -----------------------------------------------------------------------


def test_spark_create_writes_v6_hoodie_properties(session, warehouse):
    session.sql(ORDERS_DDL)
    base = warehouse / "orders"
    props = read_properties(base)
    assert [k for k in V6_KEYS if k not in props] == []
    expected = {
        "hoodie.table.name": "orders",
        "hoodie.database.name": "default",
        "hoodie.table.type": "COPY_ON_WRITE",
        "hoodie.table.version": "6",
        "hoodie.timeline.layout.version": "1",
        "hoodie.table.recordkey.fields": "id",
        "hoodie.table.precombine.field": "ts",
        "hoodie.table.partition.fields": "dt",
        "hoodie.table.keygenerator.class": SIMPLE,
        "hoodie.datasource.write.hive_style_partitioning": "true",
        "hoodie.datasource.write.partitionpath.urlencode": "false",
        "hoodie.datasource.write.drop.partition.columns": "false",
        "hoodie.table.base.file.format": "PARQUET",
        "hoodie.archivelog.folder": "archived",
        "hoodie.compaction.payload.class": DEFAULT_PAYLOAD,
        "hoodie.record.merge.mode": "EVENT_TIME_ORDERING",
        "hoodie.table.timeline.timezone": "UTC",
        "hoodie.populate.meta.fields": "true",
        "hoodie.table.checksum": str(zlib.crc32(b"default.orders")),
    }
    assert {k: props[k] for k in expected} == expected
    assert "hoodie.metadata.enable" not in props and "hoodie.table.metadata.partitions" not in props
    schema = json.loads(props["hoodie.table.create.schema"])
    assert (schema["type"], schema["name"], schema["namespace"]) == ("record", "orders_record", "hoodie.orders")
    assert [(f["name"], f["type"], f["default"]) for f in schema["fields"]] == [
        ("id", ["null", "int"], None), ("name", ["null", "string"], None),
        ("ts", ["null", "long"], None), ("dt", ["null", "string"], None),
    ]
    raw = (base / ".hoodie" / "hoodie.properties").read_text()
    schema_line = next(line for line in raw.splitlines() if line.startswith("hoodie.table.create.schema="))
    assert '"type"\\:"record"' in schema_line  # ':' escaped as '\:' in Java properties
    assert rows(session, "SHOW TABLES") == [("default", "orders", False)]


def test_created_table_is_readable_by_the_official_reader(session, warehouse):
    session.sql(ORDERS_DDL)
    session.sql("INSERT INTO orders VALUES (1, 'a', 10, '2024-01-01'), (2, 'b', 20, '2024-01-02')")
    assert official_rows(warehouse / "orders", ["id", "name", "ts", "dt"]) == [
        (1, "a", 10, "2024-01-01"), (2, "b", 20, "2024-01-02"),
    ]
    assert sorted(p.name for p in (warehouse / "orders").iterdir() if p.is_dir()) == [
        ".hoodie", "dt=2024-01-01", "dt=2024-01-02",
    ]


def test_options_clause_equals_tblproperties(session):
    session.sql("CREATE TABLE a (id INT, v STRING, ts BIGINT) USING hudi TBLPROPERTIES (primaryKey='id', preCombineField='ts', type='mor')")
    session.sql("CREATE TABLE b (id INT, v STRING, ts BIGINT) USING hudi OPTIONS (primaryKey='id', preCombineField='ts', type='mor')")
    a, b = table_properties(session, "a"), table_properties(session, "b")
    assert a["hoodie.table.recordkey.fields"] == b["hoodie.table.recordkey.fields"] == "id"
    assert a["hoodie.table.precombine.field"] == b["hoodie.table.precombine.field"] == "ts"
    assert a["hoodie.table.type"] == b["hoodie.table.type"] == "MERGE_ON_READ"
    differ = {"hoodie.table.name", "hoodie.table.checksum", "hoodie.table.create.schema"}
    assert {k: v for k, v in a.items() if k not in differ} == {k: v for k, v in b.items() if k not in differ}


def test_create_with_quoted_option_keys_and_hoodie_options(session):
    session.sql("CREATE TABLE t (id INT, v STRING) USING hudi TBLPROPERTIES ('primaryKey'='id', 'hoodie.index.type'='BUCKET')")
    props = table_properties(session, "t")
    assert props["hoodie.table.recordkey.fields"] == "id"
    assert props["hoodie.index.type"] == "BUCKET"


def test_create_if_not_exists_leaves_the_table_alone(session, warehouse):
    session.sql("CREATE TABLE t (id INT, v STRING) USING hudi TBLPROPERTIES (primaryKey='id')")
    session.sql("INSERT INTO t VALUES (1, 'a')")
    before = (warehouse / "t" / ".hoodie" / "hoodie.properties").read_bytes()
    session.sql("CREATE TABLE IF NOT EXISTS t (other BIGINT) USING hudi TBLPROPERTIES (primaryKey='other')")
    assert (warehouse / "t" / ".hoodie" / "hoodie.properties").read_bytes() == before
    assert describe_columns(session, "t")[5:] == [("id", "int"), ("v", "string")]
    assert rows(session, "SELECT id, v FROM t") == [(1, "a")]


def test_create_existing_table_fails_and_changes_nothing(session, warehouse):
    session.sql("CREATE TABLE t (id INT, v STRING) USING hudi TBLPROPERTIES (primaryKey='id')")
    before = (warehouse / "t" / ".hoodie" / "hoodie.properties").read_bytes()
    with pytest.raises(TableExistsError) as info:
        session.sql("CREATE TABLE t (x INT) USING hudi")
    assert "default.t" in str(info.value) and "IF NOT EXISTS" in str(info.value)
    assert (warehouse / "t" / ".hoodie" / "hoodie.properties").read_bytes() == before
    with pytest.raises(TableExistsError):
        session.sql("CREATE TABLE T USING hudi AS SELECT 1 AS x")  # names are case-insensitive
    assert table_names(session) == ["t"]


def test_create_in_a_database(session, warehouse):
    session.sql("CREATE DATABASE sales")
    session.sql("CREATE TABLE sales.orders (id INT, v STRING) USING hudi TBLPROPERTIES (primaryKey='id')")
    base = warehouse / "sales.db" / "orders"
    props = read_properties(base)
    assert props["hoodie.database.name"] == "sales"
    assert props["hoodie.table.name"] == "orders"
    assert props["hoodie.table.checksum"] == str(zlib.crc32(b"sales.orders"))
    assert table_names(session, "sales") == ["orders"]
    assert rows(session, "SHOW TABLES IN sales") == [("sales", "orders", False)]
    assert table_names(session) == []
    session.sql("INSERT INTO sales.orders VALUES (1, 'x')")
    assert rows(session, "SELECT id, v FROM sales.orders") == [(1, "x")]
    with pytest.raises(TableExistsError):
        session.sql("CREATE DATABASE sales")
    session.sql("CREATE DATABASE IF NOT EXISTS sales")
    assert table_names(session, "sales") == ["orders"]


def test_use_database_changes_the_default_for_unqualified_names(session, warehouse):
    session.sql("CREATE DATABASE db")
    session.sql("USE db")
    session.sql("CREATE TABLE t (id INT) USING hudi")
    assert (warehouse / "db.db" / "t" / ".hoodie" / "hoodie.properties").exists()
    assert not (warehouse / "t").exists()
    assert table_names(session) == ["t"]
    assert table_names(session, "default") == []


def test_create_in_a_missing_database_fails(session, warehouse):
    with pytest.raises(TableNotFoundError) as info:
        session.sql("CREATE TABLE nodb.t (id INT) USING hudi")
    assert "nodb" in str(info.value) and "CREATE DATABASE" in str(info.value)
    assert not (warehouse / "nodb.db").exists()
    with pytest.raises(TableNotFoundError):
        session.sql("SHOW TABLES IN nodb")


def test_create_external_table_with_location(session, warehouse, tmp_path):
    location = tmp_path / "external" / "ext"
    session.sql(f"CREATE TABLE ext (id INT, v STRING) USING hudi LOCATION '{location}' TBLPROPERTIES (primaryKey='id')")
    assert (location / ".hoodie" / "hoodie.properties").exists()
    assert not (warehouse / "ext").exists()
    assert read_properties(location)["hoodie.table.name"] == "ext"
    session.sql("INSERT INTO ext VALUES (1, 'x'), (2, 'y')")
    assert sorted(rows(session, "SELECT id, v FROM ext")) == [(1, "x"), (2, "y")]
    assert table_names(session) == ["ext"]
    extended = {r[0]: r[1] for r in rows(session, "DESCRIBE EXTENDED ext")}
    assert extended["Location"].removeprefix("file://") == str(location)
    create = rows(session, "SHOW CREATE TABLE ext")[0][0]
    assert f"LOCATION '{location}" in create.replace("file://", "")


def test_location_holding_a_table_is_adopted_without_columns(session, tmp_path):
    location = tmp_path / "ext"
    session.sql(f"CREATE TABLE first (id INT, v STRING) USING hudi LOCATION '{location}' TBLPROPERTIES (primaryKey='id')")
    session.sql("INSERT INTO first VALUES (7, 'seven')")
    session.sql(f"CREATE TABLE second USING hudi LOCATION '{location}'")
    assert rows(session, "SELECT id, v FROM second") == [(7, "seven")]
    with pytest.raises(TableExistsError):
        session.sql(f"CREATE TABLE third (id INT) USING hudi LOCATION '{location}'")
    assert table_names(session) == ["first", "second"]


def test_location_with_other_files_is_refused(session, tmp_path):
    location = tmp_path / "busy"
    location.mkdir()
    (location / "data.csv").write_text("1,2\n")
    with pytest.raises(TableExistsError) as info:
        session.sql(f"CREATE TABLE t (id INT) USING hudi LOCATION '{location}'")
    assert "not empty" in str(info.value)
    assert sorted(p.name for p in location.iterdir()) == ["data.csv"]
    assert table_names(session) == []


def test_ctas_with_partitioned_by(session, warehouse):
    session.sql("CREATE TABLE src (id INT, name STRING, ts BIGINT, dt STRING) USING hudi TBLPROPERTIES (primaryKey='id')")
    session.sql("INSERT INTO src VALUES (1, 'a', 10, '2024-01-01'), (2, 'b', 20, '2024-01-02'), (3, 'c', 30, '2024-01-01')")
    session.sql(
        "CREATE TABLE c USING hudi PARTITIONED BY (dt) TBLPROPERTIES (primaryKey='id', preCombineField='ts') "
        "AS SELECT id, dt, name, ts FROM src WHERE id < 3"
    )
    assert describe_columns(session, "c") == [(m, "string") for m in META] + [
        ("id", "int"), ("name", "string"), ("ts", "bigint"), ("dt", "string"),
    ]
    props = read_properties(warehouse / "c")
    assert props["hoodie.table.partition.fields"] == "dt"
    assert props["hoodie.table.recordkey.fields"] == "id"
    assert props["hoodie.table.precombine.field"] == "ts"
    assert props["hoodie.table.keygenerator.class"] == SIMPLE
    assert sorted(p.name for p in (warehouse / "c").iterdir() if p.name.startswith("dt=")) == [
        "dt=2024-01-01", "dt=2024-01-02",
    ]
    assert sorted(rows(session, "SELECT id, name, ts, dt, _hoodie_partition_path FROM c")) == [
        (1, "a", 10, "2024-01-01", "dt=2024-01-01"), (2, "b", 20, "2024-01-02", "dt=2024-01-02"),
    ]
    assert official_rows(warehouse / "c", ["id", "name", "ts", "dt"]) == [
        (1, "a", 10, "2024-01-01"), (2, "b", 20, "2024-01-02"),
    ]


def test_ctas_partitioned_by_date_uses_the_timestamp_key_generator(session, warehouse):
    session.sql("CREATE TABLE c USING hudi PARTITIONED BY (day) TBLPROPERTIES (primaryKey='id') "
                "AS SELECT 1 AS id, DATE'2024-01-02' AS day, 'x' AS v")
    props = read_properties(warehouse / "c")
    assert props["hoodie.table.keygenerator.class"] == TIMESTAMP_BASED
    assert props["hoodie.keygen.timebased.output.dateformat"] == "yyyyMMdd"
    assert [json.loads(props["hoodie.table.create.schema"])["fields"][i]["name"] for i in range(3)] == ["id", "v", "day"]
    assert sorted(p.name for p in (warehouse / "c").iterdir() if not p.name.startswith(".")) == ["day=20240102"]


def test_ctas_from_literals_without_key(session, warehouse):
    session.sql("CREATE TABLE lit USING hudi AS SELECT 1 AS id, 'x' AS v UNION ALL SELECT 2, 'y'")
    props = read_properties(warehouse / "lit")
    assert "hoodie.table.recordkey.fields" not in props
    assert props["hoodie.table.keygenerator.class"] == NONPARTITIONED
    assert sorted(rows(session, "SELECT id, v FROM lit")) == [(1, "x"), (2, "y")]


def test_ctas_with_column_list_is_rejected(session, warehouse):
    with pytest.raises(SqlError, match="column"):
        session.sql("CREATE TABLE t (id INT) USING hudi AS SELECT 1 AS id")
    assert table_dirs(warehouse) == []


def test_create_without_using_hudi_is_rejected(session, warehouse):
    with pytest.raises(SqlError, match="USING hudi"):
        session.sql("CREATE TABLE t (id INT) USING parquet")
    with pytest.raises(SqlError, match="USING hudi"):
        session.sql("CREATE TABLE t (id INT)")
    assert table_names(session) == []


# ---- CREATE TABLE, Flink dialect -----------------------------------------------------------------------


def test_flink_inline_primary_key_mor_and_date_partition(session, warehouse):
    session.sql(
        "CREATE TABLE f (id INT PRIMARY KEY NOT ENFORCED, v STRING, ts BIGINT, dt DATE) PARTITIONED BY (dt) "
        "WITH ('connector'='hudi', 'table.type'='MERGE_ON_READ', 'precombine.field'='ts')"
    )
    extended = {r[0]: r[1] for r in rows(session, "DESCRIBE EXTENDED f")}
    assert extended["Table Type"] == "MERGE_ON_READ"
    assert extended["Record Key"] == "id"
    assert extended["Partition Fields"] == "dt"
    assert extended["Ordering Field"] == "ts"
    assert extended["Key Generator"] == TIMESTAMP_BASED
    assert extended["Hive Style Partitioning"] == "false"
    props = read_properties(warehouse / "f")
    assert props["hoodie.table.type"] == "MERGE_ON_READ"
    assert props["hoodie.keygen.timebased.output.dateformat"] == "yyyyMMdd"
    assert props["hoodie.keygen.timebased.output.timezone"] == "UTC"
    assert props["hoodie.datasource.write.hive_style_partitioning"] == "false"
    assert "connector" not in props


def test_flink_table_constraint_composite_primary_key(session, warehouse):
    session.sql("CREATE TABLE f2 (a INT, b STRING, v STRING, PRIMARY KEY (a, b) NOT ENFORCED) WITH ('connector'='hudi')")
    props = read_properties(warehouse / "f2")
    assert props["hoodie.table.recordkey.fields"] == "a,b"
    assert props["hoodie.table.keygenerator.class"] == NONPARTITIONED
    assert props["hoodie.table.type"] == "COPY_ON_WRITE"
    assert props["hoodie.compaction.payload.class"] == OVERWRITE_PAYLOAD
    assert props["hoodie.record.merge.mode"] == "COMMIT_TIME_ORDERING"
    session.sql(
        "CREATE TABLE f3 (a INT, b STRING, v STRING, p STRING, PRIMARY KEY (a, b) NOT ENFORCED) PARTITIONED BY (p) "
        "WITH ('connector'='hudi', 'hoodie.datasource.write.recordkey.field'='v')"
    )
    props = read_properties(warehouse / "f3")
    assert props["hoodie.table.recordkey.fields"] == "a,b"  # PRIMARY KEY beats the option
    assert props["hoodie.table.keygenerator.class"] == COMPLEX
    assert props["hoodie.datasource.write.hive_style_partitioning"] == "false"
    session.sql("INSERT INTO f3 VALUES (1, 'x', 'v1', 'p1')")
    assert rows(session, "SELECT _hoodie_record_key, _hoodie_partition_path FROM f3") == [("a:1,b:x", "p1")]


def test_flink_other_connector_is_rejected(session):
    with pytest.raises(SqlError, match="connector"):
        session.sql("CREATE TABLE k (id INT) WITH ('connector'='kafka')")
    assert table_names(session) == []


# ---- DROP TABLE ------------------------------------------------------------------------------------------


def test_drop_managed_table_removes_its_files(session, warehouse):
    session.sql("CREATE TABLE t (id INT, v STRING) USING hudi TBLPROPERTIES (primaryKey='id')")
    session.sql("INSERT INTO t VALUES (1, 'a')")
    session.sql("CREATE TABLE keep (id INT) USING hudi")
    session.sql("DROP TABLE t")
    assert not (warehouse / "t").exists()
    assert table_names(session) == ["keep"]
    with pytest.raises(TableNotFoundError):
        session.sql("SELECT * FROM t")
    with pytest.raises(TableNotFoundError, match="default.t"):
        session.sql("DROP TABLE t")
    session.sql("DROP TABLE IF EXISTS t")
    # the name is free again
    session.sql("CREATE TABLE t (x STRING) USING hudi")
    assert describe_columns(session, "t")[5:] == [("x", "string")]


def test_drop_table_in_a_database(session, warehouse):
    session.sql("CREATE DATABASE db")
    session.sql("CREATE TABLE db.t (id INT) USING hudi")
    session.sql("DROP TABLE db.t")
    assert not (warehouse / "db.db" / "t").exists()
    assert table_names(session, "db") == []


def test_drop_external_table_keeps_its_files(session, warehouse, tmp_path):
    location = tmp_path / "ext"
    session.sql(f"CREATE TABLE ext (id INT, v STRING) USING hudi LOCATION '{location}' TBLPROPERTIES (primaryKey='id')")
    session.sql("INSERT INTO ext VALUES (1, 'x')")
    files_before = sorted(p.relative_to(location) for p in location.rglob("*"))
    session.sql("DROP TABLE ext")
    assert sorted(p.relative_to(location) for p in location.rglob("*")) == files_before
    assert table_names(session) == []
    with pytest.raises(TableNotFoundError):
        session.sql("SELECT * FROM ext")
    assert official_rows(location, ["id", "v"]) == [(1, "x")]
    session.sql(f"CREATE TABLE ext USING hudi LOCATION '{location}'")
    assert rows(session, "SELECT id, v FROM ext") == [(1, "x")]


# ---- SHOW TABLES, DESCRIBE, SHOW CREATE TABLE, CALL --------------------------------------------------------


def test_show_tables(session, tmp_path):
    assert rows(session, "SHOW TABLES") == []
    session.sql("CREATE TABLE b_t (id INT) USING hudi")
    session.sql("CREATE TABLE A_t (id INT) USING hudi")
    session.sql(f"CREATE TABLE c_ext (id INT) USING hudi LOCATION '{tmp_path / 'c'}'")
    session.sql("CREATE DATABASE other")
    session.sql("CREATE TABLE other.z (id INT) USING hudi")
    assert rows(session, "SHOW TABLES") == [
        ("default", "a_t", False), ("default", "b_t", False), ("default", "c_ext", False),
    ]
    assert rows(session, "SHOW TABLES IN other") == [("other", "z", False)]
    assert rows(session, "SHOW TABLES FROM other") == [("other", "z", False)]
    assert session.sql("SHOW TABLES").columns == ["namespace", "tableName", "isTemporary"]


def test_describe_lists_meta_data_and_partition_columns(session):
    session.sql(ORDERS_DDL.replace("(id INT, name STRING, ts BIGINT, dt STRING)", "(dt STRING, id INT, name STRING, ts BIGINT)"))
    df = session.sql("DESCRIBE orders")
    assert df.columns == ["col_name", "data_type", "comment"]
    assert [tuple(r) for r in df.collect()] == [(m, "string", None) for m in META] + [
        ("id", "int", None), ("name", "string", None), ("ts", "bigint", None), ("dt", "string", None),
        ("# Partition Information", "", None), ("# col_name", "data_type", "comment"), ("dt", "string", None),
    ]


def test_describe_extended_shows_every_derived_option(session, warehouse):
    session.sql(ORDERS_DDL)
    described = rows(session, "DESCRIBE EXTENDED orders")
    assert described[: len(META) + 4] == [(m, "string", None) for m in META] + [
        ("id", "int", None), ("name", "string", None), ("ts", "bigint", None), ("dt", "string", None),
    ]
    by_name = {r[0]: (r[1], r[2]) for r in described}
    expected = {
        "Table Type": ("COPY_ON_WRITE", "hoodie.table.type"),
        "Record Key": ("id", "hoodie.table.recordkey.fields"),
        "Partition Fields": ("dt", "hoodie.table.partition.fields"),
        "Key Generator": (SIMPLE, "hoodie.table.keygenerator.class"),
        "Ordering Field": ("ts", "hoodie.table.precombine.field"),
        "Payload Class": (DEFAULT_PAYLOAD, "hoodie.compaction.payload.class"),
        "Merge Mode": ("EVENT_TIME_ORDERING", "hoodie.record.merge.mode"),
        "Hive Style Partitioning": ("true", "hoodie.datasource.write.hive_style_partitioning"),
    }
    assert {k: by_name.get(k) for k in expected} == expected
    assert by_name["Database"][0] == "default"
    assert by_name["Table"][0] == "orders"
    assert by_name["Provider"][0] == "hudi"
    assert by_name["Location"][0].removeprefix("file://") == str(warehouse / "orders")
    on_disk = read_properties(warehouse / "orders")
    listed = {r[0]: r[1] for r in described[described.index(("# Table Properties", "", None)) + 1:]}
    on_disk.pop("hoodie.table.create.schema")
    assert listed == on_disk


def test_describe_extended_of_unordered_table(session):
    session.sql("CREATE TABLE t (id INT, v STRING) USING hudi TBLPROPERTIES (primaryKey='id')")
    by_name = {r[0]: r[1] for r in rows(session, "DESCRIBE EXTENDED t")}
    assert by_name["Ordering Field"] == ""
    assert by_name["Partition Fields"] == ""
    assert by_name["Payload Class"] == OVERWRITE_PAYLOAD
    assert by_name["Merge Mode"] == "COMMIT_TIME_ORDERING"
    assert by_name["Key Generator"] == NONPARTITIONED
    assert "# Partition Information" not in by_name


def test_call_show_table_properties_matches_disk(session, warehouse):
    session.sql(ORDERS_DDL)
    df = session.sql("CALL show_table_properties(table => 'orders')")
    assert df.columns == ["key", "value"]
    listed = [tuple(r) for r in df.collect()]
    assert listed == sorted(listed)
    assert dict(listed) == read_properties(warehouse / "orders")
    session.sql("CREATE DATABASE db")
    session.sql("CREATE TABLE db.t (id INT) USING hudi")
    assert table_properties(session, "db.t")["hoodie.database.name"] == "db"


def test_call_errors(session):
    session.sql("CREATE TABLE t (id INT) USING hudi")
    with pytest.raises(SqlError, match="unknown procedure 'show_tables'; available: .*show_table_properties"):
        session.sql("CALL show_tables(table => 't')")
    with pytest.raises(SqlError, match="CALL show_table_properties takes at most 1 argument: table"):
        session.sql("CALL show_table_properties('t', 'u')")
    with pytest.raises(SqlError, match="CALL show_table_properties: table is given twice"):
        session.sql("CALL show_table_properties('t', table => 't')")
    assert ("hoodie.table.name", "t") in [tuple(r) for r in session.sql("CALL system.show_table_properties('t')").collect()]
    with pytest.raises(SqlError, match="CALL show_table_properties takes no argument 'path'; its arguments are table"):
        session.sql("CALL show_table_properties(path => 't')")
    with pytest.raises(SqlError, match="CALL show_table_properties needs table => ..."):
        session.sql("CALL show_table_properties()")
    with pytest.raises(TableNotFoundError, match="nope"):
        session.sql("CALL show_table_properties(table => 'nope')")


def _comparable(props: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in props.items() if k not in ("hoodie.table.name", "hoodie.table.checksum")}


@pytest.mark.parametrize(
    "ddl",
    [
        ORDERS_DDL,
        "CREATE TABLE orders (id INT, region STRING, amount DECIMAL(12,2), tags ARRAY<STRING>, attrs MAP<STRING,BIGINT>, "
        "at TIMESTAMP, ok BOOLEAN, day DATE) USING hudi PARTITIONED BY (region, day) "
        "TBLPROPERTIES (primaryKey='id', type='mor', 'hoodie.index.type'='BUCKET')",
        "CREATE TABLE orders (id INT PRIMARY KEY NOT ENFORCED, v STRING, ts BIGINT, dt DATE) PARTITIONED BY (dt) "
        "WITH ('connector'='hudi', 'precombine.field'='ts', 'payload.class'='EventTimeAvroPayload')",
    ],
    ids=["spark", "mor-nested-types", "flink-timestamp-keygen"],
)
def test_show_create_table_reruns_to_an_equivalent_table(session, ddl):
    session.sql(ddl)
    text = rows(session, "SHOW CREATE TABLE orders")[0][0]
    assert text.startswith("CREATE TABLE default.orders")
    session.sql(text.replace("default.orders", "default.orders_copy", 1))
    original, copy = table_properties(session, "orders"), table_properties(session, "orders_copy")
    assert _comparable({**copy, "hoodie.table.create.schema": ""}) == _comparable({**original, "hoodie.table.create.schema": ""})
    # nested Avro names (decimal 'fixed' types) carry the table name; compare them under one name
    copy_schema = copy["hoodie.table.create.schema"].replace("orders_copy", "orders")
    assert json.loads(copy_schema) == json.loads(original["hoodie.table.create.schema"])
    assert describe_columns(session, "orders_copy") == describe_columns(session, "orders")


def test_show_create_table_preserves_nested_field_names(session):
    session.sql("CREATE TABLE t (id INT, s STRUCT<inner_a: INT, MixedCase: STRING>) USING hudi TBLPROPERTIES (primaryKey='id')")
    text = rows(session, "SHOW CREATE TABLE t")[0][0]
    session.sql(text.replace("default.t", "default.t_copy", 1))
    assert describe_columns(session, "t_copy") == describe_columns(session, "t")
    assert ("s", "struct<inner_a:int,MixedCase:string>") in describe_columns(session, "t_copy")


def test_show_create_table_quotes_reserved_column_names(session):
    session.sql("CREATE TABLE t (`select` INT, `table` STRING) USING hudi TBLPROPERTIES (primaryKey='select')")
    text = rows(session, "SHOW CREATE TABLE t")[0][0]
    session.sql(text.replace("default.t", "default.t_copy", 1))
    assert describe_columns(session, "t_copy") == describe_columns(session, "t")


def test_show_create_table_of_a_database_table(session):
    session.sql("CREATE DATABASE db")
    session.sql("CREATE TABLE db.t (id INT) USING hudi")
    text = rows(session, "SHOW CREATE TABLE db.t")[0][0]
    assert text.startswith("CREATE TABLE db.t (")
    assert "LOCATION" not in text


# ---- a new Session on the same warehouse ------------------------------------------------------------------


def test_tables_survive_a_new_session(session, spark, warehouse, tmp_path):
    location = tmp_path / "ext"
    session.sql("CREATE TABLE m (id INT, v STRING) USING hudi TBLPROPERTIES (primaryKey='id')")
    session.sql("INSERT INTO m VALUES (1, 'managed')")
    session.sql(f"CREATE TABLE e (id INT, v STRING) USING hudi LOCATION '{location}' TBLPROPERTIES (primaryKey='id')")
    session.sql("INSERT INTO e VALUES (2, 'external')")
    session.sql("CREATE DATABASE db")
    session.sql("CREATE TABLE db.d (id INT) USING hudi")

    fresh = hudiql.connect(warehouse=str(warehouse), spark=spark)
    assert table_names(fresh) == ["e", "m"]
    assert table_names(fresh, "db") == ["d"]
    assert rows(fresh, "SELECT id, v FROM m") == [(1, "managed")]
    assert rows(fresh, "SELECT id, v FROM e") == [(2, "external")]
    assert "LOCATION" in rows(fresh, "SHOW CREATE TABLE e")[0][0]
    assert "LOCATION" not in rows(fresh, "SHOW CREATE TABLE m")[0][0]
    with pytest.raises(TableExistsError):
        fresh.sql("CREATE TABLE m (id INT) USING hudi")


# ---- errors: a HudiqlError with a helpful message, and no table left behind --------------------------------


@pytest.mark.parametrize(
    "sql",
    [
        "SELEC 1",
        "CREATE TABLE t (id INT USING hudi",
        "CREATE TABLE t (id INT) USING hudi TBLPROPERTIES ('primaryKey'='id'",
        "TRUNCATE TABLE t PARTITION (dt)",
        "CREATE TABLE a.b.c (id INT) USING hudi",
    ],
)
def test_bad_sql_is_an_sql_error(session, warehouse, sql):
    with pytest.raises(SqlError) as info:
        session.sql(sql)
    assert str(info.value).strip()
    assert table_names(session) == []
    assert table_dirs(warehouse) == []


def test_unknown_table_errors_name_the_table(session):
    for sql in ("SELECT * FROM nope", "INSERT INTO nope VALUES (1)", "DESCRIBE nope", "DESCRIBE EXTENDED nope",
                "SHOW CREATE TABLE nope", "DROP TABLE nope"):
        with pytest.raises(TableNotFoundError) as info:
            session.sql(sql)
        assert "nope" in str(info.value), sql


@pytest.mark.parametrize(
    ("ddl", "error", "fragments"),
    [
        ("CREATE TABLE t (id INT, v STRING) USING hudi TBLPROPERTIES (primaryKey='uid')",
         ColumnError, ["'uid'", "id, v"]),
        ("CREATE TABLE t (id INT, v STRING) USING hudi PARTITIONED BY (dt) TBLPROPERTIES (primaryKey='id')",
         ColumnError, ["'dt'", "id, v"]),
        ("CREATE TABLE t (id INT, v STRING) USING hudi TBLPROPERTIES (primaryKey='id', preCombineField='ts')",
         ColumnError, ["'ts'", "id, v"]),
        ("CREATE TABLE t (a INT, v STRING, PRIMARY KEY (a, b) NOT ENFORCED) WITH ('connector'='hudi')",
         ColumnError, ["'b'", "a, v"]),
        ("CREATE TABLE t (id INT) USING hudi TBLPROPERTIES (type='xyz')", OptionError, ["type=xyz", "cow", "mor"]),
        ("CREATE TABLE t (id INT, ts INT) USING hudi TBLPROPERTIES (primaryKey='id', precombineKey='ts')",
         OptionError, ["precombineKey"]),
    ],
    ids=["record-key", "partition", "ordering", "flink-pk", "type", "unknown-option"],
)
def test_invalid_table_definition_leaves_no_table(session, warehouse, tmp_path, ddl, error, fragments):
    with pytest.raises(error) as info:
        session.sql(ddl)
    assert isinstance(info.value, HudiqlError)
    for fragment in fragments:
        assert fragment in str(info.value)
    assert table_names(session) == []
    assert table_dirs(warehouse) == []
    if " USING hudi" in ddl:  # the same mistake on an external table leaves no folder either
        location = tmp_path / "ext_loc"
        with pytest.raises(error):
            session.sql(ddl.replace(" USING hudi", f" USING hudi LOCATION '{location}'", 1))
        assert not location.exists()
        assert table_names(session) == []


@pytest.mark.parametrize(
    ("query", "error"),
    [
        ("SELECT id, missing_col FROM src", SqlError),
        ("SELECT * FROM no_such_table", TableNotFoundError),
        ("SELECT CAST(NULL AS INT) AS id, 'x' AS v", DataError),  # fails while writing: null record key
        ("SELECT id, CAST(v AS INT) AS n FROM src", DataError),  # fails while reading the rows
    ],
    ids=["unknown-column", "unknown-table", "null-key-at-write", "bad-cast"],
)
def test_failed_ctas_leaves_no_table(session, warehouse, tmp_path, query, error):
    session.sql("CREATE TABLE src (id INT, v STRING) USING hudi TBLPROPERTIES (primaryKey='id')")
    session.sql("INSERT INTO src VALUES (1, 'not a number')")
    with pytest.raises(error) as info:
        session.sql(f"CREATE TABLE c USING hudi TBLPROPERTIES (primaryKey='id') AS {query}")
    assert str(info.value).strip()
    assert "\n\tat " not in str(info.value)  # one readable message, not a Java trace
    assert table_names(session) == ["src"]
    assert table_dirs(warehouse) == ["src"]
    location = tmp_path / "ctas_ext"
    with pytest.raises(error):
        session.sql(f"CREATE TABLE c2 USING hudi LOCATION '{location}' TBLPROPERTIES (primaryKey='id') AS {query}")
    assert not location.exists()
    assert table_names(session) == ["src"]
    # the name is still free
    session.sql("CREATE TABLE c USING hudi TBLPROPERTIES (primaryKey='id') AS SELECT id, v FROM src")
    assert rows(session, "SELECT id, v FROM c") == [(1, "not a number")]


def test_invalid_table_name_is_rejected(session, warehouse):
    with pytest.raises(HudiqlError, match="not valid"):
        session.sql("CREATE TABLE `bad-name` (id INT) USING hudi")
    assert table_dirs(warehouse) == []
