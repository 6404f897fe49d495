"""Table option derivation (``hudiql.sql.options.derive_table_properties``), at unit level.

No SparkSession: only pyspark's type classes. Each test builds a ``TableDefinition`` the way
the parser does for a CREATE TABLE and checks the ``hoodie.properties`` it derives.
"""

from __future__ import annotations

import json

import pytest
from pyspark.sql import types as T

from hudiql.config.registry import validate_table_options
from hudiql.errors import ColumnError, HudiqlError, OptionError
from hudiql.sql.options import FLINK, SPARK, TableDefinition, derive_table_properties

KEYGEN = "hoodie.table.keygenerator.class"
SIMPLE = "org.apache.hudi.keygen.SimpleKeyGenerator"
COMPLEX = "org.apache.hudi.keygen.ComplexKeyGenerator"
NONPARTITIONED = "org.apache.hudi.keygen.NonpartitionedKeyGenerator"
TIMESTAMP_BASED = "org.apache.hudi.keygen.TimestampBasedKeyGenerator"
CUSTOM = "org.apache.hudi.keygen.CustomKeyGenerator"
DEFAULT_PAYLOAD = "org.apache.hudi.common.model.DefaultHoodieRecordPayload"
OVERWRITE_PAYLOAD = "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload"
EVENT_TIME_PAYLOAD = "org.apache.hudi.common.model.EventTimeAvroPayload"
RECORD_KEY = "hoodie.table.recordkey.fields"
PARTITION = "hoodie.table.partition.fields"
PRECOMBINE = "hoodie.table.precombine.field"
PAYLOAD = "hoodie.compaction.payload.class"
PAYLOAD_ORDERING = "hoodie.payload.ordering.field"
MERGE_MODE = "hoodie.record.merge.mode"
HIVE_STYLE = "hoodie.datasource.write.hive_style_partitioning"
TABLE_TYPE = "hoodie.table.type"
TS_OUTPUT_FORMAT = "hoodie.keygen.timebased.output.dateformat"
TS_OUTPUT_TZ = "hoodie.keygen.timebased.output.timezone"
TS_TYPE = "hoodie.keygen.timebased.timestamp.type"


def schema(**columns: T.DataType) -> T.StructType:
    return T.StructType([T.StructField(name, dtype, True) for name, dtype in columns.items()])


#: id, name, ts, dt(string), day(date), at(timestamp), region(string)
SCHEMA = schema(
    id=T.IntegerType(), name=T.StringType(), ts=T.LongType(), dt=T.StringType(),
    day=T.DateType(), at=T.TimestampType(), region=T.StringType(),
)


def derive(primary_key=(), partitioned_by=(), options=None, dialect=SPARK, columns=SCHEMA, name="t"):
    return derive_table_properties(TableDefinition(
        name=name, database="default", schema=columns, primary_key=list(primary_key),
        partitioned_by=list(partitioned_by), options=dict(options or {}), dialect=dialect,
    ))


def props_of(**kwargs) -> dict[str, str]:
    return derive(**kwargs)[0]


# ---- record key and partition fields ---------------------------------------------------------------


def test_primary_key_beats_recordkey_option():
    props = props_of(primary_key=["id"], options={"hoodie.datasource.write.recordkey.field": "name"})
    assert props[RECORD_KEY] == "id"


def test_recordkey_option_used_without_primary_key():
    for key in ("primaryKey", "hoodie.datasource.write.recordkey.field", "hoodie.table.recordkey.fields"):
        assert props_of(options={key: "name"})[RECORD_KEY] == "name", key


def test_composite_primary_key_keeps_order():
    assert props_of(primary_key=["region", "id"])[RECORD_KEY] == "region,id"


def test_no_record_key_writes_no_recordkey_property():
    props = props_of()
    assert RECORD_KEY not in props


def test_partitioned_by_beats_partitionpath_option():
    props = props_of(
        primary_key=["id"], partitioned_by=["dt"],
        options={"hoodie.datasource.write.partitionpath.field": "region"},
    )
    assert props[PARTITION] == "dt"


def test_partitionpath_option_used_without_partitioned_by():
    props = props_of(primary_key=["id"], options={"hoodie.datasource.write.partitionpath.field": "region"})
    assert props[PARTITION] == "region"
    assert props[KEYGEN] == SIMPLE


