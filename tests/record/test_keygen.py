"""Unit tests of ``hudiql.record.keygen``: the key generator a table's config names (simple,
complex, non-partitioned, timestamp-based; v6 class names and v8 types), the record key (a bare
value, or ``f1:v1,f2:v2`` with ``__null__`` / ``__empty__`` parts; a null or empty key fails the
write), the partition path (hive style, URL encoding, ``__HIVE_DEFAULT_PARTITION__``, the UTC
formats of timestamp-based tables whatever the session time zone), and the partition values a
path stands for. The keys and paths of the tables Apache Hudi wrote are the reference; the key
and path expressions run on the session's Spark, the rest without it.
"""

from __future__ import annotations

import glob
import re
from datetime import date, datetime, timezone
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import HUDI_TABLES, unzip
from hudiql.errors import NULL_KEY_ERROR, DataError, from_spark_error
from hudiql.io.storage import Storage
from hudiql.config import table_config as C
from hudiql.record.keygen import KeyGenerator

SAMPLE = HUDI_TABLES / "sample_table"
TRIPS = HUDI_TABLES / "quickstart_trips_table" / "mor" / "avro"
DEFAULT = "__HIVE_DEFAULT_PARTITION__"


def keygen(keys=("id",), partitions=("p",), class_name=C.SIMPLE_KEYGEN, hive=False, url=False, **timestamp):
    return KeyGenerator(tuple(keys), tuple(partitions), class_name, hive, url, **timestamp)


def record_keys(spark, generator, schema, rows) -> list[str]:
    df = spark.createDataFrame(rows, schema)
    return [r[0] for r in df.select(generator.record_key()).collect()]


def partition_paths(spark, generator, schema, rows) -> list[str]:
    df = spark.createDataFrame(rows, schema)
    return [r[0] for r in df.select(generator.partition_path(df.schema)).collect()]


# ---- the generator a table's config names -----------------------------------------------------

@pytest.mark.parametrize(
    ("zipped", "expected"),
    [
        (SAMPLE / "cow" / "v6_complexkeygen_hivestyle.zip",
         keygen(("id", "name"), ("byteField", "shortField"), C.COMPLEX_KEYGEN, hive=True)),
        (SAMPLE / "cow" / "v6_simplekeygen_nonhivestyle.zip", keygen(("id",), ("byteField",))),
        (SAMPLE / "cow" / "v6_nonpartitioned.zip", keygen(("id",), (), C.NONPARTITIONED_KEYGEN, hive=True)),
        (SAMPLE / "cow" / "v6_timebasedkeygen_nonhivestyle.zip",
         keygen(("id",), ("ts_str",), C.TIMESTAMP_KEYGEN, timestamp_output_format="yyyy/MM/dd/HH",
                timestamp_input_format="yyyy-MM-dd'T'HH:mm:ss.SSSZ")),
        (TRIPS / "v6_trips_8i1u.zip", keygen(("uuid",), ("city",), hive=True)),
        # v8 names a type instead of a class
        (SAMPLE / "cow" / "v8_complexkeygen_hivestyle.zip",
         keygen(("id", "name"), ("byteField", "shortField"), C.COMPLEX_KEYGEN, hive=True)),
        (SAMPLE / "cow" / "v8_nonpartitioned.zip", keygen(("id",), (), C.NONPARTITIONED_KEYGEN, hive=True)),
    ],
    ids=lambda v: getattr(v, "stem", None),
)
def test_the_key_generator_of_a_hudi_table(tmp_path, zipped, expected):
    config = C.TableConfig.load(Storage(str(unzip(zipped, tmp_path))))
    assert KeyGenerator.from_config(config) == expected


@pytest.mark.parametrize(
    ("class_name", "fields", "partitioned", "timestamp_based"),
    [
        (C.SIMPLE_KEYGEN, ("p",), True, False),
        (C.COMPLEX_KEYGEN, ("p", "q"), True, False),
        (C.TIMESTAMP_KEYGEN, ("ts",), True, True),
        (C.NONPARTITIONED_KEYGEN, (), False, False),
        (C.NONPARTITIONED_KEYGEN, ("p",), False, False),  # the class decides, not the stray field
        (C.SIMPLE_KEYGEN, (), False, False),
    ],
)
def test_kinds_of_key_generators(class_name, fields, partitioned, timestamp_based):
    generator = keygen(partitions=fields, class_name=class_name)
    assert (generator.is_partitioned, generator.is_timestamp_based) == (partitioned, timestamp_based)


# ---- keys and paths as Apache Hudi wrote them --------------------------------------------------------

