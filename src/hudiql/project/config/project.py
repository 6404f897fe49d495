"""``dbt_project.yml``: the project's name, profile, folders, vars and config trees.

Example:
    >>> project = load_project(Path("models_example"), cli_vars={})
    >>> project.name, project.model_paths
    ('hudiql_example', ['models'])
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hudiql.config.registry import closest
from hudiql.project.config.renderer import read_yaml, render_values
from hudiql.project.errors import ProjectError

PROJECT_FILE = "dbt_project.yml"
KEYS = {
    "name", "version", "config-version", "profile", "model-paths", "macro-paths", "seed-paths",
    "test-paths", "snapshot-paths", "analysis-paths", "target-path", "clean-targets", "vars", "models",
    "seeds", "tests", "data_tests",
}
_MISSING = object()


@dataclass
class Project:
    root: Path
    name: str
    profile: str
    model_paths: list[str] = field(default_factory=lambda: ["models"])
    macro_paths: list[str] = field(default_factory=lambda: ["macros"])
    seed_paths: list[str] = field(default_factory=lambda: ["seeds"])
    test_paths: list[str] = field(default_factory=lambda: ["tests"])
    #: Where dbt finds snapshots and analyses, which hudiql does not build (``build`` and
    #: ``compile`` name them).
    snapshot_paths: list[str] = field(default_factory=lambda: ["snapshots"])
    analysis_paths: list[str] = field(default_factory=lambda: ["analyses"])
    target_path: str = "target"
    vars: dict[str, Any] = field(default_factory=dict)
    trees: dict[str, dict[str, Any]] = field(default_factory=dict)  # resource type -> config tree

    @property
    def target_dir(self) -> Path:
        return self.root / self.target_path

    def var(self, name: str, default: Any = _MISSING) -> Any:
        """``var()`` in models: ``--vars`` were merged over ``vars:`` when loading."""
        return lookup_var(self.vars, name, default)


def lookup_var(vars_: dict[str, Any], name: str, default: Any = _MISSING) -> Any:
    if name in vars_:
        return vars_[name]
    if default is _MISSING:
        raise ProjectError(f"required var '{name}' is not set; add it under vars: in {PROJECT_FILE} or pass --vars")
    return default


def load_project(root: Path, cli_vars: dict[str, Any]) -> Project:
    """Read ``root/dbt_project.yml``; ``cli_vars`` (``--vars``) win over its ``vars:``."""
    path = root / PROJECT_FILE
    if not path.is_file():
        raise ProjectError(f"no {PROJECT_FILE} in {root.resolve()}; pass --project-dir or run from a project folder")
    raw = read_yaml(path)
    if not isinstance(raw, dict):
        raise ProjectError(f"{path} must be a mapping")
    for key in raw:
        if key not in KEYS:
            guess = closest(str(key), KEYS)
            raise ProjectError(f"{path}: unknown key '{key}'" + (f"; did you mean '{guess}'?" if guess else ""))
    vars_ = {**(raw.get("vars") or {}), **cli_vars}
    functions = {"var": lambda name, default=_MISSING: lookup_var(vars_, name, default)}
    data = render_values({k: v for k, v in raw.items() if k != "vars"}, functions, PROJECT_FILE)
    if not data.get("name"):
        raise ProjectError(f"{path}: 'name' is required")
    name = str(data["name"])

    def paths(key: str, default: str) -> list[str]:
        value = data.get(key, [default])
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list):
            raise ProjectError(f"{path}: '{key}' must be a list of folders")
        return [str(v) for v in value]

    return Project(
        root=root.resolve(),
        name=name,
        profile=str(data.get("profile") or name),
        model_paths=paths("model-paths", "models"),
        macro_paths=paths("macro-paths", "macros"),
        seed_paths=paths("seed-paths", "seeds"),
        test_paths=paths("test-paths", "tests"),
        snapshot_paths=paths("snapshot-paths", "snapshots"),
        analysis_paths=paths("analysis-paths", "analyses"),
        target_path=str(data.get("target-path", "target")),
        vars=vars_,
        trees={
            "model": data.get("models") or {},
            "seed": data.get("seeds") or {},
            "test": data.get("data_tests") or data.get("tests") or {},
        },
    )
