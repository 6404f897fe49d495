"""Every file of a project's ``target/`` folder is written here: the JSON artifacts (atomically)
and the compiled and run SQL of each node, in dbt's layout.

The JSON artifacts follow dbt's published schemas (https://schemas.getdbt.com/, the version each
names in ``metadata.dbt_schema_version``). ``dbt_version`` is the dbt-core release whose schemas
they follow, with hudiql's version as its build metadata: ``1.11.6+hudiql.0.1.0``.

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
from hudiql.project.config.project import DBT_VERSION
from hudiql.project.config.runtime import RuntimeConfig


def compiled_path(node: Node) -> str:
    """dbt's layout: a generic test is a file below its ``.yml`` (``models/x.yml/not_null_m_id.sql``),
    and so are a unit test and a snapshot a ``.yml`` defines."""
    if node.test_metadata is not None:
        return f"{node.original_file_path}/{node.test_metadata.compiled_name}.sql"
    if node.resource_type in ("snapshot", "unit_test") and not node.original_file_path.endswith(".sql"):
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


def write_json(config: RuntimeConfig, name: str, schema: str, data: dict[str, Any],
               metadata: dict[str, Any] | None = None) -> None:
    """``target/<name>`` with dbt's ``metadata`` block first (``metadata``: what this artifact's schema
    adds to the common one); a reader never sees half a file."""
    path = config.project.target_dir / name
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    head = {**_metadata(config, schema), **(metadata or {})}
    tmp.write_text(json.dumps({"metadata": head, **data}, indent=2, default=str), encoding="utf-8")
    tmp.replace(path)


def timestamp(moment: datetime | None = None) -> str:
    """dbt's form of a time in artifacts: UTC with microseconds (now, without ``moment``).

    >>> timestamp(datetime(2024, 5, 1, 10, 0, tzinfo=timezone.utc))
    '2024-05-01T10:00:00.000000Z'
    """
    return (moment or datetime.now(timezone.utc)).astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _metadata(config: RuntimeConfig, schema: str) -> dict[str, Any]:
    return {
        "dbt_schema_version": schema,
        "dbt_version": f"{DBT_VERSION}+hudiql.{hudiql.__version__}",
        "generated_at": timestamp(),
        "invocation_id": config.invocation_id,
        "invocation_started_at": timestamp(config.run_started_at),
    }
