"""One node's execution: compile, materialize (a macro), or run a test; the result, never an exception.

- a model: ``materialization_<materialized>`` runs with ``sql`` = the compiled SELECT;
- a seed: ``materialization_seed``;
- a test: ``SELECT count(*) FROM (<test SQL>)``; a count above 0 fails it (or warns, with
  ``severity: warn``).
Views are recorded in the warehouse (``CREATE OR REPLACE VIEW``), so a run that selects only
``fct_orders`` reads the ``stg_orders`` view an earlier run made, as in dbt.

Example:
    >>> result = Executor(manifest, compiler, adapter).execute(manifest.nodes["model.shop.fct_orders"])
    >>> result.status, result.message
    ('success', 'OK')
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from hudiql.project.adapter import Adapter, describe_error
from hudiql.project.compiler import Compiler, compiled_path
from hudiql.project.nodes import Node
from hudiql.project.parser import Manifest

FAILED = ("error", "fail")


@dataclass
class NodeResult:
    node: Node
    status: str  # success, error, skipped (models, seeds); pass, fail, warn, error, skipped (tests)
    message: str = ""
    execution_time: float = 0.0
    adapter_response: dict[str, Any] = field(default_factory=dict)
    failures: int | None = None
    timing: list[dict[str, str]] = field(default_factory=list)
    thread_id: str = ""
    compiled_code: str | None = None

    @property
    def failed(self) -> bool:
        return self.status in FAILED


def _now() -> str:
    return datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")


class Executor:
    def __init__(self, manifest: Manifest, compiler: Compiler, adapter: Adapter) -> None:
        self.manifest = manifest
        self.compiler = compiler
        self.adapter = adapter
        self.project = manifest.invocation.project

    def execute(self, node: Node) -> NodeResult:
        started, clock = _now(), time.monotonic()
        result = NodeResult(node, "success", thread_id=threading.current_thread().name)
        try:
            with self.adapter.node_scope() as scope:
                if node.resource_type == "test":
                    self._test(node, result)
                else:
                    self._materialize(node, result)
                result.adapter_response = {"_message": "OK", **scope.response}
                self._write_run_file(node, scope.statements)
            if node.resource_type == "seed":
                result.message = f"INSERT {scope.response.get('rows_affected', 0)}"
            elif node.resource_type == "model":
                result.message = "OK"
        except Exception as e:  # the node fails, the run goes on; the message says why
            result.status, result.message = "error", describe_error(e)
        result.execution_time = time.monotonic() - clock
        result.timing = [{"name": "execute", "started_at": started, "completed_at": _now()}]
        return result

    def _materialize(self, node: Node, result: NodeResult) -> None:
        assert node.relation is not None
        if node.relation.schema:
            self.adapter.ensure_database(node.relation.schema)
        extra = {}
        if node.resource_type == "model":
            result.compiled_code = extra["sql"] = self.compiler.compile(node)
        ctx = self.compiler.context(node, extra=extra)
        self.manifest.invocation.library.call(f"materialization_{node.materialized}", ctx, node.label)

    def _test(self, node: Node, result: NodeResult) -> None:
        result.compiled_code = self.compiler.compile(node)
        rows = self.adapter.run_query(f"SELECT count(*) AS failures FROM (\n{result.compiled_code}\n) AS dbt_internal_test")
        result.failures = int(rows[0][0])
        if result.failures == 0:
            result.status, result.message = "pass", "PASS"
        else:
            result.status = "warn" if node.config["severity"] == "warn" else "fail"
            result.message = f"Got {result.failures} result{'s' if result.failures != 1 else ''}, configured to {result.status} if != 0"

    def _write_run_file(self, node: Node, statements: list[str]) -> None:
        if not statements:
            return
        path = self.project.target_dir / "run" / self.project.name / compiled_path(node)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(";\n\n".join(statements) + ";\n", encoding="utf-8")
