"""MERGE INTO, UPDATE and DELETE: planned as Spark SQL over the target's snapshot, written as one commit.

Planning turns a statement into *actions*, one row per target row to change, with its new values:
- MERGE: the source LEFT JOIN the target on the ON condition; clauses are tried in the order
  written and the first whose condition holds decides the row (standard SQL);
- UPDATE / DELETE: the target rows the WHERE selects.
Then one path finishes every statement: precombine (several source rows for one key), the merge
rule (an update older than the stored row is skipped and counted, unless
``hoodie.merge.ordering.enforce=false``), partition moves (delete at the old path, insert at the
new one), counts, and the write. Nothing is written before validation passes. Each row keeps
the file group of the stored row it changes (from the snapshot's ``_hoodie_file_name``), so the
write does not look the keys up again (``write.writer.write_decided``).
An INSERT's counts (``insert_counts``) are the same five, counted by its write tasks.

Example (statements reach ``DmlPlanner`` through ``Session.sql``):
    >>> _ = session.sql("CREATE TABLE orders (id INT, status STRING, ts INT) USING hudi "
    ...                 "TBLPROPERTIES (primaryKey = 'id', preCombineField = 'ts')")
    >>> _ = session.sql("INSERT INTO orders VALUES (1, 'new', 5), (2, 'new', 5)")
    >>> session.sql("MERGE INTO orders t USING (SELECT 1 AS id, 'paid' AS status, 6 AS ts "
    ...             "UNION ALL SELECT 2, 'lost', 4 UNION ALL SELECT 3, 'new', 1) s ON t.id = s.id "
    ...             "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *").first()   # 2 is older: skipped
    Row(num_affected_rows=2, num_updated_rows=1, num_deleted_rows=0, num_inserted_rows=1, num_skipped_older_rows=1)
    >>> session.sql("MERGE INTO orders t USING (SELECT 'new' AS state) s ON t.status = s.state WHEN MATCHED THEN DELETE")
    Traceback (most recent call last):
    hudiql.errors.SqlError: the MERGE ON condition must match every record key column of orders (id);
    add t.id = <source expression> (qualify source columns with the source alias)
"""

from __future__ import annotations

from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.window import Window
from sqlglot import exp

from hudiql.config import registry
from hudiql.errors import ColumnError, DataError, HudiqlError, SqlError, warn
from hudiql.index import record_index
from hudiql.read.query import QueryPlanner, conjuncts, file_groups_to_read, partition_filter, pinned_keys
from hudiql.read.snapshot import SOURCE_FILE, snapshot
from hudiql.table.fsview import FileSystemView
from hudiql.sql import statements as S
from hudiql.sql.parser import DIALECT
from hudiql.record.schema import (
    FILE_NAME,
    IS_DELETED,
    META_COLUMNS,
    PARTITION_PATH,
    RECORD_KEY,
    field_root,
    find_column,
)
from hudiql.table.table import HudiTable
from hudiql.timeline.commit import CommitMetadata
from hudiql.transaction.write_transaction import WriteTransaction
from hudiql.write.handle import DELETE, FILE_ID, SEQUENCE
from hudiql.write.index import is_global, moves_keys
from hudiql.write.insert import (
    evolved_schema,
    naming_narrowed_columns,
    narrowed_columns,
    write_with_schema,
)
from hudiql.write.writer import DmlCounts, Operation, write_decided

KIND = "__hudiql_kind"
OLD_PATH = "__hudiql_old_path"
OLD_ORDERING = "__hudiql_old_ordering"
OLD_FILE = "__hudiql_old_file"  # the target row's _hoodie_file_name: its file group
OLD_KEY = "__hudiql_old_key"  # the target row's stored record key (a table without a record key keeps it)
SOURCE_ORDERING = "__hudiql_source_ordering"  # the source row's ordering value, for precombine
MATCHED = "__hudiql_matched"
SKIP = "__hudiql_skip"  # an update older than the stored row (merge rule)
SHARED_KEY = "__hudiql_shared_key"  # the record key of a source row another source row shares, else null
UPDATE, DELETE_KIND, INSERT = "update", "delete", "insert"
MOVED = "moved"  # the delete at the old path of an update that moves its row to another partition


def insert_counts(meta: CommitMetadata) -> DmlCounts:
    """What an INSERT did (the commit ``write_rows`` made), counted by its write tasks as MERGE's
    counts are: rows updated, deleted (``_hoodie_is_deleted``), inserted, and skipped because the
    stored row has a greater ordering value."""
    return DmlCounts.from_metadata(meta.extra_metadata)


