"""``hudiql build``: seeds, models, snapshots and tests in one DAG-ordered run; a node waits for the tests of
what it depends on, so a failing test skips everything downstream of it."""

from __future__ import annotations

from hudiql.project.task.run import ModelRunner
from hudiql.project.task.runnable import GraphRunnableTask
from hudiql.project.task.seed import SeedRunner
from hudiql.project.task.test import TestRunner


class BuildTask(GraphRunnableTask):
    RUNNERS = {"seed": SeedRunner, "model": ModelRunner, "snapshot": ModelRunner, "test": TestRunner}
    waits_for_tests = True
