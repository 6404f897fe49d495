"""``profiles.yml``: where a project's tables go (profile -> ``target`` -> ``outputs``).

Searched in ``--profiles-dir``, ``$HUDIQL_PROFILES_DIR``, the project folder, then ``~/.hudiql/``.
Without any file the embedded default is used: local Spark and ``<project>/warehouse``.

Example:
    >>> from hudiql.project.config.project import load_project
    >>> project = load_project(Path("models_example"), cli_vars={})
    >>> target = load_target(project, profiles_dir=None, target_name=None)  # no profiles.yml: the default
    >>> target.name, target.database, target.threads, target.warehouse == str(project.root / "warehouse")
    ('dev', 'default', 1, True)
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hudiql.config.registry import closest
from hudiql.errors import OptionError
from hudiql.io.storage import checked_options
from hudiql.project.config.project import Project
from hudiql.project.config.renderer import read_yaml, render_values
from hudiql.project.errors import ProjectError

PROFILES_FILE = "profiles.yml"
PROFILES_DIR_ENV = "HUDIQL_PROFILES_DIR"
OUTPUT_KEYS = {"type", "warehouse", "database", "schema", "threads", "master", "spark_conf", "storage_options"}


@dataclass
class Target:
    name: str
    profile_name: str
    warehouse: str
    database: str = "default"
    threads: int = 1
    master: str = "local[*]"
    spark_conf: dict[str, str] = field(default_factory=dict)
    #: How tables on S3 are reached (``hudiql.io.storage``), over the AWS variables; ``connect(storage_options=...)``.
    storage_options: dict[str, str] = field(default_factory=dict)
    profiles_file: Path | None = None  # None: the embedded default

    def spark_settings(self) -> dict[str, str]:
        """What ``hudiql.connect(conf=...)`` gets: the master and ``spark_conf``."""
        return {"spark.master": self.master, **self.spark_conf}

    def as_context(self) -> dict[str, Any]:
        """``target`` in Jinja (dbt names the database ``schema``)."""
        return {
            "name": self.name, "profile_name": self.profile_name, "type": "hudiql", "schema": self.database,
            "database": self.database, "warehouse": self.warehouse, "threads": self.threads, "master": self.master,
        }


def find_profiles(project: Project, profiles_dir: str | None) -> Path | None:
    """The ``profiles.yml`` to use, in search order; ``None`` when there is none."""
    if profiles_dir:
        path = Path(profiles_dir) / PROFILES_FILE
        if not path.is_file():
            raise ProjectError(f"--profiles-dir {profiles_dir} has no {PROFILES_FILE}")
        return path
    candidates = [Path(os.environ[PROFILES_DIR_ENV])] if os.environ.get(PROFILES_DIR_ENV) else []
    candidates += [project.root, Path.home() / ".hudiql"]
    return next((d / PROFILES_FILE for d in candidates if (d / PROFILES_FILE).is_file()), None)


def load_target(project: Project, profiles_dir: str | None, target_name: str | None, threads: int | None = None) -> Target:
    path = find_profiles(project, profiles_dir)
    if path is None:
        target = Target(target_name or "dev", project.profile, str(project.root / "warehouse"))
    else:
        target = _from_file(path, project, target_name)
    if threads is not None:
        target.threads = threads
    if target.threads < 1:
        raise ProjectError(f"threads must be 1 or more, got {target.threads}")
    return target


def _from_file(path: Path, project: Project, target_name: str | None) -> Target:
    profiles = read_yaml(path) or {}
    profile = profiles.get(project.profile) if isinstance(profiles, dict) else None
    if not isinstance(profile, dict):
        names = ", ".join(k for k in profiles if k != "config") if isinstance(profiles, dict) else ""
        raise ProjectError(f"{path} has no profile '{project.profile}' (the profile of {project.name}); it has: {names or 'none'}")
    outputs = profile.get("outputs") or {}
    name = target_name or profile.get("target") or "dev"
    if name not in outputs:
        raise ProjectError(f"profile '{project.profile}' in {path} has no target '{name}'; targets: {', '.join(outputs) or 'none'}")
    output = render_values(outputs[name], {}, f"{project.profile}.outputs.{name}")
    for key in output:
        if key not in OUTPUT_KEYS:
            guess = closest(key, OUTPUT_KEYS)
            raise ProjectError(f"{path}: unknown key '{key}' in target '{name}'" + (f"; did you mean '{guess}'?" if guess else ""))
    if output.get("type", "hudiql") != "hudiql":
        raise ProjectError(f"{path}: target '{name}' has type '{output['type']}'; hudiql runs type: hudiql")
    warehouse = str(output.get("warehouse") or "warehouse")
    if "://" not in warehouse and not Path(warehouse).is_absolute():
        warehouse = str(project.root / warehouse)  # relative to the project, whatever the working folder
    spark_conf = output.get("spark_conf") or {}
    if not isinstance(spark_conf, dict):
        raise ProjectError(f"{path}: spark_conf of target '{name}' must be a mapping")
    storage_options = output.get("storage_options") or {}
    if not isinstance(storage_options, dict):
        raise ProjectError(f"{path}: storage_options of target '{name}' must be a mapping")
    try:
        storage_options = checked_options(storage_options)
    except OptionError as e:
        raise ProjectError(f"{path}: target '{name}': {e}") from None
    try:
        threads = int(output.get("threads", 1))
    except (TypeError, ValueError):
        raise ProjectError(f"{path}: threads of target '{name}' must be a number") from None
    return Target(
        name=name, profile_name=project.profile, warehouse=warehouse,
        database=str(output.get("database") or output.get("schema") or "default").lower(), threads=threads,
        master=str(output.get("master") or "local[*]"),
        spark_conf={str(k): str(v).lower() if isinstance(v, bool) else str(v) for k, v in spark_conf.items()},
        storage_options=storage_options, profiles_file=path,
    )
