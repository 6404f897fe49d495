"""The SQL of a dbt unit test, as dbt-core 1.11's ``unit`` materialization builds it: each input's
rows as a SELECT typed like the input (``fixture_sql``), the expected rows typed like the model's
output (``expected_sql``), and one query returning both, marked ``actual`` or ``expected``
(``unit_test_sql``); the runner compares the two sets of rows, ignoring order.

Example:
    >>> types = {"id": "int", "name": "string"}
    >>> print(fixture_sql([{"id": 1}, {"id": 2, "name": "it's"}], types, "orders"))
    select cast(1 as int) as `id`, cast(null as string) as `name`
    union all
    select cast(2 as int) as `id`, cast('it\\'s' as string) as `name`
    >>> print(fixture_sql([], types, "orders"))
    select cast(null as int) as `id`, cast(null as string) as `name` limit 0
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hudiql.project.adapter.materialization import quote, sql_string
from hudiql.project.errors import CompilationError

#: The column that tells the two halves of ``unit_test_sql``'s rows apart.
MARKER = "actual_or_expected"


def literal(value: Any, data_type: str) -> str:
    """One fixture value cast to its column's type (dbt's ``format_row`` and ``safe_cast``):
    text quoted, NULL as ``null``; a YAML date or time as its text.

    >>> literal("2024-01-01", "date"), literal(None, "int"), literal(True, "boolean")
    ("cast('2024-01-01' as date)", 'cast(null as int)', 'cast(true as boolean)')
    """
    if value is None:
        text = "null"
    elif isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, (int, float)):
        text = repr(value)
    else:
        text = sql_string(value)
    return f"cast({text} as {data_type})"


def _row(row: Mapping[str, Any], types: Mapping[str, str], fixture: str | None) -> dict[str, str]:
    """``fixture``: the input whose rows these are, as dbt names it in errors; None: the expected output."""
    out = {}
    for name, value in row.items():
        column = str(name).lower()
        if column not in types:
            if fixture is None:
                raise CompilationError(f"Invalid column name: '{name}' in unit test expected output. Accepted "
                                       f"columns for the expected output are: {list(types)}")
            raise CompilationError(f"Invalid column name: '{name}' in unit test fixture for '{fixture}'. Accepted "
                                   f"columns for '{fixture}' are: {list(types)}")
        out[column] = literal(value, types[column])
    return out


def _select(values: Mapping[str, str]) -> str:
    return "select " + ", ".join(f"{v} as {quote(c)}" for c, v in values.items())


def fixture_sql(rows: Sequence[Mapping[str, Any]], types: Mapping[str, str], fixture: str) -> str:
    """An input's rows (of the input named ``fixture``), with every column of the input (``types``:
    lower-cased name -> type); a column a row does not give is NULL."""
    empty = {c: f"cast(null as {t})" for c, t in types.items()}
    if not rows:
        return _select(empty) + " limit 0"
    return "\nunion all\n".join(_select({**empty, **_row(row, types, fixture)}) for row in rows)


def expected_sql(rows: Sequence[Mapping[str, Any]], types: Mapping[str, str]) -> str:
    """The expected rows with the columns they give, typed as the model returns them."""
    if not rows:
        return "select * from dbt_internal_unit_test_actual limit 0"
    return "\nunion all\n".join(_select(_row(row, types, None)) for row in rows)


def unit_test_sql(model_sql: str, expected: str, columns: Sequence[str]) -> str:
    """One query of the model's rows and the expected ones (the ``columns`` the expected rows give),
    each marked in ``actual_or_expected``."""
    listed = ", ".join(quote(c) for c in columns)
    return (f"with dbt_internal_unit_test_actual as (\n  select {listed}, 'actual' as {MARKER}\n"
            f"  from (\n{model_sql}\n  ) _dbt_internal_unit_test_actual\n),\n"
            f"dbt_internal_unit_test_expected as (\n  select {listed}, 'expected' as {MARKER}\n"
            f"  from (\n{expected}\n  ) _dbt_internal_unit_test_expected\n)\n"
            "select * from dbt_internal_unit_test_actual\nunion all\nselect * from dbt_internal_unit_test_expected")


def difference(columns: Sequence[str], actual: Sequence[tuple], expected: Sequence[tuple]) -> str:
    """The rows only one side has (as many times as it has more of them), drawn as dbt's diff:
    ``+++`` a row the model returned and the test did not expect, ``---`` one expected and missing;
    empty when both sides hold the same rows in any order.

    >>> print(difference(["id", "v"], [(1, "b"), (2, "c")], [(1, "a"), (2, "c")]))
    @@ ,id,v
    +++,1,b
    ---,1,a
    >>> difference(["id"], [(1,), (2,)], [(2,), (1,)])
    ''
    """
    def counted(rows: Sequence[tuple]) -> dict[str, tuple[tuple, int]]:
        out: dict[str, tuple[tuple, int]] = {}
        for row in rows:
            key = repr(row)
            out[key] = (row, out.get(key, (row, 0))[1] + 1)
        return out

    have, want = counted(actual), counted(expected)
    lines = []
    for mark, side, other in (("+++", have, want), ("---", want, have)):
        for key, (row, count) in side.items():
            extra = count - other.get(key, (row, 0))[1]
            lines += [f"{mark}," + ",".join("null" if v is None else str(v) for v in row)] * max(extra, 0)
    return "\n".join(["@@ ," + ",".join(columns), *lines]) if lines else ""
