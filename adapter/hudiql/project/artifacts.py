"""``target/manifest.json`` and ``target/run_results.json``, in the shape of dbt's artifacts.

(``target/compiled/`` and ``target/run/`` are written by the compiler and the executor, node by node.)

Example:
    >>> write_manifest(manifest, graph)
    >>> json.loads((project.target_dir / "manifest.json").read_text())["nodes"]["model.shop.fct_orders"]["config"]
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import hudiql
from hudiql.project.executor import NodeResult
from hudiql.project.graph import Graph
from hudiql.project.nodes import Node, Source
from hudiql.project.parser import Manifest

MANIFEST_SCHEMA = "https://schemas.getdbt.com/dbt/manifest/v12.json"
RUN_RESULTS_SCHEMA = "https://schemas.getdbt.com/dbt/run-results/v6.json"


def _metadata(manifest: Manifest, schema: str) -> dict[str, Any]:
    invocation = manifest.invocation
    return {
        "dbt_schema_version": schema,
        "hudiql_version": hudiql.__version__,
        "generated_at": datetime.now(timezone.utc).isoformat().replace("+00:00", "Z"),
        "invocation_id": invocation.invocation_id,
        "project_name": invocation.project.name,
        "adapter_type": "hudiql",
        "target_name": invocation.target.name,
    }


def _write(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=2, default=str), encoding="utf-8")
    tmp.replace(path)  # a reader never sees half a file


def _node(node: Node, manifest: Manifest) -> dict[str, Any]:
    data: dict[str, Any] = {
        "unique_id": node.unique_id,
        "resource_type": node.resource_type,
        "package_name": manifest.invocation.project.name,
        "name": node.name,
        "path": node.original_file_path,
        "original_file_path": node.original_file_path,
        "fqn": node.fqn,
        "alias": node.relation.identifier if node.relation else node.name,
        "schema": node.relation.schema if node.relation else None,
        "relation_name": str(node.relation) if node.relation and node.relation.kind != "cte" else None,
        "config": node.config,
        "tags": node.config.get("tags", []),
        "description": node.description,
        "columns": node.columns,
        "raw_code": node.raw_code,
        "language": "sql",
        "refs": [{"name": r, "package": None, "version": None} for r in node.refs],
        "sources": [list(s) for s in node.sources],
        "depends_on": {"nodes": node.depends_on, "macros": []},
    }
    if node.test_metadata is not None:
        data["test_metadata"] = {"name": node.test_metadata.name, "kwargs": node.test_metadata.kwargs, "namespace": None}
        data["attached_node"] = node.test_metadata.attached_node
        data["column_name"] = node.test_metadata.kwargs.get("column_name")
    return data


def _source(source: Source) -> dict[str, Any]:
    return {
        "unique_id": source.unique_id, "resource_type": "source", "source_name": source.source_name,
        "name": source.name, "identifier": source.relation.identifier, "schema": source.relation.schema,
        "relation_name": str(source.relation), "fqn": source.fqn, "original_file_path": source.original_file_path,
        "description": source.description, "columns": source.columns,
    }


def write_manifest(manifest: Manifest, graph: Graph) -> None:
    library = manifest.invocation.library
    macros = {
        f"macro.{file.package}.{name}": {"name": name, "package_name": file.package, "path": str(file.path)}
        for name, file in library.origin.items()
    }
    _write(manifest.invocation.project.target_dir / "manifest.json", {
        "metadata": _metadata(manifest, MANIFEST_SCHEMA),
        "nodes": {uid: _node(n, manifest) for uid, n in sorted(manifest.nodes.items())},
        "sources": {uid: _source(s) for uid, s in sorted(manifest.sources.items())},
        "macros": macros,
        "disabled": {uid: [_node(n, manifest)] for uid, n in sorted(manifest.disabled.items())},
        "parent_map": {uid: sorted(ps) for uid, ps in sorted(graph.parents.items())},
        "child_map": {uid: sorted(cs) for uid, cs in sorted(graph.children.items())},
    })


def write_run_results(manifest: Manifest, results: list[NodeResult], elapsed: float, args: dict[str, Any]) -> None:
    _write(manifest.invocation.project.target_dir / "run_results.json", {
        "metadata": _metadata(manifest, RUN_RESULTS_SCHEMA),
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
        "args": args,
    })
