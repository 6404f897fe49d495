"""The simple bucket index (``'hoodie.index.type'='BUCKET'``): Java's hashes as Spark expressions
against a Python model, the placement of records in file groups by SQL writes on COW and MOR
tables (checked on the files themselves and with the official reader), and bad options."""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from conftest import hudiql_rows, instants, official_rows
from pyspark.sql import functions as F

from hudiql.errors import HudiqlError
from hudiql.formats import log_file as L
from hudiql.layout import bucket_file_id, bucket_of_file_id
from hudiql.write.index import bucket_id, java_string_hash

COLS = ["id", "name", "ts", "dt"]
SELECT = "SELECT id, name, ts, dt FROM "


# ---- a Python model of Hudi's BucketIdentifier -------------------------------------------------------

def to_int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def java_hash(text: str) -> int:
    """``String.hashCode()``: h = 31 * h + c over UTF-16 code units, 32-bit signed wraparound."""
    data = text.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(data), 2):
        h = to_int32(31 * h + int.from_bytes(data[i:i + 2], "big"))
    return h


def java_list_hash(values: list[str | None]) -> int:
    h = 1
    for v in values:
        h = to_int32(31 * h + (0 if v is None else java_hash(v)))
    return h


def hash_keys(record_key: str, hash_fields: tuple[str, ...]) -> list[str | None]:
    if ":" not in record_key:
        return [record_key]
    out = []
    for part in record_key.split(","):
        kv = part.split(":", 1)
        if len(kv) == 1:
            out.append(kv[0])
        elif kv[0] in hash_fields:
            out.append(None if kv[1] == "__null__" else "" if kv[1] == "__empty__" else kv[1])
    return out


def model_bucket(record_key: str, num_buckets: int, hash_fields: tuple[str, ...] = ("id",)) -> int:
    return (java_list_hash(hash_keys(record_key, hash_fields)) & 0x7FFFFFFF) % num_buckets


def test_model_agrees_with_known_java_values():
    assert java_hash("hello") == 99162322
    assert java_hash("") == 0
    assert java_hash("Aa") == java_hash("BB") == 2112
    assert java_hash("😀") == 1772899  # two UTF-16 code units: 0xD83D 0xDE00
    assert java_hash("polygenelubricants") == -(2**31)  # Integer.MIN_VALUE
    assert java_list_hash([]) == 1 and java_list_hash([None]) == 31 and java_list_hash(["1"]) == 80
    assert hash_keys("id:1,name:__null__,z:__empty__", ("name", "z")) == [None, ""]
    assert bucket_of_file_id(bucket_file_id(7)) == 7 and bucket_file_id(123).startswith("00000123")
    assert bucket_of_file_id("a1b2c3d4-0000-0000-0000-000000000000-0") is None


# ---- a) the Spark expressions ----------------------------------------------------------------------------

STRINGS = ["hello", "", "Aa", "BB", "😀", "polygenelubricants", "ü日本語", "x" * 500 + "😀é" * 37, "\x00", "a:b"]
KEYS = ["1", "42", "-7", "hello", "😀", "id:1,name:x", "id:7,name:__null__", "id:__empty__,name:y",
        "name:x,id:1", "id:a:b,name:c", "id:1,name:x,extra:z"]
CONFIGS = [(("id",), 4), (("name",), 7), (("id", "name"), 256), (("name", "id"), 256), (("id",), 1), (("id",), 2**31 - 1)]


def test_java_string_hash_and_bucket_id_expressions(spark):
    inputs = STRINGS + KEYS
    df = spark.createDataFrame([(i, s) for i, s in enumerate(inputs)] + [(len(inputs), None)], "i int, s string")
    columns = [java_string_hash(F.col("s")).alias("h")]
    columns += [bucket_id(F.col("s"), fields, n).alias(f"b{j}") for j, (fields, n) in enumerate(CONFIGS)]
    rows = {r["i"]: r for r in df.select("i", *columns).collect()}
    assert rows[len(inputs)]["h"] == 0  # Objects.hashCode(null), as List.hashCode counts a null element
    for i, text in enumerate(inputs):
        assert rows[i]["h"] == java_hash(text) & 0xFFFFFFFF, text  # unsigned 32-bit, as a long
    assert rows[0]["h"] == 99162322 and rows[4]["h"] == 1772899 and rows[5]["h"] == 2**31
    for i, key in enumerate(inputs):
        for j, (fields, n) in enumerate(CONFIGS):
            assert rows[i][f"b{j}"] == model_bucket(key, n, fields), (key, fields, n)
    # hash fields are taken in key order, whatever their order in the option
    key = inputs.index("id:1,name:x")
    assert rows[key]["b2"] == rows[key]["b3"] == (java_list_hash(["1", "x"]) & 0x7FFFFFFF) % 256


