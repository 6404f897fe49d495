"""DESCRIBE and SHOW CREATE TABLE: a table's columns and every option derived for it.

Example:
    >>> _ = session.sql("CREATE TABLE orders (id BIGINT, day STRING) USING hudi PARTITIONED BY (day) "
    ...                 "TBLPROPERTIES (primaryKey = 'id')")
    >>> table = HudiTable.load(warehouse + "/orders")
    >>> describe(table, extended=False)[5:]              # after the five meta columns
    [('id', 'bigint', None), ('day', 'string', None), ('# Partition Information', '', None),
     ('# col_name', 'data_type', 'comment'), ('day', 'string', None)]
    >>> print(show_create_table(table, "default", "orders", external=False))
    CREATE TABLE default.orders (
      `id` BIGINT,
      `day` STRING)
    USING hudi
    PARTITIONED BY (`day`)
    TBLPROPERTIES (
      type='cow',
      primaryKey='id',
      payloadClass='org.apache.hudi.common.model.OverwriteWithLatestAvroPayload',
      ...
      'hoodie.table.keygenerator.class'='org.apache.hudi.keygen.SimpleKeyGenerator',
      ...)
"""

from __future__ import annotations


from pyspark.sql import types as T

from hudiql.config import registry
from hudiql.config import table_config as C
from hudiql.table.table import HudiTable
from hudiql.record.schema import COMMENT

#: Derived options DESCRIBE EXTENDED lists first, under readable names.
_DERIVED = [
    ("Table Type", C.TABLE_TYPE),
    ("Record Key", C.RECORD_KEY_FIELDS),
    ("Partition Fields", C.PARTITION_FIELDS),
    ("Key Generator", C.KEYGEN_CLASS),
    ("Ordering Field", C.PRECOMBINE_FIELD),
    ("Payload Class", C.PAYLOAD_CLASS),
    ("Merge Mode", C.MERGE_MODE),
    ("Hive Style Partitioning", C.HIVE_STYLE),
]


def describe(table: HudiTable, extended: bool) -> list[tuple[str, str, str | None]]:
    rows: list[tuple[str, str, str | None]] = [
        (f.name, f.dataType.simpleString(), f.metadata.get(COMMENT)) for f in table.columns.fields
    ]
    if table.config.partition_fields:
        rows.append(("# Partition Information", "", None))
        rows.append(("# col_name", "data_type", "comment"))
        for name in table.config.partition_fields:
            rows.append((name, table.schema[name].dataType.simpleString(), table.schema[name].metadata.get(COMMENT)))
    if not extended:
        return rows
    config = table.config
    derived = {
        C.TABLE_TYPE: config.table_type, C.RECORD_KEY_FIELDS: ",".join(config.record_key_fields),
        C.PARTITION_FIELDS: ",".join(config.partition_fields), C.KEYGEN_CLASS: config.keygen_class,
        C.PRECOMBINE_FIELD: config.ordering_field or "", C.PAYLOAD_CLASS: config.payload_class,
        C.MERGE_MODE: config.merge_mode, C.HIVE_STYLE: str(config.hive_style).lower(),
    }
    rows.append(("", "", None))
    rows.append(("# Detailed Table Information", "", None))
    rows.append(("Database", config.database, None))
    rows.append(("Table", config.name, None))
    rows.append(("Location", table.base_uri, None))
    rows.append(("Provider", "hudi", None))
    for label, key in _DERIVED:
        rows.append((label, derived[key], key))
    # What concurrent writers of this session get (``HudiTable.for_statement``: a SET wins over the table's property).
    rows.append(("Concurrency Mode", table.settings.choice(registry.CONCURRENCY_MODE), registry.CONCURRENCY_MODE))
    rows.append(("", "", None))
    rows.append(("# Table Properties", "", None))
    for key, value in sorted(config.props.items()):
        if key != C.CREATE_SCHEMA:
            rows.append((key, value, None))
    return rows


def _quote(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _ident(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _type_sql(dtype: T.DataType) -> str:
    """A DDL type that keeps nested field names exactly (Spark's simpleString does not quote them)."""
    if isinstance(dtype, T.StructType):
        return "STRUCT<" + ", ".join(f"{_ident(f.name)}: {_type_sql(f.dataType)}" for f in dtype.fields) + ">"
    if isinstance(dtype, T.ArrayType):
        return f"ARRAY<{_type_sql(dtype.elementType)}>"
    if isinstance(dtype, T.MapType):
        return f"MAP<{_type_sql(dtype.keyType)}, {_type_sql(dtype.valueType)}>"
    return dtype.simpleString().upper()


def show_create_table(table: HudiTable, database: str, name: str, external: bool) -> str:
    config = table.config
    columns = ",\n".join(f"  {_ident(f.name)} {_type_sql(f.dataType)}" for f in table.schema.fields)
    lines = [f"CREATE TABLE {database}.{name} (\n{columns})", "USING hudi"]
    if config.partition_fields:
        lines.append(f"PARTITIONED BY ({', '.join(_ident(p) for p in config.partition_fields)})")
    props = {"type": "mor" if config.is_mor else "cow"}
    if config.record_key_fields:
        props["primaryKey"] = ",".join(config.record_key_fields)
    if config.ordering_field:
        props["preCombineField"] = config.ordering_field
    props["payloadClass"] = config.payload_class
    skipped = {C.CREATE_SCHEMA, C.CHECKSUM, C.TABLE_NAME, C.DATABASE_NAME, C.TABLE_TYPE, C.RECORD_KEY_FIELDS,
               C.PRECOMBINE_FIELD, C.PARTITION_FIELDS, C.PAYLOAD_CLASS}
    for key, value in sorted(config.props.items()):
        if key not in skipped:
            props[key] = value
    body = ",\n".join(f"  {k if '.' not in k else _quote(k)}={_quote(v)}" for k, v in props.items())
    lines.append(f"TBLPROPERTIES (\n{body})")
    if external:
        lines.append(f"LOCATION {_quote(table.base_uri)}")
    return "\n".join(lines)
