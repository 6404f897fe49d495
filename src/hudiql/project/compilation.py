"""A node's SQL: its Jinja rendered with real relations, ephemeral models injected as CTEs.

``ref('m')`` of an ephemeral model renders ``__dbt__cte__m`` and the model's SQL becomes a CTE
of the query (ephemeral models that ref other ephemeral models are flattened, parents first).
A generic test's SQL comes from its ``test_<name>`` macro. Compiled SQL is written to
``target/compiled/<project>/<path>`` (artifacts.writer).

Example:
    >>> print(inject_ctes("SELECT * FROM __dbt__cte__stg", [("__dbt__cte__stg", "SELECT 1 AS id")]))
    WITH __dbt__cte__stg AS (
    SELECT 1 AS id
    )
    SELECT * FROM __dbt__cte__stg
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlglot.dialects.spark import Spark
from sqlglot.tokens import TokenType

from hudiql.errors import HudiqlError
from hudiql.project.adapter import unit
from hudiql.project.adapter.impl import Adapter
from hudiql.project.artifacts.manifest import Manifest
from hudiql.project.artifacts.nodes import EPHEMERAL_PREFIX, Fixture, Node, Relation
from hudiql.project.artifacts.writer import write_compiled
from hudiql.project.config.renderer import env_var
from hudiql.project.context.macros import DBT_NAMESPACE
from hudiql.project.context.providers import FixtureProvider, Invocation, RuntimeProvider
from hudiql.project.errors import CompilationError
from hudiql.project.parser import is_relation_argument
from hudiql.sql import statements as S
from hudiql.sql.parser import parse_statement, split_statements


class Compiler:
    def __init__(self, invocation: Invocation, manifest: Manifest, adapter: Adapter) -> None:
        self.invocation = invocation
        self.manifest = manifest
        self.adapter = adapter

    def full_refresh(self, node: Node) -> bool:
        """``--full-refresh``, unless the node's ``full_refresh`` config says otherwise."""
        configured = node.config.get("full_refresh")
        return self.invocation.full_refresh if configured is None else bool(configured)

    def is_incremental(self, node: Node) -> bool:
        return node.materialized == "incremental" and not self.full_refresh(node) and self.adapter.table_exists(node.relation)

    def context(self, node: Node, lookup: RuntimeProvider | None = None, extra: dict[str, Any] | None = None) -> dict[str, Any]:
        """The execution context of ``node`` (``execute`` true)."""
        base: dict[str, Any] = {
            "adapter": self.adapter,
            "run_query": self.adapter.run_query,
            "is_incremental": _once(lambda: self.is_incremental(node)),
            "should_full_refresh": lambda: self.full_refresh(node),
            "changes": lambda relation: self._changes(node, relation),
        }
        return self.invocation.context(node, lookup or RuntimeProvider(self.manifest), execute=True, extra={**base, **(extra or {})})

    def _changes(self, node: Node, upstream: Relation) -> str:
        """``{{ changes(ref('orders')) }}``: only what the upstream table changed since the model's
        last run, in an incremental model that exists; else the whole upstream, with a line why."""
        assert node.relation is not None
        incremental = node.materialized == "incremental" and self.is_incremental(node)
        planned = self.adapter.changes(upstream, node.relation, incremental)
        if planned.full_because is not None:
            self.invocation.log(f"{node.label}: changes({upstream}) reads the whole of {upstream} "
                                f"as of {planned.consumed}: {planned.full_because}")
        return planned.sql

    def compile(self, node: Node) -> str:
        sql, ctes = self._render(node)
        sql = inject_ctes(sql, [(self.manifest.nodes[u].relation.identifier, text) for u, text in ctes])
        if node.resource_type in ("model", "snapshot", "test"):
            _check_one_select(sql, node)
        write_compiled(self.invocation, node, sql)
        return sql

    def compile_unit_test(self, node: Node) -> tuple[str, list[str]]:
        """A unit test's query (``unit.unit_test_sql``): its model's SELECT rendered with each
        given input's rows in place of the input (a CTE each), and the expected rows; and the
        columns compared. The model's Jinja sees ``overrides`` in place of the real macros, vars
        and env vars; ``is_incremental()`` is false unless overridden, as in dbt."""
        test = node.unit_test
        assert test is not None
        model = self.manifest.named(test.model)
        assert model is not None and model.relation is not None
        ctes, names = [], {}
        for fixture in test.given:
            name, relation, declared = self._input(node, model, fixture)
            names[name] = EPHEMERAL_PREFIX + name.replace(".", "__")
            ctes.append((names[name], self._fixture_sql(node, name, fixture, relation, declared)))
        overrides = test.overrides
        lookup = FixtureProvider(names, node.label)
        this = Relation(None, names["this"], "cte") if "this" in names else model.relation
        ctx = self.context(model, lookup, extra={"this": this, "is_incremental": lambda: False})
        variables = overrides.get("vars") or {}
        ctx["var"] = lambda name, *default: variables[name] if name in variables else self.invocation.var(name, *default)
        env = overrides.get("env_vars") or {}
        ctx["env_var"] = lambda name, *default: env[name] if name in env else env_var(name, *default)
        # A macro override (``current_timestamp``, or ``dbt.current_timestamp``) answers by name and
        # through the ``dbt`` namespace, as dbt's unit test context does.
        replaced = {str(name).rsplit(".", 1)[-1]: (lambda *args, _value=value, **kwargs: _value)
                    for name, value in (overrides.get("macros") or {}).items()}
        ctx.update(replaced)
        ctx[DBT_NAMESPACE] = ctx[DBT_NAMESPACE].overridden(replaced)
        model_sql = inject_ctes(self.invocation.library.render(model.raw_code, ctx, node.label).strip(), ctes)
        _check_one_select(model_sql, node)
        types = {c.name.lower(): c.data_type for c in self.adapter.get_query_columns(model_sql)}
        expect = test.expect
        if expect.format == "sql":
            columns, expected = list(types), str(expect.rows)
        else:
            rows = list(expect.rows)
            columns = [str(c).lower() for c in rows[0]] if rows else list(types)
            expected = unit.expected_sql(rows, types)
        sql = unit.unit_test_sql(model_sql, expected, columns)
        write_compiled(self.invocation, node, sql)
        return sql, columns

    def _input(self, node: Node, model: Node, fixture: Fixture) -> tuple[str, Relation, dict[str, str]]:
        """A given input's name (``orders``, ``raw.customers``, ``this``), its relation, and the column
        types its ``.yml`` declares (for a relation not built yet)."""
        if fixture.ref is not None:
            target = self.manifest.named(fixture.ref)
            if target is None:
                raise CompilationError(f"{node.label}: input {fixture.input} is not a model, seed or snapshot of this project")
            if target.is_ephemeral and fixture.format != "sql":
                raise CompilationError(f"{node.label}: input {fixture.input} is an ephemeral model: give its rows with format: sql")
            assert target.relation is not None
            return fixture.ref, target.relation, _declared(target.columns)
        if fixture.source is not None:
            for source in self.manifest.sources.values():
                if (source.source_name, source.name) == fixture.source:
                    return ".".join(fixture.source), source.relation, _declared(source.columns)
            raise CompilationError(f"{node.label}: input {fixture.input} is not a declared source")
        return "this", model.relation, _declared(model.columns)

    def _fixture_sql(self, node: Node, name: str, fixture: Fixture, relation: Relation, declared: dict[str, str]) -> str:
        """The rows of input ``name`` as a SELECT, typed like its relation (or its declared columns)."""
        if fixture.format == "sql":
            return str(fixture.rows)
        columns = self.adapter.relation_columns(relation) if relation.kind != "cte" else None
        types = {c.name.lower(): c.data_type for c in columns} if columns is not None else declared
        if not types:
            raise CompilationError(f"{node.label}: not able to get the columns of input {fixture.input} ({relation}) "
                                   "because the relation doesn't exist: build it first, or give its columns a "
                                   "data_type in its .yml")
        return unit.fixture_sql(list(fixture.rows), types, name.rsplit(".", 1)[-1])

    def _render(self, node: Node) -> tuple[str, list[tuple[str, str]]]:
        """The node's SQL and the (ephemeral id, SQL) CTEs it needs, parents first."""
        lookup = RuntimeProvider(self.manifest)
        ctx = self.context(node, lookup)
        if node.test_metadata is not None:
            sql = self._generic_test_sql(node, ctx)
        else:
            sql = self.invocation.library.render(node.raw_code, ctx, node.label)
        ctes: list[tuple[str, str]] = []
        for uid in lookup.ephemerals:
            parent_sql, parent_ctes = self._render(self.manifest.nodes[uid])
            for cte in [*parent_ctes, (uid, parent_sql)]:
                if cte[0] not in [c[0] for c in ctes]:
                    ctes.append(cte)
        return sql.strip(), ctes

    def _generic_test_sql(self, node: Node, ctx: dict[str, Any]) -> str:
        meta = node.test_metadata
        assert meta is not None and meta.attached_node is not None
        attached = self.manifest.nodes.get(meta.attached_node) or self.manifest.sources[meta.attached_node]
        model = str(ctx["ref"](attached.name) if isinstance(attached, Node) else attached.relation)
        if node.config.get("where"):
            model = f"(SELECT * FROM {model} WHERE {node.config['where']}) AS dbt_subquery"
        kwargs = {}
        for key, value in meta.kwargs.items():
            if is_relation_argument(value):
                value = self.invocation.library.render("{{ " + value + " }}", ctx, node.label)
            kwargs[key] = value
        return str(self.invocation.library.call(f"test_{meta.name}", ctx, node.label, model=model, **kwargs))


