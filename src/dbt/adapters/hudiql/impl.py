"""The dbt-core adapter: dbt's ``adapter`` object for hudiql warehouses.

Metadata (schemas, relations, columns, the docs catalog) is read from the hudiql catalog and table
files in Python, not through ``information_schema`` SQL, which hudiql does not have. The rules a
model shares with ``hudiql run`` (whether a table can be rebuilt in place, which configs must match
an existing table, how a model's columns changed, the Hudi configs themselves) are decided by
hudiql's own project layer (``hudiql.project``), whose adapter runs its statements on this
connection's Session.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import agate
from dbt.adapters.base import AdapterConfig, available
from dbt.adapters.base.relation import BaseRelation, InformationSchema
from dbt.adapters.contracts.relation import RelationConfig, RelationType
from dbt.adapters.hudiql.column import HudiqlColumn
from dbt.adapters.hudiql.connections import HudiqlConnectionManager, logger
from dbt.adapters.hudiql.relation import HudiqlRelation
from dbt.adapters.sql import SQLAdapter
from dbt_common.exceptions import CompilationError, DbtRuntimeError

from hudiql.catalog import DEFAULT_DATABASE
from hudiql.errors import TableNotFoundError
from hudiql.project.adapter.impl import Adapter as ProjectAdapter
from hudiql.project.adapter import materialization, snapshot
from hudiql.project.config import model_config
from hudiql.project.config.profile import Target
from hudiql.project.errors import CompilationError as ProjectCompilationError
from hudiql.project.errors import ProjectError
from hudiql.session import Session

#: The model configs hudiql's project layer checks and normalizes (the Hudi ones and those they depend on).
HUDI_CONFIGS = model_config.HUDI | {"materialized", "incremental_strategy"}


@dataclass
class HudiqlConfig(AdapterConfig):
    """Model configs dbt passes to ``config`` for this adapter (as in ``hudiql run``)."""

    partition_by: Any | None = None
    table_type: str | None = None
    precombine_field: str | None = None
    options: dict[str, Any] | None = None


class ProjectRules(ProjectAdapter):
    """hudiql's own project adapter, for the rules both share; its statements run on the Session of
    the dbt connection of the calling thread."""

    def __init__(self, connections: HudiqlConnectionManager, warehouse: str, schema: str) -> None:
        super().__init__(Target("dbt", "dbt", warehouse, database=schema), Path.cwd())
        self._connections = connections

    def new_session(self) -> Session:
        return self._connections.session()


class HudiqlAdapter(SQLAdapter):
    Relation = HudiqlRelation
    Column = HudiqlColumn
    ConnectionManager = HudiqlConnectionManager
    AdapterSpecificConfigs = HudiqlConfig

    def __init__(self, config, mp_context) -> None:
        super().__init__(config, mp_context)
        credentials = config.credentials
        self._rules = ProjectRules(self.connections, credentials.warehouse, credentials.schema)

    # ---- basics -------------------------------------------------------------------------------
    @classmethod
    def date_function(cls) -> str:
        return "current_timestamp()"

    @classmethod
    def is_cancelable(cls) -> bool:
        return False

    @classmethod
    def quote(cls, identifier: str) -> str:
        return materialization.quote(identifier)

    @classmethod
    def convert_text_type(cls, agate_table: agate.Table, col_idx: int) -> str:
        return "string"

    @classmethod
    def convert_number_type(cls, agate_table: agate.Table, col_idx: int) -> str:
        decimals = agate_table.aggregate(agate.MaxPrecision(col_idx))
        return "double" if decimals else "bigint"

    @classmethod
    def convert_integer_type(cls, agate_table: agate.Table, col_idx: int) -> str:
        return "bigint"

    @classmethod
    def convert_boolean_type(cls, agate_table: agate.Table, col_idx: int) -> str:
        return "boolean"

    @classmethod
    def convert_datetime_type(cls, agate_table: agate.Table, col_idx: int) -> str:
        return "timestamp"

    @classmethod
    def convert_date_type(cls, agate_table: agate.Table, col_idx: int) -> str:
        return "date"

    @classmethod
    def convert_time_type(cls, agate_table: agate.Table, col_idx: int) -> str:
        return "string"  # Spark has no time-of-day type

    def valid_incremental_strategies(self) -> list[str]:
        return list(model_config.STRATEGIES)

    def timestamp_add_sql(self, add_to: str, number: int = 1, interval: str = "hour") -> str:
        return f"{add_to} + interval {number} {interval}"

    def string_add_sql(self, add_to: str, value: str, location: str = "append") -> str:
        if location == "append":
            return f"concat({add_to}, '{value}')"
        if location == "prepend":
            return f"concat('{value}', {add_to})"
        raise DbtRuntimeError(f'Got an unexpected location value of "{location}"')

    def _session(self) -> Session:
        return self.connections.session()

    # ---- schemas (hudiql databases) -----------------------------------------------------------
    def list_schemas(self, database: str | None) -> list[str]:
        return self._session().catalog.databases()

    @available.parse(lambda *a, **k: False)
    def check_schema_exists(self, database: str | None, schema: str) -> bool:
        return self._session().catalog.database_exists(schema.lower())

    @available.parse_none
    def create_schema(self, relation: HudiqlRelation) -> None:
        self._execute(f"CREATE DATABASE IF NOT EXISTS {relation.schema}")

    @available.parse_none
    def drop_schema(self, relation: HudiqlRelation) -> None:
        """Drop the database with its tables (their files, for managed ones) and views."""
        name = relation.schema.lower()
        if name == DEFAULT_DATABASE:
            raise DbtRuntimeError("hudiql does not drop the database 'default': it is the warehouse folder itself")
        session = self._session()
        catalog = session.catalog
        if catalog.database_exists(name):
            for view in catalog.views(name):
                catalog.drop_view(name, view)
            for table in catalog.tables(name):
                self._execute(f"DROP TABLE {name}.{table}")
            catalog.storage.delete_dir(catalog.database_path(name))
        self.cache.drop_schema(relation.database, relation.schema)

    # ---- relations ----------------------------------------------------------------------------
    def list_relations_without_caching(self, schema_relation: HudiqlRelation) -> list[HudiqlRelation]:
        catalog = self._session().catalog
        schema = schema_relation.schema.lower()
        if not catalog.database_exists(schema):
            return []
        kinds = [(name, RelationType.Table) for name in catalog.tables(schema)]
        kinds += [(name, RelationType.View) for name in catalog.views(schema)]
        return [self.Relation.create(schema=schema, identifier=name, type=kind) for name, kind in kinds]

    @available.parse_list
    def get_columns_in_relation(self, relation: HudiqlRelation) -> list[HudiqlColumn]:
        """The data columns of a table (without Hudi's meta columns), or of a view; none when it does not exist."""
        try:
            with self._rules.node_scope():
                if relation.schema is not None and self._rules.table_exists(relation.as_hudiql()):
                    columns = self._rules.get_columns(relation.as_hudiql())
                else:
                    columns = self._rules.get_query_columns(f"SELECT * FROM {relation}")
        except TableNotFoundError:
            return []
        return [self.Column(c.name, c.data_type) for c in columns]

    @available.parse_list
    def get_columns_in_query(self, sql: str) -> list[HudiqlColumn]:
        """The data columns ``sql`` returns (no Hudi meta columns), from Spark's analysis of it."""
        with self._rules.node_scope():
            return [self.Column(c.name, c.data_type) for c in self._rules.get_query_columns(sql)]

    @available.parse_none
    def drop_relation(self, relation: HudiqlRelation) -> None:
        self.cache_dropped(relation)
        session = self._session()
        name = f"{relation.schema}.{relation.identifier}"
        if session.catalog.view(relation.schema, relation.identifier) is not None:
            self._execute(f"DROP VIEW {name}")
        else:
            self._execute(f"DROP TABLE IF EXISTS {name}")

    @available.parse_none
    def truncate_relation(self, relation: HudiqlRelation) -> None:
        self._execute(f"TRUNCATE TABLE {relation}")

    @available.parse_none
    def rename_relation(self, from_relation: HudiqlRelation, to_relation: HudiqlRelation) -> None:
        self.cache_renamed(from_relation, to_relation)
        view = self._session().catalog.view(from_relation.schema, from_relation.identifier)
        if view is None:
            self._execute(f"ALTER TABLE {from_relation} RENAME TO {to_relation}")
        else:  # hudiql renames tables only; a view is its query, saved again under the new name
            self._execute(f"CREATE OR REPLACE VIEW {to_relation} AS\n{view.sql}")
            self._execute(f"DROP VIEW {from_relation}")

    def _execute(self, sql: str) -> None:
        """One statement of the adapter's own, logged and error-handled as dbt's statements are."""
        self.connections.add_query(sql, auto_begin=False)

    # ---- the rules shared with `hudiql run` ---------------------------------------------------
    @available
    def hudi_config(self, config: dict[str, Any], name: str) -> dict[str, Any]:
        """The model's Hudi configs, checked and normalized as ``hudiql run`` does (``unique_key`` and
        ``partition_by`` lists, ``table_type`` cow | mor, ``options``, ``incremental_strategy``)."""
        given = {k: v for k, v in config.items() if k in HUDI_CONFIGS and v is not None}
        try:
            return model_config.validate("model", given, f"model {name}")
        except ProjectError as exc:
            raise DbtRuntimeError(str(exc)) from None

    @available.parse(lambda upstream, *args: str(upstream))
    def hudi_changes(self, upstream: HudiqlRelation, model: HudiqlRelation, incremental: bool) -> str:
        """``{{ changes(ref('orders')) }}``, as ``hudiql run`` reads it: what ``upstream`` changed
        since ``model``'s last run (the whole upstream on a first build or a full refresh, with a
        line why). The connection's session records the upstream instant in the model's next commit
        and reads deleted records; dbt closes a node's connection when the node is done, and the
        session with it, so the next node starts without these settings."""
        with self._rules.node_scope():  # (a refusal, raised while the model compiles, is dbt's Compilation Error)
            planned = self._rules.changes(upstream.as_hudiql(), model.as_hudiql(), incremental)
        if planned.full_because is not None:
            logger.info(f"{model}: changes({upstream}) reads the whole of {upstream} as of {planned.consumed}: "
                        f"{planned.full_because}")
        return planned.sql

    @available
    def hudi_table_problem(self, relation: HudiqlRelation, config: dict[str, Any]) -> str:
        """Why an incremental model cannot write into the existing table (keys, partitions or type
        differ from its configs): an empty string, else the reason."""
        with self._rules.node_scope():
            return self._rules.check_table_config(relation.as_hudiql(), config)

    @available
    def hudi_rebuild_problem(self, relation: HudiqlRelation, config: dict[str, Any], sql: str) -> str:
        """Why a table cannot be rebuilt in place by one INSERT OVERWRITE: an empty string, else the reason."""
        with self._rules.node_scope():
            return self._rules.rebuild_problem(relation.as_hudiql(), config, sql)

    @available
    def hudi_increment_sql(self, relation: HudiqlRelation, sql: str, config: dict[str, Any], on_schema_change: str) -> str:
        """The statements of an incremental model's later run, as ``hudiql run`` writes them: the schema
        change ``on_schema_change`` allows, then the rows by the model's strategy."""
        try:
            with self._rules.node_scope():
                return self._rules.increment_sql(relation.as_hudiql(), sql, config, on_schema_change)
        except ProjectCompilationError as exc:
            raise CompilationError(str(exc)) from None

    # The SQL pieces ``hudiql run``'s macros use too (hudiql.project.adapter.materialization).
    hudi_table_clauses = available(staticmethod(materialization.table_clauses))
    hudi_create_table_as = available(staticmethod(materialization.create_table_as))
    hudi_overwrite_sql = available(staticmethod(materialization.overwrite_sql))
    hudi_snapshot_hash_arguments = available(staticmethod(snapshot.hash_arguments))

    @available
    def hudi_snapshot_merge_sql(self, target: HudiqlRelation, source: str, insert_cols: list[str],
                                column_names: dict[str, str], valid_to_current: str | None) -> str:
        """The MERGE of a snapshot's staged changes, as ``hudiql snapshot`` writes it; ``column_names``:
        dbt's names of the snapshot table's meta columns."""
        columns = snapshot.SnapshotColumns.of({"snapshot_meta_column_names": column_names})
        return snapshot.merge_sql(target, source, columns, insert_cols, valid_to_current)

    @available
    def hudi_alter_columns_sql(self, relation: HudiqlRelation, added: list[HudiqlColumn],
                               removed: list[HudiqlColumn] | None = None) -> str:
        """The ALTER TABLE adding ``added``; empty if none. Dropping ``removed`` columns is refused."""
        try:
            return materialization.alter_columns_sql(relation, added, removed or [])
        except ProjectCompilationError as exc:
            raise CompilationError(str(exc)) from None

    @available
    def hudi_seed_query(self, relation: HudiqlRelation, agate_table: agate.Table, column_types: dict[str, str]) -> str:
        """The SELECT that types a seed's rows: they are registered as a Spark temporary view of
        strings, cast to ``column_types`` or the types dbt infers."""
        names = list(agate_table.column_names)
        types = [(column_types or {}).get(n) or self.convert_type(agate_table, i) for i, n in enumerate(names)]
        view = f"__hudiql_seed_{relation.schema}_{relation.identifier}"
        rows = [[None if v is None else _seed_text(v) for v in row] for row in agate_table.rows]
        schema = ", ".join(f"{self.quote(n)} string" for n in names)
        session = self._session()
        session.spark.createDataFrame(rows, schema).createOrReplaceTempView(view)
        casts = ", ".join(f"CAST({self.quote(n)} AS {t}) AS {self.quote(n)}" for n, t in zip(names, types))
        return f"SELECT {casts} FROM {view}"

    # ---- docs catalog -------------------------------------------------------------------------
    def _get_one_catalog(
        self, information_schema: InformationSchema, schemas: set[str], used_schemas: frozenset[tuple[str, str]]
    ) -> agate.Table:
        rows = []
        for schema in schemas:
            for relation in self.list_relations_without_caching(self.Relation.create(schema=schema)):
                for index, column in enumerate(self.get_columns_in_relation(relation), start=1):
                    rows.append(("", relation.schema, relation.identifier, str(relation.type),
                                 None, None, column.name, index, column.data_type, None))
        names = ["table_database", "table_schema", "table_name", "table_type", "table_comment", "table_owner",
                 "column_name", "column_index", "column_type", "column_comment"]
        text = agate.Text(cast_nulls=False)  # keeps the empty database part, as nodes and relations have it
        types = [text, text, text, text, text, text, text, agate.Number(), text, text]
        return agate.Table(rows, names, types)

    def get_filtered_catalog(self, relation_configs: Iterable[RelationConfig], used_schemas: frozenset[tuple[str, str]],
                             relations: set[BaseRelation] | None = None) -> tuple[agate.Table, list[Exception]]:
        """The catalog rows of ``relations`` (all, without): matched by schema and name, as hudiql
        relations have no database part."""
        catalog, exceptions = self.get_catalog(relation_configs, used_schemas)
        if relations:
            wanted = {(r.schema.casefold(), r.identifier.casefold()) for r in relations}
            catalog = catalog.where(lambda row: (row["table_schema"].casefold(), row["table_name"].casefold()) in wanted)
        return catalog, exceptions


def _seed_text(value: Any) -> str:
    """A CSV value as Spark casts it back from a string."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, datetime.date):
        return value.isoformat()
    return str(value)


__all__ = ["HudiqlAdapter"]
