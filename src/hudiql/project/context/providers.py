"""The Jinja context of a model, test or materialization: dbt's functions and variables, and the
providers behind ``ref``/``source``: ``ParseProvider`` records them while parsing, ``RuntimeProvider``
resolves them to real relations when compiling.

``ref``, ``source``, ``config``, ``var``, ``env_var``, ``is_incremental``, ``changes``, ``this``, ``target``,
``run_started_at``, ``invocation_id``, ``log``, ``return``, ``exceptions``, ``modules``, ``model``,
``execute``, ``tojson`` / ``fromjson``, every macro, ``dbt`` (the built-in macros as dbt's namespace)
and ``adapter`` (``adapter.dispatch`` always; the warehouse's adapter while a node runs:
``context.macros.JinjaAdapter``). Parsing renders each model once with
``execute`` false to record its ``ref``/``source``/``config`` calls; compiling renders it again
with real relations.

Example:
    >>> from hudiql.project.artifacts.nodes import Node
    >>> provider = ParseProvider()
    >>> node = Node("model.shop.fct", "model", "fct", "models/fct.sql", ["shop", "fct"], "")
    >>> str(provider.ref(node, "orders")), provider.refs
    ('orders', ['orders'])
"""

from __future__ import annotations

import datetime
import itertools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from hudiql.project.adapter.result import AdapterResponse, QueryResult
from hudiql.project.artifacts.manifest import Manifest
from hudiql.project.artifacts.nodes import Node, Relation
from hudiql.project.config.renderer import env_var
from hudiql.project.config.runtime import RuntimeConfig
from hudiql.project.context.macros import MacroLibrary, do_return
from hudiql.project.errors import CompilationError, ProjectError

_MISSING = object()


class RefLookup(Protocol):
    """How ``ref()`` and ``source()`` find relations: recorded while parsing, resolved after."""

    def ref(self, node: Node, name: str) -> Relation: ...

    def source(self, node: Node, source_name: str, table_name: str) -> Relation: ...


class ParseProvider:
    """``ref``/``source`` while parsing: remember the names, hand back placeholder relations."""

    def __init__(self) -> None:
        self.refs: list[str] = []
        self.sources: list[tuple[str, str]] = []

    def ref(self, node: Node, name: str) -> Relation:
        if name not in self.refs:
            self.refs.append(name)
        return Relation(None, name, "table")

    def source(self, node: Node, source_name: str, table_name: str) -> Relation:
        if (source_name, table_name) not in self.sources:
            self.sources.append((source_name, table_name))
        return Relation(source_name, table_name, "table")


class RuntimeProvider:
    """``ref``/``source`` at compile time: real relations; remembers the ephemeral models a node uses."""

    def __init__(self, manifest: Manifest) -> None:
        self.manifest = manifest
        self.ephemerals: list[str] = []

    def ref(self, node: Node, name: str) -> Relation:
        target = self.manifest.named(name)
        if target is None:  # the graph checked every ref; only a ref computed at run time gets here
            raise CompilationError(f"Compilation Error in {node.label}: ref('{name}') is not a model, seed or snapshot of this project")
        if target.is_ephemeral and target.unique_id not in self.ephemerals:
            self.ephemerals.append(target.unique_id)
        assert target.relation is not None
        return target.relation

    def source(self, node: Node, source_name: str, table_name: str) -> Relation:
        for source in self.manifest.sources.values():
            if (source.source_name, source.name) == (source_name, table_name):
                return source.relation
        raise CompilationError(f"Compilation Error in {node.label}: source('{source_name}', '{table_name}') is not declared")


class FixtureProvider:
    """``ref``/``source`` in a unit test: each given input is the CTE of its rows (``names``: input
    name -> CTE); an input the test does not give is an error naming it."""

    def __init__(self, names: dict[str, str], label: str) -> None:
        self.names = names
        self.label = label

    def _cte(self, name: str, written: str) -> Relation:
        if name not in self.names:
            raise CompilationError(f"{self.label}: the model reads {written}, which the unit test does not give; "
                                   f"add it under given: with its rows")
        return Relation(None, self.names[name], "cte")

    def ref(self, node: Node, name: str) -> Relation:
        return self._cte(name, f"ref('{name}')")

    def source(self, node: Node, source_name: str, table_name: str) -> Relation:
        return self._cte(f"{source_name}.{table_name}", f"source('{source_name}', '{table_name}')")


