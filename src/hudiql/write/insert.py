"""An INSERT's rows, shaped as the table's columns: ``INSERT INTO t [PARTITION (...)] [(cols) | BY
NAME] <query>`` (values matched to columns by position or name, static partition values, the
columns left out filled with NULL), and schema evolution on write (``WITH SCHEMA EVOLUTION``: new
columns added, narrower ones widened, overflowing values reported by column). ``write_insert``
hands the rows to the writer (``write.writer``).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from hudiql.errors import ColumnError, DataError, HudiqlError, from_spark_error
from hudiql.sql.options import check_column_names
from hudiql.record.schema import (
    META_COLUMNS,
    changes_on_write,
    evolve,
    find_column,
    storage_type,
    widens,
)
from hudiql.table.table import HudiTable
from hudiql.timeline.commit import CommitMetadata
from hudiql.transaction.write_transaction import WriteTransaction
from hudiql.write.writer import Operation, Replacement, write_rows


def align_columns(df: DataFrame, schema: T.StructType) -> DataFrame:
    """Cast ``df``'s columns, by position, to the table's data columns."""
    if len(df.columns) != len(schema.fields):
        raise DataError(
            f"the rows have {len(df.columns)} columns but the table has {len(schema.fields)}: "
            f"{', '.join(schema.fieldNames())}"
        )
    return df.select([F.col(f"`{src}`").cast(f.dataType).alias(f.name) for src, f in zip(df.columns, schema.fields)])


def static_partition_values(partition: dict | None) -> dict[str, str | None]:
    """The static values of ``INSERT ... PARTITION (c = 'v', d)``: {'c': 'v'} (None for NULL)."""
    from sqlglot import exp

    static: dict[str, str | None] = {}
    for key, value in (partition or {}).items():
        if value is not None:
            if not isinstance(value, (exp.Literal, exp.Null)):
                raise DataError(f"PARTITION ({key}=...) takes a literal value")
            static[key] = None if isinstance(value, exp.Null) else value.name
    return static


@dataclass(frozen=True)
class InsertRows:
    """The rows of an INSERT as the table's columns, and the schema its commit records."""

    rows: DataFrame
    schema: T.StructType  # the table's, with the columns WITH SCHEMA EVOLUTION adds or widens
    narrowed: dict[str, tuple[T.DataType, T.DataType]]  # column -> (its type, the wider type its values are cast from)
    #: Columns of another type filled from text values: a malformed value fails their cast (column -> its type).
    parsed: dict[str, T.DataType] = field(default_factory=dict)


def prepare_insert(
    table: HudiTable,
    source: DataFrame,
    columns: list[str] | None,
    partition: dict | None,
    by_name: bool = False,
    schema_evolution: bool = False,
) -> InsertRows:
    """``INSERT [WITH SCHEMA EVOLUTION] INTO t [PARTITION (...)] [(cols) | BY NAME] <query>`` into
    ``table`` (the statement's snapshot): WITH SCHEMA EVOLUTION, the columns it names that the
    table lacks are added and those its values are wider than are widened
    (``table.schema.changes_on_write``); without it, ``insert_rows`` refuses the first."""
    values = _insert_values(table.schema, source, columns, partition, by_name)
    schema = evolved_schema(table, values) if schema_evolution else table.schema
    rows = insert_rows(schema, source, columns, partition, table.config.record_key_fields,
                       table.config.partition_fields, by_name)
    names = {n.lower(): n for n in schema.fieldNames()}
    parsed = {names[c.lower()]: schema[names[c.lower()]].dataType for c, dtype in values
              if isinstance(dtype, T.StringType) and c.lower() in names
              and not isinstance(schema[names[c.lower()]].dataType, T.StringType)}
    return InsertRows(rows, schema, {} if schema_evolution else narrowed_columns(schema, values), parsed)