#: A MERGE reads a table whose base files hold fewer bytes whole rather than look its source's keys
#: up in the record index first: a lookup job costs about what reading this much parquet does
#: (measured: bench/statement_latency.py --record-index, 100k rows, 2 cores).
LOOKUP_WORTH_BYTES = 128 * 1024 * 1024


def _bound_columns(on: exp.Expression, target: str) -> dict[str, exp.Expression]:
    """Target columns (lower case) that ``on`` equates with an expression of the source alone."""
    bound = {}
    for conjunct in conjuncts(on):
        if not isinstance(conjunct, exp.EQ):
            continue
        for side, other in ((conjunct.this, conjunct.expression), (conjunct.expression, conjunct.this)):
            if _qualified_by(side, target) and not any(
                _qualified_by(c, target) or not c.table for c in other.find_all(exp.Column)
            ):
                bound[_target_field(side, target).lower()] = other
    return bound


def _qualified_by(column: exp.Expression, target: str) -> bool:
    """Whether ``column`` is a column of ``target`` (``t.c``, ``db.t.c``, or a field of one, ``t.a.b``)."""
    return isinstance(column, exp.Column) and (column.table.lower() == target or (
        len(column.parts) > 2 and column.parts[0].name.lower() == target))


def _target_field(column: exp.Column, target: str) -> str:
    """The column (or ``a.b``: field of a STRUCT column) of ``target`` that ``column`` names."""
    if column.table.lower() == target:
        return column.name
    return ".".join(p.name for p in column.parts[1:])


def _direct_source_column(value: exp.Expression, name: str, source: str, source_columns) -> bool:
    """Whether ``value``, assigned to column ``name``, is the source's column of that name."""
    return (isinstance(value, exp.Column) and value.name.lower() == name.lower() and value.table.lower() in (source, "")
            and name.lower() in source_columns)


def _normalized(value: exp.Expression) -> str:
    """``value``'s SQL with identifiers in lower case, to compare two expressions."""
    return value.sql(dialect=DIALECT, normalize=True, identify=False).lower().replace("`", "").replace('"', "")


def _col(name: str, qualifier: str | None = None) -> exp.Expression:
    """Column ``name`` (of ``qualifier``); a dotted name is a field of a STRUCT column (a nested
    record key or ordering field)."""
    root, *path = name.split(".")
    column = exp.column(root, table=qualifier, quoted=True)
    return exp.Dot.build([column, *[exp.to_identifier(p, quoted=True) for p in path]]) if path else column


def _cast(value: exp.Expression, dtype) -> exp.Expression:
    return exp.Cast(this=value, to=exp.DataType.build(dtype.simpleString(), dialect=DIALECT))


