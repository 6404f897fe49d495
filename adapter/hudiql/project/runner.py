"""Run nodes in DAG order on ``threads`` worker threads; what depends on a failure is skipped.

A node starts when every selected node it depends on has finished. A failed node (an error, or
a failing test in ``build``) makes each node that depends on it ``skipped``, transitively.
Progress lines are numbered in the order nodes start (or are skipped), as dbt numbers them.

Example:
    >>> results = Runner(executor, console, threads=2).run(order, waits_for)
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

from hudiql.project.console import Console
from hudiql.project.executor import NodeResult
from hudiql.project.nodes import Node


def start_message(node: Node) -> str:
    if node.resource_type == "test":
        return f"START test {node.name}"
    if node.resource_type == "seed":
        return f"START seed file {node.relation}"
    return f"START sql {node.materialized} model {node.relation}"


def result_message(result: NodeResult) -> tuple[str, str]:
    """The progress line's text and bracketed status for a finished node, in dbt's words."""
    node, status = result.node, result.status
    if status == "skipped":
        return (f"SKIP test {node.name}" if node.resource_type == "test" else f"SKIP relation {node.relation}"), "SKIP"
    if node.resource_type == "test":
        if status == "error":
            return f"ERROR {node.name}", "ERROR"
        if status == "pass":
            return f"PASS {node.name}", "PASS"
        return f"{status.upper()} {result.failures} {node.name}", f"{status.upper()} {result.failures}"
    if node.resource_type == "seed":
        if status == "error":
            return f"ERROR loading seed file {node.relation}", "ERROR"
        return f"OK loaded seed file {node.relation}", result.message
    if status == "error":
        return f"ERROR creating sql {node.materialized} model {node.relation}", "ERROR"
    return f"OK created sql {node.materialized} model {node.relation}", "OK"


class Runner:
    def __init__(self, execute: Callable[[Node], NodeResult], console: Console, threads: int) -> None:
        self.execute = execute
        self.console = console
        self.threads = threads

    def run(self, order: list[Node], waits_for: dict[str, set[str]]) -> list[NodeResult]:
        """Run ``order`` (parents first); ``waits_for[uid]`` are the selected nodes ``uid`` needs."""
        total = len(order)
        pending = list(order)
        results: dict[str, NodeResult] = {}
        failed: set[str] = set()
        running: dict[Future[NodeResult], tuple[Node, int]] = {}
        index = 0
        with ThreadPoolExecutor(max_workers=self.threads, thread_name_prefix="Thread") as pool:
            while pending or running:
                scheduled = True
                while scheduled and len(running) < self.threads:
                    scheduled = False
                    for node in pending:
                        needs = waits_for.get(node.unique_id, set())
                        if not needs <= results.keys():
                            continue
                        pending.remove(node)
                        index += 1
                        scheduled = True
                        if needs & failed:
                            failed.add(node.unique_id)
                            results[node.unique_id] = self._report(NodeResult(node, "skipped", "SKIP"), index, total)
                        else:
                            self.console.progress(index, total, start_message(node), "RUN")
                            running[pool.submit(self.execute, node)] = (node, index)
                        break
                if not running:
                    if pending:  # waits_for names a node outside ``order``: a bug in the caller
                        raise RuntimeError(f"cannot schedule {[n.unique_id for n in pending]}")
                    continue
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    node, number = running.pop(future)
                    result = self._report(future.result(), number, total)
                    results[node.unique_id] = result
                    if result.failed:
                        failed.add(node.unique_id)
        return [results[n.unique_id] for n in order]

    def _report(self, result: NodeResult, index: int, total: int) -> NodeResult:
        message, status = result_message(result)
        seconds = None if result.status == "skipped" else result.execution_time
        self.console.progress(index, total, message, status, seconds)
        return result
