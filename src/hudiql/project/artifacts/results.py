"""What running a node produced, and ``target/run_results.json`` in the shape of dbt's artifact.

Example:
    >>> from hudiql.project.artifacts.nodes import Node
    >>> node = Node("test.shop.not_null_orders_id", "test", "not_null_orders_id", "models/x.yml", ["shop"], "")
    >>> NodeResult(node, "fail", failures=3).failed, NodeResult(node, "warn", failures=3).failed
    (True, False)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from hudiql.project.artifacts.nodes import Node
from hudiql.project.artifacts.writer import write_json
from hudiql.project.cli.flags import Flags
from hudiql.project.config.runtime import RuntimeConfig

RUN_RESULTS_SCHEMA = "https://schemas.getdbt.com/dbt/run-results/v6.json"
FAILED = ("error", "fail")


@dataclass
class NodeResult:
    node: Node
    status: str  # success, error, skipped (models, seeds); pass, fail, warn, error, skipped (tests): dbt's words
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


def write_run_results(config: RuntimeConfig, results: list[NodeResult], elapsed: float, flags: Flags) -> None:
    """``target/run_results.json``; ``args`` are the command's flags, ``which`` its name, as in dbt."""
    write_json(config, "run_results.json", RUN_RESULTS_SCHEMA, {
        "results": [
            {
                "unique_id": r.node.unique_id,
                "status": r.status,
                "timing": r.timing,
                "thread_id": r.thread_id,
                "execution_time": round(r.execution_time, 3),
                "adapter_response": r.adapter_response,
                "message": r.message,
                "failures": r.failures,
                "compiled": r.compiled_code is not None,
                "compiled_code": r.compiled_code,
                "relation_name": str(r.node.relation) if r.node.relation else None,
            }
            for r in results
        ],
        "elapsed_time": round(elapsed, 3),
        "args": {**asdict(flags), "which": flags.command},
    })
