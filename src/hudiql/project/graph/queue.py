"""The order nodes run in: each selected node waits for the selected nodes upstream of it.

``waits_for`` decides what a node waits for (its nearest selected ancestors, through unselected
ones, and in ``build`` the tests of those: a failing test stops what is downstream). A unit test
waits for what its model waits for, and in ``build`` the model waits for its unit tests, as dbt
runs them: before the model, which a failing one skips. A
``GraphQueue`` hands out the nodes whose waits are over; a node that waits for a failure is
handed out to be skipped, and counts as failed for what waits for it.

Example:
    >>> from hudiql.project.artifacts.nodes import Node
    >>> a, b = (Node(f"model.p.{n}", "model", n, f"models/{n}.sql", ["p", n], "") for n in "ab")
    >>> queue = GraphQueue([a, b], {"model.p.b": {"model.p.a"}})
    >>> queue.take()[0].name, queue.take()
    ('a', None)
    >>> queue.mark_done("model.p.a", failed=True)
    >>> node, skip = queue.take()
    >>> node.name, skip
    ('b', True)
"""

from __future__ import annotations

from hudiql.project.artifacts.nodes import Node
from hudiql.project.graph.graph import Graph


def waits_for(nodes: list[Node], graph: Graph, with_tests: bool) -> dict[str, set[str]]:
    """For each node, the selected nodes it must wait for."""
    selected = {n.unique_id for n in nodes}
    out: dict[str, set[str]] = {}
    for node in nodes:
        # (a unit test's one parent is its model: it needs what the model reads)
        upstream = graph.parents.get(node.depends_on[0], set()) if node.resource_type == "unit_test" else None
        needs, frontier = set(), set(graph.parents.get(node.unique_id, ()) if upstream is None else upstream)
        seen: set[str] = set()
        while frontier:
            uid = frontier.pop()
            seen.add(uid)
            if uid in selected:
                needs.add(uid)
            else:
                frontier |= graph.parents.get(uid, set()) - seen
        out[node.unique_id] = needs
    if with_tests:
        # A model waits for its unit tests, which run one after the other: after a failing one, the
        # rest are skipped with the model (as dbt's build runs them).
        before: dict[str, str] = {}
        for node in nodes:
            model = node.depends_on[0] if node.resource_type == "unit_test" else None
            if model in out:
                out[model].add(node.unique_id)
                if model in before:
                    out[node.unique_id].add(before[model])
                before[model] = node.unique_id
        tests = [n for n in nodes if n.resource_type == "test"]
        for node in nodes:
            if node.resource_type == "test":
                continue
            below = graph.descendants(node.unique_id) | {node.unique_id}
            for test in tests:
                if set(test.depends_on) & out[node.unique_id] and not set(test.depends_on) & below:
                    out[node.unique_id].add(test.unique_id)
    return out


class GraphQueue:
    """``order`` (parents first) handed out as the nodes each waits for finish."""

    def __init__(self, order: list[Node], waits: dict[str, set[str]]) -> None:
        self._pending = list(order)
        self._waits = waits
        self._finished: set[str] = set()
        self._failed: set[str] = set()

    def has_pending(self) -> bool:
        return bool(self._pending)

    def take(self) -> tuple[Node, bool] | None:
        """The first node whose waits are over, and whether to skip it (it waits for a failure);
        ``None`` while every pending node still waits."""
        for node in self._pending:
            needs = self._waits.get(node.unique_id, set())
            if needs <= self._finished:
                self._pending.remove(node)
                return node, bool(needs & self._failed)
        return None

    def mark_done(self, unique_id: str, failed: bool) -> None:
        self._finished.add(unique_id)
        if failed:
            self._failed.add(unique_id)