def test_column_names_are_matched_case_insensitively_and_stored_as_declared():
    props = props_of(primary_key=["ID"], partitioned_by=["DT"], options={"preCombineField": "TS"})
    assert (props[RECORD_KEY], props[PARTITION], props[PRECOMBINE]) == ("id", "dt", "ts")


# ---- key generator ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("primary_key", "partitioned_by", "expected"),
    [
        (["id"], [], NONPARTITIONED),
        (["id", "name"], [], NONPARTITIONED),
        ([], [], NONPARTITIONED),
        (["id"], ["dt"], SIMPLE),
        ([], ["dt"], SIMPLE),
        (["id"], ["day"], TIMESTAMP_BASED),
        ([], ["day"], TIMESTAMP_BASED),
        (["id"], ["at"], TIMESTAMP_BASED),
        (["id", "name"], ["day"], COMPLEX),
        (["id", "name"], ["dt"], COMPLEX),
        (["id"], ["dt", "region"], COMPLEX),
        (["id"], ["day", "region"], COMPLEX),
    ],
)
def test_derived_key_generator(primary_key, partitioned_by, expected):
    assert props_of(primary_key=primary_key, partitioned_by=partitioned_by)[KEYGEN] == expected


def test_date_partition_timestamp_keygen_options():
    props = props_of(primary_key=["id"], partitioned_by=["day"])
    assert props[TS_OUTPUT_FORMAT] == "yyyyMMdd"
    assert props[TS_OUTPUT_TZ] == "UTC"
    assert props[TS_TYPE] == "SCALAR"
    assert props["hoodie.keygen.timebased.timestamp.scalar.time.unit"] == "DAYS"


def test_timestamp_partition_timestamp_keygen_options():
    props = props_of(primary_key=["id"], partitioned_by=["at"])
    assert props[TS_OUTPUT_FORMAT] == "yyyyMMddHH"
    assert props[TS_OUTPUT_TZ] == "UTC"
    assert "hoodie.keygen.timebased.timestamp.scalar.time.unit" not in props


def test_non_timestamp_keygen_writes_no_timebased_options():
    for kwargs in ({"primary_key": ["id"], "partitioned_by": ["dt"]}, {"primary_key": ["id", "name"], "partitioned_by": ["day"]}):
        props = props_of(**kwargs)
        assert not [k for k in props if k.startswith("hoodie.keygen.timebased.")], kwargs


@pytest.mark.parametrize("key", ["hoodie.datasource.write.keygenerator.class", "hoodie.table.keygenerator.class"])
def test_short_keygen_class_name_gets_the_hudi_package(key):
    assert props_of(primary_key=["id"], partitioned_by=["dt"], options={key: "ComplexKeyGenerator"})[KEYGEN] == COMPLEX


@pytest.mark.parametrize("key", ["hoodie.datasource.write.keygenerator.class", "hoodie.table.keygenerator.class"])
def test_unknown_keygen_class_is_refused(key):
    with pytest.raises(OptionError, match=rf"^{key}=com\.acme\.MyKeyGen is not valid; use .*SimpleKeyGenerator"):
        props_of(primary_key=["id"], partitioned_by=["dt"], options={key: "com.acme.MyKeyGen"})


@pytest.mark.parametrize("key", ["hoodie.datasource.write.keygenerator.class", "hoodie.table.keygenerator.class"])
def test_explicit_keygen_wins(key):
    props = props_of(primary_key=["id"], partitioned_by=["day"], options={key: CUSTOM})
    assert props[KEYGEN] == CUSTOM
    assert TS_OUTPUT_FORMAT not in props  # no timestamp options for a key generator nobody chose
    props = props_of(primary_key=["id"], partitioned_by=["dt"], options={key: COMPLEX})
    assert props[KEYGEN] == COMPLEX


def test_explicit_timestamp_output_format_is_kept():
    props = props_of(primary_key=["id"], partitioned_by=["day"], options={TS_OUTPUT_FORMAT: "yyyy/MM/dd"})
    assert props[KEYGEN] == TIMESTAMP_BASED
    assert props[TS_OUTPUT_FORMAT] == "yyyy/MM/dd"


def test_explicit_timestamp_keygen_without_partition_is_a_clear_error():
    # A user error (TimestampBased needs a partition field) must be a HudiqlError, not an IndexError.
    with pytest.raises(HudiqlError):
        props_of(primary_key=["id"], options={"hoodie.datasource.write.keygenerator.class": TIMESTAMP_BASED})


