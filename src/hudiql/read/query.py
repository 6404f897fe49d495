"""Queries: any Spark SQL over hudiql tables by name.

Each hudiql table a query names is read as a snapshot DataFrame, registered as a temporary
view, and the query (rewritten with sqlglot to name those views) runs on Spark. Conjuncts of
the WHERE clause on partition columns prune the partitions read, and the view carries only
the columns the query names (``needed_columns``): merged slices are read in Python tasks,
where Spark cannot prune columns itself.

Example:
    >>> _ = session.sql("CREATE TABLE orders (id INT, amount DOUBLE) USING hudi TBLPROPERTIES (primaryKey = 'id')")
    >>> query, views = session.planner.with_snapshots(sqlglot.parse_one("SELECT sum(amount) FROM orders o"))
    >>> query.sql()                         # Spark runs this, over a view of the snapshot's amount column
    'SELECT SUM(amount) FROM __hudiql_snapshot_..._1 AS o'
    >>> session.planner.drop(views)
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import date
from typing import Protocol

import sqlglot
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T
from sqlglot import exp

from hudiql.catalog import Catalog, View
from hudiql.config import registry
from hudiql.errors import HudiqlError, SqlError, TableNotFoundError, spark_message
from hudiql.index import record_index, secondary_index
from hudiql.config.settings import Settings
from hudiql.read import data_skipping
from hudiql.read.incremental import LATEST_STATE, ChangeRange, change_range, changes
from hudiql.read.snapshot import snapshot
from hudiql.read.time_travel import table_as_of
from hudiql.sql.parser import DIALECT, table_name, table_name_text
from hudiql.sql.statements import TableName
from hudiql.table.fsview import FileSystemView
from hudiql.table.table import HudiTable

#: ``<format>.`<path>``` reads files directly in Spark SQL; such names are not tables.
FILE_FORMATS = {"parquet", "csv", "json", "orc", "avro", "text", "binaryfile"}
#: Views within views, at most: deeper means a view names itself.
MAX_VIEW_DEPTH = 32


class NameResolver(Protocol):
    """What planning needs of a session (``hudiql.session.Session`` is one): its Spark session,
    its settings and catalog, and how it resolves names."""

    spark: SparkSession
    conf: dict[str, str]
    catalog: Catalog

    def resolve(self, name: TableName) -> tuple[str, str]: ...

    def view(self, name: TableName) -> View | None: ...

    def in_database(self, database: str) -> AbstractContextManager[None]: ...


class QueryPlanner:
    def __init__(self, session: NameResolver) -> None:
        self.session = session
        self._views = 0
        self._view_tables: dict[str, str] = {}  # snapshot view -> the table it reads, for error messages
        self._view_stack: list[str] = []  # the views being planned, outermost first

    def dataframe(self, query: exp.Expression) -> DataFrame:
        """Run a query expression; hudiql tables are replaced by snapshot views."""
        query, views = self.with_snapshots(query)
        try:
            return self.session.spark.sql(query.sql(dialect=DIALECT))
        except Exception as e:
            raise self.user_error(e, views) from None
        finally:
            # The analysed DataFrame keeps the snapshot plans; the names are no longer needed.
            self.drop(views)

    def user_error(self, exc: Exception, views: list[str]) -> Exception:
        """Spark's analysis error in the user's words: positions refer to the rewritten query,
        so they are dropped, and snapshot view names become the tables' names again."""
        if type(exc).__name__ not in ("AnalysisException", "ParseException"):
            return exc
        message = str(exc)
        for view in sorted(views, key=len, reverse=True):  # ..._12 before ..._1
            message = message.replace(view, self._view_tables.get(view, "table"))
        return SqlError(spark_message(message))

    def drop(self, views: list[str]) -> None:
        for view in views:
            self.session.spark.catalog.dropTempView(view)
            self._view_tables.pop(view, None)

    def with_snapshots(self, query: exp.Expression) -> tuple[exp.Expression, list[str]]:
        """A copy of ``query`` naming a registered snapshot view for each hudiql table and view it
        reads, and those views (the caller drops them once Spark has analysed the query).

        A name is, in this order: a temporary view of hudiql or of Spark, a table, a persistent
        view, a table's ``_ro`` / ``_rt`` name (a table and a persistent view never share a name: a
        table is looked up first, by the one request that loads it). A view's query is planned on
        its own (its CTEs and names stay its own; unqualified names are in the view's database),
        when the outer query runs.
        """
        query = query.copy()
        views: list[str] = []
        try:
            for node in table_references(query):
                if is_table_function(node):
                    df, label = self._function_dataframe(query, node)
                    self._register_for(node, df, label, views)
                    continue
                name = table_name(node)
                database, table_name_ = self.session.resolve(name)
                view = self.session.session_view(name)
                if view is None or not view.temporary:
                    if not node.db and self._is_temp_view(table_name_):
                        self._check_persistent_reads(table_name_)
                        continue  # a Spark temporary view shadows views and tables, as in Spark
                resolved = self._resolve(database, table_name_) if view is None else None
                if view is None and resolved is None:
                    view = self.session.catalog.view(database, table_name_)
                    resolved = self._resolve_suffixed(database, table_name_) if view is None else None
                if view is not None:
                    if view.temporary:
                        self._check_persistent_reads(view.name)
                    df = self._view_dataframe(view)
                    label = view.name
                else:
                    if resolved is None:
                        if self.session.spark.catalog.tableExists(f"{name}"):
                            continue
                        raise TableNotFoundError(f"table {database}.{table_name_} does not exist; see SHOW TABLES")
                    table, read_optimized = resolved
                    df = self._table_dataframe(query, node, table, read_optimized)
                    label = f"{database}.{table_name_}"
                self._register_for(node, df, label, views)
        except BaseException:
            self.drop(views)
            raise
        return query, views

    def _register_for(self, node: exp.Table, df: DataFrame, label: str, views: list[str]) -> None:
        """Register ``df`` and make ``node`` read it."""
        registered = self.register(df)
        self._view_tables[registered] = label
        views.append(registered)
        # The alias, column aliases included, stays the user's: x(a, b) names the columns.
        alias = node.args.get("alias") or (exp.TableAlias(this=exp.to_identifier(node.name)) if node.name else None)
        node.replace(exp.Table(this=exp.to_identifier(registered), alias=alias))

    def _table_dataframe(self, query: exp.Expression, node: exp.Table, table: HudiTable, read_optimized: bool,
                         function: bool = False) -> DataFrame:
        """What ``node`` reads of ``table``: its snapshot, as of an instant (``TIMESTAMP AS OF``,
        else the session's ``hoodie.datasource.read.as.of.instant``), or its changes when the
        session's query type is incremental; ``function``: ``hudi_query(...)``, which says
        itself what it reads (the latest snapshot)."""
        conf = self.session.conf
        version = node.args.get("version")
        as_of = version.expression.name if version is not None else registry.setting(conf, registry.AS_OF_INSTANT)
        as_of = "" if function else as_of
        if not as_of and not function and registry.choice(conf, registry.QUERY_TYPE) == "incremental":
            begin = registry.setting(conf, registry.BEGIN_INSTANT)
            if not begin:
                raise SqlError(f"SET {registry.BEGIN_INSTANT}=<instant> (or 'earliest') before an incremental query "
                               f"of table {table.config.name}, or SET {registry.QUERY_TYPE}=snapshot")
            span = change_range(table, begin, registry.setting(conf, registry.END_INSTANT) or None)
            return self._changes(query, node, table, span)
        if as_of:
            table = table_as_of(table, as_of)
        files = table.file_system_view()
        keep = _partition_filter(self.session.spark, table, files, node)
        columns = needed_columns(query, table.columns.fieldNames())
        # The indexes know where keys and values are now, not as of an instant.
        found = None if as_of else _table_filter(node)
        skipping = Settings(table.config.props, conf).flag(registry.DATA_SKIPPING)
        groups = file_groups_to_read(self.session.spark, table, files, keep, *found, skipping) if found else None
        keys = pinned_keys(table, *found) if found else None
        return snapshot(self.session.spark, table, files, keep, read_optimized, columns, groups, keys=keys)

    def _function_dataframe(self, query: exp.Expression, node: exp.Table) -> tuple[DataFrame, str]:
        """What Hudi's table-valued functions read, and the label of their rows:

        - ``hudi_table_changes('t' | 'path', 'latest_state', begin [, end])``: the changes in a range;
        - ``hudi_query('t' | 'path', 'snapshot' | 'read_optimized')``: the table as of now.
        """
        function = node.this.name.lower()
        args = node.this.expressions
        usage = {
            TABLE_CHANGES: "('<table or path>', 'latest_state', 'earliest' or '<begin instant>'[, '<end instant>'])",
            QUERY: "('<table or path>', 'snapshot' or 'read_optimized')",
        }[function]
        counts = (3, 4) if function == TABLE_CHANGES else (2,)
        if len(args) not in counts or not all(isinstance(a, exp.Literal) and a.is_string for a in args):
            raise SqlError(f"{function} takes {usage}, each a quoted string")
        target, query_type, *rest = (a.name for a in args)
        table = self._function_table(function, target)
        if function == QUERY:
            if query_type.lower() not in ("snapshot", "read_optimized"):
                raise SqlError(f"hudi_query: query type '{query_type}' is not supported; use 'snapshot' or 'read_optimized' "
                               "(hudi_table_changes reads changes)")
            return self._table_dataframe(query, node, table, query_type.lower() == "read_optimized", function=True), target
        if query_type.lower() != LATEST_STATE:
            raise SqlError(f"hudi_table_changes: query type '{query_type}' is not supported; use 'latest_state' "
                           "(hudiql writes no change data capture logs, which 'cdc' reads)")
        begin, *end = rest
        span = change_range(table, begin, end[0] if end else None)
        return self._changes(query, node, table, span), target

    def _function_table(self, function: str, target: str) -> HudiTable:
        """The table a table-valued function names: a path (with a ``/``) or a table name."""
        if "/" in target:
            return HudiTable.load(target)
        database, name = self.session.resolve(table_name_text(target))
        resolved = self._resolve(database, name) or self._resolve_suffixed(database, name)
        if resolved is None:
            raise TableNotFoundError(f"{function}: table {database}.{name} does not exist; see SHOW TABLES")
        return resolved[0]

    def _changes(self, query: exp.Expression, node: exp.Table, table: HudiTable, span: ChangeRange) -> DataFrame:
        keep = _partition_filter(self.session.spark, table, table.file_system_view(), node)
        columns = needed_columns(query, table.columns.fieldNames())
        return changes(self.session.spark, table, span, self.session.conf, keep, columns)

    def _view_dataframe(self, view: View) -> DataFrame:
        """The view's query, planned in the view's database, at most ``MAX_VIEW_DEPTH`` deep."""
        if len(self._view_stack) >= MAX_VIEW_DEPTH or view.name in self._view_stack:
            raise SqlError(f"view {view.name} refers to itself; CREATE OR REPLACE it without the loop")
        self._view_stack.append(view.name)
        try:
            with self.session.in_database(view.database):
                return self.dataframe(sqlglot.parse_one(view.sql, read=DIALECT))
        finally:
            self._view_stack.pop()

    def _check_persistent_reads(self, temporary: str) -> None:
        """A persistent view outlives the session, so it cannot read a temporary view (as in Spark)."""
        persistent = [name for name in self._view_stack if "." in name]
        if persistent:
            raise SqlError(f"view {persistent[-1]} cannot read temporary view {temporary}; a view in the warehouse outlives the session")

    def _resolve(self, database: str, name: str) -> tuple[HudiTable, bool] | None:
        """The table a name reads, and whether read-optimized (a name registered with
        ``'hoodie.query.as.ro.table'='true'``, or ``SET hoodie.datasource.query.type=read_optimized``,
        which makes every query read-optimized)."""
        loaded = self.session.catalog.load_table(database, name)
        if loaded is not None:  # a name registered with 'hoodie.query.as.ro.table'='true' reads base files
            return loaded[0], loaded[1].read_optimized or self._read_optimized_mode()
        return None

    def _resolve_suffixed(self, database: str, name: str) -> tuple[HudiTable, bool] | None:
        """The table a ``<table>_ro`` or ``<table>_rt`` name reads when no table or view has it, as
        Hudi's Hive sync names them: ``t_ro`` the base files of merge-on-read table ``t``, ``t_rt``
        its snapshot."""
        for suffix, read_optimized in (("_ro", True), ("_rt", False)):
            if name.endswith(suffix):
                loaded = self.session.catalog.load_table(database, name[: -len(suffix)])
                if loaded is not None:
                    return loaded[0], read_optimized or self._read_optimized_mode()
        return None

    def _read_optimized_mode(self) -> bool:
        return registry.choice(self.session.conf, registry.QUERY_TYPE) == "read_optimized"  # SET validated it

    def _is_temp_view(self, name: str) -> bool:
        # Asks the session catalog directly: listing every table costs a Spark job per query.
        return bool(self.session.spark._jsparkSession.sessionState().catalog().isTempView(
            self.session.spark._jvm.org.apache.spark.sql.catalyst.TableIdentifier.apply(name)
        ))

    def register(self, df: DataFrame) -> str:
        """Register ``df`` under a fresh temporary view name; the caller drops it."""
        self._views += 1
        view = f"__hudiql_snapshot_{id(self)}_{self._views}"
        df.createOrReplaceTempView(view)
        return view


