"""``hudiql snapshot``: run the selected snapshots. A snapshot runs as a model does, through its
materialization (``materialization_snapshot``): it keeps the history of its query's rows in a
Hudi table, one version per change (dbt's type-2 snapshots)."""

from __future__ import annotations

from hudiql.project.task.run import ModelRunner
from hudiql.project.task.runnable import GraphRunnableTask


class SnapshotTask(GraphRunnableTask):
    RUNNERS = {"snapshot": ModelRunner}