# ---- ordering field and payload ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "key",
    [
        "preCombineField", "orderingFields", "precombine.field", "write.precombine.field",
        "hoodie.datasource.write.precombine.field", "hoodie.table.precombine.field",
    ],
)
def test_ordering_field_from_each_spelling(key):
    props = props_of(primary_key=["id"], options={key: "ts"})
    assert props[PRECOMBINE] == "ts"
    assert props[PAYLOAD_ORDERING] == "ts"
    assert props[PAYLOAD] == DEFAULT_PAYLOAD
    assert props[MERGE_MODE] == "EVENT_TIME_ORDERING"


def test_no_ordering_field_means_commit_time_ordering_and_no_hidden_default():
    props = props_of(primary_key=["id"])
    assert PRECOMBINE not in props
    assert PAYLOAD_ORDERING not in props
    assert props[PAYLOAD] == OVERWRITE_PAYLOAD
    assert props[MERGE_MODE] == "COMMIT_TIME_ORDERING"


def test_no_ordering_field_even_with_a_ts_column():
    # Hudi's old hidden default ('ts') must not come back.
    columns = schema(id=T.IntegerType(), ts=T.LongType())
    props = props_of(primary_key=["id"], columns=columns)
    assert PRECOMBINE not in props
    assert props[MERGE_MODE] == "COMMIT_TIME_ORDERING"


def test_payload_ordering_field_must_be_the_ordering_field():
    # hudiql orders by the ordering field; another payload ordering field would be ignored in silence.
    props = props_of(primary_key=["id"], options={"preCombineField": "ts", PAYLOAD_ORDERING: "TS"})
    assert props[PRECOMBINE] == "ts" and props[PAYLOAD_ORDERING] == "ts"
    with pytest.raises(OptionError) as info:
        props_of(primary_key=["id"], options={"preCombineField": "ts", PAYLOAD_ORDERING: "name"})
    assert str(info.value) == (
        "hoodie.payload.ordering.field=name is not supported: hudiql orders records by the ordering field (ts); "
        "leave it out, or set preCombineField instead"
    )
    with pytest.raises(OptionError, match="none is set"):
        props_of(primary_key=["id"], options={PAYLOAD_ORDERING: "ts"})


@pytest.mark.parametrize("key", ["recordMergeMode", MERGE_MODE])
def test_explicit_merge_mode_picks_the_payload(key):
    props = props_of(primary_key=["id"], options={"preCombineField": "ts", key: "COMMIT_TIME_ORDERING"})
    assert (props[PAYLOAD], props[MERGE_MODE]) == (OVERWRITE_PAYLOAD, "COMMIT_TIME_ORDERING")
    props = props_of(primary_key=["id"], options={"preCombineField": "ts", key: "event_time_ordering"})
    assert (props[PAYLOAD], props[MERGE_MODE]) == (DEFAULT_PAYLOAD, "EVENT_TIME_ORDERING")
    props = props_of(primary_key=["id"], options={key: "COMMIT_TIME_ORDERING"})
    assert (props[PAYLOAD], props[MERGE_MODE]) == (OVERWRITE_PAYLOAD, "COMMIT_TIME_ORDERING")


@pytest.mark.parametrize("key", ["payloadType", "hoodie.datasource.write.payload.type", "hoodie.compaction.payload.type"])
def test_a_payload_type_picks_its_payload_class(key):
    props = props_of(primary_key=["id"], options={"preCombineField": "ts", key: "OVERWRITE_LATEST_AVRO"})
    assert (props[PAYLOAD], props[MERGE_MODE], key in props) == (OVERWRITE_PAYLOAD, "COMMIT_TIME_ORDERING", False)
    props = props_of(primary_key=["id"], options={"preCombineField": "ts", key: "hoodie_avro_default"})
    assert (props[PAYLOAD], props[MERGE_MODE]) == (DEFAULT_PAYLOAD, "EVENT_TIME_ORDERING")
    with pytest.raises(OptionError, match=f"{key}=PARTIAL_UPDATE_AVRO is not supported: hudiql merges by HOODIE_AVRO_DEFAULT"):
        props_of(primary_key=["id"], options={key: "PARTIAL_UPDATE_AVRO"})
    with pytest.raises(OptionError, match="name different payloads; give one of them"):
        props_of(primary_key=["id"], options={"preCombineField": "ts", key: "EVENT_TIME_AVRO",
                                              "payloadClass": "DefaultHoodieRecordPayload"})


