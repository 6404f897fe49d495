"""Every file of a project's ``target/`` folder is written here: the JSON artifacts (atomically)
and the compiled and run SQL of each node, in dbt's layout.

Example:
    >>> from hudiql.project.artifacts.nodes import Node
    >>> compiled_path(Node("model.shop.orders", "model", "orders", "models/orders.sql", ["shop", "orders"], "select 1"))
    'models/orders.sql'
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import hudiql
from hudiql.project.artifacts.nodes import Node
from hudiql.project.config.runtime import RuntimeConfig


def compiled_path(node: Node) -> str:
    """dbt's layout: a generic test is a file below its ``.yml`` (``models/x.yml/not_null_m_id.sql``)."""
    if node.test_metadata is not None:
        return f"{node.original_file_path}/{node.name}.sql"
    return node.original_file_path


def write_compiled(config: RuntimeConfig, node: Node, sql: str) -> None:
    """``target/compiled/<project>/<path>``: the node's SQL as it ran (ephemeral CTEs included)."""
    _write_text(config.project.target_dir / "compiled" / config.project.name / compiled_path(node), sql)


def write_run(config: RuntimeConfig, node: Node, statements: list[str]) -> None:
    """``target/run/<project>/<path>``: the statements a materialization ran, when it ran any."""
    if statements:
        path = config.project.target_dir / "run" / config.project.name / compiled_path(node)
        _write_text(path, ";\n\n".join(statements) + ";\n")


def write_json(config: RuntimeConfig, name: str, schema: str, data: dict[str, Any]) -> None:
    """``target/<name>`` with dbt's ``metadata`` block first; a reader never sees half a file."""
    path = config.project.target_dir / name
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps({"metadata": _metadata(config, schema), **data}, indent=2, default=str), encoding="utf-8")
    tmp.replace(path)


def _write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _metadata(config: RuntimeConfig, schema: str) -> dict[str, Any]:
    return {
        "dbt_schema_version": schema,
        "hudiql_version": hudiql.__version__,
        "generated_at": datetime.now(timezone.utc).isoformat().replace("+00:00", "Z"),
        "invocation_id": config.invocation_id,
        "project_name": config.project.name,
        "adapter_type": "hudiql",
        "target_name": config.target.name,
    }
