"""``hudiql ls``: the selected nodes and sources, one per line (``--output selector | name | path | json``,
``--resource-type``); nothing else is printed, so the output can be piped."""

from __future__ import annotations

import json

from hudiql.project.artifacts.nodes import Node, Source
from hudiql.project.cli.flags import EXIT_OK
from hudiql.project.task.base import ConfiguredTask, Loaded

RESOURCE_TYPES = {"model", "seed", "snapshot", "test", "unit_test", "source"}


class ListTask(ConfiguredTask):
    announce = False

    def run_selected(self, loaded: Loaded, chosen: set[str]) -> int:
        manifest = loaded.manifest
        types = set(self.flags.resource_types) or RESOURCE_TYPES
        items = [manifest.nodes.get(u) or manifest.sources[u] for u in sorted(chosen)]
        items = [i for i in items if _resource_type(i) in types]
        for item in sorted(items, key=lambda i: i.fqn):
            self.console.out.write(self._text(item) + "\n")
        return EXIT_OK

    def _text(self, item: Node | Source) -> str:
        output = self.flags.output
        if output == "name":
            return item.name
        if output == "path":
            return item.original_file_path
        if output == "json":
            return json.dumps({"name": item.name, "unique_id": item.unique_id, "resource_type": _resource_type(item),
                               "original_file_path": item.original_file_path,
                               "config": getattr(item, "config", {})}, default=str)
        if isinstance(item, Node) and item.resource_type == "unit_test":
            return f"unit_test:{item.fqn[0]}.{item.name}"  # dbt's selector of a unit test
        return ("source:" if not isinstance(item, Node) else "") + ".".join(item.fqn)


def _resource_type(item: Node | Source) -> str:
    return item.resource_type if isinstance(item, Node) else "source"