def test_merge_mode_that_cannot_be_honoured_is_refused():
    with pytest.raises(OptionError) as info:
        props_of(primary_key=["id"], options={"recordMergeMode": "EVENT_TIME_ORDERING"})
    assert str(info.value) == "recordMergeMode=EVENT_TIME_ORDERING needs an ordering field; add preCombineField='<column>'"
    with pytest.raises(OptionError) as info:
        props_of(primary_key=["id"], options={"preCombineField": "ts", "recordMergeMode": "COMMIT_TIME_ORDERING",
                                              "payloadClass": "DefaultHoodieRecordPayload"})
    assert str(info.value) == (
        "recordMergeMode=COMMIT_TIME_ORDERING does not match payloadClass=DefaultHoodieRecordPayload, "
        "which merges by EVENT_TIME_ORDERING; leave one of them out"
    )
    with pytest.raises(OptionError, match="custom mergers are not supported"):
        props_of(primary_key=["id"], options={"preCombineField": "ts", MERGE_MODE: "CUSTOM"})


def test_unknown_payload_class_is_refused():
    with pytest.raises(OptionError) as info:
        props_of(primary_key=["id"], options={"preCombineField": "ts", "payloadClass": "PartialUpdateAvroPayload"})
    message = str(info.value)
    assert message.startswith("payloadClass=PartialUpdateAvroPayload is not valid; use ")
    assert "DefaultHoodieRecordPayload" in message and "EventTimeAvroPayload" in message


@pytest.mark.parametrize("key", ["payloadClass", "payload.class", "hoodie.datasource.write.payload.class",
                                 "hoodie.compaction.payload.class"])
def test_explicit_payload_class_wins(key):
    props = props_of(primary_key=["id"], options={"preCombineField": "ts", key: OVERWRITE_PAYLOAD})
    assert props[PAYLOAD] == OVERWRITE_PAYLOAD
    assert props[MERGE_MODE] == "COMMIT_TIME_ORDERING"  # readers infer commit time from this payload
    props = props_of(primary_key=["id"], options={"preCombineField": "ts", key: EVENT_TIME_PAYLOAD})
    assert props[PAYLOAD] == EVENT_TIME_PAYLOAD
    assert props[MERGE_MODE] == "EVENT_TIME_ORDERING"


def test_short_payload_class_name_gets_the_hudi_package():
    props = props_of(primary_key=["id"], options={"preCombineField": "ts", "payloadClass": "EventTimeAvroPayload"})
    assert props[PAYLOAD] == EVENT_TIME_PAYLOAD


def test_several_ordering_fields_are_rejected_on_v6():
    with pytest.raises(OptionError, match="one ordering field"):
        props_of(primary_key=["id"], options={"orderingFields": "ts,name"})


# ---- validation -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "kind", "missing"),
    [
        ({"primary_key": ["uid"]}, "record key", "uid"),
        ({"options": {"primaryKey": "uid"}}, "record key", "uid"),
        ({"primary_key": ["id"], "partitioned_by": ["part"]}, "partition", "part"),
        ({"primary_key": ["id"], "options": {"hoodie.datasource.write.partitionpath.field": "part"}}, "partition", "part"),
        ({"primary_key": ["id"], "options": {"preCombineField": "version"}}, "ordering", "version"),
    ],
)
def test_missing_column_error_names_it_and_lists_columns(kwargs, kind, missing):
    with pytest.raises(ColumnError) as info:
        props_of(**kwargs)
    message = str(info.value)
    assert f"'{missing}'" in message
    assert kind in message
    assert "id, name, ts, dt, day, at, region" in message


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({}, "COPY_ON_WRITE"),
        ({"type": "cow"}, "COPY_ON_WRITE"),
        ({"type": "mor"}, "MERGE_ON_READ"),
        ({"type": "MOR"}, "MERGE_ON_READ"),
        ({"table.type": "MERGE_ON_READ"}, "MERGE_ON_READ"),
        ({"table.type": "COPY_ON_WRITE"}, "COPY_ON_WRITE"),
        ({"hoodie.datasource.write.table.type": "MERGE_ON_READ"}, "MERGE_ON_READ"),
    ],
)
def test_table_type(options, expected):
    assert props_of(primary_key=["id"], options=options)[TABLE_TYPE] == expected


