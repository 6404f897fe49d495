"""The Jinja context of a model, test or materialization: dbt's functions and variables.

``ref``, ``source``, ``config``, ``var``, ``env_var``, ``is_incremental``, ``this``, ``target``,
``run_started_at``, ``invocation_id``, ``log``, ``return``, ``exceptions``, ``modules``, ``model``,
``execute``, ``tojson`` / ``fromjson``, and every macro. Parsing renders each model once with
``execute`` false to record its ``ref``/``source``/``config`` calls; compiling renders it again
with real relations.

Example:
    >>> ctx = Invocation(project, target, library).context(node, refs=lookup, execute=True)
    >>> library.render(node.raw_code, ctx, node.label)
"""

from __future__ import annotations

import datetime
import itertools
import json
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from hudiql.project.errors import CompilationError, ProjectError
from hudiql.project.jinja import MacroLibrary, do_return
from hudiql.project.nodes import Node, Relation
from hudiql.project.profiles import Target
from hudiql.project.project_file import Project
from hudiql.project.yaml_render import env_var

_MISSING = object()


class RefLookup(Protocol):
    """How ``ref()`` and ``source()`` find relations: recorded while parsing, resolved after."""

    def ref(self, node: Node, name: str) -> Relation: ...

    def source(self, node: Node, source_name: str, table_name: str) -> Relation: ...


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


class _Exceptions:
    @staticmethod
    def raise_compiler_error(message: str) -> None:
        raise CompilationError(f"Compilation Error: {message}")


@dataclass
class Invocation:
    """What every context of one command shares."""

    project: Project
    target: Target
    library: MacroLibrary
    full_refresh: bool = False
    log: Callable[[str], None] = print
    run_started_at: datetime.datetime = field(default_factory=lambda: datetime.datetime.now(datetime.timezone.utc))
    invocation_id: str = field(default_factory=lambda: str(uuid.uuid4()))

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
        has: ``adapter``, ``run_query``, ``sql``, a real ``is_incremental``.
        """
        ctx: dict[str, Any] = {
            **self.library.env.globals,
            "ref": lambda *args: refs.ref(node, args[-1]),
            "source": lambda source_name, table_name: refs.source(node, source_name, table_name),
            "config": ConfigFunction(node, recorded_config),
            "var": self.var,
            "env_var": env_var,
            "is_incremental": lambda: False,
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
