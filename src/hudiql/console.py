"""What ``hudiql sql`` prints and how it runs statements: shared by the one-shot CLI (``-e`` /
``-f``) and the interactive shell, which both import this module (and it imports neither).

Output rules (one place decides them):
- query rows go to stdout tab-separated, as spark-sql prints them (``NULL`` for nulls); a header
  line of column names only after ``SET hudiql.cli.print.header=true``;
- INSERT / MERGE / UPDATE / DELETE print their counts as one line of tab-separated
  ``name=value`` pairs (``num_affected_rows=2	num_inserted_rows=2``), header or not, so that a
  bare ``2	2`` never leaves the reader guessing;
- ``Time taken: ...`` goes to stderr after each statement;
- a failing statement prints one ``Error: ...`` line; when the text had several statements it names
  the statement (``statement 3 (line 5, column 1)``) and says how many before it completed, and
  the statements after it do not run;
- Ctrl-C during a statement cancels its Spark jobs and prints one line (a second Ctrl-C while
  the cancel is under way leaves at once);
- Spark's console progress bar shows on stderr only when stderr is a terminal, so pipes and
  files stay clean.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from hudiql.config import registry
from hudiql.errors import HudiqlError, SqlError, from_spark_error
from hudiql.sql import statements as S
from hudiql.sql.parser import parse

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from hudiql.session import Session

EXIT_OK, EXIT_FAILED = 0, 1
#: 128 + SIGINT, as shells report a command stopped by Ctrl-C.
EXIT_INTERRUPTED = 130
DML = (S.Insert, S.Merge, S.Update, S.Delete)
#: How often the cancel of an interrupted statement is repeated: a statement may start another
#: Spark job after its running one was cancelled (driver-side steps between jobs are never cut).
CANCEL_INTERVAL = 0.2


def format_rows(df: DataFrame, named: bool = False) -> list[str]:
    """Rows as spark-sql prints them (``name=value`` cells when ``named``); values are formatted
    by Spark, in tasks."""
    from pyspark.sql import functions as F

    cells = [F.coalesce(F.col(f"`{c}`").cast("string"), F.lit("NULL")) for c in df.columns]
    if named:
        cells = [F.concat(F.lit(f"{c}="), cell) for c, cell in zip(df.columns, cells)]
    return ["\t".join(r) for r in df.select(*cells).collect()]


class _Py4jNoise(logging.Filter):
    """Py4J logs an interrupted call with its traceback on the root logger; hudiql says it in one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        return f"{os.sep}py4j{os.sep}" not in record.pathname


def quiet(session: Session) -> None:
    """Errors reach the user as one hudiql line: silence Spark's and Py4J's own error records."""
    session.spark.sparkContext.setLogLevel("ERROR")
    quiet_python_errors()


def quiet_python_errors() -> None:
    """Silence the error records PySpark and Py4J log on the Python side before the error reaches
    its caller: PySpark's query-context loggers print each failed query's Java stack trace as JSON
    (about 10 KB), and Py4J an interrupted call's traceback."""
    from pyspark.logger import PySparkLogger

    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        PySparkLogger.getLogger(name).disabled = True
    logging.getLogger("py4j").setLevel(logging.CRITICAL)
    root = logging.getLogger()
    if not any(isinstance(f, _Py4jNoise) for f in root.filters):
        root.addFilter(_Py4jNoise())


def parse_script(text: str, source: str | None = None) -> list[S.Statement]:
    """Every statement of ``text``, parsed before Spark starts, so that a typo costs no JVM start;
    errors start with ``source`` (a file's name) when given."""
    try:
        return parse(text)
    except SqlError as e:
        raise SqlError(f"{source}: {e}" if source else str(e)) from None