def test_bad_table_type_is_rejected():
    with pytest.raises(OptionError) as info:
        props_of(primary_key=["id"], options={"type": "merge"})
    message = str(info.value)
    assert message.startswith("type=merge is not valid; use ") and "cow" in message and "mor" in message


def test_unknown_short_option_suggests_precombinefield():
    with pytest.raises(OptionError) as info:
        props_of(primary_key=["id"], options={"precombineKey": "ts"})
    message = str(info.value)
    assert "precombineKey" in message
    assert "'preCombineField'" in message


def test_unknown_short_option_suggests_primarykey():
    with pytest.raises(OptionError, match="primaryKey"):
        props_of(options={"primary_key": "id"})


def test_implemented_hoodie_option_is_passed_through():
    props = props_of(primary_key=["id"], options={"hoodie.index.type": "bucket", "hoodie.parquet.max.file.size": "1048576"})
    assert props["hoodie.index.type"] == "bucket"
    assert props["hoodie.parquet.max.file.size"] == "1048576"


@pytest.mark.parametrize("key", ["hoodie.index.type", "index.type"])
def test_an_index_hudiql_does_not_have_is_refused_at_create(key):
    with pytest.raises(OptionError) as info:
        props_of(primary_key=["id"], options={key: "HBASE"})
    assert str(info.value) == (
        f"{key}=HBASE is not valid; use SIMPLE, BUCKET, RECORD_INDEX, BLOOM, GLOBAL_SIMPLE or GLOBAL_BLOOM"
    )
    assert props_of(primary_key=["id"], options={"hoodie.index.type": "GLOBAL_BLOOM"})["hoodie.index.type"] == "GLOBAL_BLOOM"


def test_unknown_hoodie_option_names_the_closest_key():
    with pytest.raises(OptionError) as info:
        props_of(primary_key=["id"], options={"hoodie.parquet.small.file.limt": "0"})
    assert str(info.value) == "unknown table option 'hoodie.parquet.small.file.limt'; did you mean 'hoodie.parquet.small.file.limit'?"


def test_bad_number_fails_the_create_not_the_first_write():
    with pytest.raises(OptionError) as info:
        props_of(primary_key=["id"], options={"hoodie.parquet.max.file.size": "big"})
    assert str(info.value) == (
        "hoodie.parquet.max.file.size=big is not valid; give a whole number of bytes, at least 1 (default 125829120)"
    )


@pytest.mark.parametrize("key", ["hoodie.table.name", "hoodie.database.name", "hoodie.table.create.schema",
                                 "hoodie.table.checksum"])
def test_properties_hudiql_writes_from_the_statement_are_refused(key):
    with pytest.raises(OptionError) as info:
        props_of(primary_key=["id"], options={key: "x"})
    assert str(info.value) == f"{key} is written by hudiql from the CREATE TABLE statement; remove the option"


def test_derived_properties_can_be_given_back():
    # SHOW CREATE TABLE repeats every derived property but the ones written from the statement:
    # running its output again must give the same table.
    first = props_of(primary_key=["id"], partitioned_by=["day"], options={"preCombineField": "ts", "type": "mor"})
    written = {"hoodie.table.name", "hoodie.database.name", "hoodie.table.create.schema"}
    again = props_of(primary_key=["id"], partitioned_by=["day"], options={k: v for k, v in first.items() if k not in written})
    assert again == first


def test_session_option_is_not_a_table_option():
    with pytest.raises(OptionError) as info:
        props_of(primary_key=["id"], options={"hoodie.datasource.query.type": "read_optimized"})
    assert str(info.value) == (
        "hoodie.datasource.query.type is a session option, not a table option; "
        "give it with SET hoodie.datasource.query.type=read_optimized"
    )


def test_short_options_are_not_stored_as_properties():
    props = props_of(primary_key=["id"], options={"primaryKey": "id", "preCombineField": "ts", "type": "cow"})
    assert not {"primaryKey", "preCombineField", "type"} & set(props)


def test_mor_table_compacts_inline_by_default():
    assert props_of(primary_key=["id"], options={"type": "mor"})["hoodie.compact.inline"] == "true"
    assert "hoodie.compact.inline" not in props_of(primary_key=["id"], options={"type": "cow"})