# ---- b) SQL writes place records by bucket ------------------------------------------------------------------

NUM_BUCKETS = 4


def ddl(name: str, kind: str, *props: str, buckets: int = NUM_BUCKETS) -> str:
    options = ["primaryKey='id'", "preCombineField='ts'", f"type='{kind}'", "'hoodie.index.type'='BUCKET'",
               f"'hoodie.bucket.index.num.buckets'='{buckets}'", *props]
    return (f"CREATE TABLE {name} (id INT, name STRING, ts BIGINT, dt STRING) USING hudi PARTITIONED BY (dt) "
            f"TBLPROPERTIES ({', '.join(options)})")


def data_files(table: Path) -> list[Path]:
    return sorted(p for p in table.rglob("*") if p.is_file() and ".hoodie" not in p.relative_to(table).parts
                  and (p.name.endswith(".parquet") or ".log." in p.name))


def file_id(p: Path) -> str:
    return p.name[1:].split("_")[0] if p.name.startswith(".") else p.name.split("_")[0]


def file_keys(p: Path) -> list[str]:
    if p.name.endswith(".parquet"):
        return pq.read_table(p, columns=["_hoodie_record_key"]).column(0).to_pylist()
    keys = []
    for block in L.read_blocks(p.read_bytes(), str(p)):
        if block.block_type == L.AVRO_DATA:
            keys += [r["_hoodie_record_key"] for r in L.read_avro_records(block, str(p))]
        elif block.block_type == L.DELETE:
            keys += [d.record_key for d in L.read_deletes(block, str(p))]
    return keys


def assert_bucket_layout(session, name: str, table: Path) -> dict[tuple[str, int], str]:
    """Every record of every file (all versions, logs and deletes too) sits in its key's bucket,
    and a (partition, bucket) never has more than one file group. Returns the file groups."""
    groups: dict[tuple[str, int], set[str]] = {}
    for p in data_files(table):
        fid = file_id(p)
        bucket = bucket_of_file_id(fid)
        assert bucket is not None and 0 <= bucket < NUM_BUCKETS, p.name
        groups.setdefault((p.parent.name, bucket), set()).add(fid)
        for key in file_keys(p):
            assert model_bucket(key, NUM_BUCKETS) == bucket, (key, p.name)
    assert all(len(ids) == 1 for ids in groups.values()), groups
    # the same through the meta columns of a query
    for key, file_name in session.sql(f"SELECT _hoodie_record_key, _hoodie_file_name FROM {name}").collect():
        assert bucket_of_file_id(file_name.split("_")[0]) == model_bucket(key, NUM_BUCKETS)
    return {k: next(iter(v)) for k, v in groups.items()}


def assert_rows(session, name: str, table: Path, expected: dict[int, tuple]) -> None:
    rows = sorted((k, *v) for k, v in expected.items())
    assert hudiql_rows(session, SELECT + name) == rows
    assert official_rows(table, COLS) == rows


