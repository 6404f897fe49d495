"""Heartbeats of running writes: how a writer tells a crashed write from one still running.

While a write runs, a background thread rewrites ``.hoodie/.heartbeat/<instant>`` every
``hoodie.client.heartbeat.interval_in_ms``; the file is deleted when the write ends. A pending
instant whose heartbeat is older than the interval times ``hoodie.client.heartbeat.tolerable.misses``
(or missing) belongs to a writer that died, and the next writer rolls it back (Hudi's LAZY
failed-writes policy); a pending instant with a fresh heartbeat is left alone, unless its
writer ran on this host and its process is gone: then it failed, at once (Hudi waits for the
heartbeat to expire). The file holds its writer's interval, so that writers with different
intervals judge each other by the interval the other one beats at, and its process
(``transaction.process``); Hudi's writers read only the file's time. Work a writer keeps outside
the timeline, such as the rows a ``df.write`` stages (``datasource.writer``), beats in a file of
its own the same way.

Example:
    >>> storage = Storage(warehouse + "/orders")
    >>> beat = WriterHeartbeat(storage, "20260101000000000", interval_ms=60000)
    >>> beat.start(), WriterHeartbeat(storage, "20260101000000000", interval_ms=60000).start()  # claimed once
    (True, False)
    >>> is_expired(storage, heartbeat_path("20260101000000000"), {})
    False
    >>> beat.stop()
    >>> is_expired(storage, heartbeat_path("20260101000000000"), {})  # no heartbeat: its writer is gone
    True
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping

from hudiql.config import registry
from hudiql.errors import HudiqlError, WriteConflictError
from hudiql.io.storage import Storage
from hudiql.layout import HEARTBEAT_FOLDER
from hudiql.table.table import HudiTable
from hudiql.timeline.active import Timeline
from hudiql.transaction.process import WriterProcess


def heartbeat_path(instant_time: str) -> str:
    """Where the writer of ``instant_time`` beats."""
    return f"{HEARTBEAT_FOLDER}/{instant_time}"


def interval_ms(settings: Mapping[str, str]) -> int:
    """How often a writer with ``settings`` beats."""
    return registry.number(settings, registry.HEARTBEAT_INTERVAL_MS)


class Heartbeat:
    """A heartbeat file (``path`` in ``storage``), beating from ``start()`` to ``stop()``."""

    def __init__(self, storage: Storage, path: str, interval_ms: int) -> None:
        self.storage = storage
        self.path = path
        self.interval_ms = interval_ms
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> bool:
        """Claim the file and start beating; ``False`` when another writer claimed it first."""
        self._content = json.dumps({"interval_ms": self.interval_ms, **WriterProcess.current().as_dict()}).encode()
        if self.storage.can_create_exclusive:
            if not self.storage.create_exclusive(self.path, self._content):
                return False
        else:
            self._beat()
        self._thread = threading.Thread(target=self._run, name=f"hudiql-heartbeat-{self.path}", daemon=True)
        self._thread.start()
        return True

    def stop(self) -> None:
        self._stopped.set()
        if self._thread is not None:
            self._thread.join()
        self.storage.delete(self.path)

    def _run(self) -> None:
        while not self._stopped.wait(self.interval_ms / 1000):
            try:
                self._beat()
            except OSError:
                pass  # a missed beat; the next one may succeed, and misses are tolerated

    def _beat(self) -> None:
        self.storage.write(self.path, self._content)


class WriterHeartbeat(Heartbeat):
    """The heartbeat of the writer of one instant time. Claiming it claims the time: it beats
    before the instant exists, so no writer sees the instant without one."""

    def __init__(self, storage: Storage, instant_time: str, interval_ms: int) -> None:
        super().__init__(storage, heartbeat_path(instant_time), interval_ms)
        self.instant_time = instant_time


def is_expired(storage: Storage, path: str, settings: Mapping[str, str]) -> bool:
    """Whether the heartbeat at ``path`` stopped: no file, one older than the tolerated misses, or
    one whose writer ran on this host and is gone."""
    beaten = storage.modified_time(path)
    if beaten is None:
        return True
    beat_ms, process = interval_ms(settings), None  # unreadable (caught mid-write): judged by our interval
    try:
        content = json.loads(storage.read(path).decode())
        if isinstance(content, dict):
            beat_ms, process = int(content["interval_ms"]), WriterProcess.from_dict(content)
        else:
            beat_ms = int(content)  # a file written before heartbeats named their process
    except (ValueError, KeyError, TypeError, HudiqlError):
        pass
    if process is not None and process.is_gone():
        return True
    allowed_ms = beat_ms * registry.number(settings, registry.HEARTBEAT_MISSES)
    return (time.time() - beaten) * 1000 > allowed_ms


#: How many instant times a writer tries when other writers claim the same millisecond.
_CLAIM_ATTEMPTS = 100


def claim_instant_time(table: HudiTable) -> WriterHeartbeat:
    """A beating heartbeat for a new instant time, later than every instant of the snapshot and
    claimed by no other writer (two processes may pick the same millisecond)."""
    instant_time = table.timeline.new_instant_time()
    for _ in range(_CLAIM_ATTEMPTS):
        heartbeat = WriterHeartbeat(table.storage, instant_time, interval_ms(table.settings))
        if heartbeat.start():
            return heartbeat
        instant_time = Timeline.next_instant_time(instant_time)
    raise WriteConflictError(f"table {table.base_uri}: no free instant time after {instant_time}; run the statement again")
