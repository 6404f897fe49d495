"""``--select`` / ``--exclude``: dbt's node selection syntax.

A selector is words separated by spaces (union); a word is atoms separated by commas
(intersection). An atom is ``[@][N+]criterion[+N]``:

- ``name`` (shell-style wildcards allowed) or a dotted path of folders ``staging`` / ``shop.staging``;
- ``path:models/staging``, ``tag:nightly``, ``config.materialized:incremental``,
  ``resource_type:seed``, ``source:raw`` / ``source:raw.orders``, ``test_type:generic | singular |
  data | unit``, ``test_name:unique``, ``unit_test:shop.test_x`` (as ``ls`` names unit tests);
- with ``--state DIR`` (an earlier run's target folder, ``graph.state``): ``state:new``,
  ``state:modified`` (``.body``, ``.configs``), ``state:old``, ``state:unmodified``, and
  ``result:error`` (any status of its run results);
- ``+x`` adds x's ancestors, ``x+`` its descendants (``2+x``: two levels); ``@x`` adds x's
  descendants and all their ancestors.

Tests come along with the nodes they test ("eager": any tested node selected), unless excluded.

Example:
    >>> from hudiql.project.artifacts.nodes import Node
    >>> def model(name, *refs, **config):
    ...     return Node(f"model.shop.{name}", "model", name, f"models/{name}.sql", ["shop", name], "", config, list(refs))
    >>> nodes = [model("fct", "stg", tags=["daily"]), model("stg", "raw"), model("raw", tags=["daily"])]
    >>> manifest = Manifest({n.unique_id: n for n in nodes})
    >>> sorted(select(manifest, Graph.build(manifest), ["+stg"], ["raw"]).nodes)
    ['model.shop.stg']
    >>> sorted(select(manifest, Graph.build(manifest), ["tag:daily"], []).nodes)
    ['model.shop.fct', 'model.shop.raw']
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from dataclasses import dataclass

from hudiql.config.registry import closest
from hudiql.project.artifacts.manifest import Manifest
from hudiql.project.artifacts.nodes import Node, Source
from hudiql.project.errors import ProjectError
from hudiql.project.graph.graph import Graph
from hudiql.project.graph.state import PreviousState

METHODS = ("tag", "path", "config", "resource_type", "source", "fqn", "test_type", "test_name", "unit_test", "state",
           "result")
TEST_TYPES = ("generic", "singular", "data", "unit", "schema")  # (schema: generic, dbt's old word)
_ATOM = re.compile(r"^(?P<at>@)?(?:(?P<up>\d*)\+)?(?P<criterion>[^+]+?)(?:\+(?P<down>\d*))?$")


@dataclass
class Selection:
    nodes: set[str]
    unmatched: list[str]  # criteria that matched nothing, for a warning


@dataclass(frozen=True)
class Comparison:
    """What ``state:`` and ``result:`` compare: the earlier state, and this invocation's manifest entries."""

    previous: PreviousState
    current: dict[str, dict]


def select(manifest: Manifest, graph: Graph, include: Iterable[str] | None, exclude: Iterable[str] | None,
           state: Comparison | None = None) -> Selection:
    """Unique ids of the selected nodes and sources (callers keep the resource types they run)."""
    unmatched: list[str] = []
    everything = set(manifest.nodes) | set(manifest.sources)
    include = _words(include)
    chosen = _union(manifest, graph, include, unmatched, state) if include else everything
    dropped = _union(manifest, graph, _words(exclude), unmatched, state)
    chosen -= dropped
    for uid, node in manifest.nodes.items():  # eager indirect selection of tests
        if node.resource_type in ("test", "unit_test") and uid not in dropped and set(node.depends_on) & chosen:
            chosen.add(uid)
    return Selection(chosen, unmatched)


def _words(selectors: Iterable[str] | None) -> list[str]:
    return [w for s in (selectors or []) for w in s.split()]