@pytest.mark.parametrize("kind", ["mor", "cow"])
def test_sql_writes_follow_the_buckets(session, warehouse, kind):
    # buckets of ids with 4 buckets: 1,5,9,12 -> 0 | 2,6,13 -> 1 | 3,7,10 -> 2 | 4,8,11 -> 3
    assert [model_bucket(str(i), NUM_BUCKETS) for i in (1, 2, 3, 4, 5, 6, 7, 9, 12, 13)] == [0, 1, 2, 3, 0, 1, 2, 0, 0, 1]
    name, table = f"b_{kind}", warehouse / f"b_{kind}"
    session.sql(ddl(name, kind, "'hoodie.compact.inline'='false'"))
    session.sql(f"INSERT INTO {name} VALUES (1,'a1',10,'a'), (2,'a2',10,'a'), (3,'a3',10,'a'), (5,'b5',10,'b')")
    expected = {1: ("a1", 10, "a"), 2: ("a2", 10, "a"), 3: ("a3", 10, "a"), 5: ("b5", 10, "b")}
    first = assert_bucket_layout(session, name, table)
    assert sorted(first) == [("dt=a", 0), ("dt=a", 1), ("dt=a", 2), ("dt=b", 0)]
    assert all(p.name.endswith(".parquet") for p in data_files(table))
    assert_rows(session, name, table, expected)

    # upsert: a newer and an older update, new keys in existing buckets (9, 12) and in new ones (4, 6)
    before = set(data_files(table))
    session.sql(f"INSERT INTO {name} VALUES (1,'a1-new',11,'a'), (2,'a2-old',9,'a'), (9,'a9',10,'a'), (4,'a4',10,'a'), "
                "(12,'b12',10,'b'), (6,'b6',10,'b')")
    expected.update({1: ("a1-new", 11, "a"), 9: ("a9", 10, "a"), 4: ("a4", 10, "a"), 12: ("b12", 10, "b"), 6: ("b6", 10, "b")})
    second = assert_bucket_layout(session, name, table)
    assert {k: v for k, v in second.items() if k in first} == first  # existing buckets keep their file group
    assert sorted(set(second) - set(first)) == [("dt=a", 3), ("dt=b", 1)]
    new_files = set(data_files(table)) - before
    new_parquet = {(p.parent.name, bucket_of_file_id(file_id(p))) for p in new_files if p.name.endswith(".parquet")}
    if kind == "mor":
        assert new_parquet == {("dt=a", 3), ("dt=b", 1)}  # only the new buckets get base files
        new_logs = {p for p in new_files if ".log." in p.name}
        assert {(p.parent.name, bucket_of_file_id(file_id(p))) for p in new_logs} == {("dt=a", 0), ("dt=a", 1), ("dt=b", 0)}
        assert sorted(k for p in new_logs for k in file_keys(p)) == ["1", "12", "2", "9"]
    else:
        assert new_parquet == {("dt=a", 0), ("dt=a", 1), ("dt=a", 3), ("dt=b", 0), ("dt=b", 1)}
    assert_rows(session, name, table, expected)

    session.sql(f"DELETE FROM {name} WHERE id = 3")
    del expected[3]
    assert_bucket_layout(session, name, table)
    assert_rows(session, name, table, expected)

    session.sql(
        f"MERGE INTO {name} t USING (SELECT * FROM VALUES (5, 'b5-m', 20, 'b', 'upd'), (9, 'x', 0, 'a', 'del'), "
        "(7, 'a7', 1, 'a', 'ins'), (13, 'b13', 1, 'b', 'ins') AS v(id, name, ts, dt, op)) s ON t.id = s.id "
        "WHEN MATCHED AND s.op = 'del' THEN DELETE WHEN MATCHED THEN UPDATE SET name = s.name, ts = s.ts "
        "WHEN NOT MATCHED THEN INSERT (id, name, ts, dt) VALUES (s.id, s.name, s.ts, s.dt)"
    )
    expected.update({5: ("b5-m", 20, "b"), 7: ("a7", 1, "a"), 13: ("b13", 1, "b")})
    del expected[9]
    final = assert_bucket_layout(session, name, table)
    assert final == second  # 7 and 13 land in buckets that have a group already
    assert_rows(session, name, table, expected)

    if kind == "mor":
        snapshot = sorted((k, *v) for k, v in expected.items())
        assert hudiql_rows(session, SELECT + f"{name}_ro") != snapshot  # logs are not compacted yet
        session.sql(f"CALL run_compaction(op => 'scheduleandexecute', table => '{name}')").collect()
        assert assert_bucket_layout(session, name, table) == final  # compaction keeps the file groups
        assert hudiql_rows(session, SELECT + f"{name}_ro") == snapshot
        assert official_rows(table, COLS, read_optimized=True) == snapshot
        assert_rows(session, name, table, expected)


