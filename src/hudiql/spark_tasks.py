"""How driver-made work items (file slices, clustering groups) are spread over Spark tasks.

A Python task costs about 0.05-0.1 s to start on this kind of machine whatever it does (its worker,
its function, its Arrow stream), more than merging a small file slice: work of a few seconds
goes in one task per core, each given an equal share by size, rather than in many tasks that
Spark would balance by itself.

Example:
    >>> spread([5, 1, 4, 2, 3, 3], cost=lambda n: n, tasks=2)  # parallelize(..., 2): [5, 3, 1] and [4, 3, 2]
    [5, 3, 1, 4, 3, 2]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def spread(items: list[T], cost: Callable[[T], float], tasks: int) -> list[T]:
    """``items`` ordered so that ``SparkContext.parallelize(items, tasks)``, which cuts a list into
    ``tasks`` runs of nearly equal length, gives each task a nearly equal sum of ``cost``: the
    costliest item first to the task with the least so far that still has room."""
    tasks = max(1, min(tasks, len(items)))
    sizes = [(i + 1) * len(items) // tasks - i * len(items) // tasks for i in range(tasks)]
    bins: list[list[T]] = [[] for _ in range(tasks)]
    totals = [0.0] * tasks
    for item in sorted(items, key=cost, reverse=True):
        open_bins = [b for b in range(tasks) if len(bins[b]) < sizes[b]]
        chosen = min(open_bins, key=lambda b: totals[b])
        bins[chosen].append(item)
        totals[chosen] += cost(item)
    return [item for b in bins for item in b]
