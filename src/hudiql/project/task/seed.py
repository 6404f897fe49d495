"""``hudiql seed``: load the CSV seeds into Hudi tables (``materialization_seed``)."""

from __future__ import annotations

from hudiql.project.adapter.impl import NodeScope
from hudiql.project.artifacts.nodes import Node
from hudiql.project.artifacts.results import NodeResult
from hudiql.project.task.run import ModelRunner
from hudiql.project.task.runnable import GraphRunnableTask


class SeedRunner(ModelRunner):
    def run_node(self, node: Node, result: NodeResult, scope: NodeScope) -> None:
        self.materialize(node, {})
        result.message = f"INSERT {scope.response.get('rows_affected', 0)}"


class SeedTask(GraphRunnableTask):
    RUNNERS = {"seed": SeedRunner}