@pytest.mark.parametrize("kind", ["mor", "cow"])
def test_one_upsert_keeps_one_row_per_key(session, warehouse, kind):
    # With the bucket index the precombine runs in the shuffle by file group: duplicates of a key
    # in one statement reduce to the greatest ts (ties: the later row), in existing and new buckets,
    # and a winning _hoodie_is_deleted row removes the key.
    name, table = f"dup_{kind}", warehouse / f"dup_{kind}"
    session.sql(
        f"CREATE TABLE {name} (id INT, name STRING, ts BIGINT, _hoodie_is_deleted BOOLEAN, dt STRING) USING hudi "
        f"PARTITIONED BY (dt) TBLPROPERTIES (primaryKey='id', preCombineField='ts', type='{kind}', "
        f"'hoodie.index.type'='BUCKET', 'hoodie.bucket.index.num.buckets'='{NUM_BUCKETS}', 'hoodie.compact.inline'='false')"
    )
    session.sql(f"INSERT INTO {name} VALUES (1,'a1',10,false,'a'), (2,'a2',10,false,'a'), (5,'b5',10,false,'b')")
    # 1: existing, the middle row has the greatest ts; 2: existing, a tie goes to the later row;
    # 5: existing, deleted by its newest row; 4 and 6: new buckets, a newer row and a newer delete;
    # 9: a new key in an existing bucket.
    session.sql(
        f"INSERT INTO {name} VALUES (1,'a1-x',11,false,'a'), (1,'a1-y',13,false,'a'), (1,'a1-z',12,false,'a'), "
        "(2,'a2-x',14,false,'a'), (2,'a2-y',14,false,'a'), (5,'b5-x',11,false,'b'), (5,'b5-gone',12,true,'b'), "
        "(4,'a4-x',3,false,'a'), (4,'a4-y',4,false,'a'), (6,'b6',1,false,'b'), (6,'b6-gone',2,true,'b'), "
        "(9,'a9-x',2,false,'a'), (9,'a9-y',1,false,'a')"
    )
    expected = {1: ("a1-y", 13, "a"), 2: ("a2-y", 14, "a"), 4: ("a4-y", 4, "a"), 9: ("a9-x", 2, "a")}
    assert_bucket_layout(session, name, table)
    assert_rows(session, name, table, expected)
    for p in data_files(table):
        keys = file_keys(p)
        assert len(keys) == len(set(keys)), (p.name, keys)  # each file holds a key once


@pytest.mark.parametrize("kind", ["mor", "cow"])
def test_new_file_groups_are_written_by_several_tasks(session, warehouse, kind):
    # Rows are shuffled into one partition per file group (bounded by the cores); left to
    # adaptive execution, a small write's shuffle folds into one task that writes every group.
    name, table = f"par_{kind}", warehouse / f"par_{kind}"
    session.sql(ddl(name, kind, "'hoodie.compact.inline'='false'", buckets=8))
    session.sql(f"INSERT INTO {name} VALUES (1,'a1',10,'a')")
    session.sql(f"INSERT INTO {name} SELECT id, concat('n', id), 10, 'a' FROM range(2, 202)")  # 7 new groups, 1 log
    bases = [p for p in data_files(table) if p.name.endswith(".parquet")]
    assert len({file_id(p) for p in bases}) == 8
    first = min(instants(table, "commit") + instants(table, "deltacommit"))
    write_tasks = {p.name.split("_")[1].split("-")[0] for p in bases if not p.name.endswith(f"{first}.parquet")}
    assert len(write_tasks) > 1, sorted(p.name for p in bases)
    assert hudiql_rows(session, f"SELECT count(*) FROM {name}") == [(201,)]


# ---- c) bad options ---------------------------------------------------------------------------------------------

BAD = [
    ("hoodie.bucket.index.num.buckets", "0"),
    ("hoodie.bucket.index.num.buckets", "x"),
    ("hoodie.bucket.index.hash.field", "name"),
    ("hoodie.index.type", "HBASE"),
    ("hoodie.index.bucket.engine", "CONSISTENT_HASHING"),
]
GOOD = {"hoodie.bucket.index.num.buckets": "4", "hoodie.bucket.index.hash.field": "id",
        "hoodie.index.type": "BUCKET", "hoodie.index.bucket.engine": "SIMPLE"}


