"""The manifest: every enabled and disabled node and source of a project, and ``target/manifest.json``
as dbt's manifest artifact (schema v12; the parser builds the manifest, the graph links it).

What dbt's schema asks for and hudiql has no notion of gets the schema's empty form: no ``database``
level in relation names (``null``), no docs blocks, exposures, metrics, groups, selectors, semantic
models or saved queries (``{}``). Unit tests are nodes of the manifest here and ``unit_tests`` in the file,
as in dbt's. Checksums are dbt's: sha256 of the file's stripped text,
the path of a seed over 1 MiB, ``none`` for generic tests, which have no file of their own.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jinja2 import nodes as jnodes

from hudiql.project.artifacts.nodes import REFERABLE, Fixture, Node, Source
from hudiql.project.artifacts.writer import timestamp, write_json
from hudiql.project.config.model_config import HOOKS
from hudiql.project.config.runtime import RuntimeConfig
from hudiql.project.context.macros import MacroLibrary

MANIFEST_SCHEMA = "https://schemas.getdbt.com/dbt/manifest/v12.json"
BIG_SEED_BYTES = 1024 * 1024  # dbt's limit above which a seed is not read for its checksum
# The kinds of resource dbt's manifest has and hudiql does not: always empty.
ABSENT = ("docs", "exposures", "metrics", "groups", "selectors", "group_map", "saved_queries", "semantic_models",
          "functions")


@dataclass
class Manifest:
    nodes: dict[str, Node] = field(default_factory=dict)
    sources: dict[str, Source] = field(default_factory=dict)
    disabled: dict[str, Node] = field(default_factory=dict)
    macros: dict[str, dict[str, str]] = field(default_factory=dict)  # unique id -> name, package_name, path, macro_sql
    #: What dbt warns of while parsing (properties of a node that is not there), one line each.
    parse_warnings: list[str] = field(default_factory=list)

    def named(self, name: str) -> Node | None:
        """The enabled model, seed or snapshot called ``name``."""
        return next((n for n in self.nodes.values() if n.name == name and n.resource_type in REFERABLE), None)


def write_manifest(config: RuntimeConfig, manifest: Manifest, parent_map: dict[str, set[str]],
                   child_map: dict[str, set[str]], library: MacroLibrary) -> None:
    """``target/manifest.json``; ``parent_map`` / ``child_map`` are the DAG's edges, ``library`` the
    macros the nodes call."""
    writer = _ManifestWriter(config, manifest, library)
    write_json(config, "manifest.json", MANIFEST_SCHEMA, {
        "nodes": {uid: writer.node(n) for uid, n in sorted(manifest.nodes.items()) if n.unit_test is None},
        "unit_tests": {uid: writer.unit_test(n) for uid, n in sorted(manifest.nodes.items()) if n.unit_test is not None},
        "sources": {uid: writer.source(s) for uid, s in sorted(manifest.sources.items())},
        "macros": {uid: writer.macro(uid, m) for uid, m in sorted(manifest.macros.items())},
        "disabled": {uid: [writer.unit_test(n) if n.unit_test else writer.node(n)] for uid, n in sorted(manifest.disabled.items())},
        "parent_map": {uid: sorted(ps) for uid, ps in sorted(parent_map.items())},
        "child_map": {uid: sorted(cs) for uid, cs in sorted(child_map.items())},
        **{key: {} for key in ABSENT},
    }, {
        "project_name": config.project.name,
        "adapter_type": "hudiql",
        "send_anonymous_usage_stats": False,  # hudiql sends none
        "run_started_at": timestamp(config.run_started_at),
    })


def checksum(text: str | None) -> dict[str, str]:
    """dbt's ``FileHash`` of a file's text (``none`` when there is no file).

    >>> checksum(" select 1\\n")["checksum"] == hashlib.sha256(b"select 1").hexdigest(), checksum(None)
    (True, {'name': 'none', 'checksum': ''})
    """
    if text is None:
        return {"name": "none", "checksum": ""}
    return {"name": "sha256", "checksum": hashlib.sha256(text.strip().encode("utf-8")).hexdigest()}


class _ManifestWriter:
    """The JSON of each node, source and macro, in the shape of dbt's resource of the same type."""

    def __init__(self, config: RuntimeConfig, manifest: Manifest, library: MacroLibrary) -> None:
        self.config = config
        self.library = library
        self.package = config.project.name
        self.macro_ids = {m["name"]: uid for uid, m in manifest.macros.items()}

    def node(self, node: Node) -> dict[str, Any]:
        relation = node.relation if node.relation and node.relation.kind != "cte" else None
        tags = node.config.get("tags") or []
        macros = self._called_macros(node.raw_code)
        data: dict[str, Any] = {
            "database": None,
            # tests and ephemeral models have no relation: they run in the target's database
            "schema": relation.schema if relation and relation.schema else self.config.target.database,
            "name": node.name,
            "resource_type": node.resource_type,
            "package_name": self.package,
            "path": self._path(node),
            "original_file_path": node.original_file_path,
            "unique_id": node.unique_id,
            "fqn": node.fqn,
            "alias": relation.identifier if relation else node.config.get("alias") or node.name,
            "checksum": self._checksum(node),
            "config": _config(node.config),
            "tags": tags if isinstance(tags, list) else [tags],
            "meta": node.config.get("meta") or {},
            "description": node.description,
            "columns": node.columns,
            "relation_name": str(relation) if relation else None,
            "raw_code": node.raw_code,
        }
        if node.resource_type == "seed":  # a seed reads no other node
            data["depends_on"] = {"macros": macros}
            return data
        data.update({
            "language": "sql",
            "refs": [{"name": r, "package": None, "version": None} for r in node.refs],
            "sources": [list(s) for s in node.sources],
            "depends_on": {"nodes": node.depends_on, "macros": macros},
        })
        if node.test_metadata is not None:
            data["test_metadata"] = {"name": node.test_metadata.name, "kwargs": node.test_metadata.kwargs, "namespace": None}
            data["attached_node"] = node.test_metadata.attached_node
            data["column_name"] = node.test_metadata.kwargs.get("column_name")
        return data

    def unit_test(self, node: Node) -> dict[str, Any]:
        """dbt's ``UnitTestDefinition``."""
        test = node.unit_test
        assert test is not None

        def fixture(f: Fixture) -> dict[str, Any]:
            return {**({"input": f.input} if f.input is not None else {}), "rows": f.rows, "format": f.format,
                    "fixture": f.fixture}

        given, expect = [fixture(f) for f in test.given], fixture(test.expect)
        # What ``state:modified`` compares: everything the test runs with (not its description).
        content = json.dumps([test.model, given, expect, test.overrides], sort_keys=True, default=str)
        return {
            "model": test.model, "given": given, "expect": expect,
            "checksum": hashlib.sha256(content.encode("utf-8")).hexdigest(),
            "name": node.name, "resource_type": "unit_test", "package_name": self.package,
            "path": Path(node.original_file_path).name, "original_file_path": node.original_file_path,
            "unique_id": node.unique_id, "fqn": node.fqn, "description": node.description,
            "overrides": test.overrides or None, "depends_on": {"macros": [], "nodes": node.depends_on},
            "config": {k: v for k, v in node.config.items() if k != "materialized"},
            "schema": self.config.target.database,
        }

    def source(self, source: Source) -> dict[str, Any]:
        return {
            "database": None, "schema": source.relation.schema, "name": source.name, "resource_type": "source",
            "package_name": self.package, "path": source.original_file_path,
            "original_file_path": source.original_file_path, "unique_id": source.unique_id, "fqn": source.fqn,
            "source_name": source.source_name, "source_description": source.source_description,
            "loader": "",  # who loads the table: a dbt property hudiql does not read
            "identifier": source.relation.identifier, "relation_name": str(source.relation),
            "description": source.description, "columns": source.columns,
            "loaded_at_field": source.loaded_at_field, "loaded_at_query": source.loaded_at_query,
            "freshness": source.freshness,
        }

    def macro(self, unique_id: str, macro: dict[str, str]) -> dict[str, Any]:
        return {
            "name": macro["name"], "resource_type": "macro", "package_name": macro["package_name"],
            "path": macro["path"], "original_file_path": macro["path"], "unique_id": unique_id,
            "macro_sql": macro["macro_sql"],
        }

    def _path(self, node: Node) -> str:
        """dbt's ``path``: below the node's resource folder; a generic test's is its compiled file."""
        if node.test_metadata is not None:
            return f"{node.name}.sql"
        if node.resource_type == "snapshot" and node.original_file_path.endswith(".sql"):
            return "/".join([*node.fqn[1:-2], Path(node.original_file_path).name])  # its fqn names the file too
        return "/".join([*node.fqn[1:-1], Path(node.original_file_path).name])

    def _checksum(self, node: Node) -> dict[str, str]:
        if node.test_metadata is not None:
            return checksum(None)
        if node.resource_type != "seed":
            return checksum(node.raw_code)
        # A seed's code is its CSV, which the node does not hold; as dbt, a big one is named by its path.
        csv = self.config.project.root / node.original_file_path
        if csv.stat().st_size > BIG_SEED_BYTES:
            return {"name": "path", "checksum": node.original_file_path}
        return checksum(csv.read_text(encoding="utf-8"))

    def _called_macros(self, code: str) -> list[str]:
        """The project's and hudiql's macros that ``code`` calls by name, as dbt lists them."""
        if not code:
            return []
        called = {c.node.name for c in self.library.env.parse(code).find_all(jnodes.Call) if isinstance(c.node, jnodes.Name)}
        return sorted(self.macro_ids[name] for name in called if name in self.macro_ids)


def _config(config: dict[str, Any]) -> dict[str, Any]:
    """A node's config as dbt writes it: hooks as ``pre-hook`` / ``post-hook`` lists of Hook objects."""
    out = {k: v for k, v in config.items() if k not in HOOKS}
    for key in HOOKS:
        if key in config:
            out[key.replace("_", "-")] = [{"sql": sql, "transaction": True, "index": i} for i, sql in enumerate(config[key])]
    return out
