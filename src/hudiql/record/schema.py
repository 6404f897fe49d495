"""Table schemas: Spark types, the Avro schema Hudi stores, the Arrow schema of base files.

Hudi keeps the table schema as Avro (``hoodie.table.create.schema`` and each commit's
``extraMetadata.schema``); Spark works with ``StructType``; base files are written with Arrow.

Example:
    >>> from pyspark.sql.types import StructType, StructField, IntegerType
    >>> avro = to_avro(StructType([StructField("id", IntegerType())]), "orders")
    >>> avro["name"], avro["fields"][0]["type"]
    ('orders_record', ['null', 'int'])
    >>> from_avro(avro).simpleString()
    'struct<id:int>'
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import types as T

from hudiql.errors import ColumnError

COMMIT_TIME = "_hoodie_commit_time"
COMMIT_SEQNO = "_hoodie_commit_seqno"
RECORD_KEY = "_hoodie_record_key"
PARTITION_PATH = "_hoodie_partition_path"
FILE_NAME = "_hoodie_file_name"
#: The five meta columns that lead every base file and log record, in order.
META_COLUMNS = [COMMIT_TIME, COMMIT_SEQNO, RECORD_KEY, PARTITION_PATH, FILE_NAME]
#: A boolean data column that, when true, turns the row into a delete.
IS_DELETED = "_hoodie_is_deleted"


def meta_values(
    keys: pa.Array | pa.ChunkedArray, instant_time: str, partition_path: str, file_name: str, task: int, first: int = 0
) -> dict[str, pa.Array | pa.ChunkedArray]:
    """The meta columns of rows with record ``keys`` that Spark task ``task`` writes to one file,
    the task's ``first``-th row onwards: the commit sequence number is Hudi's
    ``<instant>_<task partition>_<row number in the task>``."""
    n = len(keys)
    numbers = pa.array(np.arange(first, first + n, dtype=np.int64)).cast(pa.string())
    return {
        COMMIT_TIME: pa.repeat(pa.scalar(instant_time, pa.string()), n),
        COMMIT_SEQNO: pc.binary_join_element_wise(f"{instant_time}_{task}_", numbers, ""),
        RECORD_KEY: keys,
        PARTITION_PATH: pa.repeat(pa.scalar(partition_path, pa.string()), n),
        FILE_NAME: pa.repeat(pa.scalar(file_name, pa.string()), n),
    }


def meta_struct() -> T.StructType:
    return T.StructType([T.StructField(c, T.StringType(), True) for c in META_COLUMNS])


#: Where a column's comment is kept in its field's metadata, as Spark keeps it.
COMMENT = "comment"


def with_meta_columns(schema: T.StructType) -> T.StructType:
    return T.StructType(meta_struct().fields + [f for f in schema.fields if f.name not in META_COLUMNS])


def without_meta_columns(schema: T.StructType) -> T.StructType:
    return T.StructType([f for f in schema.fields if f.name not in META_COLUMNS])


def storage_type(dtype: T.DataType) -> T.DataType:
    """The type a column is stored with: Avro has no 8 or 16 bit integers, so Hudi widens them."""
    if isinstance(dtype, (T.ByteType, T.ShortType)):
        return T.IntegerType()
    if isinstance(dtype, T.StructType):
        return T.StructType([T.StructField(f.name, storage_type(f.dataType), True) for f in dtype.fields])
    if isinstance(dtype, T.ArrayType):
        return T.ArrayType(storage_type(dtype.elementType), True)
    if isinstance(dtype, T.MapType):
        return T.MapType(dtype.keyType, storage_type(dtype.valueType), True)
    if isinstance(dtype, T.CharType | T.VarcharType):
        return T.StringType()
    return dtype


def _decimal_size(precision: int) -> int:
    """Smallest fixed size (bytes) holding a decimal of ``precision`` digits, as Avro/Hudi size it."""
    return math.ceil((math.log2(10**precision - 1) + 1) / 8) if precision > 0 else 1


def _avro_type(dtype: T.DataType, name: str, namespace: str) -> object:
    if isinstance(dtype, T.BooleanType):
        return "boolean"
    if isinstance(dtype, (T.ByteType, T.ShortType, T.IntegerType)):
        return "int"
    if isinstance(dtype, T.LongType):
        return "long"
    if isinstance(dtype, T.FloatType):
        return "float"
    if isinstance(dtype, T.DoubleType):
        return "double"
    if isinstance(dtype, (T.StringType, T.CharType, T.VarcharType)):
        return "string"
    if isinstance(dtype, T.BinaryType):
        return "bytes"
    if isinstance(dtype, T.DateType):
        return {"type": "int", "logicalType": "date"}
    if isinstance(dtype, T.TimestampNTZType):
        return {"type": "long", "logicalType": "local-timestamp-micros"}
    if isinstance(dtype, T.TimestampType):
        return {"type": "long", "logicalType": "timestamp-micros"}
    if isinstance(dtype, T.DecimalType):
        return {
            "type": "fixed",
            "name": "fixed",
            "namespace": f"{namespace}.{name}",
            "size": _decimal_size(dtype.precision),
            "logicalType": "decimal",
            "precision": dtype.precision,
            "scale": dtype.scale,
        }
    if isinstance(dtype, T.ArrayType):
        return {"type": "array", "items": ["null", _avro_type(dtype.elementType, name, namespace)]}
    if isinstance(dtype, T.MapType):
        return {"type": "map", "values": ["null", _avro_type(dtype.valueType, name, namespace)]}
    if isinstance(dtype, T.StructType):
        return _avro_record(dtype, name, namespace)
    if isinstance(dtype, T.NullType):
        raise ColumnError(f"column {name} has no type (a bare NULL): write CAST(NULL AS <type>) AS {name}")
    raise ColumnError(f"column {name} has type {dtype.simpleString()}, which a Hudi table cannot store; cast it to "
                      "a type Avro has")


def _avro_record(schema: T.StructType, name: str, namespace: str) -> dict:
    child_ns = f"{namespace}.{name}" if namespace else name
    return {
        "type": "record",
        "name": name,
        "namespace": namespace,
        "fields": [_avro_field(f, child_ns) for f in schema.fields],
    }


def _avro_field(field: T.StructField, namespace: str) -> dict:
    """A nullable Avro field; a column's comment is its ``doc``, which every Avro reader skips."""
    avro = {"name": field.name, "type": ["null", _avro_type(field.dataType, field.name, namespace)], "default": None}
    if field.metadata.get(COMMENT):
        avro["doc"] = field.metadata[COMMENT]
    return avro


