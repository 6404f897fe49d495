"""``GraphRunnableTask``: the commands that run nodes (``run``, ``seed``, ``snapshot``, ``test``, ``build``).

The selected nodes of the command's resource types run in DAG order on ``threads`` worker threads
(the graph queue decides when each may start); what depends on a failure is skipped. Progress lines
are numbered in the order nodes start (or are skipped), as dbt numbers them; ``run_results.json``
is written at the end.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

from hudiql.project.artifacts.nodes import Node
from hudiql.project.artifacts.results import NodeResult, write_run_results
from hudiql.project.cli.flags import EXIT_FAILED, EXIT_OK
from hudiql.project.compilation import Compiler
from hudiql.project.config.project import Project
from hudiql.project.graph.queue import GraphQueue, waits_for
from hudiql.project.parser import sql_files
from hudiql.project.task.base import BaseRunner, ConfiguredTask, Loaded
from hudiql.project.task.printer import found_line, print_run_end, result_message, start_message


#: dbt's resources hudiql does not build: where a project keeps them, and the dbt command that takes them.
LEFT_OUT: dict[str, tuple[Callable[[Project], list[str]], str]] = {
    "analyses": (lambda project: project.analysis_paths, "dbt compile"),
}


class GraphRunnableTask(ConfiguredTask):
    #: The runner of each resource type the command runs.
    RUNNERS: dict[str, type[BaseRunner]] = {}
    #: ``build``: a node also waits for the tests of what it depends on (a failing test stops it).
    waits_for_tests = False
    #: What the dbt command of the same name takes and hudiql leaves out (a key of ``LEFT_OUT``):
    #: each file of it is named with a warning, rather than skipped unseen.
    leaves_out: str | None = None

    @property
    def resource_types(self) -> set[str]:
        return set(self.RUNNERS)

    def run_selected(self, loaded: Loaded, chosen: set[str]) -> int:
        if self.leaves_out:
            folders, dbt_command = LEFT_OUT[self.leaves_out]
            for path in sql_files(loaded.invocation.project, folders(loaded.invocation.project)):
                self.console.line(f"[WARNING]: {path} holds {self.leaves_out}, which hudiql leaves out; dbt-core with "
                                  f"the hudiql adapter takes them (pip install 'hudiql[dbt]', then {dbt_command})")
        self.console.line(found_line(loaded.manifest))
        manifest = loaded.manifest
        nodes = [manifest.nodes[u] for u in loaded.graph.order(chosen & set(manifest.nodes))
                 if manifest.nodes[u].resource_type in self.resource_types]
        return self.execute(loaded, nodes)

    def execute(self, loaded: Loaded, nodes: list[Node]) -> int:
        nodes = [n for n in nodes if not n.is_ephemeral]  # they run inside the models that ref them
        invocation = loaded.invocation
        started = time.monotonic()
        if not nodes:
            self.console.line("Nothing to do. Try checking your model configs and model specification args")
            write_run_results(invocation, [], 0.0, self.flags)
            return EXIT_OK
        threads = invocation.target.threads
        self.console.line("")
        self.console.line(f"Concurrency: {threads} threads (target='{invocation.target.name}')")
        self.console.line("")
        loaded.adapter.start()  # start Spark now, so the first node's time is its own
        compiler = Compiler(invocation, loaded.manifest, loaded.adapter)
        runners = {kind: runner(compiler, loaded.adapter) for kind, runner in self.RUNNERS.items()}
        queue = GraphQueue(nodes, waits_for(nodes, loaded.graph, self.waits_for_tests))
        results = self._run_queue(queue, nodes, lambda node: runners[node.resource_type].execute(node), threads)
        elapsed = time.monotonic() - started
        write_run_results(invocation, results, elapsed, self.flags)
        print_run_end(results, elapsed, self.console)
        return EXIT_FAILED if any(r.failed for r in results) else EXIT_OK

    def _run_queue(self, queue: GraphQueue, order: list[Node], execute: Callable[[Node], NodeResult],
                   threads: int) -> list[NodeResult]:
        total = len(order)
        results: dict[str, NodeResult] = {}
        running: dict[Future[NodeResult], int] = {}
        index = 0
        with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="Thread") as pool:
            while queue.has_pending() or running:
                while len(running) < threads and (taken := queue.take()) is not None:
                    node, skip = taken
                    index += 1
                    if skip:
                        results[node.unique_id] = self._report(NodeResult(node, "skipped", "SKIP"), index, total)
                        queue.mark_done(node.unique_id, failed=True)
                    else:
                        self.console.progress(index, total, start_message(node), "RUN")
                        running[pool.submit(execute, node)] = index
                if not running:
                    if queue.has_pending():  # a node waits for one outside ``order``: a bug in the caller
                        raise RuntimeError("the graph queue cannot schedule its pending nodes")
                    continue
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    result = self._report(future.result(), running.pop(future), total)
                    results[result.node.unique_id] = result
                    queue.mark_done(result.node.unique_id, result.failed)
        return [results[n.unique_id] for n in order]

    def _report(self, result: NodeResult, index: int, total: int) -> NodeResult:
        message, status = result_message(result)
        seconds = None if result.status == "skipped" else result.execution_time
        self.console.progress(index, total, message, status, seconds)
        return result
