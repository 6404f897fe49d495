"""``hudiql debug``: is the project, the profile, Java and Spark in order? Each check prints one line.

Example:
    $ hudiql debug --project-dir models_example
    ...
      Connection test: [OK connection ok]
    All checks passed!
"""

from __future__ import annotations

import platform
import shutil
import sys
from pathlib import Path

from pyspark.sql import SparkSession

import hudiql
from hudiql.errors import HudiqlError
from hudiql.project.adapter import Adapter, describe_error
from hudiql.project.console import Console
from hudiql.project.profiles import Target, find_profiles, load_target
from hudiql.project.project_file import PROJECT_FILE, Project, load_project
from hudiql.project.tasks import EXIT_FAILED, EXIT_OK, Flags


def run_debug(flags: Flags, spark: SparkSession | None = None, console: Console | None = None, quiet: bool = False) -> int:
    console = console or Console()
    console.line(f"hudiql version: {hudiql.__version__}")
    console.line(f"python version: {platform.python_version()}")
    console.line(f"python path: {sys.executable}")
    ok = True
    project: Project | None = None
    target: Target | None = None
    try:
        project = load_project(Path(flags.project_dir), flags.vars)
        console.line(f"Using {PROJECT_FILE} file at {project.root / PROJECT_FILE}")
        profiles = find_profiles(project, flags.profiles_dir)
        console.line(f"Using profiles.yml file at {profiles}" if profiles else
                     "No profiles.yml found: using the embedded default (local Spark, <project>/warehouse)")
        target = load_target(project, flags.profiles_dir, flags.target, flags.threads)
        console.line("Configuration:")
        console.line(f"  profiles.yml file [{'OK found and valid' if profiles else 'OK embedded default'}]")
        console.line(f"  {PROJECT_FILE} file [OK found and valid]")
    except HudiqlError as e:
        ok = False
        console.line(f"  Configuration [ERROR]: {e}")
    java = shutil.which("java")
    console.line("Required dependencies:")
    console.line(f" - java [{'OK found' if java else 'ERROR not found: install Java 17 or newer'}]")
    ok = ok and java is not None
    if project is not None and target is not None:
        console.line("Connection:")
        for key in ("warehouse", "database", "master", "threads"):
            console.line(f"  {key}: {getattr(target, key)}")
        ok = _connection_test(Adapter(target, project.root, spark, quiet=quiet), console) and ok
    console.line("All checks passed!" if ok else "Some checks failed: see above")
    return EXIT_OK if ok else EXIT_FAILED


def _connection_test(adapter: Adapter, console: Console) -> bool:
    try:
        with adapter.node_scope():
            adapter.run_query("SELECT 1")
        adapter.ensure_database(adapter.target.database)
    except Exception as e:  # any failure here is what the user needs to read
        console.line(f"  Connection test: [ERROR] {describe_error(e)}")
        return False
    console.line("  Connection test: [OK connection ok]")
    return True