class DmlPlanner:
    """Plans and writes one statement in ``txn``, over its snapshot ``txn.table``. On a table without
    a record key, a stored row is known by its stored ``_hoodie_record_key`` (as Hudi's Spark SQL
    knows it since 0.14), a new row gets a key made by the write, and MERGE matches rows by its
    whole ON condition."""

    def __init__(self, planner: QueryPlanner, txn: WriteTransaction) -> None:
        self.planner = planner  # plans the source and the target's snapshot
        self.spark = planner.session.spark
        self.conf = planner.session.conf
        self.txn = txn
        self.table = txn.table

    # ---- statements -------------------------------------------------------------------------
    def merge(self, st: S.Merge) -> DmlCounts:
        table = self.table
        target = (st.alias or st.table.name).lower()
        source = st.source_alias or (st.source.name if isinstance(st.source, exp.Table) else None)
        if not source:
            raise SqlError("give the MERGE source an alias: USING (SELECT ...) AS s")
        source = source.lower()
        if source == target:
            raise SqlError(f"the MERGE source and target are both called '{source}'; give one of them another alias")

        query = st.source.this if isinstance(st.source, exp.Subquery) else exp.select("*").from_(
            exp.Table(this=st.source.this, db=st.source.args.get("db"))
        )
        source_df = self.planner.dataframe(query)
        on = self._matching_condition(table, st.on, target, source, source_df.columns) if table.has_record_key else st.on
        values = self._source_values(table, st.clauses, source_df, source, st.schema_evolution)
        if st.schema_evolution:
            write_with_schema(self.txn, evolved_schema(table, values))
        narrowed = {} if st.schema_evolution else narrowed_columns(table.schema, values)
        self._check_clauses(table, st.clauses, source_df.columns, source, target, on)

        files = table.file_system_view()
        source_df = source_df.withColumn(SEQUENCE, F.monotonically_increasing_id())
        source_view = self._register(source_df)
        keep = partition_filter(self.spark, table, files, on, {target, st.table.name}, unqualified_ok=False)
        reached = self._source_partitions(table, on, target, source, source_view)
        if reached is not None:
            literal = keep
            keep = lambda path: path in reached and (literal is None or literal(path))  # noqa: E731
        groups = self._source_file_groups(table, files, on, target, source, source_view)
        target_view = self._register(self._target(table, files, keep, groups).withColumn(MATCHED, F.lit(True)))

        matched = exp.Not(this=exp.Is(this=_col(MATCHED, target), expression=exp.Null()))
        conditions = []
        for clause in st.clauses:
            base = matched if clause.matched else exp.Not(this=matched.copy())
            conditions.append(exp.and_(base.copy(), exp.Paren(this=clause.condition.copy())) if clause.condition else base.copy())

        keys = {k.lower() for k in table.config.record_key_fields}

        def value(clause: S.MergeClause, name: str) -> exp.Expression:
            if clause.action == DELETE_KIND or (clause.action == UPDATE and name.lower() in keys):
                return _col(name, target)  # an update never changes the key the ON condition matched
            assigned = {k.lower(): v for k, v in (clause.assignments or {}).items()}
            if clause.assignments is None:
                return _col(name, source)
            if name.lower() in assigned:
                return assigned[name.lower()].copy()
            return _col(name, target) if clause.action == UPDATE else exp.Null()

        projections, checks = [], []
        for field in table.schema.fields:
            case = exp.Case()
            for clause, cond in zip(st.clauses, conditions):
                case = case.when(cond.copy(), value(clause, field.name))
                if clause.action != DELETE_KIND:
                    label = f"WHEN {'MATCHED' if clause.matched else 'NOT MATCHED'} THEN {clause.action.upper()}"
                    checks.append((f"{label}: column {field.name}", _cast(value(clause, field.name), field.dataType)))
            projections.append(exp.alias_(_cast(case, field.dataType), field.name, quoted=True))
        deleted_flag = self._source_delete_flag(table, st.clauses, conditions, source_df.columns, source)
        if deleted_flag is not None:
            projections.append(exp.alias_(deleted_flag, IS_DELETED, quoted=True))
        ordering = table.config.ordering_field
        if ordering:
            # Several source rows for one key are ranked by the source's own ordering value.
            in_source = {c.lower() for c in source_df.columns}
            root, *path = ordering.split(".")
            by_source = next(
                p.this for p in projections if isinstance(p, exp.Alias) and p.alias.lower() == root.lower()
            )
            if path:  # a field of the STRUCT column the clauses assign
                by_source = exp.Dot.build([exp.Paren(this=by_source.copy()), *[exp.to_identifier(p, quoted=True) for p in path]])
            if root.lower() in in_source:
                by_source = _col(ordering, source)
            projections.append(exp.alias_(by_source.copy(), SOURCE_ORDERING))
        kind = exp.Case()
        for clause, cond in zip(st.clauses, conditions):
            kind = kind.when(cond.copy(), exp.Literal.string(clause.action))
        projections += [
            exp.alias_(kind, KIND),
            exp.alias_(_col(PARTITION_PATH, target), OLD_PATH),
            exp.alias_(_col(FILE_NAME, target), OLD_FILE),
            exp.alias_(self._old_key(table, target), OLD_KEY),
            exp.alias_(self._old_ordering(table, target), OLD_ORDERING),
            exp.alias_(_col(SEQUENCE, source), SEQUENCE),
        ]
        def joined(*columns: exp.Expression) -> exp.Select:
            return (
                exp.select(*columns)
                .from_(exp.Table(this=exp.to_identifier(source_view), alias=exp.TableAlias(this=exp.to_identifier(source))))
                .join(
                    exp.Table(this=exp.to_identifier(target_view), alias=exp.TableAlias(this=exp.to_identifier(target))),
                    on=on.copy(),
                    join_type="left",
                )
            )

        checks = [(label, joined(check)) for label, check in checks]
        actions = self._run(joined(*projections), [target_view, source_view], checks).where(F.col(KIND).isNotNull())
        # A source row no clause matched is a new key only if the join saw every stored row of
        # its key: ON tests nothing but the record key, over the whole target.
        on_keys_only = all(isinstance(c, exp.EQ) for c in conjuncts(on)) and len(
            list(conjuncts(on))) == len(table.config.record_key_fields)
        # A MERGE that only inserts into a table without an ordering field keeps source rows that
        # share a key, as Hudi's (it writes them with the insert operation).
        keep_shared = all(not c.matched for c in st.clauses) and not table.config.ordering_field
        with naming_narrowed_columns(narrowed, "MERGE"):
            return self._finish(table, actions, from_source=True, inserts_checked=keep is None and on_keys_only,
                                keep_shared=keep_shared)

    def update(self, st: S.Update) -> DmlCounts:
        table = self.table
        assigned = {find_column(k, table.schema.fieldNames(), f"UPDATE {table.config.name} SET").lower(): v for k, v in st.assignments.items()}
        self._check_keys_unassigned(table, assigned, "UPDATE")
        projections = [
            exp.alias_(_cast(assigned[f.name.lower()].copy(), f.dataType) if f.name.lower() in assigned else _col(f.name),
                       f.name, quoted=True)
            for f in table.schema.fields
        ]
        checks = [
            (f"UPDATE SET {f.name}", _cast(assigned[f.name.lower()].copy(), f.dataType))
            for f in table.schema.fields if f.name.lower() in assigned
        ]
        return self._filtered(table, st.table, st.alias, st.where, projections, UPDATE, checks)

    def delete(self, st: S.Delete, partitions: set[str] | None = None) -> DmlCounts:
        """``partitions``: the only partition paths the deleted rows can be in (``None``: any)."""
        table = self.table
        projections = [exp.alias_(_col(f.name), f.name, quoted=True) for f in table.schema.fields]
        return self._filtered(table, st.table, st.alias, st.where, projections, DELETE_KIND, [], partitions)

    # ---- shared steps -----------------------------------------------------------------------
    def _source_partitions(
        self, table: HudiTable, on: exp.Expression, target: str, source: str, source_view: str
    ) -> set[str] | None:
        """The partition paths the source's rows can reach, when ON equates every partition
        column of the target with a source expression (delta-rs prunes a merge the same way):
        no target row elsewhere can match, and every insert lands in one of them. ``None``:
        every partition."""
        bound = _bound_columns(on, target)
        fields = table.config.partition_fields
        if not table.keygen.is_partitioned or not all(f.lower() in bound for f in fields):
            return None
        values = exp.select(*[
            exp.alias_(_cast(bound[f.lower()].copy(), table.schema[f].dataType), f, quoted=True) for f in fields
        ]).from_(exp.Table(this=exp.to_identifier(source_view), alias=exp.TableAlias(this=exp.to_identifier(source))))
        frame = self.spark.sql(values.sql(dialect=DIALECT))
        paths = frame.select(table.keygen.partition_path(table.schema).alias("p")).distinct().collect()
        return {r[0] for r in paths}

    def _source_file_groups(
        self, table: HudiTable, files: FileSystemView, on: exp.Expression, target: str, source: str,
        source_view: str,
    ) -> set[tuple[str, str]] | None:
        """The file groups that hold the source's keys, by the record index, when ON equates the
        target's (single-field) record key with a source expression: no target row elsewhere can
        match. A Spark job looks the keys up; the driver gets the groups' names only. ``None``:
        every file group: also when the table's base files are smaller than ``LOOKUP_WORTH_BYTES``,
        which cost about what the lookup job does to read."""
        fields = table.config.record_key_fields
        bound = _bound_columns(on, target)
        if (len(fields) != 1 or "." in fields[0] or fields[0].lower() not in bound or table.keygen.prefixes_single_field
                or not record_index.usable(table)
                or sum(s.base_file_size for s in files.latest_slices()) < LOOKUP_WORTH_BYTES):
            return None
        key = exp.select(exp.alias_(_cast(bound[fields[0].lower()].copy(), table.schema[fields[0]].dataType),
                                    fields[0], quoted=True))
        keys = self.spark.sql(key.from_(exp.Table(this=exp.to_identifier(source_view), alias=exp.TableAlias(
            this=exp.to_identifier(source)))).sql(dialect=DIALECT))
        try:
            located = record_index.RecordIndex.of(table).tag(
                keys.select(F.col(fields[0]).cast("string").alias(RECORD_KEY)).where(F.col(RECORD_KEY).isNotNull()))
            rows = located.select(record_index.LOCATED_PARTITION, record_index.LOCATED_FILE_ID).distinct().collect()
        except (HudiqlError, OSError) as exc:
            record_index.unreadable(table, exc)
            return None
        return {(r[0], r[1]) for r in rows}

    def _target(self, table: HudiTable, files: FileSystemView, keep,
                file_groups: set[tuple[str, str]] | None = None, keys: set[str] | None = None) -> DataFrame:
        """The target rows a statement reads (of ``file_groups`` only, and of a merged slice only
        the rows of ``keys``, when given). A table without meta fields stores neither a row's key and
        partition path nor (always) its file name: the statement takes them from its key generator
        and the file from the base file it read."""
        if table.config.populate_meta_fields:
            return snapshot(self.spark, table, files, keep, file_groups=file_groups, keys=keys)
        return snapshot(self.spark, table, files, keep, with_file_name=True, file_groups=file_groups, keys=keys).withColumnRenamed(
            SOURCE_FILE, FILE_NAME).withColumn(PARTITION_PATH, table.keygen.partition_path(table.schema)).withColumn(
            RECORD_KEY, table.keygen.record_key())

    def _old_key(self, table: HudiTable, qualifier: str | None) -> exp.Expression:
        """The stored row's key, which a table without a record key keeps. A keyed table derives
        it, but one keyed by a field of a STRUCT column keeps it too: an update that assigns the
        STRUCT must not change the key (``_finish`` checks it)."""
        nested = any("." in k for k in table.config.record_key_fields)
        return _col(RECORD_KEY, qualifier) if not table.has_record_key or nested else exp.Null()

    def _old_ordering(self, table: HudiTable, qualifier: str | None) -> exp.Expression:
        field = table.config.ordering_field
        return _col(field, qualifier) if field else exp.Null()

    def _filtered(self, table, name: S.TableName, alias, where, projections, kind: str, checks,
                  partitions: set[str] | None = None) -> DmlCounts:
        target = (alias or name.name).lower()
        files = table.file_system_view(sorted(partitions) if partitions is not None else None)
        keep = partition_filter(self.spark, table, files, where, {target, name.name}, True) if where else None
        groups = file_groups_to_read(self.spark, table, files, keep, where, {target, name.name.lower()}, True,
                                     table.settings.flag(registry.DATA_SKIPPING)) if where else None
        keys = pinned_keys(table, where, {target, name.name.lower()}, True) if where else None
        view = self._register(self._target(table, files, keep, groups, keys))
        projections = projections + [
            exp.alias_(exp.Literal.string(kind), KIND),
            exp.alias_(_col(PARTITION_PATH), OLD_PATH),
            exp.alias_(_col(FILE_NAME), OLD_FILE),
            exp.alias_(self._old_key(table, None), OLD_KEY),
            exp.alias_(self._old_ordering(table, None), OLD_ORDERING),
            exp.alias_(exp.Literal.number(0), SEQUENCE),
        ]
        def selected(*columns: exp.Expression) -> exp.Select:
            sql = exp.select(*columns).from_(
                exp.Table(this=exp.to_identifier(view), alias=exp.TableAlias(this=exp.to_identifier(target)))
            )
            return sql.where(where.copy()) if where is not None else sql

        checks = [(label, selected(check)) for label, check in checks]
        return self._finish(table, self._run(selected(*projections), [view], checks), from_source=False,
                            inserts_checked=False)

    def _finish(self, table: HudiTable, actions: DataFrame, from_source: bool, inserts_checked: bool,
                keep_shared: bool = False) -> DmlCounts:
        """Decide and write the statement's rows; ``keep_shared``: source rows that share a key are
        all inserted (no precombine)."""
        rule = table.merge_rule
        key = table.keygen.record_key() if table.has_record_key else F.col(OLD_KEY)  # null: a new row
        keyed = actions.withColumn(RECORD_KEY, key).withColumn(PARTITION_PATH, table.keygen.partition_path(table.schema))
        nested = [k for k in table.config.record_key_fields if "." in k]
        if table.has_record_key and nested:  # an assigned STRUCT column may hold a key field
            changed = (F.col(KIND) == UPDATE) & F.col(OLD_KEY).isNotNull() & (F.col(OLD_KEY) != F.col(RECORD_KEY))
            refusal = F.concat(F.lit(f"hudiql.errors.ColumnError: the update changes record key field {', '.join(nested)} "
                                     "of the row with record key "), F.col(OLD_KEY),
                               F.lit(" (to "), F.col(RECORD_KEY), F.lit("); keep the field's value, or delete and insert the row"))
            keyed = keyed.withColumn(RECORD_KEY, F.when(changed, F.raise_error(refusal)).otherwise(F.col(RECORD_KEY)))
        # Without an ordering field, source rows that share a key are an error, found by the
        # counting job below (no job of its own); with one, the greatest wins.
        refuse_shared = from_source and not keep_shared and (not rule.ordering_field or not table.has_record_key)
        if refuse_shared:
            sharing = F.count(F.lit(1)).over(Window.partitionBy(RECORD_KEY))
            keyed = keyed.withColumn(SHARED_KEY, F.when((sharing > 1) & F.col(RECORD_KEY).isNotNull(), F.col(RECORD_KEY)))
        elif from_source and not keep_shared and table.has_record_key:
            keyed = rule.precombine(keyed, [RECORD_KEY], SEQUENCE, SOURCE_ORDERING)
        combined = keyed.drop(SOURCE_ORDERING)
        enforce = registry.flag(self.conf, registry.ENFORCE_ORDERING)
        if not enforce and rule.is_event_time and table.config.is_mor:
            raise SqlError(
                f"{registry.ENFORCE_ORDERING}=false cannot apply to merge-on-read table {table.config.name}: every reader "
                "merges its log records by the ordering field, so an older update would still lose; "
                f"SET {registry.ENFORCE_ORDERING}=true, or use a copy-on-write table"
            )
        wins = rule.incoming_wins_column(F.col(OLD_ORDERING), F.col(rule.ordering_field)) if (
            enforce and rule.is_event_time) else F.lit(True)
        is_update = F.col(KIND) == UPDATE
        # A row whose _hoodie_is_deleted is true deletes its key, whatever clause produced it.
        marked = F.coalesce(F.col(IS_DELETED), F.lit(False)) if IS_DELETED in combined.columns else F.lit(False)
        is_delete = F.col(KIND) == DELETE_KIND
        skip = F.col(SKIP)
        decided = combined.withColumn(SKIP, is_update & ~wins).withColumn(DELETE, is_delete)
        # A row stays in the file group of the stored row it changes; an update that changes the
        # partition path is an insert at the new path plus a delete at the old one, in one commit,
        # unless the table's global index keeps keys in their partition (``write.index``).
        if is_global(table) and not moves_keys(table):
            decided = decided.withColumn(PARTITION_PATH, F.when(is_update & F.col(OLD_PATH).isNotNull(), F.col(OLD_PATH))
                                         .otherwise(F.col(PARTITION_PATH)))
        moves = is_update & ~skip & (F.col(OLD_PATH) != F.col(PARTITION_PATH))
        stored_group = F.regexp_extract(F.col(OLD_FILE), r"^([^_]+)", 1)  # a base or log file's group
        decided = decided.withColumn(FILE_ID, F.when(F.col(OLD_FILE).isNull() | moves, F.lit(None)).otherwise(stored_group))
        moved = decided.where(moves).withColumn(PARTITION_PATH, F.col(OLD_PATH)).withColumn(
            DELETE, F.lit(True)).withColumn(FILE_ID, stored_group).withColumn(KIND, F.lit(MOVED))
        rows = decided.unionByName(moved).persist(StorageLevel.MEMORY_AND_DISK)
        try:
            # One pass counts the statement's rows and, per partition, the rows for new file groups.
            live = ~skip
            per_partition = rows.groupBy(PARTITION_PATH).agg(
                F.sum((live & is_update & ~marked).cast("long")),
                F.sum((live & (is_delete | (is_update & marked))).cast("long")),
                F.sum(((F.col(KIND) == INSERT) & ~marked).cast("long")),
                F.sum(skip.cast("long")),
                F.sum((live & F.col(FILE_ID).isNull() & ~F.col(DELETE) & ~marked).cast("long")),
                *([F.max(SHARED_KEY)] if refuse_shared else []),
            ).collect()
            shared = next((r[6] for r in per_partition if r[6] is not None), None) if refuse_shared else None
            if shared is not None and not table.has_record_key:
                raise DataError(
                    f"several source rows match one stored row of table {table.config.name} (record key '{shared}'), "
                    "which has no record key or ordering field to choose between them; make ON match each stored row "
                    "at most once"
                )
            if shared is not None:
                raise DataError(
                    f"several source rows match record key '{shared}' and table {table.config.name} has no "
                    "ordering field to choose between them; deduplicate the source or set preCombineField"
                )
            counts = DmlCounts(*[sum(int(r[i] or 0) for r in per_partition) for i in (1, 2, 3, 4)])
            if counts.affected == 0:
                return counts  # nothing changes: no commit
            inserts = {r[PARTITION_PATH]: int(r[5] or 0) for r in per_partition}
            written = rows.where(live).drop(KIND, OLD_PATH, OLD_ORDERING, OLD_FILE, OLD_KEY, SKIP, SHARED_KEY)
            write_decided(self.txn, written, counts, inserts, inserts_checked,
                          Operation.INSERT if keep_shared else Operation.UPSERT)
            return counts
        finally:
            rows.unpersist()

    def _source_values(
        self, table: HudiTable, clauses: list[S.MergeClause], source_df: DataFrame, source: str, evolving: bool
    ) -> list[tuple[str, T.DataType]]:
        """The columns a MERGE's clauses assign a source column of the same name to, with the
        source column's type, as Spark's MERGE WITH SCHEMA EVOLUTION counts them: every source
        column under ``UPDATE SET *`` / ``INSERT *`` (but Hudi's meta columns and the
        ``_hoodie_is_deleted`` flag), and ``c = s.c``. These are the columns it adds or widens
        (``writer.evolved_schema``); a column the table lacks assigned anything else is refused."""
        types = {f.name.lower(): f.dataType for f in source_df.schema.fields}
        names = {c.lower() for c in table.schema.fieldNames()}
        values = []
        for clause in clauses:
            if clause.action == DELETE_KIND:
                continue
            if clause.assignments is None:
                values += [(f.name, f.dataType) for f in source_df.schema.fields
                           if f.name not in META_COLUMNS and f.name.lower() != IS_DELETED]
                continue
            for name, value in clause.assignments.items():
                direct = _direct_source_column(value, name, source, types)
                if direct:
                    values.append((name, types[name.lower()]))
                elif evolving and name.lower() not in names:
                    label = f"WHEN {'MATCHED' if clause.matched else 'NOT MATCHED'} THEN {clause.action.upper()}"
                    raise ColumnError(
                        f"{label}: table {table.config.name} has no column {name}; MERGE WITH SCHEMA EVOLUTION adds a "
                        f"column from the source column of its name only ({name} = {source}.{name})"
                    )
        return values

    # ---- validation ---------------------------------------------------------------------------
    def _matching_condition(self, table: HudiTable, on: exp.Expression, target: str, source: str,
                            source_columns: list[str]) -> exp.Expression:
        """What matches a source row to a stored row of a table with a record key, as in Hudi: the
        key. Each record key column is matched to the source expression ON equates it with, else to
        the source column of its name; equalities of partition columns stay (a key is matched within
        its partition); ON's other conditions do not decide matching (Hudi ignores them: a warning
        says so). A key column neither ON nor the source gives is an error."""
        keys = {k.lower(): k for k in table.config.record_key_fields}
        partitions = {p.lower() for p in table.config.partition_fields}
        bound = _bound_columns(on, target)
        available = {c.lower(): c for c in source_columns}
        missing = [k for k in keys.values() if k.lower() not in bound and field_root(k).lower() not in available]
        if missing:
            need = " AND ".join(f"{target}.{k} = <source expression>" for k in missing)
            raise SqlError(
                f"the MERGE ON condition must match every record key column of {table.config.name} "
                f"({', '.join(table.config.record_key_fields)}); add {need} (qualify source columns with the source alias)"
            )
        kept, ignored = [], []
        for conjunct in conjuncts(on):
            matched = _bound_columns(conjunct, target)
            if not matched:  # Hudi refuses such a condition too: it matches rows by key equalities only
                raise SqlError(
                    f"MERGE INTO {table.config.name} matches rows by record key, as Hudi does: ON takes equalities of "
                    f"target columns with source expressions; move {conjunct.sql(dialect=DIALECT)} to WHEN MATCHED AND "
                    "... or WHEN NOT MATCHED AND ...")
            (kept if set(matched) <= set(keys) | partitions else ignored).append(conjunct)
        kept += [exp.EQ(this=_col(k, target), expression=_col(available[field_root(k).lower()] + k[len(field_root(k)):],
                                                              source))
                 for k in keys.values() if k.lower() not in bound]
        if ignored:
            warn(f"MERGE INTO {table.config.name} matches rows by record key ({', '.join(keys.values())}), as Hudi does: "
                 f"ON's {' AND '.join(c.sql(dialect=DIALECT) for c in ignored)} does not decide matching; "
                 "put it in WHEN MATCHED AND ... instead")
        return exp.and_(*kept) if len(kept) > 1 else kept[0]

    def _check_clauses(
        self, table: HudiTable, clauses: list[S.MergeClause], source_columns: list[str], source: str, target: str,
        on: exp.Expression,
    ) -> None:
        available = {c.lower() for c in source_columns}
        columns = table.schema.fieldNames()
        for clause in clauses:
            label = f"WHEN {'MATCHED' if clause.matched else 'NOT MATCHED'} THEN {clause.action.upper()}"
            if clause.action == DELETE_KIND:
                continue
            if clause.assignments is None:
                star = "UPDATE SET *" if clause.action == UPDATE else "INSERT *"
                missing = [c for c in columns if c.lower() not in available]
                if missing:
                    raise ColumnError(
                        f"{star} needs source columns {', '.join(missing)}; the source has {', '.join(source_columns)} "
                        "(assign the columns explicitly instead)"
                    )
                continue  # source columns the table lacks are not written, as in Hudi (WITH SCHEMA EVOLUTION adds them)
            names = set()
            for name, value in clause.assignments.items():
                try:
                    names.add(find_column(name, columns, label).lower())
                except ColumnError as e:
                    direct = _direct_source_column(value, name, source, available)
                    raise ColumnError(f"{e} (MERGE WITH SCHEMA EVOLUTION adds it)" if direct else str(e)) from None
            if clause.action == UPDATE:
                # A key assigned the value ON matched it with (SET id = s.id, as Hudi users write it)
                # keeps the key: only another value would change it.
                bound = {k: _normalized(v) for k, v in _bound_columns(on, target).items()}
                same = {k for k, v in clause.assignments.items()
                        if _normalized(v) in (bound.get(k.lower()), f"{target}.{k.lower()}")}
                self._check_keys_unassigned(table, names - {k.lower() for k in same}, label)
            else:
                unassigned = [k for k in table.config.record_key_fields if field_root(k).lower() not in names]
                if unassigned:
                    raise ColumnError(f"{label} leaves record key column {', '.join(unassigned)} unassigned; give it a value")

    def _source_delete_flag(
        self, table: HudiTable, clauses: list[S.MergeClause], conditions: list[exp.Expression],
        source_columns: list[str], source: str,
    ) -> exp.Expression | None:
        """A source ``_hoodie_is_deleted`` the target lacks still deletes the key, as in Hudi: under
        ``UPDATE SET *`` and ``INSERT *`` its value travels with the row (a column the target has is
        assigned like any other). ``None`` when there is nothing to carry."""
        if IS_DELETED in {c.lower() for c in table.schema.fieldNames()}:
            return None
        name = next((c for c in source_columns if c.lower() == IS_DELETED), None)
        stars = [clause.assignments is None and clause.action != DELETE_KIND for clause in clauses]
        if name is None or not any(stars):
            return None
        flag = exp.Case()  # the first clause whose condition holds decides, as for the columns
        for star, cond in zip(stars, conditions):
            flag = flag.when(cond.copy(), _col(name, source) if star else exp.false())
        return _cast(flag, T.BooleanType())

    def _check_keys_unassigned(self, table: HudiTable, assigned, label: str) -> None:
        keys = [k for k in table.config.record_key_fields if k.lower() in assigned]
        if keys:
            raise ColumnError(f"{label} cannot change record key column {', '.join(keys)}; delete and insert the row instead")

    # ---- Spark plumbing -----------------------------------------------------------------------
    def _register(self, df: DataFrame) -> str:
        return self.planner.register(df)

    def _run(self, sql: exp.Expression, views: list[str], checks: list[tuple[str, exp.Expression]]) -> DataFrame:
        """Analyse the planned SQL (hudiql tables in subqueries read as snapshots). When a value
        cannot be cast to its column, ``checks`` (label, one-column query) find which one."""
        planner = self.planner
        query, snapshots = planner.with_snapshots(sql)
        try:
            return self.spark.sql(query.sql(dialect=DIALECT))
        except Exception as exc:
            if "DATATYPE_MISMATCH" in str(exc) or "CAST" in str(exc):
                for label, check in checks:
                    checked, more = planner.with_snapshots(check)
                    try:
                        self.spark.sql(checked.sql(dialect=DIALECT))
                    except Exception as column_exc:
                        reason = str(column_exc).splitlines()[0].split(" SQLSTATE")[0]
                        raise ColumnError(f"{label}: the value cannot be stored in the column ({reason})") from None
                    finally:
                        planner.drop(more)
            raise
        finally:
            planner.drop(views + snapshots)