TABLE_CHANGES, QUERY = "hudi_table_changes", "hudi_query"


def is_table_function(node: exp.Table) -> bool:
    """Is ``node`` one of Hudi's table-valued functions, ``hudi_table_changes(...)`` or ``hudi_query(...)``?"""
    return isinstance(node.this, exp.Anonymous) and node.this.name.lower() in (TABLE_CHANGES, QUERY)


def table_references(query: exp.Expression) -> list[exp.Table]:
    """The tables and views ``query`` reads by name, and its table-valued functions: not its
    CTEs, not files read directly (``parquet.`/path```), not an INSERT or CREATE target."""
    ctes = {cte.alias_or_name.lower() for cte in query.find_all(exp.CTE)}
    out = []
    for node in query.find_all(exp.Table):
        if is_table_function(node):
            out.append(node)
            continue
        if not node.name or node.catalog or (not node.db and node.name.lower() in ctes):
            continue
        if isinstance(node.parent, (exp.Insert, exp.Create)) or node.db.lower() in FILE_FORMATS:
            continue
        out.append(node)
    return out


def needed_columns(query: exp.Expression, columns: list[str]) -> list[str] | None:
    """The columns of a table that ``query`` may read, or ``None`` for all of them.

    Any identifier in the query that spells a column's name (case-insensitively) keeps the
    column: reading a column too many is harmless. What reads columns without naming them
    needs all: ``*`` other than in ``count(*)``, NATURAL joins, and PIVOT / UNPIVOT (which group
    by the columns they do not name).

    Example:
        >>> needed_columns(sqlglot.parse_one("SELECT count(*), sum(v) FROM t"), ["k", "v"])
        ['v']
        >>> needed_columns(sqlglot.parse_one("SELECT * FROM t"), ["k", "v"]) is None
        True
    """
    for star in query.find_all(exp.Star):
        if not (isinstance(star.parent, exp.Count) and star.parent.this is star):
            return None
    if query.find(exp.Pivot) is not None or any(j.method == "NATURAL" for j in query.find_all(exp.Join)):
        return None
    named = {i.name.lower() for i in query.find_all(exp.Identifier)}
    return [c for c in columns if c.lower() in named]


