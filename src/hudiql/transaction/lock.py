"""The table lock: one writer at a time checks for conflicts and completes its instant.

The lock is the file ``.hoodie/lock``, created only if absent (Hudi's
``FileSystemBasedLockProvider`` keeps its lock in the same place): ``Storage.create_exclusive``,
a hard link on a local file system and a conditional put (``If-None-Match: *``) on S3, so that
of two writers exactly one takes it, on one machine or on many. A writer holds it for the
conflict check and the completion of its instant only, never while its tasks write, so a wait
is short. The file names its holder; a lock whose holder process on this host is gone, or that
is older than ``hoodie.write.lock.filesystem.expire`` minutes, is stale and is broken (deleted,
then taken again only if absent), so that a process killed while holding it does not block the
table for ever. Breaking and releasing delete the lock only while it holds what the deleter read
(``Storage.delete_if_holds``: on S3 a conditional delete, on a local disk a delete in turns under
``flock``), so that of two writers breaking one stale lock, the slower does not delete the lock
the faster one took meanwhile. Writers on other hosts cannot see whether the holder lives: for
them only the expiry breaks a lock. Where no create-if-absent exists (S3 without botocore, other
stores) a table has no lock and needs ``hoodie.write.concurrency.mode=SINGLE_WRITER``.

Completing an instant needs no create-if-absent of its own: its file name is the instant time,
which one writer claimed exclusively (``transaction.heartbeat``), and it is written under this lock.

Example:
    >>> storage = Storage(warehouse + "/orders")
    >>> with TableLock(storage, {}, "commit 20260101000000000"):     # check conflicts, complete the instant
    ...     TableLock(storage, {"hoodie.write.lock.wait_time_ms": "100"}, "commit 20260101000000001").acquire()
    Traceback (most recent call last):
    hudiql.errors.WriteConflictError: could not take the lock of table .../orders within 100 ms
    (held by commit 20260101000000000 of process ...); nothing was written: run the statement again,
    or raise hoodie.write.lock.wait_time_ms
    >>> storage.exists(".hoodie/lock")                            # released when the block ends
    False
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from contextlib import AbstractContextManager, nullcontext

from hudiql.config import registry
from hudiql.errors import WriteConflictError
from hudiql.io.storage import Storage
from hudiql.layout import LOCK_FILE
from hudiql.transaction.process import WriterProcess


class TableLock:
    """The lock of the table at ``storage``, for one holder; a context manager."""

    def __init__(self, storage: Storage, settings: Mapping[str, str], holder: str) -> None:
        self.storage = storage
        self.holder = holder
        self.wait_ms = registry.number(settings, registry.LOCK_WAIT_MS)
        self.retry_ms = registry.number(settings, registry.LOCK_RETRY_WAIT_MS)
        self.expire_minutes = registry.number(settings, registry.LOCK_EXPIRE_MINUTES)
        self._content = b""

    def __enter__(self) -> TableLock:
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    def acquire(self) -> None:
        unavailable = self.storage.create_exclusive_unavailable
        if unavailable is not None:
            raise WriteConflictError(
                f"table {self.storage.base_uri}: hudiql cannot lock a table on this storage ({unavailable}); "
                f"if only one process writes it, SET {registry.CONCURRENCY_MODE}={registry.SINGLE_WRITER}"
            )
        deadline = time.monotonic() + self.wait_ms / 1000
        while not self.storage.create_exclusive(LOCK_FILE, self._claim()):
            content = self._read()
            if content == self._content:
                return  # ours after all: a retried request whose first attempt created it
            if self._break_if_stale(content):
                continue
            if time.monotonic() >= deadline:
                raise WriteConflictError(
                    f"could not take the lock of table {self.storage.base_uri} within {self.wait_ms} ms "
                    f"({self._describe_holder()}); nothing was written: run the statement again, or raise "
                    f"{registry.LOCK_WAIT_MS}"
                )
            time.sleep(self.retry_ms / 1000)

    def _claim(self) -> bytes:
        self._content = json.dumps({
            "holder": self.holder, **WriterProcess.current().as_dict(), "acquired_ms": int(time.time() * 1000),
        }).encode()
        return self._content

    def release(self) -> None:
        # Only our own lock: a stale-lock breaker may have taken it over meanwhile.
        self.storage.delete_if_holds(LOCK_FILE, self._content)

    def _read(self) -> bytes | None:
        return self.storage.read_if_exists(LOCK_FILE)

    def _describe_holder(self) -> str:
        holder = _holder(self._read())
        if holder is None:
            return "held by another writer"
        return f"held by {holder.get('holder')} of {WriterProcess.from_dict(holder) or 'an unknown process'}"

    def _break_if_stale(self, content: bytes | None) -> bool:
        """Delete the lock (read as ``content``) if its holder is gone or it expired; whether it was deleted."""
        holder = _holder(content)
        if content is None or holder is None:
            return content is None  # gone already: try again; unreadable: not ours to break
        process = WriterProcess.from_dict(holder)
        dead = process is not None and process.is_gone()
        age_ms = time.time() * 1000 - int(holder.get("acquired_ms", 0))
        expired = self.expire_minutes > 0 and age_ms > self.expire_minutes * 60_000
        return (dead or expired) and self.storage.delete_if_holds(LOCK_FILE, content)


def _holder(content: bytes | None) -> dict | None:
    try:
        return json.loads(content) if content else None
    except ValueError:
        return None  # not a lock hudiql wrote (its locks appear whole)


def commit_lock(storage: Storage, settings: Mapping[str, str], holder: str) -> AbstractContextManager:
    """The table lock, unless ``hoodie.write.concurrency.mode=SINGLE_WRITER`` promises one writer."""
    if registry.is_single_writer(settings):
        return nullcontext()
    return TableLock(storage, settings, holder)
