"""A completed timeline moved between layout 1 (table version 6: instants in ``.hoodie/``, commit
metadata in JSON) and layout 2 (versions 8 and 9: in ``.hoodie/timeline/``, a completed instant
named ``<t>_<completion time>.<action>``, commit metadata in Avro), as Hudi's upgrade and downgrade
move it. The caller makes sure no instant is pending.

A completed instant of layout 1 has no completion time: its completed file's modification time
stands for it, as in Hudi's upgrade (never before the instant itself). A clustering is a
replacecommit on layout 1 and its own action on layout 2.

Example:
    >>> storage = Storage(warehouse + "/orders")
    >>> TableConfig({"hoodie.table.name": "orders"}).save(storage)
    >>> timeline = Timeline.load(storage)
    >>> _ = timeline.complete(timeline.start(COMMIT, "20240101000000000"), b"{}")
    >>> v8 = TableConfig({"hoodie.table.name": "orders", "hoodie.table.version": "8"})
    >>> moved = sorted(converted(Timeline.load(storage), v8))
    >>> [(old, new.split("_")[0]) for old, new, _ in moved]   # the completed one with its completion time
    [('.hoodie/20240101000000000.commit', '.hoodie/timeline/20240101000000000'), ('.hoodie/20240101000000000.commit.requested', '.hoodie/timeline/20240101000000000.commit.requested'), ('.hoodie/20240101000000000.inflight', '.hoodie/timeline/20240101000000000.inflight')]
    >>> moved[0][2][:3]                                       # its commit metadata in Avro
    b'Obj'

"""

from __future__ import annotations

from datetime import datetime, timezone

from hudiql.config.table_config import TableConfig
from hudiql.io.storage import Storage
from hudiql.timeline.active import (
    CLUSTERING,
    COMMIT,
    DELTA_COMMIT,
    REPLACE_COMMIT,
    SAVEPOINT,
    State,
    Timeline,
    format_instant_time,
    instant_file_name,
    parse_instant_file_name,
)
from hudiql.timeline.commit import CommitMetadata
from hudiql.timeline.replace_plan import clustering_plan

_COMMIT_METADATA = (COMMIT, DELTA_COMMIT, REPLACE_COMMIT)


def converted(timeline: Timeline, to: TableConfig) -> list[tuple[str, str, bytes]]:
    """(path now, path in the layout of the table config ``to``, content there) of every file of
    ``timeline``'s instants."""
    to_layout, folder = to.timeline_layout_version, to.timeline_folder
    by_time = {(i.timestamp, i.action == SAVEPOINT): i for i in timeline.instants}
    out = []
    for info in timeline.storage.list(timeline.folder):
        parsed = None if info.is_dir else parse_instant_file_name(info.name)
        if parsed is None:
            continue
        ts, action, state, _ = parsed
        instant = by_time[(ts, action == SAVEPOINT)]
        # a clustering: its own action on layout 2, a replacecommit whose request holds its plan on 1
        if action in (REPLACE_COMMIT, CLUSTERING) and state is not State.COMPLETED:
            action = (CLUSTERING if to_layout >= 2 else REPLACE_COMMIT) if clustering_plan(timeline, instant) else action
        content = timeline.storage.read(info.path)
        completion = None
        if state is State.COMPLETED:
            if to_layout >= 2:
                completion = _completion_time(timeline.storage, info.path, ts)
            if action in _COMMIT_METADATA:
                content = CommitMetadata.decode(content, info.path).encode(to_layout)
        elif action in _COMMIT_METADATA and state is State.INFLIGHT:
            content = b""  # a workload profile no reader needs, in either layout's encoding
        out.append((info.path, f"{folder}/{instant_file_name(action, state, ts, completion)}", content))
    return out


def _completion_time(storage: Storage, path: str, instant_time: str) -> str:
    modified = storage.modified_time(path)
    stamp = format_instant_time(datetime.fromtimestamp(modified, timezone.utc)) if modified else instant_time
    return max(stamp, Timeline.next_instant_time(instant_time))


def write_converted(storage: Storage, files: list[tuple[str, str, bytes]]) -> None:
    """Write the converted files (the old ones stay until the caller deletes them)."""
    for _, path, content in files:
        storage.write_atomic(path, content)
