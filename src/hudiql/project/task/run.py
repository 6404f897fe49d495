"""``hudiql run``: build the selected models; ``ModelRunner`` runs a model's materialization macro
(``materialization_<materialized>``) with ``sql`` = its compiled SELECT, between its pre- and
post-hooks."""

from __future__ import annotations

from typing import Any

from hudiql.project.adapter.impl import NodeScope
from hudiql.project.artifacts.nodes import Node
from hudiql.project.artifacts.results import NodeResult
from hudiql.project.task.base import BaseRunner
from hudiql.project.task.runnable import GraphRunnableTask


class ModelRunner(BaseRunner):
    def run_node(self, node: Node, result: NodeResult, scope: NodeScope) -> None:
        result.compiled_code = self.compiler.compile(node)
        self.materialize(node, {"sql": result.compiled_code})
        result.message = "OK"

    def materialize(self, node: Node, extra: dict[str, Any]) -> None:
        """Run the node's materialization macro, its ``pre_hook`` statements before and its
        ``post_hook`` ones after (rendered now, so they name ``this``); views are recorded in the
        warehouse, so a later run that selects only a downstream model reads them, as in dbt."""
        assert node.relation is not None
        if node.relation.schema:
            self.adapter.ensure_database(node.relation.schema)
        ctx = self.compiler.context(node, extra=extra)
        library = self.compiler.invocation.library
        for hook in node.config.get("pre_hook") or []:
            self.adapter.run_query(library.render(hook, ctx, f"{node.label} pre_hook"))
        library.call(f"materialization_{node.materialized}", ctx, node.label)
        for hook in node.config.get("post_hook") or []:
            self.adapter.run_query(library.render(hook, ctx, f"{node.label} post_hook"))


class RunTask(GraphRunnableTask):
    RUNNERS = {"model": ModelRunner}
