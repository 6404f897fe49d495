"""What a process keeps of files that never change once written (a completed instant, a metadata
table's log file), so that its next statement does not read them again: on an object store each
read is a round trip. Bounded, least recently used first out.

Example:
    >>> cache = ProcessCache(max_entries=2)
    >>> cache.put("a", b"1"); cache.put("b", b"2"); cache.put("c", b"3")
    >>> cache.get("a"), cache.get("c"), cache.fetch("d", lambda: b"read once")
    (None, b'3', b'read once')
    >>> sized = ProcessCache(max_entries=10, max_bytes=32)
    >>> sized.put("x", b"123"); sized.put("y", b"4567"); sized.put("z", b"too large to keep")
    >>> "x" in sized, "y" in sized, "z" in sized
    (True, True, False)
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

V = TypeVar("V")


class ProcessCache(Generic[V]):
    """Values by key, at most ``max_entries`` of them and (for bytes values) ``max_bytes`` in all;
    a value over an eighth of ``max_bytes`` is not kept (it would push out many). Threads share it
    (a dbt run's nodes run on several)."""

    def __init__(self, max_entries: int, max_bytes: int | None = None) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._values: OrderedDict[str, V] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def __contains__(self, key: str) -> bool:
        return key in self._values

    def get(self, key: str) -> V | None:
        with self._lock:
            value = self._values.get(key)
            if value is not None:
                self._values.move_to_end(key)
            return value

    def fetch(self, key: str, load: Callable[[], V]) -> V:
        """The value of ``key``, from ``load()`` (kept) when the cache has none: ``load`` runs
        outside the lock (it reads storage), so two threads may both load a missing key."""
        value = self.get(key)
        if value is None:
            value = load()
            self.put(key, value)
        return value

    def put(self, key: str, value: V) -> None:
        size = self._size(value)
        with self._lock:
            self._pop(key)
            if self.max_bytes is not None and size > self.max_bytes // 8:
                return
            self._values[key] = value
            self._bytes += size
            while self._values and (len(self._values) > self.max_entries
                                    or (self.max_bytes is not None and self._bytes > self.max_bytes)):
                self._pop(next(iter(self._values)))

    def pop(self, key: str) -> V | None:
        with self._lock:
            return self._pop(key)

    def _pop(self, key: str) -> V | None:
        value = self._values.pop(key, None)
        if value is not None:
            self._bytes -= self._size(value)
        return value

    def _size(self, value: V) -> int:
        return len(value) if self.max_bytes is not None else 0
