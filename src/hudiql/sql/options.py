"""Table option derivation: DDL (columns, PRIMARY KEY, PARTITIONED BY, options) -> hoodie.properties.

The rules, decided here and nowhere else:
- PRIMARY KEY beats ``hoodie.datasource.write.recordkey.field``; PARTITIONED BY beats
  ``hoodie.datasource.write.partitionpath.field``.
- Key generator, unless set: no partition field -> Nonpartitioned; one DATE/TIMESTAMP partition
  field and at most one key field -> TimestampBased; several partition or key fields -> Complex;
  otherwise Simple.
- Ordering field from any of its spellings; no hidden default. Payload: DefaultHoodieRecordPayload
  with an ordering field, OverwriteWithLatestAvroPayload without; an explicit payload class wins,
  and an explicit merge mode picks the payload (it must agree with an explicit one).
- Every option is checked against ``hudiql.config.registry`` first: unknown, misspelt, unimplemented
  or badly valued options fail the CREATE, not the first write.

Example:
    >>> from hudiql.sql.parser import parse
    >>> create = parse("CREATE TABLE orders (id BIGINT, ts TIMESTAMP, day DATE) USING hudi PARTITIONED BY (day) "
    ...                "TBLPROPERTIES (primaryKey = 'id', preCombineField = 'ts')")[0]
    >>> props, stored_schema = derive_table_properties(TableDefinition(
    ...     "orders", "default", create.columns, create.primary_key, create.partitioned_by, create.options))
    >>> props["hoodie.table.recordkey.fields"], props["hoodie.table.keygenerator.class"]
    ('id', 'org.apache.hudi.keygen.TimestampBasedKeyGenerator')
    >>> props["hoodie.keygen.timebased.output.dateformat"], props["hoodie.record.merge.mode"]
    ('yyyyMMdd', 'EVENT_TIME_ORDERING')
    >>> derive_table_properties(TableDefinition("orders", "default", create.columns, options={"primaryKey": "idd"}))
    Traceback (most recent call last):
    hudiql.errors.ColumnError: record key column 'idd' is not a column of the table; columns are: id, ts, day
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

from pyspark.sql import types as T

from hudiql.config import registry as K
from hudiql.config import table_config as C
from hudiql.config.index_config import IndexConfig
from hudiql.config.registry import validate_table_options
from hudiql.errors import ColumnError, OptionError
from hudiql.record.keygen import check_virtual_keys
from hudiql.record.schema import field_root, nested_field, nested_type, storage_type, to_avro_json

PARTITION_KIND = "partition"

SPARK = "spark"
FLINK = "flink"

# Spellings of one option, most specific first. Each list maps onto one derived property.
RECORD_KEY_OPTIONS = [K.SHORT_PRIMARY_KEY, K.RECORD_KEY_OPTION, C.RECORD_KEY_FIELDS]
PARTITION_OPTIONS = [K.PARTITION_OPTION, C.PARTITION_FIELDS]
ORDERING_OPTIONS = [*K.SHORT_ORDERING, K.PRECOMBINE_OPTION, C.PRECOMBINE_FIELD, C.ORDERING_FIELDS_V8]
PAYLOAD_OPTIONS = [*K.SHORT_PAYLOAD, K.PAYLOAD_OPTION, C.PAYLOAD_CLASS]
TABLE_TYPE_OPTIONS = [*K.SHORT_TABLE_TYPE, K.TABLE_TYPE_OPTION, C.TABLE_TYPE]
KEYGEN_OPTIONS = [K.KEYGEN_OPTION, C.KEYGEN_CLASS]
MERGE_MODE_OPTIONS = [K.SHORT_MERGE_MODE, C.MERGE_MODE]

#: Short (non ``hoodie.*``) option names we understand; anything else is a typo to report.
SHORT_OPTIONS = K.short_table_options()
#: A name Avro (and so Hudi's table schema) can hold.
_AVRO_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

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
    #: The session's ``hoodie.write.table.version`` (a table option of the statement wins).
    table_version: str = K.KEYS[K.WRITE_TABLE_VERSION].default


def _first(options: dict[str, str], names: list[str]) -> str | None:
    for name in names:
        if options.get(name):
            return options[name]
    return None


def _split(value: str | None) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]


def validate_option_names(options: dict[str, str]) -> list[str]:
    """Check every table option (name and value); raise ``OptionError``, return warning lines."""
    return validate_table_options(options)


def check_column_names(columns: T.StructType) -> None:
    """Column names a Hudi table can hold: Avro names (Hudi's schema is Avro's: ASCII letters,
    digits and ``_``, not starting with a digit), each once (case-insensitively, as Spark compares
    them), none of Hudi's own meta columns; nested STRUCT fields likewise.

    >>> check_column_names(T.StructType([T.StructField("prix_é", T.IntegerType())]))
    Traceback (most recent call last):
    hudiql.errors.ColumnError: column 'prix_é' is not a name Hudi's Avro schema can hold: use ASCII letters, digits and '_', not starting with a digit (e.g. prix_e)
    """
    seen: dict[str, str] = {}
    for name in columns.fieldNames():
        if not _AVRO_NAME.fullmatch(name):
            suggestion = re.sub(r"\W", "_", unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode())
            suggestion = suggestion if suggestion and _AVRO_NAME.fullmatch(suggestion) else f"_{suggestion}" if suggestion else "c1"
            raise ColumnError(f"column '{name}' is not a name Hudi's Avro schema can hold: use ASCII letters, digits and "
                              f"'_', not starting with a digit (e.g. {suggestion})")
        if name.lower() in seen:
            raise ColumnError(f"column '{name}' is defined twice (as '{seen[name.lower()]}' and '{name}'); column names ignore case")
        if name.lower().startswith("_hoodie_") and name.lower() != "_hoodie_is_deleted":
            raise ColumnError(f"column '{name}': names starting with _hoodie_ are Hudi's meta columns; rename it")
        seen[name.lower()] = name
    for f in columns.fields:
        nested = f.dataType
        while isinstance(nested, (T.ArrayType, T.MapType)):
            nested = nested.elementType if isinstance(nested, T.ArrayType) else nested.valueType
        if isinstance(nested, T.StructType):
            check_column_names(nested)


def _require_columns(kind: str, names: list[str], schema: T.StructType) -> None:
    """Each name is a column; key, partition and ordering values are single values, so a column of
    a nested type (ARRAY, MAP, STRUCT) cannot be one. A record key or ordering field may be a field
    of a STRUCT column (``a.b``), as in Hudi; a partition field may not (Spark partitions by columns)."""
    columns = schema.fieldNames()
    lower = {c.lower(): c for c in columns}
    for name in names:
        head = field_root(name)
        if "." in name and head.lower() in lower and isinstance(schema[lower[head.lower()]].dataType, T.StructType):
            if kind == PARTITION_KIND:
                raise ColumnError(f"partition column '{name}' is a field of STRUCT column {lower[head.lower()]}: "
                                  "partition by a column of the table; copy the field into a column of its own")
            spelt = nested_field(schema, name)
            if spelt is None:
                raise ColumnError(f"{kind} field '{name}' is not a field of STRUCT column {lower[head.lower()]}")
            dtype = nested_type(schema, spelt)
        elif name not in columns and name.lower() not in lower:
            raise ColumnError(
                f"{kind} column '{name}' is not a column of the table; columns are: {', '.join(columns)}"
            )
        else:
            dtype = schema[lower.get(name.lower(), name)].dataType
        if isinstance(dtype, (T.ArrayType, T.MapType, T.StructType)):
            raise ColumnError(f"{kind} column '{name}' is a {dtype.simpleString()}; use a column of a simple type")


def _canonical(names: list[str], schema: T.StructType) -> list[str]:
    return [nested_field(schema, n) or n for n in names]


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
    check_column_names(schema)

    record_key = definition.primary_key or _split(_first(options, RECORD_KEY_OPTIONS))
    partition_fields = definition.partitioned_by or _split(_first(options, PARTITION_OPTIONS))
    ordering = _split(_first(options, ORDERING_OPTIONS))
    _require_columns("record key", record_key, schema)
    _require_columns(PARTITION_KIND, partition_fields, schema)
    if len({p.lower() for p in partition_fields}) != len(partition_fields):
        raise ColumnError(f"PARTITIONED BY ({', '.join(partition_fields)}) names a column twice; name each once")
    _require_columns("ordering (preCombine)", ordering, schema)
    record_key = _canonical(record_key, schema)
    partition_fields = _canonical(partition_fields, schema)
    ordering = _canonical(ordering, schema)
    if len(ordering) > 1:
        raise OptionError(f"one ordering field is supported, got {', '.join(ordering)}")
    version = _table_version(options, definition.table_version)
    K.check_metadata_table(options, definition.name, version)

    raw_type = _first(options, TABLE_TYPE_OPTIONS) or "cow"
    table_type = C.table_type(raw_type)
    if table_type is None:
        raise OptionError(f"table type '{raw_type.lower()}' is not valid; use type='cow' or type='mor'")
    K.check_concurrency_mode(options, definition.name, version, table_type == C.MERGE_ON_READ)

    # Write-side spellings of the key and partition fields are replaced by the table's own keys,
    # so hoodie.properties never holds a value the DDL overrode.
    overridden = {K.RECORD_KEY_OPTION, K.PARTITION_OPTION, K.WRITE_TABLE_VERSION, C.TABLE_VERSION,
                  C.TIMELINE_LAYOUT_VERSION, C.ORDERING_FIELDS_V8, K.RECORD_MERGER_IMPLS, K.MERGE_CUSTOM_CLASSES,
                  *K.PAYLOAD_TYPE_KEYS}
    props: dict[str, str] = {k: v for k, v in options.items() if k.startswith("hoodie.") and k not in overridden}
    keygen = _first(options, KEYGEN_OPTIONS)
    if keygen and "." not in keygen:
        keygen = C.KEYGEN_PACKAGE + keygen
    keygen = keygen or _derive_keygen(record_key, partition_fields, schema)
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

    populate_meta_fields = options.get(C.POPULATE_META_FIELDS, "true").strip().lower()
    if populate_meta_fields == "false":
        check_virtual_keys(record_key, keygen, schema)

    payload, merge_mode = _payload_and_merge_mode(options, ordering)
    _check_merger(options, merge_mode)
    payload_ordering = options.get(K.PAYLOAD_ORDERING_FIELD)
    if payload_ordering and [payload_ordering.strip().lower()] != [o.lower() for o in ordering]:
        raise OptionError(
            f"{K.PAYLOAD_ORDERING_FIELD}={payload_ordering} is not supported: hudiql orders records by the ordering "
            f"field ({ordering[0] if ordering else 'none is set'}); leave it out, or set preCombineField instead"
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
        C.POPULATE_META_FIELDS: populate_meta_fields,
        C.CREATE_SCHEMA: to_avro_json(stored_schema, definition.name),
    })
    if not record_key:
        del props[C.RECORD_KEY_FIELDS]
    if ordering:
        props[C.PRECOMBINE_FIELD] = ordering[0]
        props[K.PAYLOAD_ORDERING_FIELD] = ordering[0]
    if table_type == C.MERGE_ON_READ:
        props.setdefault(K.INLINE_COMPACT, "true")
    if options.get(K.FLINK_INDEX_TYPE):
        props.setdefault(K.INDEX_TYPE, options[K.FLINK_INDEX_TYPE])
    IndexConfig.from_settings(props, record_key)  # a bad index option fails the CREATE, not the first write
    return C.versioned_properties(props, version), stored_schema


def _table_version(options: dict[str, str], session_version: str) -> int:
    """The version of a new table: the statement's ``hoodie.write.table.version`` (or
    ``hoodie.table.version``), else the session's; its timeline layout, if given, must be that
    version's."""
    given = [options[k] for k in (K.WRITE_TABLE_VERSION, C.TABLE_VERSION) if options.get(k)]
    if len({v.strip() for v in given}) > 1:
        raise OptionError(f"{K.WRITE_TABLE_VERSION}={given[0]} and {C.TABLE_VERSION}={given[1]} differ; give one of them")
    text = given[0].strip() if given else session_version
    K.KEYS[K.WRITE_TABLE_VERSION].check(text)
    version = int(text)
    layout = options.get(C.TIMELINE_LAYOUT_VERSION)
    if layout and int(layout) != (1 if version == 6 else 2):
        raise OptionError(f"{C.TIMELINE_LAYOUT_VERSION}={layout} does not fit table version {version}, whose "
                          f"timeline layout is {1 if version == 6 else 2}; leave it out")
    return version


