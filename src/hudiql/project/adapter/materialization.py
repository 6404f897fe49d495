"""The SQL of the materializations, written once for both runners: ``hudiql run``'s macros
(``hudiql/macros/``) and the dbt-core adapter's (``dbt/include/hudiql/macros/``) call these through
their ``adapter`` object, so a model gets the same statements either way. The macros keep only the
control flow each runner's contract asks for.

Example:
    >>> config = {"table_type": "mor", "unique_key": ["id"], "partition_by": ["day"],
    ...           "precombine_field": "ts", "options": {"hoodie.index.type": "BUCKET"}}
    >>> print(create_table_as("db.t", table_clauses(config), "SELECT 1 AS id"))
    CREATE TABLE db.t USING hudi
    PARTITIONED BY (`day`)
    TBLPROPERTIES (
      type = 'mor',
      primaryKey = 'id',
      'hoodie.spark.sql.insert.into.operation' = 'upsert',
      preCombineField = 'ts',
      'hoodie.index.type' = 'BUCKET'
    )
    AS
    SELECT 1 AS id
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hudiql.config.registry import INSERT_INTO_OPERATION
from hudiql.project.artifacts.nodes import Column
from hudiql.project.errors import CompilationError

@dataclass
class SchemaChange:
    """How a model's columns differ from its table's (names compared case-insensitively)."""

    added: list[Column]
    removed: list[Column]
    common: list[str]

    @property
    def changed(self) -> bool:
        return bool(self.added or self.removed)


def quote(name: str) -> str:
    """A column name as a Spark SQL identifier: ``quote('order id')`` is ```order id```."""
    return "`" + str(name).replace("`", "``") + "`"


def sql_string(value: object) -> str:
    """A Spark SQL string literal.

    >>> sql_string("it's")
    "'it\\\\'s'"
    """
    return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"


def _column_list(columns: Sequence[str]) -> str:
    return ", ".join(quote(c) for c in columns)


def alter_columns_sql(relation: object, added: Sequence[Column], removed: Sequence[Column] = ()) -> str:
    """The ALTER TABLE that adds ``added`` (columns with name and data_type); empty if none. hudiql
    cannot drop a column: ``removed`` columns raise ``CompilationError`` naming them.

    >>> alter_columns_sql("db.t", [Column("v", "string"), Column("n", "int")])
    'ALTER TABLE db.t ADD COLUMNS (`v` string, `n` int)'
    """
    if removed:
        raise CompilationError(f"hudiql cannot drop columns of {relation} ({', '.join(c.name for c in removed)}); "
                           "run with --full-refresh to rebuild it")
    if not added:
        return ""
    return f"ALTER TABLE {relation} ADD COLUMNS ({', '.join(f'{quote(c.name)} {c.data_type}' for c in added)})"


def table_clauses(config: Mapping[str, Any], record_key: str | None = None) -> str:
    """The Hudi clauses of CREATE TABLE from a model's normalized configs; the record key is
    ``record_key`` when given (a snapshot's ``dbt_scd_id``), else the model's ``unique_key``."""
    key = record_key if record_key is not None else ",".join(config.get("unique_key") or [])
    properties = [f"type = {sql_string(config['table_type'])}"]
    if key:
        properties.append(f"primaryKey = {sql_string(key)}")
    if key and record_key is None and INSERT_INTO_OPERATION not in (config.get("options") or {}):
        # A model's unique_key means one row per key: its CTAS (which Hudi writes as bulk_insert,
        # keeping every row) and plain INSERTs into it upsert.
        properties.append(f"{sql_string(INSERT_INTO_OPERATION)} = 'upsert'")
    if config.get("precombine_field"):
        properties.append(f"preCombineField = {sql_string(config['precombine_field'])}")
    properties += [f"{sql_string(k)} = {sql_string(v)}" for k, v in (config.get("options") or {}).items()]
    partitioned = f"PARTITIONED BY ({_column_list(config['partition_by'])})\n" if config.get("partition_by") else ""
    return partitioned + "TBLPROPERTIES (\n  " + ",\n  ".join(properties) + "\n)"


def create_table_as(relation: object, clauses: str, sql: str) -> str:
    """CTAS into a Hudi table with the model's ``table_clauses`` (a macro of a project may
    rewrite them first)."""
    return f"CREATE TABLE {relation} USING hudi\n{clauses}\nAS\n{sql}"


def overwrite_sql(relation: object, source_sql: str, columns: Sequence[str], operation: str) -> str:
    """INSERT OVERWRITE of ``relation`` with the ``columns`` of ``source_sql`` (by name); ``operation``:
    ``insert_overwrite_table`` replaces the whole table, ``insert_overwrite`` the partitions the rows
    land in."""
    column_list = _column_list(columns)
    return (f"SET hoodie.datasource.write.operation={operation};\n"
            f"INSERT OVERWRITE TABLE {relation} ({column_list})\n"
            f"SELECT {column_list} FROM (\n{source_sql}\n) AS DBT_INTERNAL_SOURCE")


def append_sql(relation: object, source_sql: str, columns: Sequence[str]) -> str:
    """INSERT of the ``columns`` of ``source_sql`` with Hudi's insert operation (no lookup of keys)."""
    column_list = _column_list(columns)
    return (f"SET hoodie.spark.sql.insert.into.operation=insert;\n"
            f"INSERT INTO {relation} ({column_list})\n"
            f"SELECT {column_list} FROM (\n{source_sql}\n) AS DBT_INTERNAL_SOURCE")


