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
        began = time.monotonic()
        try:
            return attempt()
        except LostConflictError as exc:
            lasted = time.monotonic() - began
            given = settings()
            retries = 0 if registry.is_single_writer(given) else registry.number(given, CONFLICT_RETRIES)
            if tried > retries:
                if retries:
                    raise LostConflictError(f"{exc} (tried {tried} times; {CONFLICT_RETRIES}={retries})") from None
                raise
            warn(f"{str(exc).splitlines()[0]}; running the statement again on the new snapshot "
                 f"(attempt {tried + 1} of {retries + 1})")
            time.sleep(backoff_seconds(tried, lasted, registry.number(given, LOCK_RETRY_WAIT_MS)))


def backoff_seconds(tried: int, lasted: float, wait_ms: int) -> float:
    """How long a statement waits before its next attempt, after losing its ``tried``-th one,
    which ``lasted`` seconds: a random wait of up to the lost attempt's length (at least
    ``wait_ms``), doubled after each loss. Writers that keep writing the same file groups lose to
    each other as long as their attempts overlap; spread over an attempt's length, the losers
    meet again less often, and each gets a turn.

    >>> all(0 <= backoff_seconds(2, 4.0, 50) <= 8.0 for _ in range(100))
    True
    """
    return random.uniform(0, max(lasted, wait_ms / 1000) * 2 ** (tried - 1))