def with_comment(field: T.StructField, comment: str | None) -> T.StructField:
    """``field`` with the comment ``comment`` (``None``: without one), kept as Spark keeps it."""
    metadata = {k: v for k, v in field.metadata.items() if k != COMMENT}
    return T.StructField(field.name, field.dataType, field.nullable, {**metadata, **({COMMENT: comment} if comment else {})})


def to_avro(schema: T.StructType, table_name: str) -> dict:
    """The Avro record schema Hudi stores for a table (nullable fields, ``<table>_record``)."""
    return _avro_record(schema, f"{table_name}_record", f"hoodie.{table_name}")


def to_avro_json(schema: T.StructType, table_name: str) -> str:
    return json.dumps(to_avro(schema, table_name), separators=(",", ":"))


def _spark_type(avro: object) -> T.DataType:
    if isinstance(avro, list):
        branches = [b for b in avro if b != "null"]
        if len(branches) != 1:
            raise TypeError(f"unsupported Avro union {avro}")
        return _spark_type(branches[0])
    if isinstance(avro, str):
        primitive = {
            "boolean": T.BooleanType(), "int": T.IntegerType(), "long": T.LongType(), "float": T.FloatType(),
            "double": T.DoubleType(), "string": T.StringType(), "bytes": T.BinaryType(),
        }
        if avro not in primitive:
            raise TypeError(f"unsupported Avro type {avro}")
        return primitive[avro]
    assert isinstance(avro, dict)
    logical = avro.get("logicalType")
    kind = avro["type"]
    if logical == "decimal":
        return T.DecimalType(avro["precision"], avro.get("scale", 0))
    if logical == "date":
        return T.DateType()
    if logical in ("timestamp-micros", "timestamp-millis"):
        return T.TimestampType()
    if logical in ("local-timestamp-micros", "local-timestamp-millis"):
        return T.TimestampNTZType()
    if kind == "record":
        return T.StructType([T.StructField(f["name"], _spark_type(f["type"]), True, {COMMENT: f["doc"]} if f.get("doc") else {})
                             for f in avro["fields"]])
    if kind == "array":
        return T.ArrayType(_spark_type(avro["items"]), True)
    if kind == "map":
        return T.MapType(T.StringType(), _spark_type(avro["values"]), True)
    if kind == "enum":
        return T.StringType()
    if kind == "fixed":
        return T.BinaryType()
    return _spark_type(kind)