def _payload_and_merge_mode(options: dict[str, str], ordering: list[str]) -> tuple[str, str]:
    """The payload class and the merge mode readers infer from it (v6); an explicit merge mode
    picks the payload, and must agree with an explicit payload class."""
    payload = _first(options, PAYLOAD_OPTIONS)
    if payload and "." not in payload:
        payload = C.PAYLOAD_PACKAGE + payload
    payload_type = _first(options, list(K.PAYLOAD_TYPE_KEYS))
    if payload_type:
        by_type = K.PAYLOAD_TYPES[payload_type.strip().upper()]
        if payload and payload != by_type:
            raise OptionError(f"payloadType={payload_type} and payloadClass={payload.rsplit('.', 1)[1]} name different "
                              "payloads; give one of them")
        payload = by_type
    wanted = (_first(options, MERGE_MODE_OPTIONS) or "").strip().upper()
    if not payload:
        payload = C.default_payload(wanted or (C.EVENT_TIME_ORDERING if ordering else C.COMMIT_TIME_ORDERING))
    merge_mode = C.inferred_merge_mode(payload, bool(ordering))
    if wanted == C.EVENT_TIME_ORDERING and not ordering:
        raise OptionError(f"recordMergeMode={wanted} needs an ordering field; add preCombineField='<column>'")
    if wanted and wanted != merge_mode:
        raise OptionError(
            f"recordMergeMode={wanted} does not match payloadClass={payload.rsplit('.', 1)[1]}, "
            f"which merges by {merge_mode}; leave one of them out"
        )
    return payload, merge_mode