@pytest.mark.parametrize(
    "zipped",
    [SAMPLE / "cow" / f"{name}.zip" for name in (
        "v6_complexkeygen_hivestyle", "v6_simplekeygen_nonhivestyle", "v6_nonpartitioned",
        "v6_timebasedkeygen_nonhivestyle", "v8_complexkeygen_hivestyle", "v8_simplekeygen_nonhivestyle")]
    + [TRIPS / "v6_trips_8i1u.zip"],
    ids=lambda p: p.stem,
)
def test_record_keys_and_partition_paths_are_those_hudi_wrote(spark, tmp_path, zipped):
    path = unzip(zipped, tmp_path)
    generator = KeyGenerator.from_config(C.TableConfig.load(Storage(str(path))))
    columns = ["_hoodie_record_key", "_hoodie_partition_path",
               *generator.record_key_fields, *(f for f in generator.partition_fields if generator.is_partitioned)]
    files = glob.glob(f"{path}/**/*.parquet", recursive=True)
    rows = pa.concat_tables([pq.read_table(f, columns=list(dict.fromkeys(columns))) for f in files])
    df = spark.createDataFrame(rows)
    got = df.select("_hoodie_record_key", "_hoodie_partition_path",
                    generator.record_key(), generator.partition_path(df.schema)).collect()
    assert len(got) >= 4
    assert [(r[2], r[3]) for r in got] == [(r[0], r[1]) for r in got]


# ---- record keys ----------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("keys", "schema", "rows", "expected"),
    [
        (("id",), "id INT", [(7,)], ["7"]),
        (("id",), "id STRING", [("a,b:c",)], ["a,b:c"]),  # one field: the bare value, nothing escaped
        (("id",), "id DECIMAL(6,2)", [(Decimal("12.50"),)], ["12.50"]),
        (("id", "name"), "id INT, name STRING", [(1, "Alice")], ["id:1,name:Alice"]),
        (("id", "name"), "id INT, name STRING", [(None, "Bob")], ["id:__null__,name:Bob"]),
        (("id", "name"), "id INT, name STRING", [(2, "")], ["id:2,name:__empty__"]),
        (("name", "id"), "id INT, name STRING", [(3, "Carol")], ["name:Carol,id:3"]),  # in the key's order
    ],
)
def test_record_key(spark, keys, schema, rows, expected):
    assert record_keys(spark, keygen(keys), schema, rows) == expected


@pytest.mark.parametrize(
    ("keys", "rows", "message"),
    [
        (("id",), [(None, "a")], "record key field 'id' is null or empty"),
        (("name",), [(1, "")], "record key field 'name' is null or empty"),
        (("id", "name"), [(None, "")], "every record key field (id, name) is null or empty"),
    ],
)
def test_a_row_without_a_record_key_fails_the_write(spark, keys, rows, message):
    with pytest.raises(Exception, match=re.escape(f"{NULL_KEY_ERROR}: {message}")) as failure:
        record_keys(spark, keygen(keys), "id INT, name STRING", [(1, "ok"), *rows])
    error = from_spark_error(failure.value)  # what the driver makes of the task's failure
    assert isinstance(error, DataError) and str(error).startswith(message)


def test_the_error_for_a_missing_record_key_is_one_clean_line(spark):
    with pytest.raises(Exception) as failure:
        record_keys(spark, keygen(), "id INT, name STRING", [(None, "a")])
    assert str(from_spark_error(failure.value)) == (
        "record key field 'id' is null or empty; every row needs a record key value")


# ---- partition paths -------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("partitions", "hive", "url", "rows", "expected"),
    [
        (("p",), False, False, [("2024-05-01", 1)], ["2024-05-01"]),
        (("p",), True, False, [("2024-05-01", 1)], ["p=2024-05-01"]),
        (("p", "n"), False, False, [("x", 10)], ["x/10"]),
        (("p", "n"), True, False, [("x", 10)], ["p=x/n=10"]),
        (("p",), False, False, [(None, 1), ("", 1)], [DEFAULT, DEFAULT]),
        (("p", "n"), True, False, [(None, None)], [f"p={DEFAULT}/n={DEFAULT}"]),
        (("p",), False, False, [("a/b", 1)], ["a/b"]),  # not encoded: a nested folder, as in Hudi
        (("p",), False, True, [("a/b=c#d%e:f", 1)], ["a%2Fb%3Dc%23d%25e%3Af"]),
        (("p",), True, True, [(None, 1)], [f"p={DEFAULT}"]),
    ],
)
def test_partition_path(spark, partitions, hive, url, rows, expected):
    generator = keygen(partitions=partitions, hive=hive, url=url)
    assert partition_paths(spark, generator, "p STRING, n INT", rows) == expected


def test_url_encoded_partition_path_escapes_as_hudi_does(spark):
    generator = keygen(url=True)
    rows = [("2024-05-01 10:00:00", 1), ("a*b é", 1)]
    assert partition_paths(spark, generator, "p STRING, n INT", rows) == ["2024-05-01 10%3A00%3A00", "a%2Ab é"]


def test_a_non_partitioned_table_has_the_empty_path(spark):
    generator = keygen(partitions=("p",), class_name=C.NONPARTITIONED_KEYGEN, hive=True)
    assert partition_paths(spark, generator, "p STRING, n INT", [("x", 1)]) == [""]