def _union(manifest: Manifest, graph: Graph, words: list[str], unmatched: list[str], state: Comparison | None) -> set[str]:
    out: set[str] = set()
    for word in words:
        parts = [_atom(manifest, graph, atom, unmatched, state) for atom in word.split(",") if atom]
        out |= set.intersection(*parts) if parts else set()
    return out


def _atom(manifest: Manifest, graph: Graph, atom: str, unmatched: list[str], state: Comparison | None) -> set[str]:
    m = _ATOM.match(atom)
    if not m:
        raise ProjectError(f"'{atom}' is not a valid selector; e.g. name, +name, name+, tag:x, path:models/x, config.materialized:view")
    matched = _criterion(manifest, m["criterion"], state)
    if not matched:
        unmatched.append(atom)
    out = set(matched)
    for uid in matched:
        if m["at"]:
            below = graph.descendants(uid)
            out |= below | {a for d in below | {uid} for a in graph.ancestors(d)}
            continue
        if m["up"] is not None:
            out |= graph.ancestors(uid, int(m["up"]) if m["up"] else None)
        if m["down"] is not None:
            out |= graph.descendants(uid, int(m["down"]) if m["down"] else None)
    return out


def _criterion(manifest: Manifest, criterion: str, state: Comparison | None) -> set[str]:
    method, _, value = criterion.partition(":") if ":" in criterion else ("", "", criterion)
    key = None
    if method.startswith("config."):
        method, key = "config", method.removeprefix("config.")
    if method and method not in METHODS:
        guess = closest(method, METHODS)
        raise ProjectError(f"unknown selector method '{method}:'" + (f"; did you mean '{guess}:'?" if guess else f"; methods: {', '.join(METHODS)}"))
    if not method and ("/" in value or value.endswith((".sql", ".csv"))):
        method = "path"
    candidates: list[Node | Source] = [*manifest.nodes.values(), *manifest.sources.values()]
    if method in ("state", "result"):
        if state is None:
            raise ProjectError(f"'{criterion}' compares with an earlier run: give its target folder with --state")
        if method == "state":
            return {c.unique_id for c in candidates if state.previous.matches(c.unique_id, state.current.get(c.unique_id), value)}
        return {c.unique_id for c in candidates if state.previous.result(c.unique_id) == value}
    if method == "test_type" and value not in TEST_TYPES:
        raise ProjectError(f"unknown test type 'test_type:{value}'; types: {', '.join(TEST_TYPES)}")
    return {c.unique_id for c in candidates if _matches(c, method or "fqn", key, value)}


def _matches(item: Node | Source, method: str, key: str | None, value: str) -> bool:
    if isinstance(item, Source):
        if method == "source":
            return fnmatch.fnmatch(f"{item.source_name}.{item.name}", value) or fnmatch.fnmatch(item.source_name, value)
        return method == "resource_type" and value == "source"
    if method == "fqn":
        dotted = value.split(".")
        return fnmatch.fnmatch(item.name, value) or item.fqn[: len(dotted)] == dotted or item.fqn[1: len(dotted) + 1] == dotted
    if method == "path":
        path = value.rstrip("/")
        return item.original_file_path == path or item.original_file_path.startswith(path + "/") or fnmatch.fnmatch(item.original_file_path, path)
    if method == "tag":
        return any(fnmatch.fnmatch(t, value) for t in item.config.get("tags", []))
    if method == "resource_type":
        return item.resource_type == value
    if method == "test_type":
        if item.resource_type == "unit_test":
            return value == "unit"
        generic = item.test_metadata is not None
        return item.resource_type == "test" and value in ("data", *(("generic", "schema") if generic else ("singular",)))
    if method == "unit_test":
        return item.resource_type == "unit_test" and any(
            fnmatch.fnmatch(name, value) for name in (item.name, f"{item.fqn[0]}.{item.name}", ".".join(item.fqn)))
    if method == "test_name":
        return item.test_metadata is not None and fnmatch.fnmatch(item.test_metadata.name, value)
    if method == "config":
        setting = item.config.get(key or "")
        values = setting if isinstance(setting, list) else [setting]
        return any(str(v).lower() == value.lower() for v in values if v is not None)
    return False