def _check_merger(options: dict[str, str], merge_mode: str) -> None:
    """A record merger named by Hudi 1.x's options must merge as the table does: the Avro merger
    runs the payload class; Spark's mergers order by the ordering field (event time ordering)."""
    merger = _first(options, [K.RECORD_MERGER_IMPLS, K.MERGE_CUSTOM_CLASSES])
    if merger and merger.strip().lower() in {m.lower() for m in K.EVENT_TIME_MERGERS} and merge_mode != C.EVENT_TIME_ORDERING:
        raise OptionError(f"{merger.strip()} merges records by the ordering field (EVENT_TIME_ORDERING), but the table "
                          f"merges by {merge_mode}; set preCombineField, or name {K.AVRO_MERGER}")


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


def adopted_options(config: C.TableConfig, options: dict[str, str]) -> bool:
    """Check the options of ``CREATE TABLE t USING hudi LOCATION '...' [TBLPROPERTIES (...)]`` over
    the existing table ``config``; returns whether the name reads the base files only
    (``'hoodie.query.as.ro.table'='true'``, on a merge-on-read table, as Hudi's). The table keeps its
    own properties: a key, partition, ordering or type option must say what the table has (as Hudi
    validates them), as must any other (one the table does not hold is refused rather than dropped).

    >>> config = C.TableConfig({C.TABLE_NAME: "t", C.RECORD_KEY_FIELDS: "id", C.TABLE_TYPE: C.MERGE_ON_READ})
    >>> adopted_options(config, {"primaryKey": "ID", "type": "mor", K.QUERY_AS_RO_TABLE: "true"})
    True
    >>> adopted_options(config, {"primaryKey": "name"})
    Traceback (most recent call last):
    hudiql.errors.OptionError: primaryKey=name does not match the table at this LOCATION (id); leave it out or give the table's
    """
    read_optimized = False
    has = {
        **{name: ",".join(config.record_key_fields) for name in RECORD_KEY_OPTIONS},
        **{name: ",".join(config.partition_fields) for name in PARTITION_OPTIONS},
        **{name: config.ordering_field or "" for name in ORDERING_OPTIONS},
    }
    for key, value in options.items():
        if key == K.QUERY_AS_RO_TABLE:
            read_optimized = K.flag(options, key)
            if read_optimized and not config.is_mor:
                raise OptionError(f"{key}=true applies to a merge-on-read table; {config.name} is copy-on-write")
        elif key in TABLE_TYPE_OPTIONS:
            if C.table_type(value) != config.table_type:
                raise OptionError(f"{key}={value} does not match the table at this LOCATION ({config.table_type}); "
                                  "leave it out or give the table's")
        elif key in has:
            if [v.lower() for v in _split(value)] != [v.lower() for v in _split(has[key])]:
                raise OptionError(f"{key}={value} does not match the table at this LOCATION ({has[key] or 'none'}); "
                                  "leave it out or give the table's")
        elif config.props.get(key) != value:
            raise OptionError(f"option {key} cannot be set when CREATE TABLE ... LOCATION adopts a table (it keeps its "
                              "own properties); remove it, then ALTER TABLE ... SET TBLPROPERTIES if it may change")
    return read_optimized
