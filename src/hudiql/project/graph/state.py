"""What ``state:`` and ``result:`` selectors compare with: the artifacts of an earlier invocation
(``--state DIR``: its ``manifest.json`` and ``run_results.json``), against this invocation's own
``target/manifest.json`` (written while the project loads), as dbt compares them.

- ``state:new``: a node the earlier manifest lacks; ``state:old``: one it has;
- ``state:modified.body``: new, or its file changed (the manifest's checksum);
  ``state:modified.configs``: new, or its config changed; ``state:modified``: either;
  ``state:unmodified``: neither;
- ``result:<status>``: the node's status in the earlier run results (``success``, ``error``,
  ``fail``, ``warn``, ``pass``, ``skipped``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hudiql.project.errors import ProjectError

STATES = ("new", "old", "modified", "modified.body", "modified.configs", "unmodified")


@dataclass(frozen=True)
class PreviousState:
    """An earlier invocation's nodes (unique id -> manifest entry) and results (unique id -> status)."""

    folder: Path
    nodes: dict[str, dict[str, Any]] | None
    results: dict[str, str] | None

    @classmethod
    def load(cls, folder: str | Path) -> PreviousState:
        path = Path(folder)
        if not path.is_dir():
            raise ProjectError(f"--state {folder}: no such folder; give the target folder of an earlier run")
        return cls(path, _entries(path / "manifest.json"), _results(path / "run_results.json"))

    def matches(self, unique_id: str, current: dict[str, Any] | None, state: str) -> bool:
        """Whether the node (``current``: its entry in this invocation's manifest) is in ``state``."""
        if state not in STATES:
            raise ProjectError(f"unknown state 'state:{state}'; states: {', '.join(STATES)}")
        if self.nodes is None:
            raise ProjectError(f"state:{state} needs {self.folder / 'manifest.json'}, which is not there")
        before = self.nodes.get(unique_id)
        if state in ("new", "old"):
            return (before is None) == (state == "new")
        if before is None or current is None:  # (a new node is modified in every way, as in dbt)
            return state != "unmodified"
        body = before.get("checksum") != current.get("checksum")
        configs = before.get("config") != current.get("config")
        return {"modified": body or configs, "modified.body": body, "modified.configs": configs,
                "unmodified": not (body or configs)}[state]

    def result(self, unique_id: str) -> str | None:
        if self.results is None:
            raise ProjectError(f"result: selectors need {self.folder / 'run_results.json'}, which is not there")
        return self.results.get(unique_id)


def current_nodes(target_dir: Path) -> dict[str, dict[str, Any]]:
    """This invocation's manifest entries (the project's load wrote ``target/manifest.json``)."""
    return _entries(target_dir / "manifest.json") or {}


def _entries(path: Path) -> dict[str, dict[str, Any]] | None:
    if not path.is_file():
        return None
    data = _read(path)
    return {**data.get("nodes", {}), **data.get("unit_tests", {}), **data.get("sources", {})}


def _results(path: Path) -> dict[str, str] | None:
    if not path.is_file():
        return None
    return {r["unique_id"]: r["status"] for r in _read(path).get("results", [])}


def _read(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ProjectError(f"{path} is not a dbt artifact: {e}") from None
