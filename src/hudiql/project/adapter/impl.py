"""The warehouse as materialization macros see it (``adapter`` and ``run_query`` in Jinja).

Statements run on a hudiql ``Session``; each node gets a fresh one (sharing the one SparkSession),
so a ``SET`` in one materialization never leaks into the next node, and nodes on several
threads do not share planner state. Spark starts on first use: ``compile`` and ``ls`` of a
project that never runs a query need no JVM.

Example (in a macro):
    {% if adapter.table_exists(this) %}
      {% do run_query("MERGE INTO " ~ this ~ " ...") %}
    {% endif %}
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql import Row, SparkSession

from hudiql.catalog import Catalog
from hudiql.config import registry
from hudiql.console import quiet as quiet_console
from hudiql.errors import HudiqlError, SqlError
from hudiql.project.adapter import materialization, snapshot
from hudiql.project.adapter.changes import Changes, consumed_key, plan_changes
from hudiql.project.adapter.materialization import SchemaChange
from hudiql.project.adapter.relation import table_exists, table_location
from hudiql.project.adapter.result import AdapterResponse, QueryResult
from hudiql.project.adapter.seed import read_seed
from hudiql.project.artifacts.nodes import Column, Relation
from hudiql.project.config.profile import Target
from hudiql.project.errors import ProjectError
from hudiql.session import Session, connect
from hudiql.sql import statements as S
from hudiql.sql.parser import parse_statement, split_statements
from hudiql.record.schema import META_COLUMNS
from hudiql.table.table import HudiTable


@dataclass
class NodeScope:
    """What one node's materialization did: its statements and the last statement's counts."""

    new_session: Callable[[], Session]
    statements: list[str] = field(default_factory=list)
    response: dict[str, Any] = field(default_factory=dict)
    _session: Session | None = None

    @property
    def session(self) -> Session:
        """The node's session, made on first use: compiling a node that runs no query needs no Spark."""
        if self._session is None:
            self._session = self.new_session()
        return self._session


