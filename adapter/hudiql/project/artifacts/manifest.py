"""The manifest: every enabled and disabled node and source of a project, and ``target/manifest.json``
in the shape of dbt's manifest artifact (the parser builds it, the graph links it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hudiql.project.artifacts.nodes import Node, Source
from hudiql.project.artifacts.writer import write_json
from hudiql.project.config.runtime import RuntimeConfig

MANIFEST_SCHEMA = "https://schemas.getdbt.com/dbt/manifest/v12.json"


@dataclass
class Manifest:
    nodes: dict[str, Node] = field(default_factory=dict)
    sources: dict[str, Source] = field(default_factory=dict)
    disabled: dict[str, Node] = field(default_factory=dict)
    macros: dict[str, dict[str, str]] = field(default_factory=dict)  # unique id -> name, package_name, path

    def named(self, name: str) -> Node | None:
        """The enabled model or seed called ``name``."""
        return next((n for n in self.nodes.values() if n.name == name and n.resource_type in ("model", "seed")), None)


def write_manifest(config: RuntimeConfig, manifest: Manifest, parent_map: dict[str, set[str]],
                   child_map: dict[str, set[str]]) -> None:
    """``target/manifest.json``; ``parent_map`` / ``child_map`` are the DAG's edges."""
    package = config.project.name
    write_json(config, "manifest.json", MANIFEST_SCHEMA, {
        "nodes": {uid: _node(n, package) for uid, n in sorted(manifest.nodes.items())},
        "sources": {uid: _source(s) for uid, s in sorted(manifest.sources.items())},
        "macros": manifest.macros,
        "disabled": {uid: [_node(n, package)] for uid, n in sorted(manifest.disabled.items())},
        "parent_map": {uid: sorted(ps) for uid, ps in sorted(parent_map.items())},
        "child_map": {uid: sorted(cs) for uid, cs in sorted(child_map.items())},
    })


def _node(node: Node, package: str) -> dict[str, Any]:
    data: dict[str, Any] = {
        "unique_id": node.unique_id,
        "resource_type": node.resource_type,
        "package_name": package,
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