def conjuncts(where: exp.Expression) -> list[exp.Expression]:
    """The AND-ed parts of a condition."""
    if isinstance(where, exp.And):
        return conjuncts(where.left) + conjuncts(where.right)
    if isinstance(where, exp.Paren):
        return conjuncts(where.this)
    return [where]


def _table_filter(node: exp.Table) -> tuple[exp.Expression, set[str], bool] | None:
    """The WHERE clause of the SELECT that reads ``node``, the names it may qualify the table's
    columns with, and whether bare column names are the table's (it reads no other table)."""
    select = node.find_ancestor(exp.Select)
    where = select.args.get("where") if select is not None else None
    if where is None:
        return None
    single_table = len(list(select.find_all(exp.Table))) == 1
    return where.this, {node.name.lower(), (node.alias or "").lower()}, single_table


def _partition_filter(spark: SparkSession, table: HudiTable, files: FileSystemView, node: exp.Table):
    """Pruning for one table of a SELECT, from its WHERE clause."""
    found = _table_filter(node)
    return partition_filter(spark, table, files, *found) if found else None


def file_groups_to_read(spark: SparkSession, table: HudiTable, files: FileSystemView, keep,
                        condition: exp.Expression, qualifiers: set[str], unqualified_ok: bool,
                        skipping: bool) -> set[tuple[str, str]] | None:
    """The file groups (partition path, file id) that may hold rows matching ``condition``: by
    the record and secondary indexes (``key_file_groups``), and, when ``skipping``
    (``hoodie.enable.data.skipping``), by partition and column stats (``read.data_skipping``).
    ``None``: any file group. The indexes know the table as it is now, not as of an instant."""
    groups = key_file_groups(table, condition, qualifiers, unqualified_ok)
    ranged = data_skipping.kept_file_groups(spark, table, files, keep, condition, qualifiers,
                                            unqualified_ok) if skipping else None
    return ranged if groups is None else groups if ranged is None else groups & ranged


