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
from hudiql.project.adapter.impl import Adapter
from hudiql.project.artifacts.manifest import Manifest
from hudiql.project.artifacts.nodes import Node, Relation
from hudiql.project.artifacts.writer import write_compiled
from hudiql.project.context.providers import Invocation, RuntimeProvider
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