# ---- dialect defaults -------------------------------------------------------------------------------


def test_hive_style_partitioning_defaults_by_dialect():
    assert props_of(primary_key=["id"], partitioned_by=["dt"], dialect=SPARK)[HIVE_STYLE] == "true"
    assert props_of(primary_key=["id"], partitioned_by=["dt"], dialect=FLINK)[HIVE_STYLE] == "false"


def test_explicit_hive_style_wins_in_both_dialects():
    assert props_of(partitioned_by=["dt"], dialect=FLINK, options={HIVE_STYLE: "true"})[HIVE_STYLE] == "true"
    assert props_of(partitioned_by=["dt"], dialect=SPARK, options={HIVE_STYLE: "false"})[HIVE_STYLE] == "false"


# ---- fixed v6 properties and the stored schema ---------------------------------------------------------


def test_fixed_v6_properties():
    props = props_of(primary_key=["id"], partitioned_by=["dt"], options={"preCombineField": "ts"}, name="orders")
    expected = {
        "hoodie.table.name": "orders",
        "hoodie.database.name": "default",
        "hoodie.table.version": "6",
        "hoodie.timeline.layout.version": "1",
        "hoodie.datasource.write.partitionpath.urlencode": "false",
        "hoodie.datasource.write.drop.partition.columns": "false",
        "hoodie.table.base.file.format": "PARQUET",
        "hoodie.archivelog.folder": "archived",
        "hoodie.table.timeline.timezone": "UTC",
        "hoodie.populate.meta.fields": "true",
    }
    assert {k: props.get(k) for k in expected} == expected
    assert "hoodie.metadata.enable" not in props
    assert "hoodie.table.metadata.partitions" not in props


def test_partition_columns_move_to_the_end_of_the_stored_schema():
    props, stored = derive(primary_key=["id"], partitioned_by=["region", "dt"])
    expected = ["id", "name", "ts", "day", "at", "region", "dt"]
    assert stored.fieldNames() == expected
    avro = json.loads(props["hoodie.table.create.schema"])
    assert [f["name"] for f in avro["fields"]] == expected
    assert avro["name"] == "t_record"
    assert avro["namespace"] == "hoodie.t"


def test_unpartitioned_schema_keeps_declared_order_and_widens_small_ints():
    columns = schema(b=T.ByteType(), a=T.ShortType(), c=T.StringType())
    _, stored = derive(columns=columns)
    assert stored.fieldNames() == ["b", "a", "c"]
    assert [f.dataType for f in stored.fields] == [T.IntegerType(), T.IntegerType(), T.StringType()]
    assert all(f.nullable for f in stored.fields)


# ---- Hudi 1.x's record mergers ------------------------------------------------------------------------


@pytest.mark.parametrize("merger, ordering", [
    ("org.apache.hudi.common.model.HoodieAvroRecordMerger", None),  # the payload class decides: any table
    ("org.apache.hudi.common.model.HoodieAvroRecordMerger", "ts"),
    ("org.apache.hudi.HoodieSparkRecordMerger", "ts"),  # by the ordering field: event time ordering
    ("org.apache.hudi.DefaultSparkRecordMerger", "ts"),
])
def test_a_record_merger_that_merges_as_the_table_does_is_accepted_and_not_stored(merger, ordering):
    options = {"hoodie.datasource.write.record.merger.impls": merger, **({"preCombineField": ordering} if ordering else {})}
    props = props_of(primary_key=["id"], options=options)
    assert "hoodie.datasource.write.record.merger.impls" not in props
    assert props["hoodie.record.merge.mode"] == ("EVENT_TIME_ORDERING" if ordering else "COMMIT_TIME_ORDERING")


def test_a_record_merger_that_merges_otherwise_is_refused_by_name():
    with pytest.raises(OptionError, match="HoodieSparkRecordMerger merges records by the ordering field .* but the "
                                          "table merges by COMMIT_TIME_ORDERING; set preCombineField"):
        props_of(primary_key=["id"], options={"hoodie.write.record.merge.custom.implementation.classes":
                                              "org.apache.hudi.HoodieSparkRecordMerger"})
    with pytest.raises(OptionError, match="is not supported: hudiql merges records by the payload class"):
        validate_table_options({"hoodie.datasource.write.record.merger.impls": "com.example.MyMerger"})
