"""Errors a user can cause, and warnings. Each message says what to change.

The CLI prints a ``HudiqlError`` as one line and exits 1; anything else is a bug. A warning is
one line on stderr about something that did not stop the statement.
"""


from __future__ import annotations

import difflib
import re
import sys
from typing import NoReturn

#: The marker of the error a Spark task raises for a row without a record key (``record.keygen``),
#: which ``from_spark_error`` turns into one line.
NULL_KEY_ERROR = "HUDIQL_NULL_RECORD_KEY"


class HudiqlError(Exception):
    """Base class of every error caused by bad SQL, config or data."""


class SqlError(HudiqlError):
    """The SQL text cannot be parsed or is not supported."""


class TableNotFoundError(HudiqlError):
    """A statement names a table that does not exist."""


class TableExistsError(HudiqlError):
    """CREATE TABLE names a table that already exists."""


class OptionError(HudiqlError):
    """A table option is unknown, misspelt or inconsistent with the schema."""


class ColumnError(HudiqlError):
    """A statement names a column the table does not have, or leaves a required one out."""


class DataError(HudiqlError):
    """Rows cannot be written: a null record key, a value that cannot be cast, ..."""


class FormatError(HudiqlError):
    """Files on storage do not follow the Hudi format (corrupt, missing or unknown)."""


#: What to do about a damaged file a committed instant needs: no reader can rebuild it from the others.
RESTORE_FROM_BACKUP = "restore the file from a backup of the table"


def damaged_file(path: str, problem: str) -> FormatError:
    """The error for a file a committed instant needs that is missing or damaged, naming it."""
    return FormatError(f"{path} {problem}; the table needs it: {RESTORE_FROM_BACKUP}")


def unreadable_file(path: str, exc: BaseException) -> FormatError:
    """``damaged_file`` for a file a reader failed on, with the first line of the reader's error."""
    return damaged_file(path, f"cannot be read ({str(exc).splitlines()[0][:200]})")


class StorageError(HudiqlError):
    """Storage cannot be reached, or refuses access (credentials, endpoint)."""


class ExecutorSetupError(HudiqlError):
    """The executors of a cluster cannot run hudiql's tasks."""


class WriteConflictError(HudiqlError):
    """The timeline changed in a way that makes this write unsafe."""


class RunElsewhereError(WriteConflictError):
    """A planned instant (a compaction, a clustering) this process was to run completed, or was
    removed, by another writer meanwhile: there is nothing left to run."""


class LostConflictError(WriteConflictError):
    """This write lost an optimistic conflict to a write or plan that completed while it ran: the
    same statement run again on the new snapshot may commit (``transaction.retry``)."""


def from_spark_error(exc: BaseException) -> HudiqlError | None:
    """A user-facing error for a Spark failure caused by the data or the SQL, else ``None``.

    Spark wraps errors raised in tasks in long Java traces; we keep the one line that says
    what went wrong.
    """

    text = str(exc)
    if isinstance(exc, RecursionError) or "RecursionError" in text:
        return SqlError("the statement nests its expressions too deeply to plan; split it (a CTE or a view per part)")
    too_long = re.search(r"\[Errno 36\][^'\n]*'?([^'\n]*)", text)
    if too_long:
        path = too_long[1]
        longest = max(path.split("/"), key=len) if path else ""
        shown = f" ('{longest[:40]}...', {len(longest)} characters)" if longest else ""
        return DataError(f"a partition value makes a folder name longer than the file system allows{shown}: shorten the "
                         "value, or partition by another column")
    # A hudiql error raised inside a Spark task comes back inside the task's Python traceback.
    raised = re.search(r"hudiql\.errors\.(\w+): (.+)", text)
    if raised and isinstance(globals().get(raised[1]), type) and issubclass(globals()[raised[1]], HudiqlError):
        return globals()[raised[1]](re.split(r"\s*SQLSTATE:", raised[2])[0].strip())
    unreadable = re.search(r"\[FAILED_READ_FILE[.\w]*\] Encountered error while reading file (\S+?)\.?\s", text)
    if unreadable:
        return damaged_file(unreadable[1], "cannot be read")
    if NULL_KEY_ERROR in text:
        detail = text[text.index(NULL_KEY_ERROR) + len(NULL_KEY_ERROR) + 2:].splitlines()[0]
        detail = re.split(r"\.?\s*SQLSTATE", detail)[0].rstrip(".\"' ")
        return DataError(f"{detail}; every row needs a record key value")
    if type(exc).__name__ in ("AnalysisException", "ParseException"):
        return SqlError(spark_message(text))
    for marker in ("CAST_INVALID_INPUT", "CAST_OVERFLOW", "NUMERIC_VALUE_OUT_OF_RANGE", "ARITHMETIC_OVERFLOW",
                   "INVALID_ARRAY_INDEX", "DIVIDE_BY_ZERO"):
        if marker in text:
            line = next((ln for ln in text.splitlines() if marker in ln), text.splitlines()[0])
            return DataError(spark_message(line[line.index("["):] if "[" in line else line))
    return None


def spark_message(text: str) -> str:
    """The first line of a Spark error without what only makes sense for the SQL hudiql gave
    Spark (positions in the rewritten text, its snapshot view names) or for Spark's developers.

    Example:
        >>> spark_message("[UNRESOLVED_COLUMN] `x` cannot be resolved. SQLSTATE: 42703; line 1 pos 261;\\n'Project")
        '[UNRESOLVED_COLUMN] `x` cannot be resolved'
    """
    line = text.strip().splitlines()[0] if text.strip() else type(text).__name__
    line = re.sub(r";?\s*line \d+ pos \d+;?|\s*\(line \d+, pos \d+\)", "", line)
    line = re.sub(r"\.?\s*SQLSTATE: \w+", "", line)
    line = re.sub(r"`?__hudiql_snapshot_\d+_\d+`?", "the table", line)
    return line.strip().rstrip(";")


def closest(name: str, candidates: list[str] | set[str]) -> str | None:
    """The candidate most like ``name``, ignoring case (``precombinekey`` -> ``preCombineField``):
    the "did you mean" of an error."""
    lowered = {c.lower(): c for c in candidates}
    match = difflib.get_close_matches(name.lower(), sorted(lowered), n=1, cutoff=0.5)
    return lowered[match[0]] if match else None


def raise_user_error(exc: BaseException) -> NoReturn:
    """Re-raise ``exc``: as the ``HudiqlError`` it stands for when Spark failed on bad data or SQL."""
    if isinstance(exc, HudiqlError):
        raise exc
    translated = from_spark_error(exc)
    if translated is None:
        raise exc
    raise translated from None


def warn(message: str) -> None:
    """One ``Warning: ...`` line on stderr."""
    print(f"Warning: {message}", file=sys.stderr)
