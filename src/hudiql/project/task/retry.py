"""``hudiql retry``: run the previous invocation's command again (its flags, from
``target/run_results.json``, or ``--state DIR``'s) on the nodes it did not finish: those that
errored, failed or were skipped, as dbt's retry does. Nothing to retry: one line, exit code 0."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path
from typing import Any

from hudiql.project.cli.flags import EXIT_ERROR, EXIT_OK, Flags
from hudiql.project.config.project import load_project
from hudiql.project.task.base import BaseTask, ConfiguredTask
from hudiql.project.task.build import BuildTask
from hudiql.project.task.compile import CompileTask
from hudiql.project.task.run import RunTask
from hudiql.project.task.run_operation import RunOperationTask
from hudiql.project.task.seed import SeedTask
from hudiql.project.task.snapshot import SnapshotTask
from hudiql.project.task.test import TestTask

#: The statuses a retry runs again, as dbt's.
RETRYABLE = {"error", "fail", "skipped"}
#: The commands a retry runs again, by the name run results record (``args.which``).
TASKS: dict[str, type[BaseTask]] = {"build": BuildTask, "run": RunTask, "test": TestTask, "seed": SeedTask,
                                    "snapshot": SnapshotTask, "compile": CompileTask, "run-operation": RunOperationTask}
#: Flags the retry takes from its own command line, not from the previous invocation's (which
#: keeps its target, state and selection, as dbt's retry does).
OWN_FLAGS = {"project_dir", "profiles_dir"}


class RetryTask(BaseTask):
    def run(self) -> int:
        try:
            folder = Path(self.flags.state) if self.flags.state else load_project(Path(self.flags.project_dir), {}).target_dir
        except Exception as e:  # a project that does not load: one line, as every command's
            self.console.line(f"Encountered an error: {e}")
            return EXIT_ERROR
        previous = _read(folder / "run_results.json")
        if previous is None:
            self.console.line(f"Encountered an error: Could not find previous run in '{folder}' target directory")
            return EXIT_ERROR
        args: dict[str, Any] = previous.get("args", {})
        command = args.get("which")
        if command not in TASKS:
            self.console.line(f"Encountered an error: the previous run was '{command}', which hudiql does not retry")
            return EXIT_ERROR
        again = {r["unique_id"] for r in previous.get("results", []) if r.get("status") in RETRYABLE}
        if not again:
            self.console.line("Nothing to do. Try checking your model configs and model specification args")
            return EXIT_OK
        known = {f.name for f in fields(Flags)}
        flags = Flags(**{**{k: v for k, v in args.items() if k in known and k not in OWN_FLAGS},
                         **{k: getattr(self.flags, k) for k in OWN_FLAGS}, "command": command})
        if self.flags.vars:  # --vars given to the retry win, as in dbt
            flags.vars = {**flags.vars, **self.flags.vars}
        task = TASKS[command](flags, spark=self.spark, console=self.console, quiet=self.quiet)
        if isinstance(task, ConfiguredTask):
            task.only = again
        return task.run()


def _read(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
