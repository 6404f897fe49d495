"""``hudiql build``: seeds, models, snapshots, tests and unit tests in one DAG-ordered run; a node
waits for the tests of what it depends on, so a failing test skips everything downstream of it, and
a model for its unit tests, which run first."""

from __future__ import annotations

from hudiql.project.task.run import ModelRunner
from hudiql.project.task.runnable import GraphRunnableTask
from hudiql.project.task.seed import SeedRunner
from hudiql.project.task.test import TestRunner, UnitTestRunner


class BuildTask(GraphRunnableTask):
    RUNNERS = {"seed": SeedRunner, "model": ModelRunner, "snapshot": ModelRunner, "test": TestRunner,
               "unit_test": UnitTestRunner}
    waits_for_tests = True
