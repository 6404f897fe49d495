"""``hudiql docs generate [--no-compile] [--empty-catalog]``, as dbt's: compile the selected models
and tests (unless ``--no-compile``), then write ``target/catalog.json`` (``artifacts.catalog``):
each table and view of the project's models, seeds and sources (with ``--select``, of those
selected) that the warehouse holds, with its columns. dbt's documentation site (dbt-docs'
``index.html``) is not hudiql's to ship: ``dbt docs serve`` with the hudiql adapter serves it."""

from __future__ import annotations

from typing import Any

from hudiql.errors import HudiqlError
from hudiql.project.artifacts.catalog import CATALOG_SCHEMA, catalog_entry
from hudiql.project.artifacts.nodes import Node, Relation
from hudiql.project.artifacts.writer import write_json
from hudiql.project.cli.flags import EXIT_FAILED, EXIT_OK
from hudiql.project.task.base import Loaded
from hudiql.project.task.compile import CompileTask

#: The nodes that have a relation in the warehouse (dbt's relational, non-ephemeral nodes).
_DESCRIBED = {"model", "seed", "snapshot"}


class DocsGenerateTask(CompileTask):
    _selected: set[str] | None = None

    def run_selected(self, loaded: Loaded, chosen: set[str]) -> int:
        # As dbt: the catalog describes the selected nodes and sources, or every one without a selection.
        self._selected = chosen if (self.flags.select or self.flags.exclude) else None
        return super().run_selected(loaded, chosen)

    def execute(self, loaded: Loaded, nodes: list[Node]) -> int:
        if self.flags.compile and self.compile_nodes(loaded, nodes) is None:
            self.console.line("compile failed, cannot generate docs")
            return EXIT_FAILED
        catalog: dict[str, Any] = {"nodes": {}, "sources": {}}
        errors: list[str] = []
        if not self.flags.empty_catalog:
            self.console.line("Building catalog")
            for unique_id, relation, section in self._described(loaded):
                try:
                    entry = self._entry(loaded, unique_id, relation)
                except HudiqlError as e:
                    errors.append(f"{unique_id}: {e}")
                    continue
                if entry is not None:
                    catalog[section][unique_id] = entry
        config = loaded.invocation
        write_json(config, "catalog.json", CATALOG_SCHEMA, {**catalog, "errors": errors or None})
        for error in errors:
            self.console.line(f"[WARNING]: {error}")
        self.console.line(f"Catalog written to {config.project.target_dir.resolve() / 'catalog.json'}")
        return EXIT_FAILED if errors else EXIT_OK

    def _described(self, loaded: Loaded) -> list[tuple[str, Relation, str]]:
        manifest = loaded.manifest
        described = [(n.unique_id, n.relation, "nodes") for n in manifest.nodes.values()
                     if n.resource_type in _DESCRIBED and n.relation is not None and not n.is_ephemeral]
        described += [(s.unique_id, s.relation, "sources") for s in manifest.sources.values()]
        return [d for d in described if self._selected is None or d[0] in self._selected]

    @staticmethod
    def _entry(loaded: Loaded, unique_id: str, relation: Relation) -> dict[str, Any] | None:
        """The catalog entry of ``relation``; None when the warehouse does not hold it."""
        adapter = loaded.adapter
        with adapter.node_scope():
            found = adapter.get_relation(None, relation.schema, relation.identifier)
            if found is None:
                return None
            columns = (adapter.get_columns(found) if found.type == "table"
                       else adapter.get_query_columns(f"SELECT * FROM {found}"))
        return catalog_entry(unique_id, found.schema, found.identifier, found.type, columns)
