"""``hudiql build``: seeds, models and tests in one DAG-ordered run; a node waits for the tests of
what it depends on, so a failing test skips everything downstream of it."""

from __future__ import annotations

from hudiql.project.parser import snapshot_files
from hudiql.project.task.base import Loaded
from hudiql.project.task.run import ModelRunner
from hudiql.project.task.runnable import GraphRunnableTask
from hudiql.project.task.seed import SeedRunner
from hudiql.project.task.test import TestRunner


class BuildTask(GraphRunnableTask):
    RUNNERS = {"seed": SeedRunner, "model": ModelRunner, "test": TestRunner}
    waits_for_tests = True

    def run_selected(self, loaded: Loaded, chosen: set[str]) -> int:
        # dbt build runs snapshots too: say which ones this build leaves out, rather than skip them unseen.
        for path in snapshot_files(loaded.invocation.project):
            self.console.line(f"[WARNING]: {path} holds snapshots, which hudiql does not build; dbt-core with the "
                              "hudiql adapter does (pip install 'hudiql[dbt]', then dbt snapshot)")
        return super().run_selected(loaded, chosen)
