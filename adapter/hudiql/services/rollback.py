"""Rollback of writes that did not complete: their files are removed, their instant is gone.

Writers mark every file they create under ``.hoodie/.temp/<instant>/`` before creating it, so a
rollback finds them all, even after a crash. Like Hudi's default (eager) failed-writes policy,
a new write first rolls back the pending writes left by earlier ones: one writer at a time.

Example:
    >>> rollback(table, pending_instant)
"""

from __future__ import annotations

import re

from hudiql.table.layout import TEMP_FOLDER
from hudiql.table.table import HudiTable
from hudiql.table.timeline import COMMIT, DELTA_COMMIT, REPLACE_COMMIT, Instant

_MARKER_RE = re.compile(r"^(?P<file>.+)\.marker\.[A-Z]+$")


def files_from_markers(table: HudiTable, instant_time: str) -> list[str]:
    """Data files (relative paths) the write of ``instant_time`` created or began to create."""
    root = f"{TEMP_FOLDER}/{instant_time}/"
    out = []
    for info in table.storage.list(root, recursive=True):
        m = _MARKER_RE.match(info.path[len(root):]) if not info.is_dir else None
        if m:
            out.append(m["file"])
    return out


def rollback(table: HudiTable, instant: Instant) -> None:
    """Remove every file of a pending write, then its instant."""
    for path in files_from_markers(table, instant.timestamp):
        table.storage.delete(path)
    table.storage.delete_dir(f"{TEMP_FOLDER}/{instant.timestamp}")
    table.timeline.remove_pending(instant)


def rollback_failed_writes(table: HudiTable) -> list[str]:
    """Roll back every pending commit / deltacommit / replacecommit; returns their instant times."""
    pending = table.timeline.pending((COMMIT, DELTA_COMMIT, REPLACE_COMMIT))
    for instant in pending:
        rollback(table, instant)
    return [i.timestamp for i in pending]