def key_file_groups(table: HudiTable, condition: exp.Expression, qualifiers: set[str],
                    unqualified_ok: bool) -> set[tuple[str, str]] | None:
    """The file groups (partition path, file id) that hold the rows a conjunct of ``condition``
    pins to literals: by record key (``id = 17``, ``id IN (1, 2)``), or by a column with a
    secondary index (``merchant = 'Acme'``), whose keys it finds there; found in the table's
    record index on the driver. ``None``: any file group (no record index, or no such conjunct).

    A key of a single-field string or integer column: its record key is the value's text.
    """
    if not record_index.usable(table):
        return None
    keys = pinned_keys(table, condition, qualifiers, unqualified_ok)
    try:
        for index in secondary_index.indexes(table) if table.config.metadata_partitions else ():
            values = _pinned(condition, index.column, table.schema[index.column].dataType, qualifiers, unqualified_ok)
            if values is not None:
                found = secondary_index.record_keys(table, index, sorted(values))
                keys = found if keys is None else keys & found
        if keys is None:
            return None
        located = record_index.RecordIndex.of(table).locate(sorted(keys))
    except (HudiqlError, OSError) as exc:
        record_index.unreadable(table, exc)
        return None
    return {(loc.partition, loc.file_id) for loc in located.values()}


def pinned_keys(table: HudiTable, condition: exp.Expression, qualifiers: set[str],
                unqualified_ok: bool) -> set[str] | None:
    """The record keys the conjuncts of ``condition`` pin the table's rows to (``id = 17``, ``id IN
    (1, 2)``), for a key of a single-field string or integer column (its record key is the value's
    text); None: any key."""
    fields = table.keygen.record_key_fields
    if len(fields) != 1 or table.keygen.prefixes_single_field or "." in fields[0]:
        return None
    dtype = table.schema[fields[0]].dataType
    if not isinstance(dtype, (T.StringType, T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
        return None
    return _pinned(condition, fields[0], dtype, qualifiers, unqualified_ok)


def _pinned(condition: exp.Expression, name: str, dtype: T.DataType, qualifiers: set[str],
            unqualified_ok: bool) -> set[str] | None:
    """The texts of the values the conjuncts of ``condition`` allow column ``name`` (of ``dtype``)
    to equal (``c = v``, ``c IN (...)``); None when none pins it to literals of its own type."""
    pinned: set[str] | None = None
    for conjunct in conjuncts(condition):
        if isinstance(conjunct, exp.EQ):
            column, values = conjunct.this, [conjunct.expression]
            if isinstance(values[0], exp.Column):
                column, values = values[0], [column]
        elif isinstance(conjunct, exp.In) and not conjunct.args.get("query"):
            column, values = conjunct.this, conjunct.expressions
        else:
            continue
        if not (isinstance(column, exp.Column) and column.name.lower() == name.lower()
                and (column.table.lower() in qualifiers if column.table else unqualified_ok)):
            continue
        texts = {_literal_text(v, dtype) for v in values}
        if None not in texts:
            pinned = texts if pinned is None else pinned & texts
    return pinned


def _literal_text(value: exp.Expression, dtype: T.DataType) -> str | None:
    """The text of the value a literal compares equal to in a column of ``dtype`` (a string for a
    string column, an integer for an integer one, ``DATE '...'`` for a date one: as a record key
    and a secondary index hold it); ``None`` for anything Spark would compare by a cast."""
    if isinstance(dtype, T.StringType):
        return value.name if isinstance(value, exp.Literal) and value.is_string else None
    if isinstance(dtype, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
        return value.name if isinstance(value, exp.Literal) and not value.is_string and value.name.isdigit() else None
    if isinstance(dtype, T.DateType) and isinstance(value, exp.Cast) and value.to.is_type("date"):
        literal = value.this
        if isinstance(literal, exp.Literal) and literal.is_string:
            try:
                return secondary_index.value_text(date.fromisoformat(literal.name), dtype)
            except ValueError:
                return None
    return None


def partition_filter(
    spark: SparkSession,
    table: HudiTable,
    files: FileSystemView,
    condition: exp.Expression,
    qualifiers: set[str],
    unqualified_ok: bool,
) -> Callable[[str], bool] | None:
    """A predicate on partition paths from the conjuncts of ``condition`` that read only partition
    columns of ``table`` (named with one of ``qualifiers``, or bare when ``unqualified_ok``).

    Spark evaluates those conjuncts on a tiny frame of partition values, so the pruning follows
    Spark's own comparison and cast rules. ``None`` means: read every partition.
    """
    if not table.keygen.is_partitioned:
        return None
    names = {f.lower(): f for f in table.config.partition_fields}
    qualifiers = {q for q in qualifiers if q}
    usable = []
    for conjunct in conjuncts(condition):
        columns = list(conjunct.find_all(exp.Column))
        if not columns or conjunct.find(exp.Subquery, exp.Select) is not None:
            continue
        if all(c.name.lower() in names and (c.table.lower() in qualifiers if c.table else unqualified_ok) for c in columns):
            stripped = conjunct.copy()
            for c in list(stripped.find_all(exp.Column)):
                c.replace(exp.column(names[c.name.lower()], quoted=True))
            usable.append(stripped.sql(dialect=DIALECT))
    if not usable:
        return None
    partitions = files.partitions()
    values = {p: table.keygen.partition_values(p) for p in partitions}
    if any(v is None for v in values.values()):
        return None  # some path does not tell its values: read everything
    fields = [table.schema[f] for f in table.config.partition_fields]
    rows = [(p, *[values[p][f.name] for f in fields]) for p in partitions]
    schema = T.StructType([T.StructField("__path", T.StringType())] + [T.StructField(f.name, T.StringType()) for f in fields])
    frame = spark.createDataFrame(rows, schema)
    frame = frame.select("__path", *[frame[f"`{f.name}`"].cast(f.dataType).alias(f.name) for f in fields])
    for predicate in usable:
        frame = frame.where(predicate)
    kept = {r[0] for r in frame.select("__path").collect()}
    return lambda path: path in kept
