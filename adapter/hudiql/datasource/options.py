"""The options of ``spark.read.format("hudi")``: what kind of read, checked before anything is read.

Spark hands a Python data source its options with lower-case keys; each read option is one of
the session keys of ``table.keys`` (the same names as ``SET``), or Hudi's data source spelling
``as.of.instant`` for time travel. Anything else is one error naming the closest valid option.

Example:
    >>> read_options({"path": "/t", "hoodie.datasource.query.type": "read_optimized"})
    ReadOptions(path='/t', query_type='read_optimized', as_of='', begin='', end='', fallback=False)
    >>> read_options({"path": "/t", "as.of.instant": "2024-05-01"}).as_of
    '2024-05-01'
    >>> read_options({"path": "/t", "as.of.instnt": "2024-05-01"})
    Traceback (most recent call last):
    ...
    hudiql.errors.OptionError: unknown option 'as.of.instnt' of format("hudi"); did you mean 'as.of.instant'?
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from hudiql.errors import OptionError
from hudiql.table import keys
from hudiql.table.keys import TIME_TRAVEL_OPTION

PATH_OPTION = "path"

SNAPSHOT, READ_OPTIMIZED, INCREMENTAL = "snapshot", "read_optimized", "incremental"

#: The session keys a read takes, by Spark's lower-cased spelling.
_READ_KEYS = {k.lower(): k for k in (keys.QUERY_TYPE, keys.AS_OF_INSTANT, keys.BEGIN_INSTANT, keys.END_INSTANT,
                                     keys.INCREMENTAL_FALLBACK, keys.INCLUDE_DELETES)}


@dataclass(frozen=True)
class ReadOptions:
    """A checked read: the table's path, the query type, and its instants (``""``: not given)."""

    path: str
    query_type: str
    as_of: str
    begin: str
    end: str
    fallback: bool


def read_options(options: Mapping[str, str]) -> ReadOptions:
    """``options`` as given to ``load``, checked; raises ``OptionError`` naming the first bad one."""
    given: dict[str, str] = {}
    for name, value in options.items():
        key = _READ_KEYS.get(name.lower())
        if name.lower() == TIME_TRAVEL_OPTION:
            key = keys.AS_OF_INSTANT
        elif key is None and name.lower() != PATH_OPTION:
            guess = keys.closest(name, [*_READ_KEYS.values(), TIME_TRAVEL_OPTION])
            hint = f"; did you mean '{guess}'?" if guess else f"; a read takes {', '.join(sorted(_READ_KEYS.values()))} and {TIME_TRAVEL_OPTION}"
            raise OptionError(f"unknown option '{name}' of format(\"hudi\"){hint}")
        if key is not None:
            keys.validate_session_option(key, value)
            given[key] = value
    path = options.get(PATH_OPTION)
    if not path:
        raise OptionError('format("hudi") needs the table\'s path: spark.read.format("hudi").load("/path/to/table")')
    if keys.setting(given, keys.INCLUDE_DELETES).lower() == "true":
        raise OptionError(
            f'{keys.INCLUDE_DELETES}=true is not supported by format("hudi"); read deleted records with hudiql SQL: '
            f"hudiql.connect(spark=spark).sql(\"SET {keys.INCLUDE_DELETES}=true\"), then SELECT ... FROM "
            f"hudi_table_changes('{path}', 'latest_state', '<begin>')"
        )
    read = ReadOptions(
        path=path,
        query_type=keys.setting(given, keys.QUERY_TYPE).lower(),
        as_of=keys.setting(given, keys.AS_OF_INSTANT).strip(),
        begin=keys.setting(given, keys.BEGIN_INSTANT).strip(),
        end=keys.setting(given, keys.END_INSTANT).strip(),
        fallback=keys.setting(given, keys.INCREMENTAL_FALLBACK).lower() == "true",
    )
    if read.query_type == INCREMENTAL and not read.begin:
        raise OptionError(f"an incremental read needs .option('{keys.BEGIN_INSTANT}', '<instant>' or 'earliest')")
    if read.query_type == INCREMENTAL and read.as_of:
        raise OptionError(f"an incremental read takes {keys.BEGIN_INSTANT} and {keys.END_INSTANT}, not "
                          f"{TIME_TRAVEL_OPTION}; give one kind of read")
    if read.query_type != INCREMENTAL and (read.begin or read.end):
        raise OptionError(f"{keys.BEGIN_INSTANT} and {keys.END_INSTANT} need .option('{keys.QUERY_TYPE}', 'incremental')")
    return read
