"""What a statement run from Jinja gives back, as dbt gives it to macros: ``run_query(sql)`` and
``load_result(name).table`` are a table of rows and columns shaped as dbt's agate table is used
(``.rows``, ``.columns['name'].values()``, ``.column_names``, ``print_table()``), and each statement
has an ``AdapterResponse`` (``rows_affected``, ``code``).

A row is a ``QueryRow``: by position (``row[0]``) or by name (``row['id']``), as an agate row.

Example:
    >>> from pyspark.sql import Row
    >>> table = QueryResult(["id", "name"], [Row(id=1, name="a"), Row(id=2, name="b")])
    >>> table.columns["name"].values(), table.columns[0].name, table.rows[1]["id"], len(table)
    (('a', 'b'), 'id', 2, 2)
    >>> table[0][1], table.column_names
    ('a', ('id', 'name'))
    >>> QueryResult(["n", "f", "s"], [Row(n=1234567, f=1.5, s=None), Row(n=2, f=1234.25, s="q")]).print_table()
    |       n |        f | s |
    | ------- | -------- | - |
    | 1234567 |     1.50 |   |
    |       2 | 1,234.25 | q |
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from pyspark.sql import Row


@dataclass(frozen=True)
class QueryColumn:
    """One column of a ``QueryResult``."""

    name: str
    _values: tuple

    def values(self) -> tuple:
        return self._values

    def values_distinct(self) -> tuple:
        return tuple(dict.fromkeys(self._values))

    def values_without_nulls(self) -> tuple:
        return tuple(v for v in self._values if v is not None)

    def __getitem__(self, index: int) -> Any:
        return self._values[index]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)


class _Columns:
    """A result's columns, by position or by name."""

    def __init__(self, columns: list[QueryColumn]) -> None:
        self._columns = columns

    def __getitem__(self, key: int | str) -> QueryColumn:
        if isinstance(key, str):
            for column in self._columns:
                if column.name == key:
                    return column
            raise KeyError(f"no column '{key}'; columns are: {', '.join(c.name for c in self._columns)}")
        return self._columns[key]

    def __iter__(self) -> Iterator[QueryColumn]:
        return iter(self._columns)

    def __len__(self) -> int:
        return len(self._columns)

    def keys(self) -> list[str]:
        return [c.name for c in self._columns]

    def values(self) -> list[QueryColumn]:
        return list(self._columns)

    def items(self) -> list[tuple[str, QueryColumn]]:
        return [(c.name, c) for c in self._columns]

    def get(self, name: str, default: Any = None) -> QueryColumn | Any:
        return next((c for c in self._columns if c.name == name), default)


class QueryRow(tuple):
    """One row, by position or by column name, as an agate row (``row[0]``, ``row['id']``,
    ``keys()``, ``values()``, ``items()``, ``get()``, ``dict()``; ``in`` looks at its values)."""

    _names: tuple[str, ...]

    def __new__(cls, names: tuple[str, ...], values: Iterator[Any] | tuple) -> QueryRow:
        row = super().__new__(cls, values)
        row._names = names
        return row

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            if key not in self._names:
                raise KeyError(key)
            return tuple.__getitem__(self, self._names.index(key))
        return tuple.__getitem__(self, key)

    def keys(self) -> tuple[str, ...]:
        return self._names

    def values(self) -> tuple:
        return tuple(self)

    def items(self) -> list[tuple[str, Any]]:
        return list(zip(self._names, self))

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key in self._names else default

    def dict(self) -> dict[str, Any]:
        return dict(self.items())


