"""Helpers of the project-layer tests (no tests here): small dbt-style projects in a temporary folder."""

from __future__ import annotations

import io
import json
import textwrap
from pathlib import Path
from typing import Any

from hudiql.project.cli.flags import Flags
from hudiql.project.cli.main import invoke
from hudiql.project.console import Console
from hudiql.project.task.base import load

PROJECT_YML = """
name: shop
profile: shop
vars:
  region: eu
"""


def write_project(root: Path, files: dict[str, str], project_yml: str = PROJECT_YML) -> Path:
    """``root`` with ``dbt_project.yml`` and ``files`` (path -> text, dedented)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "dbt_project.yml").write_text(textwrap.dedent(project_yml))
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    return root


def loaded(root: Path, **flags: Any):
    """The parsed project (manifest, graph, adapter) without Spark."""
    return load(Flags("ls", project_dir=str(root), **flags), Console(io.StringIO()), None, quiet=False)


def run(root: Path, command: str, spark=None, **flags: Any) -> tuple[int, str]:
    """Run a project command in-process; the exit code and the console text."""
    out = io.StringIO()
    code = invoke(Flags(command, project_dir=str(root), **flags), spark=spark, out=out)
    return code, out.getvalue()


def run_results(root: Path) -> dict[str, dict[str, Any]]:
    data = json.loads((root / "target" / "run_results.json").read_text())
    return {r["unique_id"]: r for r in data["results"]}