def merge_sql(target: object, source_sql: str, unique_key: Sequence[str], columns: Sequence[str]) -> str:
    """The MERGE of an incremental model (``get_merge_sql``): matched rows on the key columns
    take the new values of the other ``columns``, new keys are inserted with ``columns``.

    >>> print(merge_sql("db.t", "SELECT 1 AS id, 2 AS v", ["id"], ["id", "v"]))
    MERGE INTO db.t AS DBT_INTERNAL_DEST
    USING (
    SELECT 1 AS id, 2 AS v
    ) AS DBT_INTERNAL_SOURCE
    ON DBT_INTERNAL_DEST.`id` = DBT_INTERNAL_SOURCE.`id`
    WHEN MATCHED THEN UPDATE SET `v` = DBT_INTERNAL_SOURCE.`v`
    WHEN NOT MATCHED THEN INSERT (`id`, `v`)
      VALUES (DBT_INTERNAL_SOURCE.`id`, DBT_INTERNAL_SOURCE.`v`)
    """
    keys = {k.lower() for k in unique_key}
    non_keys = [c for c in columns if c.lower() not in keys]
    lines = [
        f"MERGE INTO {target} AS DBT_INTERNAL_DEST",
        f"USING (\n{source_sql}\n) AS DBT_INTERNAL_SOURCE",
        "ON " + "\nAND ".join(f"DBT_INTERNAL_DEST.{quote(k)} = DBT_INTERNAL_SOURCE.{quote(k)}" for k in unique_key),
    ]
    if non_keys:  # a model of key columns only has nothing to update
        lines.append("WHEN MATCHED THEN UPDATE SET " + ", ".join(f"{quote(c)} = DBT_INTERNAL_SOURCE.{quote(c)}" for c in non_keys))
    lines.append(f"WHEN NOT MATCHED THEN INSERT ({_column_list(columns)})")
    lines.append(f"  VALUES ({', '.join('DBT_INTERNAL_SOURCE.' + quote(c) for c in columns)})")
    return "\n".join(lines)


def shaped_select(source_sql: str, columns: Sequence[Column], present: Sequence[str]) -> str:
    """Rows of ``source_sql`` shaped like a table of ``columns``: a column not ``present`` in the
    source is a typed NULL (an INSERT OVERWRITE writes every column of the table).

    >>> print(shaped_select("SELECT 1 AS id", [Column("id", "int"), Column("v", "string")], ["ID"]))
    SELECT `id`, CAST(NULL AS string) AS `v`
    FROM (
    SELECT 1 AS id
    ) AS DBT_INTERNAL_SHAPED
    """
    lowered = {p.lower() for p in present}
    select = ", ".join(quote(c.name) if c.name.lower() in lowered else f"CAST(NULL AS {c.data_type}) AS {quote(c.name)}"
                       for c in columns)
    return f"SELECT {select}\nFROM (\n{source_sql}\n) AS DBT_INTERNAL_SHAPED"


def increment_sql(relation: object, sql: str, config: Mapping[str, Any], on_schema_change: str,
                  columns: Sequence[Column], change: SchemaChange) -> str:
    """The statements of an incremental model's later run into ``relation`` (a table of ``columns``):
    the schema change ``on_schema_change`` allows first, then the model's rows by its
    ``incremental_strategy``. Only the columns the model returns are written: an updated row keeps
    its other values, a new row has NULL in them. A change the model may not make raises
    ``CompilationError``: hudiql adds columns but cannot drop one, so ``sync_all_columns`` refuses a model
    that dropped a column and otherwise acts as ``append_new_columns``."""
    if change.changed and on_schema_change == "fail":
        added = ", ".join(c.name for c in change.added) or "none"
        removed = ", ".join(c.name for c in change.removed) or "none"
        raise CompilationError(f"the columns of {relation} changed (new: {added}; gone: {removed}) and on_schema_change "
                           "is 'fail'; run with --full-refresh or set on_schema_change")
    statements = []
    if on_schema_change in ("append_new_columns", "sync_all_columns") and change.changed:
        removed = change.removed if on_schema_change == "sync_all_columns" else []
        if alter := alter_columns_sql(relation, change.added, removed):
            statements.append(alter)
            columns = [*columns, *change.added]
    returned = {n.lower() for n in change.common} | {c.name.lower() for c in change.added}
    written = [c.name for c in columns if c.name.lower() in returned]
    strategy = config["incremental_strategy"]
    if strategy == "merge":
        statements.append(merge_sql(relation, sql, config["unique_key"], written))
    elif strategy == "append":
        statements.append(append_sql(relation, sql, written))
    else:
        statements.append(overwrite_sql(relation, shaped_select(sql, columns, written),
                                        [c.name for c in columns], "insert_overwrite"))
    return ";\n".join(statements)
