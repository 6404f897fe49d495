"""Rollback of writes that did not complete: their files are removed, their instant is gone.

Writers mark every file they create under ``.hoodie/.temp/<instant>/`` before creating it, so a
rollback finds them all, even after a crash. As Hudi's LAZY failed-writes policy does, a new write
first rolls back the pending writes whose writer died (its heartbeat expired, ``write.heartbeat``);
the instant of a writer still running is left alone.

Example: a writer died after starting its instant and writing a file.
    >>> from hudiql.table.config import TableConfig
    >>> from hudiql.table.layout import marker_path
    >>> table = HudiTable.create(warehouse + "/orders", TableConfig({"hoodie.table.name": "orders"}))
    >>> _ = table.timeline.start(COMMIT, "20240101000000000")
    >>> name = "f-0_0-1-0_20240101000000000.parquet"
    >>> table.storage.write(marker_path("20240101000000000", "dt=1", name, "CREATE"), b"")
    >>> table.storage.write(f"dt=1/{name}", b"half a file")
    >>> rollback_failed_writes(HudiTable.load(table.base_uri), {})   # no heartbeat: its writer is gone
    ['20240101000000000']
    >>> table.storage.exists(f"dt=1/{name}"), HudiTable.load(table.base_uri).timeline.instants
    (False, [])
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from hudiql.table.layout import marker_folder
from hudiql.table.table import HudiTable
from hudiql.table.timeline import COMMIT, DELTA_COMMIT, REPLACE_COMMIT, Instant
from hudiql.write.heartbeat import heartbeat_path, is_expired

_MARKER_RE = re.compile(r"^(?P<file>.+)\.marker\.[A-Z]+$")


def files_from_markers(table: HudiTable, instant_time: str) -> list[str]:
    """Data files (relative paths) the write of ``instant_time`` created or began to create."""
    root = marker_folder(instant_time) + "/"
    out = []
    for info in table.storage.list(root, recursive=True):
        m = _MARKER_RE.match(info.path[len(root):]) if not info.is_dir else None
        if m:
            out.append(m["file"])
    return out


def rollback(table: HudiTable, instant: Instant, keep_requested: bool = False) -> None:
    """Remove every file of a pending write, then its instant (``keep_requested``: back to its
    requested state, which holds a plan to run again, as a compaction's does)."""
    for path in files_from_markers(table, instant.timestamp):
        table.storage.delete(path)
    table.storage.delete_dir(marker_folder(instant.timestamp))
    table.timeline.remove_pending(instant, keep_requested)


def rollback_failed_writes(table: HudiTable, settings: Mapping[str, str]) -> list[str]:
    """Roll back the pending commits / deltacommits / replacecommits whose writer died; returns
    their instant times."""
    failed = [
        i for i in table.timeline.pending((COMMIT, DELTA_COMMIT, REPLACE_COMMIT))
        if is_expired(table.storage, i.timestamp, settings)
    ]
    for instant in failed:
        rollback(table, instant)
        table.storage.delete(heartbeat_path(instant.timestamp))
    return [i.timestamp for i in failed]
