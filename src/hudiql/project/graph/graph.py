"""The DAG: ``ref`` and ``source`` edges between nodes, checked, and walked in order.

Example:
    >>> from hudiql.project.artifacts.nodes import Node
    >>> def model(name, *refs):
    ...     return Node(f"model.shop.{name}", "model", name, f"models/{name}.sql", ["shop", name], "", refs=list(refs))
    >>> manifest = Manifest({n.unique_id: n for n in [model("fct_orders", "stg_orders"), model("stg_orders")]})
    >>> graph = Graph.build(manifest)       # an unknown ref or a cycle raises CompilationError
    >>> graph.order(graph.nodes)
    ['model.shop.stg_orders', 'model.shop.fct_orders']
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from hudiql.config.registry import closest
from hudiql.project.artifacts.manifest import Manifest
from hudiql.project.artifacts.nodes import REFERABLE
from hudiql.project.errors import CompilationError


@dataclass
class Graph:
    nodes: set[str]
    parents: dict[str, set[str]]  # node -> the nodes and sources it depends on
    children: dict[str, set[str]]

    @classmethod
    def build(cls, manifest: Manifest) -> Graph:
        names = {n.name: n.unique_id for n in manifest.nodes.values() if n.resource_type in REFERABLE}
        disabled = {n.name for n in manifest.disabled.values()}
        sources = {(s.source_name, s.name): s.unique_id for s in manifest.sources.values()}
        parents: dict[str, set[str]] = {uid: set() for uid in [*manifest.nodes, *manifest.sources]}
        for node in manifest.nodes.values():
            for ref in node.refs:
                if ref not in names:
                    reason = "is disabled" if ref in disabled else "is not a model, seed or snapshot of this project"
                    guess = closest(ref, names) if ref not in disabled else None
                    raise CompilationError(
                        f"Compilation Error in {node.label}: ref('{ref}') {reason}" + (f"; did you mean '{guess}'?" if guess else "")
                    )
                parents[node.unique_id].add(names[ref])
            for source in node.sources:
                if source not in sources:
                    known = ", ".join(f"{a}.{b}" for a, b in sorted(sources)) or "none declared"
                    raise CompilationError(
                        f"Compilation Error in {node.label}: source('{source[0]}', '{source[1]}') is not declared in a .yml file (sources: {known})"
                    )
                parents[node.unique_id].add(sources[source])
            node.depends_on = sorted(parents[node.unique_id])
        children: dict[str, set[str]] = {uid: set() for uid in parents}
        for child, ps in parents.items():
            for parent in ps:
                children[parent].add(child)
        graph = cls(set(manifest.nodes), parents, children)
        graph._check_cycles(manifest)
        return graph

    def _check_cycles(self, manifest: Manifest) -> None:
        done: set[str] = set()
        path: list[str] = []

        def visit(uid: str) -> None:
            if uid in done:
                return
            if uid in path:
                cycle = path[path.index(uid):] + [uid]
                names = " -> ".join(manifest.nodes[u].name for u in cycle)
                raise CompilationError(f"Compilation Error: found a cycle: {names} (each node ref()s the next)")
            path.append(uid)
            for parent in sorted(self.parents[uid]):
                visit(parent)
            path.pop()
            done.add(uid)

        for uid in sorted(self.parents):
            visit(uid)

    def ancestors(self, uid: str, depth: int | None = None) -> set[str]:
        return self._walk(uid, self.parents, depth)

    def descendants(self, uid: str, depth: int | None = None) -> set[str]:
        return self._walk(uid, self.children, depth)

    @staticmethod
    def _walk(uid: str, edges: dict[str, set[str]], depth: int | None) -> set[str]:
        seen: set[str] = set()
        frontier, level = {uid}, 0
        while frontier and (depth is None or level < depth):
            frontier = {n for f in frontier for n in edges.get(f, ())} - seen
            seen |= frontier
            level += 1
        return seen

    def order(self, selected: Iterable[str]) -> list[str]:
        """``selected`` nodes parents first; ties by unique id, so runs are repeatable."""
        chosen = set(selected)
        depth: dict[str, int] = {}

        def level(uid: str) -> int:
            if uid not in depth:
                depth[uid] = 1 + max((level(p) for p in self.parents.get(uid, ())), default=-1)
            return depth[uid]

        return sorted(chosen, key=lambda u: (level(u), u))