def test_bad_bucket_options_are_clear_errors(session, warehouse):
    validated_at_create = {}
    for i, (option, value) in enumerate(BAD):
        props = {**GOOD, option: value}
        text = ", ".join(f"'{k}'='{v}'" for k, v in props.items())
        name = f"bad{i}"
        try:
            session.sql(f"CREATE TABLE {name} (id INT, name STRING, ts BIGINT) USING hudi "
                        f"TBLPROPERTIES (primaryKey='id', preCombineField='ts', {text})")
        except HudiqlError as exc:
            assert option in str(exc), str(exc)
            validated_at_create[option, value] = True
            assert not (warehouse / name / ".hoodie").exists() or session.sql(f"SELECT count(*) FROM {name}").first()[0] == 0
            continue
        validated_at_create[option, value] = False
        with pytest.raises(HudiqlError, match=re.escape(option)):
            session.sql(f"INSERT INTO {name} VALUES (1, 'a', 1)")
        assert session.sql(f"SELECT count(*) FROM {name}").first()[0] == 0
        assert data_files(warehouse / name) == [] and official_rows(warehouse / name, ["id"]) == []
    print("validated at CREATE TABLE:", validated_at_create)

    # the same options as session settings (which override table properties): SET refuses a value
    # that is bad on its own; one that is bad for this table fails the write, which leaves the table
    # as it was
    session.sql("CREATE TABLE good (id INT, name STRING, ts BIGINT) USING hudi TBLPROPERTIES (primaryKey='id', "
                "preCombineField='ts', type='mor', 'hoodie.index.type'='BUCKET', 'hoodie.bucket.index.num.buckets'='4')")
    session.sql("INSERT INTO good VALUES (1, 'a', 1), (2, 'b', 1)")
    files = data_files(warehouse / "good")
    for option, value in BAD:
        try:
            session.sql(f"SET {option}={value}")
        except HudiqlError as exc:
            assert option in str(exc) and session.conf.get(option) is None
            continue
        with pytest.raises(HudiqlError, match=re.escape(option)):
            session.sql("INSERT INTO good VALUES (1, 'a2', 2), (3, 'c', 1)")
        session.sql(f"SET {option}={GOOD[option]}")
        assert hudiql_rows(session, "SELECT id, name, ts FROM good") == [(1, "a", 1), (2, "b", 1)]
        assert data_files(warehouse / "good") == files
    assert official_rows(warehouse / "good", ["id", "name", "ts"]) == [(1, "a", 1), (2, "b", 1)]
    session.sql("INSERT INTO good VALUES (1, 'a2', 2), (3, 'c', 1)")  # the good settings write again
    assert hudiql_rows(session, "SELECT id, name, ts FROM good") == [(1, "a2", 2), (2, "b", 1), (3, "c", 1)]


def test_changing_the_bucket_count_does_not_duplicate_keys(session, warehouse):
    assert (model_bucket("5", 4), model_bucket("5", 8)) == (0, 4)
    session.sql("CREATE TABLE rb (id INT, name STRING, ts BIGINT) USING hudi TBLPROPERTIES (primaryKey='id', "
                "preCombineField='ts', 'hoodie.index.type'='BUCKET', 'hoodie.bucket.index.num.buckets'='4')")
    session.sql("INSERT INTO rb VALUES (5, 'a', 1)")
    session.sql("SET hoodie.bucket.index.num.buckets=8")
    try:
        session.sql("INSERT INTO rb VALUES (5, 'b', 2)")
        expected = [(5, "b", 2)]
    except HudiqlError as exc:  # refusing the write is fine too
        assert "hoodie.bucket.index.num.buckets" in str(exc)
        expected = [(5, "a", 1)]
    assert hudiql_rows(session, "SELECT id, name, ts FROM rb") == expected
    assert official_rows(warehouse / "rb", ["id", "name", "ts"]) == expected
