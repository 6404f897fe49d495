"""Session: one SparkSession plus a warehouse; ``sql()`` runs statements.

Example:
    >>> session = connect(warehouse=warehouse, spark=spark)   # without spark=, a new local SparkSession
    >>> session.sql("CREATE TABLE t (id INT) USING hudi TBLPROPERTIES (primaryKey = 'id'); SHOW TABLES").collect()
    [Row(namespace='default', tableName='t', isTemporary=False)]
    >>> _ = session.sql("SET hoodie.merge.ordering.enforce = false")
    >>> session.conf                                           # what this session's writes run with
    {'hoodie.merge.ordering.enforce': 'false'}
    >>> session.sql("SELECT * FROM orders")
    Traceback (most recent call last):
    hudiql.errors.TableNotFoundError: table default.orders does not exist; see SHOW TABLES
"""

from __future__ import annotations

import fnmatch
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from hudiql import datasource, layout, procedures
from hudiql.catalog import DEFAULT_DATABASE, Catalog, View
from hudiql.cluster import prepare_executors
from hudiql.config import registry
from hudiql.config.table_config import TABLE_NAME, TableConfig
from hudiql.errors import (
    OptionError,
    SqlError,
    TableExistsError,
    TableNotFoundError,
    raise_user_error,
    warn,
)
from hudiql.io.storage import Storage, configure, resolve_options
from hudiql.read.query import QueryPlanner
from hudiql.services import clustering
from hudiql.services.indexes import create_index, drop_index, show_indexes
from hudiql.services.post_commit import transaction
from hudiql.transaction.retry import retrying
from hudiql.sql import ddl
from hudiql.sql import statements as S
from hudiql.sql.options import TableDefinition, adopted_options, derive_table_properties
from hudiql.sql.parser import parse, table_name_text
from hudiql.record.schema import dropped_and_renamed, evolve, without_meta_columns
from hudiql.table.table import HudiTable, has_table
from hudiql.write.dml import DmlCounts, DmlPlanner, insert_counts
from hudiql.write.insert import (
    InsertRows,
    align_columns,
    fixed_columns,
    prepare_insert,
    static_partition_values,
    write_insert,
)
from hudiql.write.replace import (
    matching_partitions,
    overwrite_mode,
    overwrite_replacement,
    partition_paths,
    wildcard_partitions,
)
from hudiql.write.writer import (
    Operation,
    Replacement,
    check_overwrite,
    planned_shuffles,
    write_replacement,
    write_rows,
    write_schema,
)



#: Statements that write rows and run again after a lost write conflict (``transaction.retry``).
_RETRIED_ON_CONFLICT = (S.Insert, S.Merge, S.Update, S.Delete, S.DropPartitions, S.TruncateTable)


@dataclass
class Result:
    """What one statement produced; ``is_rows`` tells the CLI whether to print the rows."""

    df: DataFrame
    is_rows: bool


LOG4J_CONFIG = Path(__file__).with_name("log4j2.properties")


#: Up to this many files, Spark checks the files of a read on the driver rather than in a job.
PARALLEL_LISTING_PATHS = 1024


def _local_spark(conf: dict[str, str] | None) -> SparkSession:
    # Spark's Python workers must run the interpreter that has hudiql installed.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = (
        SparkSession.builder.master("local[*]")
        .appName("hudiql")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "2g")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={LOG4J_CONFIG.as_uri()}")
    )
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


