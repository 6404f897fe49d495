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
#: The dbt-core release hudiql follows: what ``require-dbt-version`` is checked against, and the
#: release whose schema files the artifacts follow (``artifacts.writer``).
DBT_VERSION = "1.11.6"
#: The keys dbt-core 1.11 accepts (``contracts/project.py``), each used, or named in the run's
#: warning (``NOT_RUN``), or refused (``REFUSED``).
KEYS = {
    "name", "version", "config-version", "profile", "model-paths", "macro-paths", "seed-paths",
    "test-paths", "snapshot-paths", "analysis-paths", "target-path", "clean-targets", "vars", "models",
    "seeds", "snapshots", "tests", "data_tests", "unit_tests", "require-dbt-version",
    # legacy spellings of model-paths and seed-paths
    "source-paths", "data-paths",
    # what only other dbt commands read (docs, deps, logs)
    "project-root", "docs-paths", "asset-paths", "log-path", "packages-install-path", "dispatch", "function-paths",
}
#: What dbt runs or checks and hudiql does not: named once in a warning per run, never an error.
NOT_RUN = {
    "semantic-models": "semantic models", "saved-queries": "saved queries", "metrics": "metrics",
    "exposures": "exposures", "dbt-cloud": "dbt Cloud settings",
    "analyses": "analysis configs", "sources": "source configs",
    "functions": "functions", "packages": "packages", "quoting": "quoting",
    "query-comment": "query comments", "flags": "behaviour flags", "restrict-access": "access restrictions",
}
#: What dbt runs and hudiql would leave out, changing the project's results: refused.
REFUSED = {
    "on-run-start": "hudiql does not run on-run-start hooks; run their SQL before hudiql, or move it into a "
                    "model's pre_hook",
    "on-run-end": "hudiql does not run on-run-end hooks; run their SQL after hudiql, or move it into a model's "
                  "post_hook",
}
_ALIASES = {"source-paths": "model-paths", "data-paths": "seed-paths"}
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
    snapshot_paths: list[str] = field(default_factory=lambda: ["snapshots"])
    #: Where dbt finds analyses, which hudiql does not compile (``compile`` names them).
    analysis_paths: list[str] = field(default_factory=lambda: ["analyses"])
    target_path: str = "target"
    vars: dict[str, Any] = field(default_factory=dict)
    trees: dict[str, dict[str, Any]] = field(default_factory=dict)  # resource type -> config tree
    #: What the project holds that dbt runs and hudiql does not (``NOT_RUN``; the parser adds what
    #: its property files hold): the run names it in one warning.
    not_run: set[str] = field(default_factory=set)
    #: ``dispatch:``: macro namespace -> the packages ``adapter.dispatch`` searches, in order.
    dispatch: dict[str, list[str]] = field(default_factory=dict)

    @property
    def target_dir(self) -> Path:
        return self.root / self.target_path

    def generic_test_paths(self) -> list[Path]:
        """The ``generic`` folders of the test paths: their files define generic tests
        (``{% test %}`` blocks), as macro files do; they are no singular tests."""
        return [self.root / p / "generic" for p in self.test_paths]

    def fixture_paths(self) -> list[Path]:
        """The ``fixtures`` folders of the test paths: the csv and sql rows of unit tests."""
        return [self.root / p / "fixtures" for p in self.test_paths]

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
        if key in REFUSED and raw[key]:  # (an empty list of hooks runs nothing)
            raise ProjectError(f"{path}: {key}: {REFUSED[key]}")
        if key not in KEYS and key not in NOT_RUN:
            known = KEYS | set(NOT_RUN) | set(REFUSED)
            guess = closest(str(key), known)
            raise ProjectError(f"{path}: unknown key '{key}'" + (f"; did you mean '{guess}'?" if guess else ""))
    for legacy, key in (*_ALIASES.items(), ("tests", "data_tests")):
        if raw.get(legacy) and raw.get(key):
            raise ProjectError(f"{path}: '{legacy}' and '{key}' name the same thing; keep '{key}'")
    raw = {k: v for k, v in raw.items() if k not in _ALIASES} | {
        new: raw[old] for old, new in _ALIASES.items() if old in raw and not raw.get(new)}
    if "require-dbt-version" in raw:
        check_dbt_version(raw["require-dbt-version"], str(raw.get("name")), path)
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
        not_run={NOT_RUN[k] for k in raw if k in NOT_RUN},
        dispatch=_dispatch(data.get("dispatch"), path),
        trees={
            "model": data.get("models") or {},
            "seed": data.get("seeds") or {},
            "snapshot": data.get("snapshots") or {},
            "unit_test": data.get("unit_tests") or {},
            "test": data.get("data_tests") or data.get("tests") or {},
        },
    )


def _dispatch(value: Any, path: Path) -> dict[str, list[str]]:
    """``dispatch: [{macro_namespace: ns, search_order: [p1, p2]}]`` as namespace -> packages."""
    if value is None:
        return {}
    entries = value if isinstance(value, list) else [value]
    out = {}
    for entry in entries:
        if (not isinstance(entry, dict) or not isinstance(entry.get("macro_namespace"), str)
                or not isinstance(entry.get("search_order"), list)):
            raise ProjectError(f"{path}: each dispatch entry needs a macro_namespace and a search_order list")
        out[entry["macro_namespace"]] = [str(p) for p in entry["search_order"]]
    return out


def check_dbt_version(required: Any, project: str, path: Path) -> None:
    """``require-dbt-version`` (a string of comma-separated specifiers, or a list of them) against
    the dbt-core release hudiql follows (``DBT_VERSION``), as dbt checks it.

    >>> check_dbt_version(">=1.3.0,<2.0.0", "p", Path(PROJECT_FILE))
    >>> check_dbt_version([">=1.11.0", "<1.12"], "p", Path(PROJECT_FILE))
    >>> check_dbt_version(">=2.0.0", "p", Path(PROJECT_FILE))
    Traceback (most recent call last):
    ...
    hudiql.project.errors.ProjectError: dbt_project.yml: project 'p' requires dbt ['>=2.0.0']; hudiql follows dbt 1.11.6
    """
    specs = [required] if isinstance(required, str) else required
    if not isinstance(specs, list) or not all(isinstance(s, str) for s in specs):
        raise ProjectError(f"{path}: require-dbt-version must be a string or a list of strings, like '>=1.0.0,<2.0.0'")
    parts = [p.strip() for spec in specs for p in spec.split(",") if p.strip()]
    if not all(_satisfies(DBT_VERSION, part, path) for part in parts):
        raise ProjectError(f"{path}: project '{project}' requires dbt {parts}; hudiql follows dbt {DBT_VERSION}")


def _satisfies(version: str, spec: str, path: Path) -> bool:
    """Whether ``version`` meets one specifier: an operator (``>=``, ``>``, ``<=``, ``<``, ``=``,
    none: equal) and a version of one to three numbers."""
    operator = next((op for op in (">=", "<=", "==", ">", "<", "=") if spec.startswith(op)), "")
    wanted = spec[len(operator):].strip()
    if not all(n.isdigit() for n in wanted.split(".")) or not 1 <= len(wanted.split(".")) <= 3:
        raise ProjectError(f"{path}: require-dbt-version '{spec}' is not a version specifier like '>=1.0.0'")
    have = tuple(int(n) for n in version.split(".")[:3])
    want = tuple(int(n) for n in wanted.split("."))
    have = have[:len(want)]
    return {">=": have >= want, "<=": have <= want, ">": have > want, "<": have < want}.get(operator, have == want)
