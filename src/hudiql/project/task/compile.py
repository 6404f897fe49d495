"""``hudiql compile``: write the compiled SQL of the selected models, snapshots and tests to ``target/compiled``
(a model may ``run_query()`` while compiling, so it gets a node scope); one model's SQL is printed."""

from __future__ import annotations

from hudiql.errors import HudiqlError
from hudiql.project.artifacts.nodes import Node
from hudiql.project.artifacts.results import NodeResult, write_run_results
from hudiql.project.cli.flags import EXIT_FAILED, EXIT_OK
from hudiql.project.compilation import Compiler
from hudiql.project.task.base import Loaded
from hudiql.project.task.runnable import GraphRunnableTask


class CompileTask(GraphRunnableTask):
    leaves_out = "analyses"

    @property
    def resource_types(self) -> set[str]:
        return {"model", "snapshot", "test"}

    def execute(self, loaded: Loaded, nodes: list[Node]) -> int:
        results = self.compile_nodes(loaded, nodes)
        if results is None:
            return EXIT_FAILED
        models = [r for r in results if r.node.resource_type == "model"]
        if len(models) == 1:
            self.console.line(f"Compiled node '{models[0].node.name}' is:")
            self.console.out.write((models[0].compiled_code or "") + "\n")
        return EXIT_OK

    def compile_nodes(self, loaded: Loaded, nodes: list[Node]) -> list[NodeResult] | None:
        """Compile ``nodes`` and write ``run_results.json``; None (the error said) when one fails."""
        compiler = Compiler(loaded.invocation, loaded.manifest, loaded.adapter)
        results = []
        for node in nodes:
            try:
                with loaded.adapter.node_scope():
                    results.append(NodeResult(node, "success", "OK", compiled_code=compiler.compile(node)))
            except HudiqlError as e:
                self.console.line("Encountered an error:")
                self.console.line(str(e))
                return None
        write_run_results(loaded.invocation, results, 0.0, self.flags)
        return results