class Session:
    """Runs hudiql SQL against one warehouse."""

    def __init__(self, warehouse: str, spark: SparkSession, conf: dict[str, str] | None = None,
                 storage_options: dict[str, str] | None = None) -> None:
        self.spark = spark
        #: How this session reaches object storage (``io.storage``): given options over the AWS defaults.
        self.storage_options = resolve_options(storage_options)
        self._use_storage_options()
        # hudiql hands Spark's parquet reader exact file lists from its own listing; above 32
        # paths Spark would spend a job re-listing them, on every query and every write.
        spark.conf.set("spark.sql.sources.parallelPartitionDiscovery.threshold", str(PARALLEL_LISTING_PATHS))
        self.catalog = Catalog(warehouse)
        self.catalog.storage.makedirs("")
        self.conf: dict[str, str] = {}
        for key, value in (conf or {}).items():
            if not key.startswith("spark."):
                _warn(registry.validate_session_option(key, value))
                self.conf[key] = value
        self.database = DEFAULT_DATABASE
        #: Temporary views of this session, by name.
        self.temp_views: dict[str, View] = {}
        self.planner = QueryPlanner(self)
        self._defining: View | None = None  # a view being created, analysed before it is saved

    @property
    def warehouse(self) -> str:
        return self.catalog.storage.base_uri

    def sql(self, text: str) -> DataFrame:
        """Run one or several ``;``-separated statements; returns the last one's result."""
        results = self.execute(text)
        if not results:
            raise SqlError("no statement to run")
        return results[-1].df

    def execute(self, text: str) -> list[Result]:
        return [self.run(statement) for statement in parse(text)]

    def run(self, statement: S.Statement) -> Result:
        handler = getattr(self, f"_run_{type(statement).__name__}")
        self._use_storage_options()
        try:
            if isinstance(statement, _RETRIED_ON_CONFLICT):
                return retrying(lambda: handler(statement), lambda: self.table(statement.table).settings)
            return handler(statement)
        except Exception as exc:
            raise_user_error(exc)

    def _use_storage_options(self) -> None:
        # Storage options are a process's and a SparkContext's (Spark tasks open storage by URI):
        # the session running a statement sets its own.
        configure(self.storage_options, self.spark.sparkContext.environment)

    # ---- names ------------------------------------------------------------------------------
    def resolve(self, name: S.TableName) -> tuple[str, str]:
        return (name.database or self.database, name.name)

    def table(self, name: S.TableName) -> HudiTable:
        database, table = self.resolve(name)
        loaded = self.catalog.load_table(database, table)
        if loaded is None:
            if self.view(name) is not None:
                raise SqlError(f"{name} is a view; this statement needs a table")
            raise TableNotFoundError(f"table {database}.{table} does not exist; see SHOW TABLES")
        return loaded[0].for_statement(self.conf)

    def view(self, name: S.TableName) -> View | None:
        """View ``name`` (a temporary view first, as in Spark), or ``None``."""
        return self.session_view(name) or self.catalog.view(*self.resolve(name))

    def session_view(self, name: S.TableName) -> View | None:
        """View ``name`` if this session holds it, without a request: a temporary view, or the
        view being defined; ``None`` otherwise."""
        defining = self._defining
        if defining is not None and (name.name == defining.name if defining.temporary and name.database is None
                                     else ".".join(self.resolve(name)) == defining.name):
            return defining
        if name.database is None and name.name in self.temp_views:
            return self.temp_views[name.name]
        return None

    @contextmanager
    def in_database(self, database: str) -> Iterator[None]:
        """Unqualified names resolve in ``database`` within the block (a view's own database)."""
        current, self.database = self.database, database
        try:
            yield
        finally:
            self.database = current

    def _message(self, text: str) -> Result:
        return Result(self.spark.createDataFrame([(text,)], "result string"), False)

    # ---- DDL --------------------------------------------------------------------------------
    def _run_CreateDatabase(self, st: S.CreateDatabase) -> Result:
        if self.catalog.database_exists(st.name):
            if st.if_not_exists:
                return self._message(f"database {st.name} exists")
            raise TableExistsError(f"database {st.name} already exists; use CREATE DATABASE IF NOT EXISTS")
        self.catalog.create_database(st.name)
        return self._message(f"created database {st.name}")

    def _new_table_location(self, st: S.CreateTable | S.CreateTableLike) -> tuple[str, str, str] | Result:
        """Database, name and location of a table to create, or the result when it exists (IF NOT EXISTS)."""
        database, name = self.resolve(st.table)
        if not self.catalog.database_exists(database):
            raise TableNotFoundError(f"database {database} does not exist; CREATE DATABASE {database} first")
        if self.catalog.location(database, name) is not None:
            if st.if_not_exists:
                return self._message(f"table {database}.{name} exists")
            raise TableExistsError(f"table {database}.{name} already exists; use IF NOT EXISTS or DROP TABLE first")
        if self.catalog.view(database, name) is not None:
            raise TableExistsError(f"{database}.{name} is a view; DROP VIEW {database}.{name} first or choose another name")
        location = st.location or self.catalog.managed_location(database, name)
        if st.location and Storage(location).exists() and not Storage(location).is_dir():
            raise SqlError(f"LOCATION '{st.location}' is a file; give a folder")
        return database, name, location

    def _run_CreateTable(self, st: S.CreateTable) -> Result:
        placed = self._new_table_location(st)
        if isinstance(placed, Result):
            return placed
        database, name, location = placed
        existing = HudiTable.load(location) if st.location and has_table(Storage(location)) else None
        if existing is not None:
            if st.columns is not None or st.query is not None:
                raise TableExistsError(f"a Hudi table already exists at {location}; CREATE TABLE {name} USING hudi LOCATION '...' adopts it without columns")
            read_optimized = adopted_options(existing.config, st.options)
            self.catalog.register_external(database, name, existing.base_uri, read_optimized)
            return self._message(f"registered table {database}.{name} at {existing.base_uri}"
                                 + (" (reading its base files only)" if read_optimized else ""))
        if _has_files(location):
            raise TableExistsError(f"{location} is not empty and holds no Hudi table; choose an empty LOCATION")
        if registry.QUERY_AS_RO_TABLE in st.options:
            raise SqlError(f"{registry.QUERY_AS_RO_TABLE} names a read-optimized view of an existing merge-on-read table: "
                           "give the LOCATION of one (there is no Hudi table at it)")

        rows = None
        columns = st.columns
        if st.query is not None:
            # The source's Hudi meta columns (SELECT * of a hudiql table) are not data, as in Hudi.
            rows = self.planner.dataframe(st.query)
            columns = without_meta_columns(rows.schema)
        if columns is None:
            raise SqlError(f"no Hudi table at {location}: give the columns or AS SELECT")
        _warn(registry.validate_table_options(st.options))
        registry.check_retention(st.options)
        props, schema = derive_table_properties(TableDefinition(
            name=name, database=database, schema=columns, primary_key=st.primary_key,
            partitioned_by=st.partitioned_by, options=st.options, dialect=st.dialect,
            table_version=registry.setting(self.conf, registry.WRITE_TABLE_VERSION),
        ))
        table = self._create_table(database, name, location, st.location is not None, props)
        if rows is not None:
            try:
                ordered = rows.select([F.col(f"`{f.name}`") for f in schema.fields])
                # As Hudi's CTAS: bulk_insert, every row of the query kept, unless an operation is set.
                operation, _ = Operation.for_insert(table, default=Operation.BULK_INSERT)
                operation = Operation.BULK_INSERT if operation.replaces else operation  # the table is new
                with transaction(self.spark, table) as txn:
                    write_rows(txn, align_columns(ordered, schema), operation)
            except BaseException:
                # CTAS is all or nothing: no table is left behind a failed query.
                self.catalog.unregister(database, name)
                table.storage.delete_dir()
                raise
        return self._message(f"created table {database}.{name}")

    def _create_table(self, database: str, name: str, location: str, external: bool, props: dict[str, str]) -> HudiTable:
        table = HudiTable.create(location, TableConfig(props)).for_statement(self.conf)
        if external:
            self.catalog.register_external(database, name, table.base_uri)
        return table

    def _run_CreateTableLike(self, st: S.CreateTableLike) -> Result:
        source = self.table(st.source)
        placed = self._new_table_location(st)
        if isinstance(placed, Result):
            return placed
        database, name, location = placed
        if _has_files(location):
            raise TableExistsError(f"{location} is not empty; choose an empty LOCATION")
        # The source's options, without what names or identifies the source itself (nor the empty
        # partition fields of a non-partitioned table); the new table's own TBLPROPERTIES win.
        options = {k: v for k, v in source.config.props.items() if k not in _IDENTITY_KEYS and v != ""}
        _warn(registry.validate_table_options(st.options))
        options.update(st.options)
        props, _ = derive_table_properties(TableDefinition(
            name=name, database=database, schema=source.schema, options=options,
        ))
        self._create_table(database, name, location, st.location is not None, props)
        return self._message(f"created table {database}.{name} like {st.source}")

    def _run_AlterTableProperties(self, st: S.AlterTableProperties) -> Result:
        table = self.table(st.table)
        missing = [k for k in st.unset if k not in table.config.props]
        if missing and not st.if_exists:
            raise OptionError(f"table {st.table} has no option '{missing[0]}'; use UNSET TBLPROPERTIES IF EXISTS")
        _warn(registry.validate_table_options(st.set))
        for key in [*st.set, *(k for k in st.unset if k not in missing)]:
            if not registry.is_alterable(key):
                raise OptionError(
                    f"table option '{key}' cannot change after the table is created; "
                    "create a new table (CREATE TABLE ... LIKE or AS SELECT) with the value you want"
                )
        props = {k: v for k, v in table.config.props.items() if k not in st.unset}
        props.update(st.set)
        registry.check_retention(props)
        TableConfig(props).save(table.storage)
        return self._message(f"altered table {st.table}")

    def _run_RenameTable(self, st: S.RenameTable) -> Result:
        table = self.table(st.table)
        database, name = self.resolve(st.table)
        new_database, new_name = self.resolve(st.new_name)
        if not self.catalog.database_exists(new_database):
            raise TableNotFoundError(f"database {new_database} does not exist; CREATE DATABASE {new_database} first")
        if self.catalog.location(new_database, new_name) is not None or self.view(st.new_name) is not None:
            raise TableExistsError(f"{new_database}.{new_name} already exists; choose another name")
        location = self.catalog.rename(database, name, new_database, new_name)
        storage = Storage(location)
        TableConfig({**table.config.props, TABLE_NAME: new_name}).save(storage)  # hoodie.table.name follows
        return self._message(f"renamed table {database}.{name} to {new_database}.{new_name}")

    def _run_AlterTableColumns(self, st: S.AlterTableColumns) -> Result:
        table = self.table(st.table)
        if st.dropped or st.renamed:
            return self._rewrite_columns(table, st)
        with transaction(self.spark, table) as txn:
            write_schema(txn, evolve(txn.table.schema, st.added, st.retyped, fixed_columns(table),
                                     last=table.config.partition_fields, comments=st.comments))
        return self._message(f"altered table {st.table}")

    def _rewrite_columns(self, table: HudiTable, st: S.AlterTableColumns) -> Result:
        """DROP / RENAME COLUMN: as Hudi, only with ``hoodie.schema.on.read.enable`` (``services.clustering.rewrite_columns``)."""
        what = "DROP COLUMN" if st.dropped else "RENAME COLUMN"
        names = {c.lower() for c in table.schema.fieldNames()}
        dropped = [c for c in st.dropped if c.lower() in names] if st.drop_if_exists else st.dropped
        if not dropped and not st.renamed:
            return self._message(f"table {st.table} has none of the columns")
        if not table.settings.flag(registry.SCHEMA_ON_READ):
            raise SqlError(f"{what} needs SET {registry.SCHEMA_ON_READ}=true, as in Hudi; hudiql then rewrites every file "
                           "group of the table with the new columns")
        schema, sources = dropped_and_renamed(
            evolve(table.schema, T.StructType(), st.retyped, fixed_columns(table), comments=st.comments),
            dropped, st.renamed, fixed_columns(table))
        with planned_shuffles(self.spark):
            written = clustering.rewrite_columns(self.spark, table, schema, sources)
        if written is None:
            with transaction(self.spark, table) as txn:
                write_schema(txn, schema)
        return self._message(f"altered table {st.table}")

    def _run_CreateView(self, st: S.CreateView) -> Result:
        database, name = self.resolve(st.view)
        if st.temporary and st.view.database is not None:
            raise SqlError(f"a temporary view has no database; write CREATE TEMPORARY VIEW {name}")
        exists = name in self.temp_views if st.temporary else self.catalog.view(database, name) is not None
        if exists and not st.replace:
            if st.if_not_exists:
                return self._message(f"view {name} exists")
            raise TableExistsError(f"view {name} already exists; use CREATE OR REPLACE VIEW")
        if not st.temporary:
            if not self.catalog.database_exists(database):
                raise TableNotFoundError(f"database {database} does not exist; CREATE DATABASE {database} first")
            if self.catalog.location(database, name) is not None:
                raise TableExistsError(f"{database}.{name} is a table; choose another name for the view")
        name_used = name if st.temporary else f"{database}.{name}"
        view = View(name_used, database, st.sql, st.temporary)
        # Analysed now, with the new definition in place, so that a view that cannot run (or that
        # reads itself) is never created.
        self._defining = view
        try:
            self.planner.dataframe(parse(f"SELECT * FROM {st.view}")[0].expression)
        finally:
            self._defining = None
        if st.temporary:
            self.temp_views[name] = view
        else:
            self.catalog.save_view(database, name, st.sql)
        return self._message(f"created view {name_used}")

    def _run_DropView(self, st: S.DropView) -> Result:
        database, name = self.resolve(st.view)
        if st.view.database is None and name in self.temp_views:
            del self.temp_views[name]
        elif self.catalog.view(database, name) is not None:
            self.catalog.drop_view(database, name)
        elif self.catalog.location(database, name) is not None:
            raise SqlError(f"{database}.{name} is a table; use DROP TABLE")
        elif not st.if_exists:
            raise TableNotFoundError(f"view {st.view} does not exist; use DROP VIEW IF EXISTS")
        return self._message(f"dropped view {st.view}")

    def _run_DropTable(self, st: S.DropTable) -> Result:
        database, name = self.resolve(st.table)
        location = self.catalog.location(database, name)
        if location is None:
            if self.view(st.table) is not None:
                raise SqlError(f"{st.table} is a view; use DROP VIEW")
            if st.if_exists:
                return self._message(f"table {database}.{name} does not exist")
            raise TableNotFoundError(f"table {database}.{name} does not exist; use DROP TABLE IF EXISTS")
        if self.catalog.is_external(database, name):
            self.catalog.unregister(database, name)  # an external table's files stay, as in Spark
        else:
            Storage(location).delete_dir()  # no load: a damaged table can be dropped too
        return self._message(f"dropped table {database}.{name}")

    def _run_Describe(self, st: S.Describe) -> Result:
        if self.view(st.table) is not None and self.catalog.location(*self.resolve(st.table)) is None:
            schema = self.planner.dataframe(parse(f"SELECT * FROM {st.table}")[0].expression).schema
            rows = [(f.name, f.dataType.simpleString(), None) for f in schema.fields]
        else:
            rows = ddl.describe(self.table(st.table), st.extended)
        return Result(self.spark.createDataFrame(rows, "col_name string, data_type string, comment string"), True)

    def _run_ShowTables(self, st: S.ShowTables) -> Result:
        database = st.database or self.database
        if not self.catalog.database_exists(database):
            raise TableNotFoundError(f"database {database} does not exist")
        rows = [(database, t, False) for t in sorted(self.catalog.tables(database) + self.catalog.views(database))]
        rows += [("", v, True) for v in sorted(self.temp_views)]
        return Result(self.spark.createDataFrame(rows, "namespace string, tableName string, isTemporary boolean"), True)

    def _run_ShowDatabases(self, st: S.ShowDatabases) -> Result:
        names = self.catalog.databases()
        if st.pattern is not None:
            # Spark's pattern: '*' for any characters, '|' between alternatives, case-insensitive.
            alternatives = [p.strip().lower() for p in st.pattern.split("|")]
            names = [n for n in names if any(fnmatch.fnmatchcase(n, p) for p in alternatives)]
        return Result(self.spark.createDataFrame([(n,) for n in names], "namespace string"), True)

    def _run_ShowColumns(self, st: S.ShowColumns) -> Result:
        rows = [(f.name,) for f in self.table(st.table).columns.fields]
        return Result(self.spark.createDataFrame(rows, "col_name string"), True)

    def _run_ShowTblProperties(self, st: S.ShowTblProperties) -> Result:
        props = self.table(st.table).config.props
        if st.key is not None:
            database, name = self.resolve(st.table)
            value = props.get(st.key, f"Table {database}.{name} does not have property: {st.key}")
            rows = [(st.key, value)]
        else:
            rows = sorted(props.items())
        return Result(self.spark.createDataFrame(rows, "key string, value string"), True)

    def _run_ShowPartitions(self, st: S.ShowPartitions) -> Result:
        table = self.table(st.table)
        if not table.keygen.is_partitioned:  # as Hudi: no partitions, no rows
            return Result(self.spark.createDataFrame([], "partition string"), True)
        rows = []
        wanted = set(matching_partitions(self.spark, table, st.partition, "SHOW PARTITIONS ... PARTITION")
                     ) if st.partition else None
        for path in table.file_system_view().partitions():
            if wanted is not None and path not in wanted:
                continue
            values = table.keygen.partition_values(path)
            rows.append(("/".join(f"{k}={layout.DEFAULT_PARTITION if v is None else v}" for k, v in values.items())
                         if values else path,))
        return Result(self.spark.createDataFrame(sorted(rows), "partition string"), True)

    def _run_Explain(self, st: S.Explain) -> Result:
        df = self.planner.dataframe(st.query)
        plan = self.spark._jvm.PythonSQLUtils.explainString(df._jdf.queryExecution(), st.mode)
        return Result(self.spark.createDataFrame([(plan,)], "plan string"), True)

    def _run_ShowCreateTable(self, st: S.ShowCreateTable) -> Result:
        database, name = self.resolve(st.table)
        table = self.table(st.table)
        text = ddl.show_create_table(table, database, name, self.catalog.is_external(database, name))
        return Result(self.spark.createDataFrame([(text,)], "createtab_stmt string"), True)

    def _run_Call(self, st: S.Call) -> Result:
        proc = procedures.procedure(st.procedure)
        args = proc.bind(st.args, st.positional)
        by_path = all(p in proc.parameters for p in procedures.TABLE_OR_PATH)  # a table by name or by path
        if by_path and args.get("table") and args.get("path"):
            raise SqlError(f"CALL {proc.name}: give table => or path =>, not both")
        if "table" in args:
            table = self.table(table_name_text(str(args["table"])))
            context = procedures.Context(self.spark, table)
        elif by_path:
            if not args.get("path"):
                raise SqlError(f"CALL {proc.name} needs table => 't' or path => '<table folder>'")
            context = procedures.Context(self.spark, HudiTable.load(str(args["path"])).for_statement(self.conf))
        else:
            context = procedures.Context(self.spark, None)
        rows = proc.run(context, args)
        return Result(self.spark.createDataFrame(rows, proc.output), True)

    def _run_SetConf(self, st: S.SetConf) -> Result:
        if st.key is None:
            rows = sorted(self.conf.items())
            return Result(self.spark.createDataFrame(rows, "key string, value string"), True)
        if st.value is None:
            value = self.conf.get(st.key)
            if value is None and st.key.startswith("spark."):
                value = self.spark.conf.get(st.key, None)
            return Result(self.spark.createDataFrame([(st.key, value if value is not None else "<undefined>")], "key string, value string"), True)
        if st.key.startswith("spark."):
            self.spark.conf.set(st.key, st.value)
        else:
            _warn(registry.validate_session_option(st.key, st.value, registry.setting(self.conf, registry.COMMIT_META_PREFIX)))
            self.conf[st.key] = st.value
        return Result(self.spark.createDataFrame([(st.key, st.value)], "key string, value string"), False)

    def _run_Use(self, st: S.Use) -> Result:
        if not self.catalog.database_exists(st.database):
            raise TableNotFoundError(f"database {st.database} does not exist; CREATE DATABASE {st.database} first")
        self.database = st.database
        return self._message(f"using database {st.database}")

    # ---- DML and queries --------------------------------------------------------------------
    def _run_Query(self, st: S.Query) -> Result:
        return Result(self.planner.dataframe(st.expression), True)

    def _run_Insert(self, st: S.Insert) -> Result:
        table = self.table(st.table)
        operation, key = Operation.for_insert(table)
        if st.overwrite:
            return self._overwrite(table, st, operation if operation.replaces else None,
                                   Operation.sql_insert_default(table) if operation.replaces else operation)
        if operation.replaces:
            raise SqlError(f"{key}={operation.value} replaces rows: write INSERT OVERWRITE, or SET {key}=upsert, insert "
                           "or bulk_insert")
        with transaction(self.spark, table) as txn:
            metadata = write_insert(txn, self._insert_rows(txn.table, st), operation, combine=operation.combines(table),
                                    sql_insert=True)
        return self._dml_result(insert_counts(metadata))

    def _overwrite(self, table: HudiTable, st: S.Insert, overwrite: Operation | None, operation: Operation) -> Result:
        """INSERT OVERWRITE: the new rows (written as ``operation`` writes them) in one replacecommit
        (``write.replace`` decides what it replaces; ``overwrite``: the operation the settings ask for)."""
        check_overwrite(table)
        mode = overwrite_mode(self.conf, table, self.spark)
        with transaction(self.spark, table, replace=True) as txn:
            static = static_partition_values(st.partition)
            matching = matching_partitions(self.spark, txn.table, static, "INSERT OVERWRITE ... PARTITION"
                                           ) if mode == "STATIC" else ()
            replacement = overwrite_replacement(table.keygen.partition_fields, st.partition, mode, overwrite, matching)
            metadata = write_insert(txn, self._insert_rows(txn.table, st), operation, replacement,
                                    combine=operation.combines(table))
        return self._dml_result(insert_counts(metadata) if metadata else DmlCounts())

    def _insert_rows(self, table: HudiTable, st: S.Insert) -> InsertRows:
        source = self.planner.dataframe(st.query)
        return prepare_insert(table, source, st.columns, st.partition, st.by_name, st.schema_evolution)

    def _run_TruncateTable(self, st: S.TruncateTable) -> Result:
        table = self.table(st.table)
        with transaction(self.spark, table, replace=True) as txn:
            if st.partition is None:
                partitions = tuple(txn.table.file_system_view().partitions())
            else:
                partitions = self._existing_partitions(txn.table, [st.partition], "TRUNCATE TABLE ... PARTITION", False)
            metadata = write_replacement(txn, Replacement(Operation.DELETE_PARTITION, partitions))
        return self._message(f"truncated {st.table}" + ("" if metadata else " (it had no rows)"))

    def _run_DropPartitions(self, st: S.DropPartitions) -> Result:
        table = self.table(st.table)
        with transaction(self.spark, table, replace=True) as txn:
            partitions = self._existing_partitions(txn.table, st.partitions, "ALTER TABLE ... DROP PARTITION", st.if_exists)
            metadata = write_replacement(txn, Replacement(Operation.DELETE_PARTITION, partitions))
        return self._message(f"dropped {len(partitions) if metadata else 0} partition(s) of {st.table}")

    def _run_CreateIndex(self, st: S.CreateIndex) -> Result:
        table = self.table(st.table)
        built = create_index(self.spark, table, st.name, st.columns, st.index_type, st.if_not_exists, st.options)
        return self._message(f"created index {st.name} on {st.table}" if built else f"index {st.name} exists")

    def _run_DropIndex(self, st: S.DropIndex) -> Result:
        dropped = drop_index(self.table(st.table), st.name, st.if_exists)
        return self._message(f"dropped index {st.name} of {st.table}" if dropped else f"no index {st.name}")

    def _run_ShowIndexes(self, st: S.ShowIndexes) -> Result:
        rows = show_indexes(self.table(st.table))
        return Result(self.spark.createDataFrame(rows, "index_name string, index_type string, col_name string"), True)

    def _existing_partitions(self, table: HudiTable, specs: list[S.PartitionSpec], what: str, if_exists: bool) -> tuple[str, ...]:
        """The live partitions ``specs`` name; a value with ``*`` matches every partition it fits."""
        live = set(table.file_system_view().partitions())
        out = []
        wild = [spec for spec in specs if any("*" in (v or "") for v in spec.values())]
        for spec in wild:
            matched = wildcard_partitions(table, spec, what)
            if not matched and not if_exists:
                shown = ", ".join(f"{k}='{v}'" for k, v in spec.items())
                raise TableNotFoundError(f"{what}: no partition of table {table.config.name} matches ({shown}); "
                                         f"SHOW PARTITIONS lists its partitions")
            out += [p for p in matched if p not in out]
        specs = [spec for spec in specs if spec not in wild]
        for path in partition_paths(self.spark, table, specs, what) if specs else ():
            if path in live:
                out += [path] if path not in out else []
            elif not if_exists:
                raise TableNotFoundError(f"{what}: table {table.config.name} has no partition {path}; "
                                         f"SHOW PARTITIONS lists its partitions")
        return tuple(out)

    def _run_Merge(self, st: S.Merge) -> Result:
        return self._dml(st.table, lambda planner: planner.merge(st))

    def _run_Update(self, st: S.Update) -> Result:
        return self._dml(st.table, lambda planner: planner.update(st))

    def _run_Delete(self, st: S.Delete) -> Result:
        return self._dml(st.table, lambda planner: planner.delete(st))

    def _dml(self, name: S.TableName, plan: Callable[[DmlPlanner], DmlCounts]) -> Result:
        """A MERGE / UPDATE / DELETE, planned and written in one transaction of its table (a table
        without a record key too: its rows are known by their stored keys, as Hudi 0.14+ knows them)."""
        table = self.table(name)
        with transaction(self.spark, table) as txn:
            counts = plan(DmlPlanner(self.planner, txn))
        return self._dml_result(counts)

    def _dml_result(self, counts: DmlCounts) -> Result:
        # A VALUES relation: collecting it runs no Spark job (a DataFrame of a Python list would).
        names = ", ".join(DmlCounts.NAMES)
        values = ", ".join(f"CAST({v} AS BIGINT)" for v in counts.row())
        return Result(self.spark.sql(f"SELECT * FROM VALUES ({values}) AS t({names})"), True)