def insert_rows(
    schema: T.StructType,
    source: DataFrame,
    columns: list[str] | None,
    partition: dict | None,
    record_key_fields: Collection[str],
    partition_fields: Collection[str],
    by_name: bool = False,
) -> DataFrame:
    """The rows of ``INSERT INTO t [PARTITION (...)] [(cols) | BY NAME] <query>`` as the columns of ``schema``.

    Without a column list, the query's columns fill the table's columns by position, except
    the partition columns given static values in PARTITION (...). A column list (or BY NAME:
    the query's column names) leaves the other columns NULL, but never a record key or
    partition column: a NULL there gives the key another record (or another partition) than its
    stored version. The query's Hudi meta columns (SELECT * of a Hudi table) are not data, as in
    Hudi. A column the table lacks is refused by name (INSERT WITH SCHEMA EVOLUTION adds it:
    ``prepare_insert``).
    """
    names = schema.fieldNames()
    source, given, targets, static = _insert_targets(names, source, columns, partition, by_name)
    new = [t for t in targets if t not in names]
    if new and columns is None and not by_name:
        fill = [n for n in names if n not in static]
        raise DataError(
            f"INSERT provides {len(given)} columns but the table has {len(fill)} ({', '.join(fill)}): "
            f"remove the extra column {', '.join(new)}, or add it with INSERT WITH SCHEMA EVOLUTION "
            "(or ALTER TABLE ... ADD COLUMNS)"
        )
    if new:
        raise ColumnError(
            f"INSERT INTO ... ({', '.join(columns or given)}): the table has no column {', '.join(new)} "
            f"(its columns: {', '.join(names)}); add it with INSERT WITH SCHEMA EVOLUTION (or ALTER TABLE ... ADD COLUMNS)"
        )
    if columns is not None or by_name:
        given_set = set(targets) | set(static)
        lower = {n.lower(): n for n in names}
        for kind, fields in (("record key", record_key_fields), ("partition", partition_fields)):
            for name in fields:
                column = lower.get(name.lower())
                if column is not None and column not in given_set:  # (not a column: a key generator derives it)
                    how = f"list {column} in it" + (f" or give PARTITION ({column} = <value>)" if kind == "partition" else "")
                    raise ColumnError(
                        f"the INSERT column list ({', '.join(columns or given)}) leaves out {kind} column {column}: "
                        f"every row needs its {kind} value; {how}"
                    )
    by_target = dict(zip(targets, source.columns))
    out = []
    for f in schema.fields:
        if f.name in static:
            value = F.lit(static[f.name])
        elif f.name in by_target:
            value = F.col(by_target[f.name])
        else:
            value = F.lit(None)
        out.append(value.cast(f.dataType).alias(f.name))
    return source.select(out)


def _insert_targets(
    names: list[str], source: DataFrame, columns: list[str] | None, partition: dict | None, by_name: bool
) -> tuple[DataFrame, list[str], list[str], dict[str, str | None]]:
    """How an INSERT's query fills a table with columns ``names``: the query with its columns
    numbered (two may share a name) and without Hudi's meta columns, their names as the query
    gives them, the column each fills (a name the table lacks as given: a new column), and the
    static partition values."""
    kept = [(f"__hudiql_{i}", f.name) for i, f in enumerate(source.schema.fields) if f.name not in META_COLUMNS]
    numbered = source.toDF(*[f"__hudiql_{i}" for i in range(len(source.columns))]).select([p for p, _ in kept])
    given = [name for _, name in kept]
    for key in partition or {}:
        find_column(key, names, "INSERT INTO ... PARTITION")  # a dynamic column must exist too
    static = {find_column(key, names, "INSERT INTO ... PARTITION"): value
              for key, value in static_partition_values(partition).items()}
    expected = [n for n in names if n not in static]
    # As Hudi's INSERT INTO: a query whose columns are named as the columns it fills is matched by
    # name (INSERT INTO t PARTITION (dt, ht) SELECT ..., '11' AS ht, '2021-01-05' AS dt); by
    # position otherwise.
    named = len(given) == len(expected) and sorted(g.lower() for g in given) == sorted(n.lower() for n in expected)
    listed = given if by_name or (columns is None and named) else columns
    if listed is None:
        targets = expected + given[len(expected):]  # past the table's columns: new ones, named by the query
    else:
        lower = {n.lower(): n for n in names}
        targets = [lower.get(c.lower(), c) for c in listed]
        if len({t.lower() for t in targets}) != len(targets):
            raise DataError(f"a column is listed twice in INSERT INTO ({', '.join(listed)})")
    if len(given) != len(targets):
        raise DataError(f"INSERT provides {len(given)} columns but expects {len(targets)}: {', '.join(targets)}")
    return numbered, given, targets, static


def _insert_values(
    schema: T.StructType, source: DataFrame, columns: list[str] | None, partition: dict | None, by_name: bool
) -> list[tuple[str, T.DataType]]:
    """The columns an INSERT fills from its query (new ones included), with the type of their values."""
    numbered, _, targets, _ = _insert_targets(schema.fieldNames(), source, columns, partition, by_name)
    return [(target, f.dataType) for target, f in zip(targets, numbered.schema.fields)]