def _declared(columns: dict[str, dict[str, Any]]) -> dict[str, str]:
    """Column types a ``.yml`` declares (``data_type``), when it declares every column's."""
    types = {name.lower(): str(c["data_type"]) for name, c in columns.items() if c.get("data_type")}
    return types if types and len(types) == len(columns) else {}


def _once(fn: Callable[[], bool]) -> Callable[[], bool]:
    """``is_incremental()`` looks at storage once per node, however often the model calls it."""
    cache: list[bool] = []

    def call() -> bool:
        if not cache:
            cache.append(fn())
        return cache[0]

    return call


def inject_ctes(sql: str, ctes: list[tuple[str, str]]) -> str:
    """``sql`` with ``ctes`` (name, SQL) prepended to its WITH clause, the query's text kept as written."""
    if not ctes:
        return sql
    definitions = ",\n".join(f"{name} AS (\n{body}\n)" for name, body in ctes)
    tokens = Spark().tokenize(sql)
    if tokens and tokens[0].token_type == TokenType.WITH:
        at = tokens[0].end + 1
        return f"{sql[:at]} {definitions},\n{sql[at:].lstrip()}"
    return f"WITH {definitions}\n{sql}"


def _check_one_select(sql: str, node: Node) -> None:
    try:
        statements = split_statements(sql)
        statement = parse_statement(statements[0]) if len(statements) == 1 else None
    except HudiqlError as e:
        raise CompilationError(f"{node.label}: {e}") from None
    if statement is None:
        raise CompilationError(f"{node.label} must be one SELECT statement; it compiles to {len(statements)} statements")
    if not isinstance(statement, S.Query):
        raise CompilationError(f"{node.label} must be one SELECT statement; it compiles to a {type(statement).__name__}")
