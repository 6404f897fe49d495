"""``hudiql source freshness [--select source:raw]``: how long ago each selected source table with
freshness criteria was last loaded, as dbt's source freshness checks it.

For each table: ``max(<loaded_at_field>)`` (or its ``loaded_at_query``) beside the warehouse's
``current_timestamp()``, rows narrowed by the criteria's ``filter``. Older than ``error_after``:
``error`` (stale); older than ``warn_after``: ``warn``; else ``pass`` (no rows: as old as can be).
A query that fails is a ``runtime error``. The results go to ``target/sources.json``
(dbt's ``sources/v3`` schema); any error or stale table exits 1.
"""

from __future__ import annotations

import threading
import time
from datetime import date, datetime
from typing import Any

from hudiql.project.adapter.impl import Adapter, describe_error
from hudiql.project.artifacts.nodes import Source
from hudiql.project.artifacts.writer import timestamp, write_json
from hudiql.project.cli.flags import EXIT_FAILED, EXIT_OK
from hudiql.project.console import duration, plural
from hudiql.project.task.base import ConfiguredTask, Loaded

SOURCES_SCHEMA = "https://schemas.getdbt.com/dbt/sources/v3.json"
_SECONDS = {"minute": 60, "hour": 3600, "day": 86400}
#: A result's status -> how its progress line says it.
_SAID = {"pass": "PASS", "warn": "WARN", "error": "ERROR STALE", "runtime error": "ERROR"}


class FreshnessTask(ConfiguredTask):
    def run_selected(self, loaded: Loaded, chosen: set[str]) -> int:
        sources = sorted((loaded.manifest.sources[u] for u in chosen
                          if u in loaded.manifest.sources and loaded.manifest.sources[u].freshness), key=lambda s: s.fqn)
        started = time.monotonic()
        results = []
        for index, source in enumerate(sources, 1):
            label = f"freshness of {source.source_name}.{source.name}"
            self.console.progress(index, len(sources), f"START {label}", "RUN")
            result = check(loaded.adapter, source)
            said = _SAID[result["status"]]
            self.console.progress(index, len(sources), f"{said} {label}", said, result.get("execution_time"))
            results.append(result)
        elapsed = time.monotonic() - started
        write_json(loaded.invocation, "sources.json", SOURCES_SCHEMA, {"results": results, "elapsed_time": round(elapsed, 3)})
        self.console.line("")
        self.console.line(f"Finished running {plural(len(sources), 'source')} in {duration(elapsed)}.")
        failed = [r for r in results if r["status"] in ("error", "runtime error")]
        for r in results:
            if r["status"] == "runtime error":
                self.console.line(f"Runtime Error in {r['unique_id']}: {r['error']}")
        return EXIT_FAILED if failed else EXIT_OK


def check(adapter: Adapter, source: Source) -> dict[str, Any]:
    """The freshness result of one source table (a ``sources.json`` entry)."""
    criteria = source.freshness
    assert criteria is not None, source.unique_id
    started, clock = timestamp(), time.monotonic()
    try:
        if source.loaded_at_query:
            loaded_at = f"({source.loaded_at_query})"
            sql = f"select {loaded_at} as max_loaded_at, current_timestamp() as snapshotted_at"
        elif source.loaded_at_field:
            where = f" where {criteria['filter']}" if criteria.get("filter") else ""
            sql = (f"select max({source.loaded_at_field}) as max_loaded_at, current_timestamp() as snapshotted_at "
                   f"from {source.relation}{where}")
        else:
            raise ValueError("it has freshness criteria but no loaded_at_field (or loaded_at_query) to measure")
        with adapter.node_scope():
            _, table = adapter.execute(sql, fetch=True)
        max_loaded_at, snapshotted_at = table[0][0], table[0][1]
        if max_loaded_at is None:  # no rows: never loaded, as old as can be (dbt's reading too)
            max_loaded_at = datetime.min
        elif isinstance(max_loaded_at, date) and not isinstance(max_loaded_at, datetime):
            max_loaded_at = datetime.combine(max_loaded_at, datetime.min.time())
        if not isinstance(max_loaded_at, datetime):
            raise ValueError(f"its load time is {max_loaded_at!r}, not a timestamp")
    except Exception as e:  # the table's check fails, the others go on
        return {"unique_id": source.unique_id, "error": describe_error(e), "status": "runtime error"}
    age = (snapshotted_at - max_loaded_at).total_seconds()
    status = "pass"
    for level in ("warn_after", "error_after"):
        limit = criteria.get(level)
        if limit and age > limit["count"] * _SECONDS[limit["period"]]:
            status = "warn" if level == "warn_after" else "error"
    return {
        "unique_id": source.unique_id, "max_loaded_at": max_loaded_at.isoformat(), "snapshotted_at": snapshotted_at.isoformat(),
        "max_loaded_at_time_ago_in_s": age, "status": status, "criteria": criteria, "adapter_response": {},
        "timing": [{"name": "execute", "started_at": started, "completed_at": timestamp()}],
        "thread_id": threading.current_thread().name, "execution_time": time.monotonic() - clock,
    }
