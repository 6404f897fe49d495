"""Data skipping: the file slices a query's filter cannot match, found by the value ranges the
table's partition stats index holds of their partitions (``index.partition_stats``), then those its
column stats index holds of their files (``index.column_stats``), as Hudi's readers skip them
(``hoodie.enable.data.skipping``).

Each conjunct of the filter that compares one column with constants becomes a condition on that
column's range in a slice: ``c = v`` is ``min <= v AND max >= v``, ``c < v`` is ``min < v``,
``c IN (...)`` an OR of equalities, ``c BETWEEN a AND b`` is ``max >= a AND min <= b``, ``c IS
NULL`` is ``nulls > 0``; AND and OR of such parts too. Spark evaluates those conditions on a small
frame of the slices' ranges, typed as the columns are, so that comparisons and casts are Spark's
own. A slice is kept when one of its files has no range of a column (written before the index was
built, or by a writer that did not range it), and any other conjunct keeps every slice. Floating
point and ``TIMESTAMP_NTZ`` columns are not used: NaN sorts above every number in Spark and ranges
leave it out; wall-clock timestamps would need the session's time zone.

Example (a range's condition, in Spark SQL):
    >>> import sqlglot
    >>> ranges = {"id": 0}
    >>> sql = lambda text: range_condition(sqlglot.parse_one(text, read="spark"), ranges, {"t"}, True)
    >>> sql("id = 5").sql("spark")
    '(__min_0 IS NULL OR (__min_0 <= 5 AND __max_0 >= 5))'
    >>> sql("id > 3 OR t.id IS NULL").sql("spark")
    '(__min_0 IS NULL OR __max_0 > 3) OR (__nulls_0 IS NULL OR __nulls_0 > 0)'
    >>> print(sql("name = 'x'"))
    None
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from sqlglot import exp

from hudiql.errors import HudiqlError, warn
from hudiql.file_group import FileSlice
from hudiql.index import column_stats, partition_stats
from hudiql.metadata.column_stats import ColumnRange, ValueKind
from hudiql.record.schema import with_meta_columns
from hudiql.sql.parser import DIALECT
from hudiql.table.fsview import FileSystemView
from hudiql.table.metadata_table import rebuild_hint
from hudiql.table.table import HudiTable

_FLIPPED = {exp.LT: exp.GT, exp.LTE: exp.GTE, exp.GT: exp.LT, exp.GTE: exp.LTE, exp.EQ: exp.EQ}
#: What a constant the filter compares with may be made of.
_CONSTANT_PARTS = (exp.Literal, exp.Neg, exp.Cast, exp.TryCast, exp.DataType, exp.DataTypeParam, exp.Paren,
                   exp.Boolean, exp.Null, exp.Var, exp.Identifier)
#: The value kinds (``ValueKind.ordinal``) whose ranges decide: not floats (NaN) or wall-clock timestamps.
_UNUSED_KINDS = (5, 6, 19)
#: How the frame holds each value kind's ranges (``_typed`` turns them into the column's type).
_STORED = {2: T.BooleanType(), 3: T.LongType(), 4: T.LongType(), 7: T.StringType(), 8: T.BinaryType(),
           10: T.StringType(), 12: T.IntegerType(), 16: T.LongType()}
_SKIPPABLE_AT = 2  # slices: with fewer, reading them costs less than reading their ranges


def _name(kind: str, index: int) -> str:
    return f"__{kind}_{index}"


def _is_constant(node: exp.Expression) -> bool:
    return all(isinstance(part, _CONSTANT_PARTS) for part in node.walk()) and not isinstance(node, exp.Identifier)


def _atom(column: int, op: type, value: exp.Expression) -> exp.Expression:
    low, high = exp.column(_name("min", column)), exp.column(_name("max", column))
    if op is exp.EQ:
        test = exp.and_(exp.LTE(this=low, expression=value.copy()), exp.GTE(this=high, expression=value.copy()))
    elif op in (exp.LT, exp.LTE):
        test = op(this=low, expression=value.copy())
    else:
        test = op(this=high, expression=value.copy())
    return exp.paren(exp.or_(exp.Is(this=low.copy(), expression=exp.Null()), test), copy=False)


def range_condition(node: exp.Expression, columns: dict[str, int], qualifiers: set[str],
                    unqualified_ok: bool) -> exp.Expression | None:
    """``node`` (a filter) as a condition on the ranges of ``columns`` (lower-case name -> its
    index in the ranges frame), for the table named by ``qualifiers`` (or bare names, when
    ``unqualified_ok``); None when no part of it limits a range."""
    def column_of(side: exp.Expression) -> int | None:
        if isinstance(side, exp.Column) and side.name.lower() in columns:
            if side.table.lower() in qualifiers if side.table else unqualified_ok:
                return columns[side.name.lower()]
        return None

    if isinstance(node, exp.Paren):
        return range_condition(node.this, columns, qualifiers, unqualified_ok)
    if isinstance(node, (exp.And, exp.Or)):
        left = range_condition(node.left, columns, qualifiers, unqualified_ok)
        right = range_condition(node.right, columns, qualifiers, unqualified_ok)
        if isinstance(node, exp.And):  # an unlimited side of an AND limits nothing
            return exp.and_(left, right) if left is not None and right is not None else left or right
        return exp.or_(left, right) if left is not None and right is not None else None
    if type(node) in _FLIPPED:
        op, index, value = type(node), column_of(node.this), node.expression
        if index is None:
            op, index, value = _FLIPPED[op], column_of(node.expression), node.this
        return _atom(index, op, value) if index is not None and _is_constant(value) else None
    if isinstance(node, exp.In) and not node.args.get("query") and not node.args.get("unnest"):
        index = column_of(node.this)
        if index is None or not node.expressions or not all(_is_constant(v) for v in node.expressions):
            return None
        return exp.or_(*(_atom(index, exp.EQ, v) for v in node.expressions))
    if isinstance(node, exp.Between):
        index = column_of(node.this)
        low, high = node.args.get("low"), node.args.get("high")
        if index is None or not (_is_constant(low) and _is_constant(high)):
            return None
        return exp.and_(_atom(index, exp.GTE, low), _atom(index, exp.LTE, high))
    negated = isinstance(node, exp.Not)
    inner = node.this if negated else node
    if isinstance(inner, exp.Is) and isinstance(inner.expression, exp.Null):
        index = column_of(inner.this)
        if index is None:
            return None
        nulls = exp.column(_name("nulls", index))
        test = exp.GT(this=exp.column(_name("count", index)), expression=nulls.copy()) if negated else \
            exp.GT(this=nulls.copy(), expression=exp.Literal.number(0))
        return exp.paren(exp.or_(exp.Is(this=nulls, expression=exp.Null()), test), copy=False)
    return None


def kept_file_groups(spark: SparkSession, table: HudiTable, files: FileSystemView,
                     keep_partition: Callable[[str], bool] | None, condition: exp.Expression,
                     qualifiers: set[str], unqualified_ok: bool) -> set[tuple[str, str]] | None:
    """The file groups (partition path, file id) whose latest slices may hold rows that match
    ``condition``; None: every one (no column stats, nothing in the filter they limit, or too few
    slices to be worth it). The caller checks ``hoodie.enable.data.skipping``."""
    if not column_stats.usable(table):
        return None
    fields = {f.name.lower(): f for f in with_meta_columns(table.columns).fields}
    usable = {name: ValueKind.of(f.dataType) for name, f in fields.items()}
    usable = {name: kind for name, kind in usable.items() if kind is not None and kind.ordinal not in _UNUSED_KINDS}
    referenced = sorted({c.name.lower() for c in condition.find_all(exp.Column)} & set(usable))
    indexes = {name: i for i, name in enumerate(referenced)}
    rewritten = range_condition(condition, indexes, {q for q in qualifiers if q}, unqualified_ok)
    slices = [s for s in files.read_slices() if keep_partition is None or keep_partition(s.partition_path)]
    if rewritten is None or len(slices) < _SKIPPABLE_AT:
        return None
    names = [fields[c].name for c in referenced]
    kinds = [usable[c] for c in referenced]
    try:
        partitions = sorted({s.partition_path for s in slices})
        if partition_stats.usable(table) and len(partitions) > 1:
            in_index = partition_stats.partition_ranges(table, names)
            kept = _matching(spark, [[in_index.get(p, {}).get(n) for n in names] for p in partitions],
                             names, kinds, fields, rewritten)
            pruned = {p for i, p in enumerate(partitions) if i not in kept}
            slices = [s for s in slices if s.partition_path not in pruned]
            if not slices:
                return set()
        ranges = column_stats.file_ranges(table, names, sorted({s.partition_path for s in slices}))
    except (HudiqlError, OSError) as exc:
        warn(f"{exc}; the query reads every file. {rebuild_hint(table.config.name)}")
        return None
    kept = _matching(spark, [[_slice_range(s, n, ranges) for n in names] for s in slices], names, kinds, fields, rewritten)
    return {(s.partition_path, s.file_id) for i, s in enumerate(slices) if i in kept}


def _matching(spark: SparkSession, rows: list[list[ColumnRange | None]], names: list[str], kinds: list[ValueKind],
              fields: dict[str, T.StructField], condition: exp.Expression) -> set[int]:
    """The indexes of ``rows`` (the ranges of ``names``, of one slice or partition each) that may
    hold rows matching ``condition`` (a ``range_condition``), as Spark evaluates it."""
    values = [(i, *[v for r, kind in zip(row, kinds) for v in _range_values(r, kind)]) for i, row in enumerate(rows)]
    frame = spark.createDataFrame(values, _frame_schema(kinds))
    frame = frame.select("__slice", *[c for i, name in enumerate(names)
                                      for c in _typed(i, fields[name.lower()].dataType, kinds[i])])
    return {r[0] for r in frame.where(condition.sql(dialect=DIALECT)).select("__slice").collect()}


def _slice_range(s: FileSlice, column: str, ranges: dict[str, dict[str, ColumnRange]]) -> ColumnRange | None:
    """The range of ``column`` over the files of slice ``s``; None unless every file has a bounded
    range of it."""
    found = [ranges.get(name, {}).get(column) for name in ([s.base_file] if s.base_file else []) + list(s.log_files)]
    if not found or any(r is None or not r.bounded for r in found):
        return None
    whole = found[0]
    for r in found[1:]:
        whole = whole.widened(r)
    return whole


def _range_values(r: ColumnRange | None, kind: ValueKind) -> tuple:
    """(min, max, nulls, count) of range ``r`` as the frame holds them; all None when unknown."""
    if r is None or not r.bounded:
        return None, None, None, None
    low, high = r.min, r.max
    if kind.ordinal == 10:  # decimals travel as text, cast by Spark to the column's type
        low, high = (None if v is None else format(Decimal(v), "f") for v in (low, high))
    return low, high, r.null_count, r.value_count


def _frame_schema(kinds: list[ValueKind]) -> T.StructType:
    fields = [T.StructField("__slice", T.IntegerType())]
    for i, kind in enumerate(kinds):
        stored = _STORED[kind.ordinal]
        fields += [T.StructField(_name("min", i), stored), T.StructField(_name("max", i), stored),
                   T.StructField(_name("nulls", i), T.LongType()), T.StructField(_name("count", i), T.LongType())]
    return T.StructType(fields)


def _typed(index: int, dtype: T.DataType, kind: ValueKind) -> list:
    """The range columns of column ``index`` as the column's own type."""
    def convert(name: str):
        value = F.col(name)
        if kind.ordinal == 16:
            return F.timestamp_micros(value)
        if kind.ordinal == 12:
            return F.date_from_unix_date(value)
        return value.cast(dtype)
    return [convert(_name("min", index)).alias(_name("min", index)), convert(_name("max", index)).alias(_name("max", index)),
            F.col(_name("nulls", index)), F.col(_name("count", index))]
