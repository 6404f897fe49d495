"""dbt's console output: timestamped lines, ``N of M`` progress lines padded with dots, the summary.

Example:
    >>> progress_line(1, 5, "OK created sql table model default.fct_orders", "OK", 2.314)
    '1 of 5 OK created sql table model default.fct_orders ............................. [OK in 2.31s]'
"""

from __future__ import annotations

import sys
import threading
import time
from typing import TextIO

LINE_WIDTH = 80


def progress_line(index: int, total: int, message: str, status: str, seconds: float | None = None) -> str:
    """``1 of 5 OK created ... [OK in 2.31s]``: dots fill the line to dbt's 80 columns."""
    prefix = f"{index} of {total} {message} "
    timing = f" in {seconds:0.2f}s" if seconds is not None else ""
    return f"{prefix.ljust(LINE_WIDTH, '.')} [{status}{timing}]"


class Console:
    """Writes lines with dbt's ``HH:MM:SS  `` prefix; safe to call from several threads."""

    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out or sys.stdout
        self._lock = threading.Lock()

    def line(self, text: str = "") -> None:
        with self._lock:
            self.out.write(f"{time.strftime('%H:%M:%S')}  {text}\n")
            self.out.flush()

    def progress(self, index: int, total: int, message: str, status: str, seconds: float | None = None) -> None:
        self.line(progress_line(index, total, message, status, seconds))


def plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def duration(seconds: float) -> str:
    """``0 hours 1 minutes and 4.20 seconds (64.20s)``, as dbt prints a run's length."""
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{int(hours)} hours {int(minutes)} minutes and {secs:0.2f} seconds ({seconds:0.2f}s)"