def fixed_columns(table: HudiTable) -> list[str]:
    """The columns whose type cannot change: record key, partition and ordering fields."""
    config = table.config
    return [*config.record_key_fields, *config.partition_fields, *filter(None, [config.ordering_field])]


def evolved_schema(table: HudiTable, values: list[tuple[str, T.DataType]]) -> T.StructType:
    """The schema of ``table`` after a write WITH SCHEMA EVOLUTION that stores ``values`` (column
    name, value type): new columns added at its end, narrower ones widened; a change to a key,
    partition or ordering column is refused by name, as ALTER TABLE refuses it."""
    added, retyped = changes_on_write(table.schema, values)
    schema = evolve(table.schema, added, retyped, fixed_columns(table))
    check_column_names(schema)
    return schema


def narrowed_columns(schema: T.StructType, values: list[tuple[str, T.DataType]]) -> dict[str, tuple[T.DataType, T.DataType]]:
    """The columns of ``schema`` that ``values`` (column name, value type) are cast down to: column ->
    (its type, the wider type of the value), which WITH SCHEMA EVOLUTION would widen."""
    names = {n.lower(): n for n in schema.fieldNames()}
    out = {}
    for name, dtype in values:
        column, value = names.get(name.lower()), storage_type(dtype)
        if column is not None and schema[column].dataType != value and widens(schema[column].dataType, value):
            out[column] = (schema[column].dataType, value)
    return out


def write_with_schema(txn: WriteTransaction, schema: T.StructType) -> None:
    """Make ``schema`` the one the write of ``txn`` commits (WITH SCHEMA EVOLUTION): every step of
    the write (base files, log blocks, the commit's schema) takes it from the snapshot. Files
    written before read the new columns as NULL; the schema changes only if the write commits."""
    if schema != txn.table.schema:
        txn.table.schema = schema  # a cached property of the transaction's own snapshot


def write_insert(
    txn: WriteTransaction, insert: InsertRows, operation: Operation, replacement: Replacement | None = None,
    combine: bool = False, sql_insert: bool = False,
) -> CommitMetadata | None:
    """``write_rows`` of an INSERT's rows, with the schema they need."""
    write_with_schema(txn, insert.schema)
    try:
        with naming_narrowed_columns(insert.narrowed, "INSERT"):
            return write_rows(txn, insert.rows, operation, replacement, combine, sql_insert)
    except Exception as exc:
        error = exc if isinstance(exc, HudiqlError) else from_spark_error(exc)
        if not isinstance(error, DataError):
            raise
        raise _naming_parsed_column(error, insert.parsed) from None


def _naming_parsed_column(error: DataError, parsed: dict[str, T.DataType]) -> DataError:
    """A malformed text value (Spark's ``CAST_INVALID_INPUT``) named with the column it was for:
    the columns of the type it was cast to that take text values."""
    cast_to = re.search(r'CAST_INVALID_INPUT\].*cannot be cast to "([^"]+)"', str(error))
    if cast_to is None or not parsed:
        return error
    named = [c for c, dtype in parsed.items() if dtype.simpleString().upper() == cast_to[1].upper()]
    return DataError(f"column {', '.join(named)}: {error}") if named else error


_OVERFLOWS = ("CAST_OVERFLOW", "NUMERIC_VALUE_OUT_OF_RANGE")


@contextmanager
def naming_narrowed_columns(narrowed: dict[str, tuple[T.DataType, T.DataType]], statement: str) -> Iterator[None]:
    """A value too large for its column (Spark's overflow on the cast) is reported with the
    column's name, and that ``statement`` WITH SCHEMA EVOLUTION widens it; ``narrowed``: columns
    whose values are cast to a narrower type (column -> (its type, the values' type))."""
    try:
        yield
    except Exception as exc:
        error = exc if isinstance(exc, HudiqlError) else from_spark_error(exc)
        if not narrowed or not isinstance(error, DataError) or not any(m in str(error) for m in _OVERFLOWS):
            raise
        reason = re.split(r"\.?\s+(?:Use `try_cast`|If necessary)|\.?\s*SQLSTATE", str(error))[0]
        said = re.sub(r"[\s\"]", "", reason).lower()
        named = [c for c, (old, _) in narrowed.items()
                 if f"castto{old.simpleString()}due" in said or f"representedas{old.simpleString()}" in said] or list(narrowed)
        widened = ", ".join(f"{c} to {narrowed[c][1].simpleString()}" for c in named)
        raise DataError(
            f"column {', '.join(named)}: {reason}; {statement} WITH SCHEMA EVOLUTION widens the column ({widened})"
        ) from None
