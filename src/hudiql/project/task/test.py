"""``hudiql test``: run the data tests and unit tests.

- A data test's SQL selects the failing rows; ``TestRunner`` counts them (``SELECT count(*) FROM
  (<test SQL>)``): above 0 fails the test, or warns with ``severity: warn``.
- A unit test runs its model's SELECT on the rows it gives; ``UnitTestRunner`` compares what it
  returns with the expected rows, in any order: a difference fails the test, and the message
  draws it as dbt does."""

from __future__ import annotations

from hudiql.project.adapter import unit
from hudiql.project.adapter.impl import NodeScope
from hudiql.project.artifacts.nodes import Node
from hudiql.project.artifacts.results import NodeResult
from hudiql.project.task.base import BaseRunner
from hudiql.project.task.runnable import GraphRunnableTask


class TestRunner(BaseRunner):
    __test__ = False  # not a pytest class, whatever its name

    def run_node(self, node: Node, result: NodeResult, scope: NodeScope) -> None:
        result.compiled_code = self.compiler.compile(node)
        rows = self.adapter.run_query(f"SELECT count(*) AS failures FROM (\n{result.compiled_code}\n) AS dbt_internal_test")
        result.failures = int(rows[0][0])
        if result.failures == 0:
            result.status, result.message = "pass", "PASS"
        else:
            result.status = "warn" if node.config["severity"] == "warn" else "fail"
            result.message = f"Got {result.failures} result{'s' if result.failures != 1 else ''}, configured to {result.status} if != 0"


class UnitTestRunner(BaseRunner):
    def run_node(self, node: Node, result: NodeResult, scope: NodeScope) -> None:
        sql, columns = self.compiler.compile_unit_test(node)
        result.compiled_code = sql
        rows = self.adapter.run_query(sql)
        marker = rows.column_names.index(unit.MARKER)
        sides: dict[str, list[tuple]] = {"actual": [], "expected": []}
        for row in rows:
            sides[row[marker]].append(tuple(v for i, v in enumerate(row) if i != marker))
        diff = unit.difference(columns, sides["actual"], sides["expected"])
        if diff:
            result.status, result.failures = "fail", 1
            result.message = f"actual differs from expected:\n\n{diff}"
        else:
            result.status, result.message, result.failures = "pass", "PASS", 0


class TestTask(GraphRunnableTask):
    __test__ = False
    RUNNERS = {"test": TestRunner, "unit_test": UnitTestRunner}
