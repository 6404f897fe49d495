"""Key generators: the record key and partition path of a row, as Spark Column expressions.

The one place that decides key encoding and partition paths. One key field's value is the key;
several are ``field:value`` pairs joined by ``,`` (``__null__`` / ``__empty__`` for a null or
empty value). A partition path joins the partition values with ``/``, as ``field=value`` when
hive-style, and an empty or null value is ``__HIVE_DEFAULT_PARTITION__``. Rows never leave
Spark to get their keys.

Example:
    >>> keygen = KeyGenerator.from_config(C.TableConfig({
    ...     "hoodie.table.recordkey.fields": "id,name", "hoodie.table.partition.fields": "day",
    ...     "hoodie.table.keygenerator.class": "org.apache.hudi.keygen.ComplexKeyGenerator",
    ...     "hoodie.datasource.write.hive_style_partitioning": "true"}))
    >>> df = spark.createDataFrame([(1, "a", "2024-01-01"), (2, "", None)], "id INT, name STRING, day STRING")
    >>> df.select(keygen.record_key().alias("key"), keygen.partition_path(df.schema).alias("path")).collect()
    [Row(key='id:1,name:a', path='day=2024-01-01'),
     Row(key='id:2,name:__empty__', path='day=__HIVE_DEFAULT_PARTITION__')]
    >>> keygen.partition_values("day=2024-01-01")                     # partition pruning reads paths back
    {'day': '2024-01-01'}
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from hudiql.config import registry
from hudiql.config import table_config as C
from hudiql.errors import NULL_KEY_ERROR, OptionError
from hudiql.layout import DEFAULT_PARTITION
from hudiql.record.schema import RECORD_KEY

NULL_KEY = "__null__"
EMPTY_KEY = "__empty__"
#: Prefix of the error raised inside Spark tasks for a null record key, so the driver can spot it.


@dataclass(frozen=True)
class KeyGenerator:
    """How a table derives ``_hoodie_record_key`` and ``_hoodie_partition_path``."""

    record_key_fields: tuple[str, ...]
    partition_fields: tuple[str, ...]
    class_name: str
    hive_style: bool
    url_encode: bool
    timestamp_output_format: str | None = None
    timestamp_type: str | None = None
    timestamp_input_format: str | None = None
    #: Table version 9's complex key generator names the field of a one-field key too (``id:1``).
    prefixes_single_field: bool = False

    @classmethod
    def from_config(cls, config: C.TableConfig) -> KeyGenerator:
        return cls(
            record_key_fields=tuple(config.record_key_fields),
            partition_fields=tuple(config.partition_fields),
            class_name=config.keygen_class,
            hive_style=config.hive_style,
            url_encode=config.url_encode,
            timestamp_output_format=config.get(C.TIMESTAMP_OUTPUT_FORMAT),
            timestamp_type=config.get(C.TIMESTAMP_TYPE),
            timestamp_input_format=config.get(registry.TIMESTAMP_INPUT_FORMAT),
            prefixes_single_field=config.version >= 9 and config.keygen_class == C.COMPLEX_KEYGEN,
        )

    @property
    def is_timestamp_based(self) -> bool:
        return self.class_name.endswith("TimestampBasedKeyGenerator")

    @property
    def is_partitioned(self) -> bool:
        return bool(self.partition_fields) and not self.class_name.endswith("NonpartitionedKeyGenerator")

    # ---- record key --------------------------------------------------------------------------
    def record_key(self) -> Column:
        """The record key; a task fails with ``NULL_KEY_ERROR`` on a null or empty key."""
        fields = self.record_key_fields
        if len(fields) == 1 and not self.prefixes_single_field:
            value = F.col(fields[0]).cast("string")
            bad = value.isNull() | (value == F.lit(""))
            message = F.lit(f"{NULL_KEY_ERROR}: record key field '{fields[0]}' is null or empty")
            return F.when(bad, F.raise_error(message)).otherwise(value)
        parts, all_bad = [], None
        for name in fields:
            value = F.col(name).cast("string")
            encoded = F.when(value.isNull(), F.lit(NULL_KEY)).when(value == "", F.lit(EMPTY_KEY)).otherwise(value)
            parts.append(F.concat(F.lit(f"{name}:"), encoded))
            bad = value.isNull() | (value == "")
            all_bad = bad if all_bad is None else all_bad & bad
        message = F.lit(f"{NULL_KEY_ERROR}: every record key field ({', '.join(fields)}) is null or empty")
        return F.when(all_bad, F.raise_error(message)).otherwise(F.concat_ws(",", *parts))

    def stored_record_keys(self, rows: pa.Table) -> pa.Array:
        """The record keys of stored rows of a table without meta fields, derived from their key
        columns as ``record_key`` derives them (``check_virtual_keys``: the key columns are strings
        or whole numbers, whose text Arrow and Spark write alike).

        >>> keygen = KeyGenerator(("id", "name"), (), C.COMPLEX_KEYGEN, False, False)
        >>> keygen.stored_record_keys(pa.table({"id": [1, 2], "name": ["a", ""]})).to_pylist()
        ['id:1,name:a', 'id:2,name:__empty__']
        """
        texts = [pc.cast(rows.column(name), pa.string()).combine_chunks() for name in self.record_key_fields]
        if len(texts) == 1 and not self.prefixes_single_field:
            return texts[0]
        parts = []
        for name, text in zip(self.record_key_fields, texts):
            empty = pc.fill_null(pc.equal(text, ""), False)
            encoded = pc.if_else(pc.is_null(text), pa.scalar(NULL_KEY), pc.if_else(empty, pa.scalar(EMPTY_KEY), text))
            parts.append(pc.binary_join_element_wise(pa.scalar(f"{name}:"), encoded, pa.scalar("")))
        return pc.binary_join_element_wise(*parts, pa.scalar(","))

    # ---- partition path ----------------------------------------------------------------------
    def partition_path(self, schema: T.StructType) -> Column:
        if not self.is_partitioned:
            return F.lit("")
        segments = []
        for name in self.partition_fields:
            value = self._partition_value(name, schema[name].dataType)
            value = F.when(value.isNull() | (value == ""), F.lit(DEFAULT_PARTITION)).otherwise(
                _escape_path_name(value) if self.url_encode else value
            )
            segments.append(F.concat(F.lit(f"{name}="), value) if self.hive_style else value)
        return F.concat_ws("/", *segments)

    def _partition_value(self, name: str, dtype: T.DataType) -> Column:
        col = F.col(name)
        if not self.is_timestamp_based:
            return col.cast("string")
        fmt = _java_to_spark_pattern(self.timestamp_output_format or "yyyyMMddHH")
        if isinstance(dtype, T.DateType):
            return F.date_format(col, fmt)
        if isinstance(dtype, T.TimestampType):
            # Format the UTC wall clock whatever the session time zone is.
            return F.date_format(F.to_utc_timestamp(col, F.current_timezone()), fmt)
        if isinstance(dtype, T.TimestampNTZType):
            return F.date_format(col, fmt)
        if isinstance(dtype, T.StringType):
            in_fmt = _java_to_spark_pattern(self.timestamp_input_format or "yyyy-MM-dd HH:mm:ss")
            if _has_offset(in_fmt):  # the string names its offset: its instant, as UTC wall-clock time
                return F.date_format(F.to_utc_timestamp(F.to_timestamp(col, in_fmt), F.current_timezone()), fmt)
            # No offset: the string is UTC wall-clock time, as Hudi reads it (input time zone UTC).
            return F.date_format(F.to_timestamp_ntz(col, F.lit(in_fmt)), fmt)
        ts_type = (self.timestamp_type or "EPOCHMILLISECONDS").upper()
        seconds = col / 1000 if ts_type == "EPOCHMILLISECONDS" else col * 86400 if ts_type == "SCALAR" else col
        return F.date_format(F.to_utc_timestamp(F.timestamp_seconds(seconds), F.current_timezone()), fmt)

    def partition_values(self, partition_path: str) -> dict[str, str | None] | None:
        """The partition column values a path stands for, or ``None`` when the path cannot say.

        Used to prune partitions; a timestamp-based path is a formatted value, not the column's.
        """
        if not self.is_partitioned or self.is_timestamp_based:
            return None
        segments = partition_path.split("/")
        if len(segments) != len(self.partition_fields):
            return None
        values: dict[str, str | None] = {}
        for name, segment in zip(self.partition_fields, segments):
            if self.hive_style:
                prefix = f"{name}="
                if not segment.startswith(prefix):
                    return None
                segment = segment[len(prefix):]
            if self.url_encode:
                segment = unquote(segment)
            values[name] = None if segment == DEFAULT_PARTITION else segment
        return values


#: What Hudi escapes (as ``%XX``) in a URL-encoded partition path: control characters and these.
_ESCAPED = [chr(c) for c in range(1, 0x20)] + list("\"#%'*/:=?\\\x7f{[]^")


def _escape_path_name(value: Column) -> Column:
    """``value`` escaped as Hudi escapes partition path names; ``%`` first, so no escape is escaped
    again. Most values hold no such character: one match test, and they pass unchanged."""
    escaped = value
    for ch in sorted(_ESCAPED, key=lambda c: c != "%"):
        escaped = F.replace(escaped, F.lit(ch), F.lit(f"%{ord(ch):02X}"))
    needs = "[" + "".join(f"\\x{ord(c):02x}" for c in _ESCAPED) + "]"
    return F.when(value.rlike(needs), escaped).otherwise(value)


def _has_offset(pattern: str) -> bool:
    """Whether a datetime pattern reads a zone or offset (letters outside quoted text)."""
    unquoted = "".join(part for i, part in enumerate(pattern.split("'")) if i % 2 == 0)
    return any(letter in unquoted for letter in "XxZzOV")


def _java_to_spark_pattern(pattern: str) -> str:
    """Java SimpleDateFormat patterns as Spark datetime patterns (they differ in few letters)."""
    return pattern.replace("Z", "XX")


def record_keys_of(rows: pa.Table, virtual_keys: KeyGenerator | None) -> pa.Array:
    """The record keys of stored rows: their ``_hoodie_record_key``, or, on a table without meta
    fields (``virtual_keys``: its key generator), derived from their key columns."""
    if virtual_keys is None:
        return rows.column(RECORD_KEY).combine_chunks()
    return virtual_keys.stored_record_keys(rows)


#: The key generators Hudi allows on a table without meta fields (``hoodie.populate.meta.fields=false``).
VIRTUAL_KEY_GENERATORS = (C.SIMPLE_KEYGEN, C.COMPLEX_KEYGEN, C.NONPARTITIONED_KEYGEN)
_VIRTUAL_KEY_TYPES = (T.StringType, T.ByteType, T.ShortType, T.IntegerType, T.LongType)


def check_virtual_keys(record_key_fields: list[str], keygen_class: str, schema: T.StructType) -> None:
    """Refuse (``OptionError``) a table without meta fields whose record keys readers could not
    derive from its rows as writers did: no record key, a key generator Hudi does not allow for it,
    or a key column that is not a string or a whole number."""
    where = f"{C.POPULATE_META_FIELDS}=false"
    if not record_key_fields:
        raise OptionError(f"{where} needs a record key, which readers derive from the rows; add primaryKey = '<column>'")
    if keygen_class not in VIRTUAL_KEY_GENERATORS:
        raise OptionError(f"{where} is not supported with {keygen_class.rsplit('.', 1)[-1]}: Hudi derives keys of a table "
                          "without meta fields with the simple, complex or non-partitioned key generator only")
    for name in record_key_fields:
        if "." in name:
            raise OptionError(f"{where}: record key field {name} is a field of a STRUCT column; a table without meta "
                              "fields keys its records by columns: name a column, or keep the meta fields")
        if not isinstance(schema[name].dataType, _VIRTUAL_KEY_TYPES):
            raise OptionError(f"{where}: record key column {name} is {schema[name].dataType.simpleString()}; a table "
                              "without meta fields keys its records by string or whole-number columns")


def java_hash_code(text: Column) -> Column:
    """Java's ``String.hashCode()`` of a string column (0 for null), a signed 32-bit value in a long.

    It is the JVM's own method, called through ``reflect``: exactly what Hudi computes, and an
    order of magnitude faster than folding UTF-16 code units in SQL.
    """
    return F.reflect(F.lit("java.util.Objects"), F.lit("hashCode"), text).cast("long")
