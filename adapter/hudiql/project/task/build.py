"""``hudiql build``: seeds, models and tests in one DAG-ordered run; a node waits for the tests of
what it depends on, so a failing test skips everything downstream of it."""

from __future__ import annotations

from hudiql.project.parser import sql_files
from hudiql.project.task.base import Loaded, warn_left_out
from hudiql.project.task.run import ModelRunner
from hudiql.project.task.runnable import GraphRunnableTask
from hudiql.project.task.seed import SeedRunner
from hudiql.project.task.test import TestRunner


class BuildTask(GraphRunnableTask):
    RUNNERS = {"seed": SeedRunner, "model": ModelRunner, "test": TestRunner}
    waits_for_tests = True

    def run_selected(self, loaded: Loaded, chosen: set[str]) -> int:
        project = loaded.invocation.project
        warn_left_out(self.console, sql_files(project, project.snapshot_paths), "snapshots", "dbt snapshot")
        return super().run_selected(loaded, chosen)