def from_avro(avro: dict | str) -> T.StructType:
    """The Spark schema of an Avro record schema (JSON text or parsed)."""
    parsed = json.loads(avro) if isinstance(avro, str) else avro
    result = _spark_type(parsed)
    assert isinstance(result, T.StructType)
    return result


def to_arrow(schema: T.StructType) -> pa.Schema:
    """The Arrow schema base files are written with (timestamps in microseconds, UTC)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema, timezone="UTC")


def conform(t: pa.Table, schema: pa.Schema, extra: list[str] | None = None) -> pa.Table:
    """Select and cast ``t`` to ``schema`` (plus ``extra`` columns kept as they are)."""
    columns, fields = [], []
    for f in schema:
        if f.name in t.column_names:
            columns.append(t.column(f.name).cast(f.type))
        else:  # a column added to the table after this file was written
            columns.append(pa.nulls(t.num_rows, f.type))
        fields.append(f)
    for name in extra or []:
        columns.append(t.column(name))
        fields.append(t.schema.field(name))
    return pa.Table.from_arrays(columns, schema=pa.schema(fields))


def select_fields(schema: pa.Schema, columns: Collection[str] | None) -> pa.Schema:
    """``schema``, or the part of it named by ``columns`` (in schema order)."""
    return schema if columns is None else pa.schema([f for f in schema if f.name in columns])


def find_column(name: str, names: list[str], where: str) -> str:
    """The column of ``names`` that ``name`` names, case-insensitively as Spark SQL resolves it;
    a ``ColumnError`` that says ``where`` and lists the columns otherwise.

    >>> find_column("ID", ["id", "name"], "UPDATE SET")
    'id'
    """
    for candidate in names:
        if candidate.lower() == name.lower():
            return candidate
    raise ColumnError(f"{where}: column '{name}' is not in the table; columns are: {', '.join(names)}")


# ---- nested fields: a record key or ordering field may name a field of a STRUCT column (``a.b``),
# as Hudi's key generators and payloads read them (``HoodieAvroUtils.getNestedFieldVal``).

def field_root(name: str) -> str:
    """The column that holds field ``name``: ``a`` of ``a.b``.

    >>> field_root("a.b.c"), field_root("id")
    ('a', 'id')
    """
    return name.split(".", 1)[0]


def nested_field(schema: T.StructType, name: str) -> str | None:
    """``name`` spelt as ``schema`` spells it, through STRUCT columns for a dotted name and
    case-insensitively as Spark resolves it; ``None`` when ``schema`` has no such field.

    >>> schema = T.StructType([T.StructField("Info", T.StructType([T.StructField("Id", T.IntegerType())]))])
    >>> nested_field(schema, "info.id"), nested_field(schema, "info.other")
    ('Info.Id', None)
    """
    spelt, fields = [], schema
    for part in name.split("."):
        if not isinstance(fields, T.StructType):
            return None
        found = next((f for f in fields.fields if f.name.lower() == part.lower()), None)
        if found is None:
            return None
        spelt.append(found.name)
        fields = found.dataType
    return ".".join(spelt)


def nested_type(schema: T.StructType, name: str) -> T.DataType:
    """The type of field ``name`` (spelt as ``schema`` spells it, see ``nested_field``)."""
    dtype: T.DataType = schema
    for part in name.split("."):
        dtype = dtype[part].dataType
    return dtype


def column_values(rows: pa.Table, name: str) -> pa.ChunkedArray:
    """Field ``name`` of ``rows``: a column, or for a dotted name a field of a STRUCT column (null
    where a struct on the way is).

    >>> rows = pa.table({"a": [{"b": 1}, None]})
    >>> column_values(rows, "a.b").to_pylist()
    [1, None]
    """
    root, *path = name.split(".")
    values = rows.column(root)
    return pc.struct_field(values, path) if path else values


def arrow_field_type(schema: pa.Schema, name: str) -> pa.DataType:
    """The Arrow type of field ``name`` of ``schema`` (dotted: through STRUCT columns)."""
    root, *path = name.split(".")
    dtype = schema.field(root).type
    for part in path:
        dtype = dtype.field(part).type
    return dtype


_INTEGRAL = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)


def widens(old: T.DataType, new: T.DataType) -> bool:
    """Whether every value of ``old`` is a value of ``new``, so files written with ``old`` read as
    ``new``: a larger integer, FLOAT to DOUBLE, a DECIMAL with no fewer integer or fraction digits.

    >>> widens(T.IntegerType(), T.LongType()), widens(T.LongType(), T.IntegerType())
    (True, False)
    >>> widens(T.DecimalType(10, 2), T.DecimalType(12, 2)), widens(T.DecimalType(10, 2), T.DecimalType(10, 3))
    (True, False)
    """
    if old == new:
        return True
    if isinstance(old, _INTEGRAL) and isinstance(new, _INTEGRAL):
        return _INTEGRAL.index(type(new)) > _INTEGRAL.index(type(old))
    if isinstance(old, T.FloatType) and isinstance(new, T.DoubleType):
        return True
    if isinstance(old, T.DecimalType) and isinstance(new, T.DecimalType):
        return new.scale >= old.scale and new.precision - new.scale >= old.precision - old.scale
    return False


def evolve(schema: T.StructType, added: T.StructType, retyped: dict[str, T.DataType], fixed: Collection[str],
           last: Collection[str] = (), comments: dict[str, str] | None = None) -> T.StructType:
    """``schema`` with ``added`` columns at its end, but before the columns of ``last`` that end it
    (``ALTER TABLE ADD COLUMNS`` keeps a table's partition columns last, as Spark and Hudi do: a
    positional INSERT lists them last), ``retyped`` columns widened (their own type: unchanged) and
    ``comments`` set; ``fixed``: columns whose type cannot change (record key, partition and ordering
    fields). Anything else is a ``ColumnError`` naming the column.

    >>> schema = T.StructType([T.StructField("id", T.IntegerType()), T.StructField("dt", T.StringType())])
    >>> evolve(schema, T.StructType([T.StructField("v", T.LongType())]), {}, [], last=["dt"]).fieldNames()
    ['id', 'v', 'dt']
    """
    names = schema.fieldNames()
    for f in added.fields:
        existing = next((n for n in names if n.lower() == f.name.lower()), None)
        if existing is not None:
            raise ColumnError(f"column {existing} already exists; ADD COLUMNS takes new names")
    fields = list(schema.fields)
    for name, comment in (comments or {}).items():
        column = find_column(name, names, "ALTER COLUMN")
        fields = [with_comment(f, comment) if f.name == column else f for f in fields]
    for name, dtype in retyped.items():
        column = find_column(name, names, "ALTER COLUMN")
        if schema[column].dataType == dtype:
            continue
        if column.lower() in {c.lower() for c in fixed}:
            raise ColumnError(f"column {column} is a record key, partition or ordering field; its type cannot change")
        old = schema[column].dataType
        if not widens(old, dtype):
            raise ColumnError(
                f"column {column} cannot change from {old.simpleString()} to {dtype.simpleString()}: only a wider type "
                "(a larger integer, FLOAT to DOUBLE, a DECIMAL with more digits) keeps every stored value"
            )
        fields = [T.StructField(f.name, dtype, f.nullable, f.metadata) if f.name == column else f for f in fields]
    trailing = {c.lower() for c in last}
    at = len(fields)
    while at and fields[at - 1].name.lower() in trailing:
        at -= 1
    new = [T.StructField(f.name, f.dataType, True, f.metadata) for f in added.fields]
    return T.StructType(fields[:at] + new + fields[at:])


def dropped_and_renamed(schema: T.StructType, dropped: Collection[str], renamed: dict[str, str],
                        fixed: Collection[str]) -> tuple[T.StructType, dict[str, str]]:
    """``schema`` without the ``dropped`` columns and with the ``renamed`` ones (old name: new
    name), and where each of its columns comes from (new name: stored name); ``fixed``: columns that
    must stay as they are (record key, partition and ordering fields, as Hudi refuses them).

    >>> schema = T.StructType([T.StructField(n, T.IntegerType()) for n in ("id", "a", "b")])
    >>> new, sources = dropped_and_renamed(schema, ["A"], {"b": "c"}, ["id"])
    >>> new.fieldNames(), sources
    (['id', 'c'], {'id': 'id', 'c': 'b'})
    """
    names = schema.fieldNames()
    gone = {find_column(name, names, "DROP COLUMN") for name in dropped}
    moved = {find_column(old, names, "RENAME COLUMN"): new for old, new in renamed.items()}
    for column in (*gone, *moved):
        if column.lower() in {field_root(c).lower() for c in fixed}:
            raise ColumnError(f"column {column} is a record key, partition or ordering field; it cannot be dropped or "
                              "renamed")
    if len(gone) == len(names):
        raise ColumnError("a table keeps at least one column; drop fewer columns")
    sources: dict[str, str] = {}
    fields = []
    for f in schema.fields:
        if f.name in gone:
            continue
        name = moved.get(f.name, f.name)
        if name.lower() in {n.lower() for n in sources} or (name != f.name and name.lower() in {
                n.lower() for n in names if n not in gone and n not in moved}):
            raise ColumnError(f"column {name} already exists; RENAME COLUMN takes a new name")
        sources[name] = f.name
        fields.append(T.StructField(name, f.dataType, f.nullable, f.metadata))
    return T.StructType(fields), sources


def changes_on_write(schema: T.StructType, values: list[tuple[str, T.DataType]]) -> tuple[T.StructType, dict[str, T.DataType]]:
    """What a write WITH SCHEMA EVOLUTION changes in ``schema`` to store ``values`` (column name,
    type of the value a statement assigns to it): the columns it adds (names the table lacks, in
    the order given, with the type they are stored with) and the columns it widens (a value type
    that ``widens`` the column's). A value of another type is cast to its column, as without the
    clause; ``evolve`` applies the changes and refuses those to key, partition or ordering columns.

    >>> schema = T.StructType([T.StructField("id", T.IntegerType()), T.StructField("v", T.FloatType())])
    >>> added, retyped = changes_on_write(schema, [("ID", T.LongType()), ("v", T.IntegerType()), ("n", T.ShortType())])
    >>> added.simpleString(), retyped
    ('struct<n:int>', {'id': LongType()})
    >>> changes_on_write(schema, [("n", T.NullType())])
    Traceback (most recent call last):
    hudiql.errors.ColumnError: new column n has no type (its value is NULL); CAST it to the type the column should have
    """
    names = {n.lower(): n for n in schema.fieldNames()}
    added: dict[str, T.StructField] = {}  # by lower-case name: a column several clauses assign is added once
    retyped: dict[str, T.DataType] = {}
    for name, dtype in values:
        new = storage_type(dtype)
        column = names.get(name.lower())
        if column is None:
            if isinstance(dtype, T.NullType):
                raise ColumnError(f"new column {name} has no type (its value is NULL); CAST it to the type the column should have")
            first = added.setdefault(name.lower(), T.StructField(name, new, True))
            if widens(first.dataType, new):
                added[name.lower()] = T.StructField(first.name, new, True)
            continue
        current = retyped.get(column, schema[column].dataType)
        if current != new and widens(current, new):
            retyped[column] = new
    return T.StructType(list(added.values())), retyped
