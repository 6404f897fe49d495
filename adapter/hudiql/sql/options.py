"""Table option derivation: DDL (columns, PRIMARY KEY, PARTITIONED BY, options) -> hoodie.properties.

The seeds' rules, decided here and nowhere else:
- PRIMARY KEY beats ``hoodie.datasource.write.recordkey.field``; PARTITIONED BY beats
  ``hoodie.datasource.write.partitionpath.field``.
- Key generator, unless set: no partition field -> Nonpartitioned; one DATE/TIMESTAMP partition
  field and at most one key field -> TimestampBased; several partition or key fields -> Complex;
  otherwise Simple.
- Ordering field from any of its spellings; no hidden default. Payload: DefaultHoodieRecordPayload
  with an ordering field, OverwriteWithLatestAvroPayload without; an explicit payload class wins.

Example:
    >>> props = derive_table_properties(TableDefinition(
    ...     name="t", database="default", schema=schema, primary_key=["id"],
    ...     partitioned_by=["dt"], options={"preCombineField": "ts"}, dialect="spark"))
    >>> props["hoodie.table.keygenerator.class"]
    'org.apache.hudi.keygen.SimpleKeyGenerator'
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from pyspark.sql import types as T

from hudiql.errors import ColumnError, OptionError
from hudiql.table import config as C
from hudiql.table.schema import storage_type, to_avro_json
from hudiql.write.index import INDEX_TYPE, IndexConfig

SPARK = "spark"
FLINK = "flink"

# Spellings of one option, most specific first. Each list maps onto one derived property.
RECORD_KEY_OPTIONS = ["primaryKey", "hoodie.datasource.write.recordkey.field", C.RECORD_KEY_FIELDS]
PARTITION_OPTIONS = ["hoodie.datasource.write.partitionpath.field", C.PARTITION_FIELDS]
ORDERING_OPTIONS = [
    "preCombineField", "orderingFields", "precombine.field", "write.precombine.field",
    "hoodie.datasource.write.precombine.field", C.PRECOMBINE_FIELD,
]
PAYLOAD_OPTIONS = ["payloadClass", "payload.class", "hoodie.datasource.write.payload.class", C.PAYLOAD_CLASS]
TABLE_TYPE_OPTIONS = ["type", "table.type", "hoodie.datasource.write.table.type", C.TABLE_TYPE]
KEYGEN_OPTIONS = ["hoodie.datasource.write.keygenerator.class", C.KEYGEN_CLASS]
PAYLOAD_ORDERING_FIELD = "hoodie.payload.ordering.field"
INLINE_COMPACT = "hoodie.compact.inline"
FLINK_INDEX_TYPE = "index.type"

#: Short (non ``hoodie.*``) option names we understand; anything else is a typo to report.
SHORT_OPTIONS = {
    "primaryKey", "preCombineField", "orderingFields", "type", "payloadClass", "connector", "path",
    "table.type", "precombine.field", "write.precombine.field", "payload.class", "write.operation",
    "recordMergeMode", FLINK_INDEX_TYPE,
}

_TYPE_ALIASES = {
    "cow": C.COPY_ON_WRITE, "copy_on_write": C.COPY_ON_WRITE,
    "mor": C.MERGE_ON_READ, "merge_on_read": C.MERGE_ON_READ,
}


@dataclass
class TableDefinition:
    """What a CREATE TABLE statement says about a new table."""

    name: str
    database: str
    schema: T.StructType
    primary_key: list[str] = field(default_factory=list)
    partitioned_by: list[str] = field(default_factory=list)
    options: dict[str, str] = field(default_factory=dict)
    dialect: str = SPARK


def closest(name: str, candidates: list[str] | set[str]) -> str | None:
    """The candidate most like ``name``, ignoring case (``precombinekey`` -> ``preCombineField``)."""
    lowered = {c.lower(): c for c in candidates}
    match = difflib.get_close_matches(name.lower(), sorted(lowered), n=1, cutoff=0.5)
    return lowered[match[0]] if match else None


def _first(options: dict[str, str], names: list[str]) -> str | None:
    for name in names:
        if options.get(name):
            return options[name]
    return None


def _split(value: str | None) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]


def validate_option_names(options: dict[str, str]) -> None:
    for key in options:
        if key.startswith("hoodie.") or key in SHORT_OPTIONS:
            continue
        guess = closest(key, SHORT_OPTIONS)
        hint = f"; did you mean '{guess}'?" if guess else f"; valid names are {', '.join(sorted(SHORT_OPTIONS))} or any 'hoodie.*' key"
        raise OptionError(f"unknown table option '{key}'{hint}")


def _require_columns(kind: str, names: list[str], schema: T.StructType) -> None:
    columns = schema.fieldNames()
    lower = {c.lower(): c for c in columns}
    for name in names:
        if name not in columns and name.lower() not in lower:
            raise ColumnError(
                f"{kind} column '{name}' is not a column of the table; columns are: {', '.join(columns)}"
            )


def _canonical(names: list[str], schema: T.StructType) -> list[str]:
    lower = {c.lower(): c for c in schema.fieldNames()}
    return [lower.get(n.lower(), n) for n in names]


def table_schema(schema: T.StructType, partition_fields: list[str]) -> T.StructType:
    """Stored column types, partition columns moved last (as Spark SQL Hudi does)."""
    stored = [T.StructField(f.name, storage_type(f.dataType), True, f.metadata) for f in schema.fields]
    head = [f for f in stored if f.name not in partition_fields]
    tail = [next(f for f in stored if f.name == p) for p in partition_fields]
    return T.StructType(head + tail)


def derive_table_properties(definition: TableDefinition) -> tuple[dict[str, str], T.StructType]:
    """The ``hoodie.properties`` of a new table and its stored schema; validates first."""
    options = dict(definition.options)
    validate_option_names(options)
    schema = definition.schema

    record_key = definition.primary_key or _split(_first(options, RECORD_KEY_OPTIONS))
    partition_fields = definition.partitioned_by or _split(_first(options, PARTITION_OPTIONS))
    ordering = _split(_first(options, ORDERING_OPTIONS))
    _require_columns("record key", record_key, schema)
    _require_columns("partition", partition_fields, schema)
    _require_columns("ordering (preCombine)", ordering, schema)
    record_key = _canonical(record_key, schema)
    partition_fields = _canonical(partition_fields, schema)
    ordering = _canonical(ordering, schema)
    if len(ordering) > 1:
        raise OptionError(f"one ordering field is supported on table version 6, got {', '.join(ordering)}")

    raw_type = (_first(options, TABLE_TYPE_OPTIONS) or "cow").lower()
    if raw_type not in _TYPE_ALIASES:
        raise OptionError(f"table type '{raw_type}' is not valid; use type='cow' or type='mor'")
    table_type = _TYPE_ALIASES[raw_type]

    # Write-side spellings of the key and partition fields are replaced by the table's own keys,
    # so hoodie.properties never holds a value the DDL overrode.
    overridden = {RECORD_KEY_OPTIONS[1], PARTITION_OPTIONS[0]}
    props: dict[str, str] = {k: v for k, v in options.items() if k.startswith("hoodie.") and k not in overridden}
    keygen = _first(options, KEYGEN_OPTIONS) or _derive_keygen(record_key, partition_fields, schema)
    if keygen == C.TIMESTAMP_KEYGEN and len(partition_fields) != 1:
        raise OptionError("TimestampBasedKeyGenerator needs exactly one partition field; add PARTITIONED BY (<column>)")
    if keygen == C.TIMESTAMP_KEYGEN and C.TIMESTAMP_OUTPUT_FORMAT not in props:
        dtype = schema[partition_fields[0]].dataType
        is_date = isinstance(dtype, T.DateType)
        props[C.TIMESTAMP_TYPE] = "SCALAR" if is_date else "EPOCHMILLISECONDS"
        if is_date:
            props[C.TIMESTAMP_SCALAR_UNIT] = "DAYS"
        props[C.TIMESTAMP_OUTPUT_FORMAT] = "yyyyMMdd" if is_date else "yyyyMMddHH"
        props[C.TIMESTAMP_OUTPUT_TZ] = "UTC"

    payload = _first(options, PAYLOAD_OPTIONS)
    if payload and "." not in payload:
        payload = C.PAYLOAD_PACKAGE + payload
    payload = payload or (C.DEFAULT_PAYLOAD if ordering else C.OVERWRITE_WITH_LATEST_PAYLOAD)
    merge_mode = (
        C.COMMIT_TIME_ORDERING if payload == C.OVERWRITE_WITH_LATEST_PAYLOAD or not ordering else C.EVENT_TIME_ORDERING
    )
    hive_default = "true" if definition.dialect == SPARK else "false"
    stored_schema = table_schema(schema, partition_fields)

    props.update({
        C.TABLE_NAME: definition.name,
        C.DATABASE_NAME: definition.database,
        C.TABLE_TYPE: table_type,
        C.TABLE_VERSION: "6",
        C.TIMELINE_LAYOUT_VERSION: "1",
        C.RECORD_KEY_FIELDS: ",".join(record_key),
        C.PARTITION_FIELDS: ",".join(partition_fields),
        C.KEYGEN_CLASS: keygen,
        C.HIVE_STYLE: options.get(C.HIVE_STYLE, hive_default),
        C.URL_ENCODE: options.get(C.URL_ENCODE, "false"),
        C.DROP_PARTITION_COLUMNS: "false",
        C.BASE_FILE_FORMAT: "PARQUET",
        C.ARCHIVELOG_FOLDER: "archived",
        C.PAYLOAD_CLASS: payload,
        C.MERGE_MODE: merge_mode,
        C.TIMELINE_TIMEZONE: "UTC",
        C.POPULATE_META_FIELDS: "true",
        C.CREATE_SCHEMA: to_avro_json(stored_schema, definition.name),
    })
    if not record_key:
        del props[C.RECORD_KEY_FIELDS]
    if ordering:
        props[C.PRECOMBINE_FIELD] = ordering[0]
        props.setdefault(PAYLOAD_ORDERING_FIELD, ordering[0])
    if table_type == C.MERGE_ON_READ:
        props.setdefault(INLINE_COMPACT, "true")
    if options.get(FLINK_INDEX_TYPE):
        props.setdefault(INDEX_TYPE, options[FLINK_INDEX_TYPE])
    IndexConfig.from_settings(props, record_key)  # a bad index option fails the CREATE, not the first write
    return props, stored_schema


def _derive_keygen(record_key: list[str], partition_fields: list[str], schema: T.StructType) -> str:
    if not partition_fields:
        return C.NONPARTITIONED_KEYGEN
    if len(partition_fields) == 1 and len(record_key) <= 1:
        dtype = schema[partition_fields[0]].dataType
        if isinstance(dtype, (T.DateType, T.TimestampType)):
            return C.TIMESTAMP_KEYGEN
    if len(partition_fields) > 1 or len(record_key) > 1:
        return C.COMPLEX_KEYGEN
    return C.SIMPLE_KEYGEN
