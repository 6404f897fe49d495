"""Heartbeats of running writes: how a writer tells a crashed write from one still running.

While a write runs, a background thread rewrites ``.hoodie/.heartbeat/<instant>`` every
``hoodie.client.heartbeat.interval_in_ms``; the file is deleted when the write ends. A pending
instant whose heartbeat is older than the interval times ``hoodie.client.heartbeat.tolerable.misses``
(or missing) belongs to a writer that died, and the next writer rolls it back (Hudi's LAZY
failed-writes policy); a pending instant with a fresh heartbeat is left alone. The file holds
its writer's interval, so that writers with different intervals judge each other by the
interval the other one beats at.

Example:
    >>> storage = Storage(warehouse + "/orders")
    >>> beat = Heartbeat(storage, "20260101000000000", interval_ms=60000)
    >>> beat.start(), Heartbeat(storage, "20260101000000000", interval_ms=60000).start()  # claimed once
    (True, False)
    >>> is_expired(storage, "20260101000000000", {})
    False
    >>> beat.stop()
    >>> is_expired(storage, "20260101000000000", {})         # no heartbeat: its writer is gone
    True
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping

from hudiql.errors import HudiqlError, WriteConflictError
from hudiql.io.storage import Storage
from hudiql.table import keys
from hudiql.table.layout import HEARTBEAT_FOLDER
from hudiql.table.table import HudiTable
from hudiql.table.timeline import Timeline


def heartbeat_path(instant_time: str) -> str:
    return f"{HEARTBEAT_FOLDER}/{instant_time}"


class Heartbeat:
    """The heartbeat of one write, beating from ``start()`` to ``stop()``."""

    def __init__(self, storage: Storage, instant_time: str, interval_ms: int) -> None:
        self.storage = storage
        self.instant_time = instant_time
        self.interval_ms = interval_ms
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    @classmethod
    def for_settings(cls, storage: Storage, instant_time: str, settings: Mapping[str, str]) -> Heartbeat:
        return cls(storage, instant_time, int(keys.setting(settings, keys.HEARTBEAT_INTERVAL_MS)))

    def start(self) -> bool:
        """Claim the instant time and start beating; ``False`` when another writer claimed the
        time first. It beats before the instant exists: no writer sees the instant without one."""
        path = heartbeat_path(self.instant_time)
        content = str(self.interval_ms).encode()
        if self.storage.can_create_exclusive:
            if not self.storage.create_exclusive(path, content):
                return False
        else:
            self._beat()
        self._thread = threading.Thread(target=self._run, name=f"hudiql-heartbeat-{self.instant_time}", daemon=True)
        self._thread.start()
        return True

    def stop(self) -> None:
        self._stopped.set()
        if self._thread is not None:
            self._thread.join()
        self.storage.delete(heartbeat_path(self.instant_time))

    def _run(self) -> None:
        while not self._stopped.wait(self.interval_ms / 1000):
            try:
                self._beat()
            except OSError:
                pass  # a missed beat; the next one may succeed, and misses are tolerated

    def _beat(self) -> None:
        self.storage.write(heartbeat_path(self.instant_time), str(self.interval_ms).encode())


def is_expired(storage: Storage, instant_time: str, settings: Mapping[str, str]) -> bool:
    """Whether the writer of ``instant_time`` stopped beating: no heartbeat file, or one older
    than the tolerated misses."""
    path = heartbeat_path(instant_time)
    beaten = storage.modified_time(path)
    if beaten is None:
        return True
    try:
        interval_ms = int(storage.read(path).decode())
    except (ValueError, HudiqlError):  # caught mid-write, or gone since: judge by our own interval
        interval_ms = int(keys.setting(settings, keys.HEARTBEAT_INTERVAL_MS))
    allowed_ms = interval_ms * int(keys.setting(settings, keys.HEARTBEAT_MISSES))
    return (time.time() - beaten) * 1000 > allowed_ms


#: How many instant times a writer tries when other writers claim the same millisecond.
_CLAIM_ATTEMPTS = 100


def claim_instant_time(table: HudiTable, settings: Mapping[str, str]) -> Heartbeat:
    """A beating heartbeat for a new instant time, later than every instant of the snapshot and
    claimed by no other writer (two processes may pick the same millisecond)."""
    instant_time = table.timeline.new_instant_time()
    for _ in range(_CLAIM_ATTEMPTS):
        heartbeat = Heartbeat.for_settings(table.storage, instant_time, settings)
        if heartbeat.start():
            return heartbeat
        instant_time = Timeline.next_instant_time(instant_time)
    raise WriteConflictError(f"table {table.base_uri}: no free instant time after {instant_time}; run the statement again")