class Adapter:
    def __init__(self, target: Target, project_root: Path, spark: SparkSession | None = None, quiet: bool = False) -> None:
        self.target = target
        self.project_root = project_root
        self.catalog = Catalog(target.warehouse)
        self._spark = spark
        self._quiet = quiet  # CLI runs: Spark's own log lines would break the console format
        self._lock = threading.Lock()
        self._local = threading.local()
        self._databases: set[str] = set()

    # ---- sessions -------------------------------------------------------------------------------
    @property
    def spark(self) -> SparkSession:
        return self.start()

    def start(self) -> SparkSession:
        """The SparkSession, started now if it was not (with the target's ``spark_conf``)."""
        with self._lock:
            if self._spark is None:
                session = connect(warehouse=self.target.warehouse, conf=self.target.spark_settings(), storage_options=self.target.storage_options)
                if self._quiet:
                    quiet_console(session)
                self._spark = session.spark
            return self._spark

    def new_session(self) -> Session:
        session = Session(self.target.warehouse, self.spark, self.target.spark_conf, self.target.storage_options)
        session.database = self.target.database
        return session

    @contextmanager
    def node_scope(self) -> Iterator[NodeScope]:
        """Run a node's statements in a fresh session."""
        scope = NodeScope(self.new_session)
        outer = getattr(self._local, "scope", None)  # a view created for a node runs inside its scope
        self._local.scope = scope
        try:
            yield scope
        finally:
            self._local.scope = outer

    @property
    def scope(self) -> NodeScope:
        scope = getattr(self._local, "scope", None)
        if scope is None:
            raise ProjectError("statements run only while a node runs (run_query in a model needs `{% if execute %}`)")
        return scope

    def ensure_database(self, name: str) -> None:
        with self._lock:
            if name in self._databases:
                return
        if not self.catalog.database_exists(name):
            self.catalog.create_database(name)
        with self._lock:
            self._databases.add(name)

    # ---- statements -----------------------------------------------------------------------------
    def run_query(self, sql: str) -> QueryResult:
        """Run ``sql`` (one or more statements); the last one's rows. Recorded for ``target/run``."""
        return self.execute(sql, fetch=True)[1]

    def execute(self, sql: str, auto_begin: bool = False, fetch: bool = False, limit: int | None = None
                ) -> tuple[AdapterResponse, QueryResult]:
        """dbt's ``adapter.execute`` (the ``statement`` block's): run ``sql`` (one or more
        statements; Spark SQL has no transaction to begin); the last one's response, and its rows
        when ``fetch`` (the first ``limit``), else an empty table."""
        scope = self.scope
        names: list[str] = []
        rows: list[Row] = []
        response = AdapterResponse("OK")
        for statement in split_statements(str(sql)):
            scope.statements.append(statement)
            frame = scope.session.sql(statement)
            names, rows = frame.columns, (frame if limit is None else frame.limit(limit)).collect()
            if len(rows) == 1 and "num_affected_rows" in names:
                scope.response = {"rows_affected": rows[0]["num_affected_rows"], **rows[0].asDict()}
                response = AdapterResponse(f"OK {rows[0]['num_affected_rows']}", "OK", rows[0]["num_affected_rows"])
            else:
                response = AdapterResponse("OK", "OK", len(rows))
        return response, QueryResult(names, rows if fetch else [])

    # The SQL of the materializations (materialization.py), as macros call it.
    quote = staticmethod(materialization.quote)
    sql_string = staticmethod(materialization.sql_string)
    table_clauses = staticmethod(materialization.table_clauses)
    create_table_as = staticmethod(materialization.create_table_as)
    overwrite_sql = staticmethod(materialization.overwrite_sql)

    def increment_sql(self, relation: Relation, sql: str, config: dict[str, Any], on_schema_change: str) -> str:
        """The statements of an incremental model's later run into ``relation``
        (``materialization.increment_sql``): its schema change, then its rows."""
        return materialization.increment_sql(relation, sql, config, on_schema_change,
                                             self.get_columns(relation), self.schema_change(relation, sql))

    def snapshot_sql(self, relation: Relation, sql: str, config: dict[str, Any]) -> str:
        """The statements of a snapshot's run into ``relation`` (``project.adapter.snapshot``): the first
        run creates the table of the query's current versions; a later one adds the query's new
        columns to it, then applies the changes in one MERGE. The snapshot's time is one value for
        the whole run (it is part of the check strategy's version ids)."""
        now = f"timestamp_micros({time.time_ns() // 1000})"
        columns = snapshot.SnapshotColumns.of(config)
        if not self.table_exists(relation):
            strategy = snapshot.SnapshotStrategy.of(config, now)
            clauses = materialization.table_clauses(config, record_key=columns.dbt_scd_id)
            return materialization.create_table_as(relation, clauses, snapshot.build_sql(sql, strategy, columns, config))
        stored = self.get_columns(relation)
        stored_names = {c.name.lower() for c in stored}
        missing = [c for c in (columns.dbt_scd_id, columns.dbt_valid_from, columns.dbt_valid_to, columns.dbt_updated_at)
                   if c.lower() not in stored_names]
        if missing:
            raise ProjectError(f"{relation} is not a snapshot table (it has no {', '.join(missing)}); "
                               "drop it or give the snapshot another alias")
        if config["hard_deletes"] == "new_record" and columns.dbt_is_deleted.lower() not in stored_names:
            # (its versions so far say nothing of deletes: dbt refuses too)
            raise ProjectError(f"snapshot table {relation} has no column {columns.dbt_is_deleted}, which hard_deletes: "
                               "new_record keeps; drop the table to snapshot anew, or keep the earlier hard_deletes")
        query = self.get_query_columns(sql)
        added = [c for c in query if c.name.lower() not in stored_names]
        check_cols = config.get("check_cols")
        # The check columns as the query resolves them (a misspelt one is an error, as in dbt).
        compared = [c.name for c in query]
        if check_cols and check_cols != "all":
            compared = [c.name for c in self.get_query_columns(f"SELECT {', '.join(check_cols)} FROM (\n{sql}\n) subq")]
        strategy = snapshot.SnapshotStrategy.of(
            config, now, [materialization.quote(c) for c in compared if c.lower() in stored_names],
            column_added=any(c.lower() not in stored_names for c in compared))
        staging = snapshot.staging_sql(relation, sql, strategy, columns, config, [c.name for c in query],
                                       [c.name for c in stored], now)
        insert = [materialization.quote(c.name) for c in query] + columns.written(config["hard_deletes"])
        merge = snapshot.merge_sql(relation, f"(\n{staging}\n)", columns, insert, config.get("dbt_valid_to_current"))
        alter = materialization.alter_columns_sql(relation, added)
        return f"{alter};\n{merge}" if alter else merge

    # ---- relations ------------------------------------------------------------------------------
    def table_exists(self, relation: Relation) -> bool:
        return table_exists(self.catalog, relation)

    def get_relation(self, database: str | None, schema: str, identifier: str) -> Relation | None:
        """dbt's ``adapter.get_relation``: the table or view ``schema.identifier`` (Spark has no level
        above the schema: ``database`` is ``None`` or the schema), else ``None``."""
        if database not in (None, "", schema):
            raise ProjectError(f"adapter.get_relation: database '{database}' differs from schema '{schema}'; "
                               "Spark has one level of namespace: pass database=none")
        relation = Relation(schema, identifier, "table")
        if self.table_exists(relation):
            return relation
        return Relation(schema, identifier, "view") if self.catalog.view(schema, identifier) else None

    def relation_columns(self, relation: Relation) -> list[Column] | None:
        """The columns of the table or view ``relation``; None when there is neither."""
        if self.table_exists(relation):
            return self.get_columns(relation)
        if self.catalog.view(relation.schema, relation.identifier):
            return self.get_query_columns(f"SELECT * FROM {relation}")
        return None

    def get_columns(self, relation: Relation) -> list[Column]:
        table = HudiTable.load(table_location(self.catalog, relation)[0])
        return [Column(f.name, f.dataType.simpleString()) for f in table.schema.fields]

    def get_query_columns(self, sql: str) -> list[Column]:
        """The data columns ``sql`` returns; Spark analyses the query without running it. A
        ``SELECT *`` of a Hudi table returns its meta columns too, which a table written from it
        does not store (CTAS and INSERT drop them)."""
        df = self._query(sql)
        return [Column(f.name, f.dataType.simpleString()) for f in df.schema.fields if f.name not in META_COLUMNS]

    def _query(self, sql: str):
        statement = parse_statement(str(sql))
        if not isinstance(statement, S.Query):
            raise SqlError("a model must be one SELECT statement")
        return self.scope.session.planner.dataframe(statement.expression)

    def create_view(self, relation: Relation, sql: str) -> None:
        """A view recorded in the warehouse: it reads its tables when queried, and later runs and
        ``hudiql sql`` sessions see it. A table of the model's name (the model was a table before)
        is dropped first, as dbt drops a relation of the other type."""
        if self.table_exists(relation):
            self._execute(f"DROP TABLE {relation}")
        self._execute(f"CREATE OR REPLACE VIEW {relation} AS\n{sql}")

    def drop_view(self, relation: Relation) -> None:
        """Drop the view of the model's name, if any (the model was a view before)."""
        if self.scope.session.view(S.TableName(relation.schema, relation.identifier)) is not None:
            self._execute(f"DROP VIEW {relation}")

    def _execute(self, statement: str) -> None:
        self.scope.statements.append(statement)
        self.scope.session.execute(statement)

    def schema_change(self, relation: Relation, sql: str) -> SchemaChange:
        """How the columns of ``sql`` differ from the table's (names compared case-insensitively)."""
        stored, incoming = self.get_columns(relation), self.get_query_columns(sql)
        stored_names = {c.name.lower() for c in stored}
        incoming_names = {c.name.lower() for c in incoming}
        return SchemaChange(
            added=[c for c in incoming if c.name.lower() not in stored_names],
            removed=[c for c in stored if c.name.lower() not in incoming_names],
            common=[c.name for c in stored if c.name.lower() in incoming_names],
        )

    def check_table_config(self, relation: Relation, config: dict[str, Any], exact: bool = False) -> str:
        """Refuse to write into a table whose keys, partitions or type (``exact``: or ordering
        field) differ from the model's configs (the model was changed): an empty string, else the reason."""
        table = HudiTable.load(table_location(self.catalog, relation)[0])
        found = {
            "unique_key": [k.lower() for k in table.config.record_key_fields],
            "partition_by": [p.lower() for p in table.config.partition_fields],
            "table_type": "mor" if table.config.is_mor else "cow",
            "precombine_field": (table.config.ordering_field or "").lower(),
        }
        wanted = {
            "unique_key": [k.lower() for k in config["unique_key"]],
            "partition_by": [p.lower() for p in config["partition_by"]],
            "table_type": config["table_type"],
            "precombine_field": (config.get("precombine_field") or "").lower(),
        }
        for key, value in found.items():
            if not exact and key == "unique_key" and not wanted[key] and config.get("incremental_strategy") != "merge":
                continue  # append and insert_overwrite write keyed tables too
            if not exact and key == "precombine_field":
                continue
            if value != wanted[key]:
                return f"table {relation} has {key} {value or 'none'} but the model says {wanted[key] or 'none'}; run with --full-refresh to rebuild it"
        return ""

    def rebuild_problem(self, relation: Relation, config: dict[str, Any], sql: str) -> str:
        """Why ``relation`` cannot be rebuilt in place from ``sql`` (an INSERT OVERWRITE keeps the
        table's columns, keys, partitioning, type and ordering field): an empty string, else the reason."""
        problem = self.check_table_config(relation, config, exact=True)
        if problem:
            return problem
        stored = {c.name.lower(): c for c in self.get_columns(relation)}
        incoming = {c.name.lower(): c for c in self.get_query_columns(sql)}
        changes = [
            ("new", [c.name for n, c in incoming.items() if n not in stored]),
            ("gone", [c.name for n, c in stored.items() if n not in incoming]),
            ("retyped", [f"{c.name} {stored[n].data_type} -> {c.data_type}" for n, c in incoming.items()
                         if n in stored and stored[n].data_type != c.data_type]),
        ]
        if any(names for _, names in changes):
            said = "; ".join(f"{kind}: {', '.join(names)}" for kind, names in changes if names)
            return (f"the columns of {relation} changed ({said}); a rebuild in place keeps the table's columns: "
                    "run with --full-refresh to drop and recreate it")
        return ""

    def drop_table(self, relation: Relation) -> str:
        """``--full-refresh``: the table goes, to be created again (readers see no table meanwhile)."""
        self._execute(f"DROP TABLE {relation}")
        return ""

    def changes(self, upstream: Relation, model: Relation, incremental: bool) -> Changes:
        """``changes(ref(...))``: what ``model`` reads of ``upstream`` this run (``adapter.changes``).
        The node's session records the upstream instant in the model's next commit, and reads
        deleted records (``project.adapter.changes``)."""
        planned = plan_changes(self.catalog, upstream, model, incremental)
        if planned.consumed is not None:
            self._execute(f"SET {consumed_key(upstream)}={planned.consumed}")
            self._execute(f"SET {registry.INCLUDE_DELETES}=true")
        return planned

    # ---- seeds --------------------------------------------------------------------------------------
    def load_seed(self, model: dict[str, Any]) -> str:
        """Register the seed's CSV rows as a temporary view; the SELECT that types them.

        ``model`` is the seed node as Jinja sees it (``model`` in the context)."""
        config = model["config"]
        seed = read_seed(self.project_root / model["original_file_path"], config["delimiter"], config["column_types"])
        view = f"__hudiql_seed_{model['name']}"
        schema = ", ".join(f"`{name}` string" for name, _ in seed.columns)
        self.spark.createDataFrame(seed.rows, schema).createOrReplaceTempView(view)
        self.scope.response = {"rows_affected": len(seed.rows)}
        casts = ", ".join(f"CAST(`{name}` AS {dtype}) AS `{name}`" for name, dtype in seed.columns)
        return f"SELECT {casts} FROM {view}"


def describe_error(exc: BaseException) -> str:
    """One line for the console: a ``HudiqlError``'s message, else the exception's first line."""
    if isinstance(exc, HudiqlError):
        return str(exc)
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"
