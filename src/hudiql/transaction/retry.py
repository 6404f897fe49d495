"""A statement that loses an optimistic write conflict (``LostConflictError``: not a lock it could
not take, nor a plan another process runs) runs again on the new snapshot, as Hudi's
Spark writer runs a batch again (``hoodie.write.num.retries.on.conflict.failures``): the lost
attempt was rolled back whole, so running the statement again is running it once. Only a
statement that keeps losing fails, and its error says how often it tried.

Example:
    >>> attempts = []
    >>> def write():
    ...     attempts.append(1)
    ...     if len(attempts) < 3:
    ...         raise LostConflictError("a concurrent commit changed file group f1")
    ...     return "committed"
    >>> retrying(write, lambda: {CONFLICT_RETRIES: "3", LOCK_RETRY_WAIT_MS: "1"}), len(attempts)
    ('committed', 3)
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from typing import TypeVar

from hudiql.config import registry
from hudiql.config.registry import CONFLICT_RETRIES, LOCK_RETRY_WAIT_MS
from hudiql.errors import LostConflictError, warn

Result = TypeVar("Result")


def retrying(attempt: Callable[[], Result], settings: Callable[[], Mapping[str, str]]) -> Result:
    """``attempt()``, run again after each lost write conflict, up to the retries the statement's
    ``settings()`` allow (none for a single writer, which has nobody to lose to); the settings are
    read after a first lost conflict only."""
    tried = 0
    while True:
        tried += 1
        try:
            return attempt()
        except LostConflictError as exc:
            given = settings()
            single = registry.choice(given, registry.CONCURRENCY_MODE) == registry.SINGLE_WRITER
            retries = 0 if single else registry.number(given, CONFLICT_RETRIES)
            if tried > retries:
                if retries:
                    raise LostConflictError(f"{exc} (tried {tried} times; {CONFLICT_RETRIES}={retries})") from None
                raise
            warn(f"{str(exc).splitlines()[0]}; running the statement again on the new snapshot "
                 f"(attempt {tried + 1} of {retries + 1})")
            # A growing, jittered wait: writers that lost to each other do not meet again at once.
            wait_ms = registry.number(given, LOCK_RETRY_WAIT_MS)
            time.sleep(wait_ms * 2 ** (tried - 1) * random.uniform(0.5, 1.5) / 1000)