@pytest.fixture
def los_angeles(spark):
    """A session time zone far from UTC (UTC-7 in May): timestamp-based paths must not follow it."""
    before = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")
    yield spark
    spark.conf.set("spark.sql.session.timeZone", before)


MAY_1_1030_UTC = datetime(2024, 5, 1, 10, 30, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    ("ddl", "value", "settings", "expected"),
    [
        ("DATE", date(2024, 5, 1), {"timestamp_output_format": "yyyyMMdd", "timestamp_type": "SCALAR"}, "20240501"),
        ("TIMESTAMP", MAY_1_1030_UTC, {}, "2024050110"),  # yyyyMMddHH unless told
        ("TIMESTAMP_NTZ", datetime(2024, 5, 1, 10, 30), {}, "2024050110"),
        ("BIGINT", 1714559400000, {"timestamp_type": "EPOCHMILLISECONDS"}, "2024050110"),
        ("BIGINT", 1714559400000, {}, "2024050110"),  # EPOCHMILLISECONDS unless told
        ("BIGINT", 1714559400, {"timestamp_type": "UNIX_TIMESTAMP"}, "2024050110"),
        ("INT", 19844, {"timestamp_type": "SCALAR", "timestamp_output_format": "yyyy/MM/dd"}, "2024/05/01"),  # days
        ("STRING", "2024-05-01T03:30:00.000-0700", {"timestamp_type": "DATE_STRING",
                                                    "timestamp_input_format": "yyyy-MM-dd'T'HH:mm:ss.SSSZ"},
         "2024050110"),
        ("TIMESTAMP", None, {}, DEFAULT),
    ],
)
def test_timestamp_based_partition_path_is_the_utc_time_formatted(los_angeles, ddl, value, settings, expected):
    generator = keygen(partitions=("ts",), class_name=C.TIMESTAMP_KEYGEN, **settings)
    assert partition_paths(los_angeles, generator, f"ts {ddl}", [(value,)]) == [expected]


@pytest.mark.parametrize(
    ("value", "input_format"), [("2024-05-01 10:30:00", None), ("01/05/2024 10", "dd/MM/yyyy HH")])
def test_timestamp_based_path_of_a_string_without_offset_reads_it_as_utc(los_angeles, value, input_format):
    generator = keygen(partitions=("ts",), class_name=C.TIMESTAMP_KEYGEN, timestamp_type="DATE_STRING",
                       timestamp_input_format=input_format)
    assert partition_paths(los_angeles, generator, "ts STRING", [(value,)]) == ["2024050110"]


def test_timestamp_based_hive_style_path(spark):
    generator = keygen(partitions=("ts",), class_name=C.TIMESTAMP_KEYGEN, hive=True,
                       timestamp_output_format="yyyy-MM-dd")
    assert partition_paths(spark, generator, "ts TIMESTAMP", [(MAY_1_1030_UTC,)]) == ["ts=2024-05-01"]


# ---- the values a partition path stands for ----------------------------------------------------

@pytest.mark.parametrize(
    ("generator", "path", "expected"),
    [
        (keygen(partitions=("dt",), hive=True), "dt=2024-05-01", {"dt": "2024-05-01"}),
        (keygen(partitions=("dt",)), "2024-05-01", {"dt": "2024-05-01"}),
        (keygen(partitions=("a", "b"), class_name=C.COMPLEX_KEYGEN), "x/10", {"a": "x", "b": "10"}),
        (keygen(partitions=("a", "b"), class_name=C.COMPLEX_KEYGEN, hive=True), "a=x/b=10", {"a": "x", "b": "10"}),
        (keygen(partitions=("dt",), hive=True), f"dt={DEFAULT}", {"dt": None}),
        (keygen(partitions=("a", "b"), class_name=C.COMPLEX_KEYGEN), f"{DEFAULT}/1", {"a": None, "b": "1"}),
        (keygen(url=True), "a%2Fb%3Dc%3A00", {"p": "a/b=c:00"}),
        (keygen(url=False), "a%2Fb", {"p": "a%2Fb"}),
        # paths that cannot say
        (keygen(partitions=("dt",), hive=True), "other=1", None),
        (keygen(partitions=("a", "b"), class_name=C.COMPLEX_KEYGEN), "x", None),
        (keygen(partitions=("a", "b"), class_name=C.COMPLEX_KEYGEN), "x/y/z", None),
        (keygen(partitions=("ts",), class_name=C.TIMESTAMP_KEYGEN), "2024050110", None),  # a formatted value
        (keygen(partitions=(), class_name=C.NONPARTITIONED_KEYGEN), "", None),
    ],
)
def test_partition_values_of_a_path(generator, path, expected):
    assert generator.partition_values(path) == expected


def test_partition_values_decode_a_path_as_hudi_encoded_it():
    assert keygen(url=True).partition_values("a+b c") == {"p": "a+b c"}
