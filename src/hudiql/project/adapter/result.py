"""What a statement run from Jinja gives back, as dbt gives it to macros: ``run_query(sql)`` and
``load_result(name).table`` are a table of rows and columns shaped as dbt's agate table is used
(``.rows``, ``.columns['name'].values()``, ``.column_names``, ``print_table()``), and each statement
has an ``AdapterResponse`` (``rows_affected``, ``code``).

A row is Spark's ``Row``: by position (``row[0]``) or by name (``row['id']``), as an agate row.

Example:
    >>> from pyspark.sql import Row
    >>> table = QueryResult(["id", "name"], [Row(id=1, name="a"), Row(id=2, name="b")])
    >>> table.columns["name"].values(), table.columns[0].name, table.rows[1]["id"], len(table)
    (('a', 'b'), 'id', 2, 2)
    >>> table[0][1], table.column_names
    ('a', ('id', 'name'))
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Row


@dataclass(frozen=True)
class QueryColumn:
    """One column of a ``QueryResult``."""

    name: str
    _values: tuple

    def values(self) -> tuple:
        return self._values

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


class QueryResult:
    """The rows of a query, with its column names (a statement that returns nothing: no rows)."""

    def __init__(self, names: list[str], rows: list[Row]) -> None:
        self.column_names = tuple(names)
        self.rows = rows
        self.columns = _Columns([QueryColumn(n, tuple(r[i] for r in rows)) for i, n in enumerate(names)])

    def __getitem__(self, index: int) -> Row:
        return self.rows[index]

    def __iter__(self) -> Iterator[Row]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def as_matrix(self) -> list[list[Any]]:
        """Each row as a list (``load_result(name)['data']``)."""
        return [list(r) for r in self.rows]

    def print_table(self, max_rows: int = 20, max_columns: int = 6, output: Any = None, **_: Any) -> None:
        """Print the first rows, as agate's ``print_table`` does for a macro's debugging."""
        names = self.column_names[:max_columns]
        lines = [" | ".join(names)]
        lines += [" | ".join(str(v) for v in list(r)[:max_columns]) for r in self.rows[:max_rows]]
        print("\n".join(lines), file=output)


@dataclass(frozen=True)
class AdapterResponse:
    """What the warehouse said of a statement (``load_result(name)['response']``)."""

    _message: str
    code: str = ""
    rows_affected: int | None = None

    def __str__(self) -> str:
        return self._message