class ConfigFunction:
    """``config(...)`` records configs while parsing; ``config.get`` reads the node's configs."""

    def __init__(self, node: Node, recorded: dict[str, Any] | None) -> None:
        self._node = node
        self._recorded = recorded

    def __call__(self, *args: Any, **kwargs: Any) -> str:
        if args:
            raise CompilationError(f"Compilation Error in {self._node.label}: config() takes key=value arguments")
        if self._recorded is not None:
            self._recorded.update(kwargs)
        return ""

    def get(self, key: str, default: Any = None) -> Any:
        merged = {**self._node.config, **(self._recorded or {})}
        return merged.get(key, default)

    def require(self, key: str) -> Any:
        value = self.get(key, _MISSING)
        if value is _MISSING:
            raise CompilationError(f"Compilation Error in {self._node.label}: config '{key}' is required")
        return value


class _SqlResults:
    """What ``statement`` blocks stored by name in one context, for ``load_result`` (dbt's
    ``store_result`` / ``store_raw_result`` / ``load_result``)."""

    def __init__(self) -> None:
        self._results: dict[str, dict[str, Any]] = {}

    def store(self, name: str, response: Any, agate_table: QueryResult | None = None) -> str:
        table = agate_table if agate_table is not None else QueryResult([], [])
        self._results[name] = {"response": response, "data": table.as_matrix(), "table": table}
        return ""

    def store_raw(self, name: str, message: str | None = None, code: str | None = None,
                  rows_affected: int | None = None, agate_table: QueryResult | None = None) -> str:
        return self.store(name, AdapterResponse(message or "", code or "", rows_affected), agate_table)

    def load(self, name: str) -> dict[str, Any] | None:
        return self._results.get(name)


class _Exceptions:
    @staticmethod
    def raise_compiler_error(message: str) -> None:
        raise CompilationError(f"Compilation Error: {message}")


@dataclass(kw_only=True)
class Invocation(RuntimeConfig):
    """What every context of one command shares: the runtime config, the macros, the log."""

    library: MacroLibrary
    log: Callable[[str], None] = print

    def var(self, name: str, *default: Any) -> Any:
        """``var('k')`` or ``var('k', default)``; ``--vars`` win over ``vars:`` in dbt_project.yml."""
        try:
            return self.project.var(name, *default)
        except ProjectError as e:
            raise CompilationError(f"Compilation Error: {e}") from None

    def context(
        self,
        node: Node,
        refs: RefLookup,
        execute: bool,
        recorded_config: dict[str, Any] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """A fresh context for ``node`` with every macro bound to it.

        ``recorded_config`` collects ``config()`` calls (parsing); ``extra`` adds what only a run
        has: the warehouse's ``adapter`` (behind ``adapter.dispatch``), ``run_query``, ``sql``, a real
        ``is_incremental``.
        """
        results = _SqlResults()
        ctx: dict[str, Any] = {
            **self.library.env.globals,
            "ref": lambda *args: refs.ref(node, args[-1]),
            "source": lambda source_name, table_name: refs.source(node, source_name, table_name),
            "config": ConfigFunction(node, recorded_config),
            "var": self.var,
            "env_var": env_var,
            "is_incremental": lambda: False,
            # Parsing: a query does not run (a run's ``Compiler.context`` gives the real one).
            "run_query": lambda sql: None,
            # Parsing: the upstream itself; a run reads its changes (Compiler._changes).
            "changes": lambda relation: str(relation),
            "this": node.relation,
            "target": self.target.as_context(),
            "run_started_at": self.run_started_at,
            "invocation_id": self.invocation_id,
            "log": self._log,
            "return": do_return,
            "exceptions": _Exceptions(),
            "modules": {"datetime": datetime, "re": re, "itertools": itertools, "json": json},
            "tojson": json.dumps,
            "fromjson": json.loads,
            "model": _node_dict(node),
            "execute": execute,
            "flags": {"FULL_REFRESH": self.full_refresh},
            "project_name": self.project.name,
            "store_result": results.store,
            "store_raw_result": results.store_raw,
            "load_result": results.load,
        }
        ctx.update(extra or {})
        self.library.bind(ctx)
        return ctx

    def _log(self, message: Any, info: bool = False) -> str:
        if info:
            self.log(str(message))
        return ""


def _node_dict(node: Node) -> dict[str, Any]:
    return {
        "unique_id": node.unique_id, "name": node.name, "resource_type": node.resource_type,
        "original_file_path": node.original_file_path, "fqn": node.fqn, "config": node.config,
        "description": node.description, "columns": node.columns,
    }