def read_script(path: str) -> str:
    """The text of a SQL file (``-f``, ``-i``); an unreadable file is one clear error."""
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as e:
        raise SqlError(f"cannot read {path}: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise SqlError(f"cannot read {path}: not UTF-8 text (byte {e.start})") from None


def progress_conf(err: TextIO) -> dict[str, str]:
    """Spark conf for a progress bar on ``err`` when it is a terminal (none in pipes and files)."""
    return {"spark.ui.showConsoleProgress": "true"} if err.isatty() else {}


def open_session(warehouse: str, err: TextIO, announce: bool, hint: str = "") -> Session:
    """A quiet session for the console; says on ``err`` that Spark is starting when ``announce``
    (its start takes seconds to tens of seconds), and when it has started, followed by ``hint``."""
    from hudiql.session import connect

    if announce:
        err.write("Starting Spark...\n")
        err.flush()
    started = time.monotonic()
    session = connect(warehouse=warehouse, conf=progress_conf(err))
    quiet(session)
    # pyspark's own SIGINT handler cancels jobs through the Py4J connection the interrupted call
    # is still reading, which breaks it; Console cancels from the main thread instead.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if announce:
        err.write(f"Spark {session.spark.version} started in {time.monotonic() - started:.1f} seconds{hint}\n")
        err.flush()
    return session


@dataclass
class Outcome:
    """How a run of statements ended: ``completed`` of them ran; ``error`` is the printed line's
    text when one failed; ``interrupted`` when Ctrl-C stopped it."""

    completed: int
    error: str | None = None
    interrupted: bool = False

    @property
    def exit_code(self) -> int:
        if self.interrupted:
            return EXIT_INTERRUPTED
        return EXIT_FAILED if self.error else EXIT_OK


def _place(statement: S.Statement, number: int) -> str:
    """``statement N (line L, column C)``, as parse errors name a statement (line and column in
    the user's text, when the parser recorded them)."""
    line, column = getattr(statement, "line", None), getattr(statement, "column", None)
    return f"statement {number} (line {line}, column {column})" if line else f"statement {number}"


class _Cancelled(Exception):
    """The statement was interrupted by Ctrl-C and its jobs cancelled."""


class Console:
    """Runs parsed statements on ``session``, one at a time, and prints what they return."""

    def __init__(self, session: Session, out: TextIO, err: TextIO,
                 format_rows: Callable[..., list[str]] = format_rows) -> None:
        self.session = session
        self.out = out
        self.err = err
        self.format_rows = format_rows
        self._worker = _Worker()

    def run(self, statements: Sequence[S.Statement], source: str | None = None) -> Outcome:
        """Run ``statements`` in order; stops at the first that fails or is interrupted. Errors
        start with ``source`` (an init file's name) when given."""
        for done, statement in enumerate(statements):
            try:
                self._run_one(statement)
            except _Cancelled:
                return self._stop(statements, statement, done, "cancelled (Ctrl-C)", source, interrupted=True)
            except KeyboardInterrupt:  # Ctrl-C between statements, while printing
                return self._stop(statements, statement, done, "interrupted (Ctrl-C)", source, interrupted=True)
            except HudiqlError as e:
                return self._stop(statements, statement, done, str(e), source)
            except Exception as e:
                # Spark failing on the data while the rows are fetched (a cast, a damaged file) says
                # so in hudiql's words; anything else (a bug, the environment) is still one line.
                translated = from_spark_error(e)
                first = str(e).strip().splitlines()[0] if str(e).strip() else ""
                message = str(translated) if translated is not None else f"{type(e).__name__}: {first}"
                return self._stop(statements, statement, done, message, source)
        return Outcome(len(statements))

    def _stop(self, statements: Sequence[S.Statement], statement: S.Statement, done: int, message: str,
              source: str | None, interrupted: bool = False) -> Outcome:
        if len(statements) > 1:
            message = f"{_place(statement, done + 1)}: {message}; {done} statement(s) before it completed"
        self.error(f"{source}: {message}" if source else message)
        return Outcome(done, message, interrupted)

    def error(self, message: str) -> None:
        self.err.write(f"Error: {message}\n")
        self.err.flush()

    def _run_one(self, statement: S.Statement) -> None:
        started = time.monotonic()
        header = registry.flag(self.session.conf, registry.PRINT_HEADER)
        lines, fetched = self._worker.call(lambda: self._lines(statement, header), self._cancel)
        for line in lines:
            self.out.write(line + "\n")
        self.out.flush()
        self.err.write(f"Time taken: {time.monotonic() - started:.3f} seconds, Fetched {fetched} row(s)\n")
        self.err.flush()

    def _lines(self, statement: S.Statement, header: bool) -> tuple[list[str], int]:
        """The lines a statement prints and its number of rows; runs on the worker thread."""
        result = self.session.run(statement)
        if not result.is_rows:
            return [], 0
        if isinstance(statement, DML):
            rows = self.format_rows(result.df, named=True)
            return rows, len(rows)
        rows = self.format_rows(result.df)
        return (["\t".join(result.df.columns)] if header else []) + rows, len(rows)

    def _cancel(self) -> None:
        self.session.spark.sparkContext.cancelAllJobs()


class _Worker:
    """One background thread that runs the statements, so that Ctrl-C reaches the main thread
    while it waits, never in the middle of a Py4J call or of a write's driver-side step."""

    def __init__(self) -> None:
        self._tasks: list[tuple[Callable[[], Any], Future]] = []
        self._ready = threading.Condition()
        threading.Thread(target=self._loop, name="hudiql-statement", daemon=True).start()

    def _loop(self) -> None:
        while True:
            with self._ready:
                while not self._tasks:
                    self._ready.wait()
                task, future = self._tasks.pop(0)
            try:
                future.set_result(task())
            except BaseException as e:  # handed to the main thread, which reports it
                future.set_exception(e)

    def call(self, task: Callable[[], Any], cancel: Callable[[], None]) -> Any:
        """``task()``'s result; on Ctrl-C, ``cancel()`` until the task ends, then ``_Cancelled``
        (or its result, if it completed before the cancel reached it)."""
        future: Future = Future()
        with self._ready:
            self._tasks.append((task, future))
            self._ready.notify()
        try:
            return future.result()
        except KeyboardInterrupt:
            pass
        previous = signal.signal(signal.SIGINT, _leave_now)
        try:
            while not future.done():
                cancel()
                time.sleep(CANCEL_INTERVAL)
        finally:
            signal.signal(signal.SIGINT, previous)
        if future.exception() is None:
            return future.result()
        raise _Cancelled


def _leave_now(signum: int, frame: Any) -> None:
    """A second Ctrl-C while a cancel is under way: leave at once, as spark-sql does."""
    sys.stderr.write("Error: interrupted again; leaving without waiting for the cancel\n")
    sys.stderr.flush()
    os._exit(EXIT_INTERRUPTED)