def _has_files(location: str) -> bool:
    return bool(Storage(location).list(""))


#: hoodie.properties keys hudiql writes from the statement itself, never copied by CREATE TABLE ... LIKE.
_IDENTITY_KEYS = {k for k, spec in registry.KEYS.items() if spec.kind == registry.WRITTEN}


def _warn(lines: list[str]) -> None:
    """Options hudiql ignores where ignoring cannot change a result: one line each on stderr."""
    for line in lines:
        warn(line)


def connect(warehouse: str = "warehouse", spark: SparkSession | None = None, conf: dict[str, str] | None = None,
            storage_options: dict[str, str] | None = None) -> Session:
    """A session on ``warehouse``; builds a local SparkSession unless one is given.

    ``storage_options`` (``aws_access_key_id``, ``aws_secret_access_key``, ``aws_session_token``,
    ``aws_region``, ``aws_endpoint_url``) override the standard AWS variables and config file
    for tables on S3 (``hudiql.io.storage``).

    On a cluster the executors get the hudiql package first, or connect fails with one line
    (``hudiql.cluster``); ``spark.read.format("hudi")`` then reads with hudiql's data source
    (``hudiql.datasource``)."""
    spark = spark or _local_spark(conf)
    prepare_executors(spark)  # first: the Python functions Spark is given later carry the package it adds
    session = Session(warehouse, spark, conf, storage_options)
    datasource.register(spark, session)  # after the Session: the data source's tasks get its storage options
    return session
