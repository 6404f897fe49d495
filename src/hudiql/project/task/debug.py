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

import hudiql
from hudiql.errors import HudiqlError
from hudiql.project.adapter.impl import Adapter, describe_error
from hudiql.project.cli.flags import EXIT_FAILED, EXIT_OK
from hudiql.project.config.profile import Target, find_profiles, load_target
from hudiql.project.config.project import PROJECT_FILE, Project, load_project
from hudiql.project.console import Console
from hudiql.project.task.base import BaseTask


class DebugTask(BaseTask):
    def run(self) -> int:
        self.console.line(f"hudiql version: {hudiql.__version__}")
        self.console.line(f"python version: {platform.python_version()}")
        self.console.line(f"python path: {sys.executable}")
        ok = True
        project: Project | None = None
        target: Target | None = None
        try:
            project = load_project(Path(self.flags.project_dir), self.flags.vars)
            self.console.line(f"Using {PROJECT_FILE} file at {project.root / PROJECT_FILE}")
            profiles = find_profiles(project, self.flags.profiles_dir)
            self.console.line(f"Using profiles.yml file at {profiles}" if profiles else
                              "No profiles.yml found: using the embedded default (local Spark, <project>/warehouse)")
            target = load_target(project, self.flags.profiles_dir, self.flags.target, self.flags.threads)
            self.console.line("Configuration:")
            self.console.line(f"  profiles.yml file [{'OK found and valid' if profiles else 'OK embedded default'}]")
            self.console.line(f"  {PROJECT_FILE} file [OK found and valid]")
        except HudiqlError as e:
            ok = False
            self.console.line(f"  Configuration [ERROR]: {e}")
        java = shutil.which("java")
        self.console.line("Required dependencies:")
        self.console.line(f" - java [{'OK found' if java else 'ERROR not found: install Java 17 or newer'}]")
        ok = ok and java is not None
        if project is not None and target is not None:
            self.console.line("Connection:")
            for key in ("warehouse", "database", "master", "threads"):
                self.console.line(f"  {key}: {getattr(target, key)}")
            ok = _connection_test(Adapter(target, project.root, self.spark, quiet=self.quiet), self.console) and ok
        self.console.line("All checks passed!" if ok else "Some checks failed: see above")
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