class QueryResult:
    """The rows of a query, with its column names (a statement that returns nothing: no rows)."""

    def __init__(self, names: list[str], rows: list[Row]) -> None:
        self.column_names = tuple(names)
        self.rows = [QueryRow(self.column_names, tuple(r)) for r in rows]
        self.columns = _Columns([QueryColumn(n, tuple(r[i] for r in self.rows)) for i, n in enumerate(names)])

    def __getitem__(self, index: int) -> QueryRow:
        return self.rows[index]

    def __iter__(self) -> Iterator[QueryRow]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def as_matrix(self) -> list[list[Any]]:
        """Each row as a list (``load_result(name)['data']``)."""
        return [list(r) for r in self.rows]

    def print_table(self, max_rows: int | None = 20, max_columns: int | None = 6, output: Any = None,
                    max_column_width: int | None = 20, max_precision: int | None = 3, **_: Any) -> None:
        """The rows as agate's ``print_table`` draws them (``dbt show``): a Markdown table of the
        first ``max_columns`` columns and ``max_rows`` rows, numbers right-aligned with thousands
        separators and the column's decimal places (at most ``max_precision``, then ``…``), other
        non-text values right-aligned too, long values cut at ``max_column_width`` with ``...``."""
        rows = self.rows if max_rows is None else self.rows[:max_rows]
        shown = len(self.column_names) if max_columns is None else max_columns
        names = [_cut(n, max_column_width) for n in self.column_names[:shown]]
        kinds = [_kind(c.values()[:len(rows)]) for c in list(self.columns)[:shown]]
        formats = [_number_format(c.values()[:len(rows)], max_precision) if k == "number" else None
                   for c, k in zip(list(self.columns)[:shown], kinds)]
        cells = [[_cut(_cell(v, f), max_column_width) for v, f in zip(list(r)[:shown], formats)] for r in rows]
        if shown < len(self.column_names):
            names.append("...")
            kinds.append("text")
            cells = [[*c, "..."] for c in cells]
        widths = [max([len(n), *(len(c[j]) for c in cells)]) for j, n in enumerate(names)]

        def line(values: list[str]) -> str:
            return "|" + "|".join(f" {v.ljust(w) if k == 'text' else v.rjust(w)} " for v, w, k in zip(values, widths, kinds)) + "|"

        out = [line(names), "| " + " | ".join("-" * w for w in widths) + " |", *(line(c) for c in cells)]
        if max_rows is not None and len(self.rows) > max_rows:
            out.append(line(["..."] * len(names)))
        print("\n".join(out), file=output)

    def to_json(self) -> str:
        """The rows as agate's ``to_json`` writes them (``dbt show --output json``): decimals as floats."""
        def plain(value: Any) -> Any:
            if isinstance(value, (bool, int, str)) or value is None:
                return value
            if isinstance(value, (float, Decimal)):
                return float(value)
            return str(value) if not isinstance(value, (date, datetime)) else value.isoformat()
        return json.dumps([{n: plain(v) for n, v in zip(self.column_names, r)} for r in self.rows])


def _kind(values: tuple) -> str:
    """A column as dbt's agate table types it: number (decimals and floats, drawn with separators
    and places), text, or another kind (whole numbers, dates, booleans: as written, right-aligned)."""
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, (float, Decimal)) or isinstance(v, int) and not isinstance(v, bool) for v in present) \
            and not all(isinstance(v, int) for v in present):
        return "number"
    if not present or any(isinstance(v, str) for v in present):
        return "text"
    return "other"


def _number_format(values: tuple, max_precision: int | None) -> tuple[int, bool]:
    """(decimal places, cut): the most places any value of the column has, up to ``max_precision``."""
    places = 0
    for v in values:
        if v is None or isinstance(v, float) and not math.isfinite(v):
            continue
        exponent = Decimal(str(v)).normalize().as_tuple().exponent
        places = max(places, -exponent if isinstance(exponent, int) and exponent < 0 else 0)
    if max_precision is not None and places > max_precision:
        return max_precision, True
    return places, False


def _cell(value: Any, number: tuple[int, bool] | None) -> str:
    if value is None:
        return ""
    if number is not None and not (isinstance(value, float) and not math.isfinite(value)):
        places, cut = number
        return f"{Decimal(str(value)):,.{places}f}" + ("…" if cut else "")
    return str(value)


def _cut(text: str, width: int | None) -> str:
    return text if width is None or len(text) <= width else text[:width - 3] + "..."


@dataclass(frozen=True)
class AdapterResponse:
    """What the warehouse said of a statement (``load_result(name)['response']``)."""

    _message: str
    code: str = ""
    rows_affected: int | None = None

    def __str__(self) -> str:
        return self._message
