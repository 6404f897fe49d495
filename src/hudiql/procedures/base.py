"""What a ``CALL`` procedure is: its parameters (Hudi's names, order and defaults), its output
columns, and the function that runs it on one table.

A procedure declares its parameters; an argument it does not take, a missing required one or a
value of the wrong kind is refused by name, never ignored. Arguments are passed by name
(``table => 't'``) or by position, in the order the procedure declares them, as in Hudi.

Example:
    >>> show = Procedure("show_things", (Parameter("table", default=REQUIRED), Parameter("limit", INT, 10)),
    ...                  "thing string", lambda ctx, args: [])
    >>> show.bind({"table": "orders"})
    {'table': 'orders', 'limit': 10}
    >>> show.bind({}, ["orders", "5"])
    {'table': 'orders', 'limit': 5}
    >>> show.bind({"table": "orders", "lmit": "5"})
    Traceback (most recent call last):
    ...
    hudiql.errors.SqlError: CALL show_things takes no argument 'lmit'; its arguments are table, limit
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from pyspark.sql import SparkSession

from hudiql.errors import SqlError
from hudiql.table.table import HudiTable

STRING = "string"
INT = "int"
BOOL = "boolean"

#: The default of a parameter that must be given.
REQUIRED = object()


@dataclass(frozen=True)
class Parameter:
    name: str
    kind: str = STRING
    default: object = None  # None: optional without a value; REQUIRED: must be given

    def parse(self, procedure: str, text: str) -> object:
        if self.kind == INT:
            if not text.strip().lstrip("-").isdigit():
                raise SqlError(f"CALL {procedure}: {self.name} => {text} is not a whole number")
            return int(text)
        if self.kind == BOOL:
            if text.strip().lower() not in ("true", "false"):
                raise SqlError(f"CALL {procedure}: {self.name} => {text} is not true or false")
            return text.strip().lower() == "true"
        return text

    def describe(self) -> tuple[str, str, bool, str | None]:
        """(name, type, required, default) as ``CALL help`` lists it."""
        default = None if self.default in (None, REQUIRED) else str(self.default).lower()
        return self.name, self.kind, self.default is REQUIRED, default


@dataclass(frozen=True)
class Context:
    """What a procedure runs on: the table its ``table`` argument names, with the settings a
    write of it would run with (``HudiTable.settings``: its properties, then the session's SETs),
    or ``None`` for a procedure without a ``table`` argument."""

    spark: SparkSession
    table: HudiTable | None


@dataclass(frozen=True)
class Procedure:
    name: str
    parameters: tuple[Parameter, ...]
    output: str  # the rows' Spark DDL schema
    run: Callable[[Context, dict[str, object]], list[tuple]]

    def bind(self, args: Mapping[str, str], positional: Sequence[str] = ()) -> dict[str, object]:
        """The arguments (positional ones first, in declaration order, then by name), parsed;
        defaults filled in."""
        known = {p.name: p for p in self.parameters}
        if len(positional) > len(self.parameters):
            count = len(self.parameters)
            raise SqlError(f"CALL {self.name} takes at most {count} argument{'' if count == 1 else 's'}: {', '.join(known)}")
        given = {p.name: value for p, value in zip(self.parameters, positional)}
        for name, value in args.items():
            if name not in known:
                raise SqlError(f"CALL {self.name} takes no argument '{name}'; its arguments are {', '.join(known)}")
            if name in given:
                raise SqlError(f"CALL {self.name}: {name} is given twice (by position and by name)")
            given[name] = value
        bound: dict[str, object] = {}
        for p in self.parameters:
            if p.name in given:
                bound[p.name] = p.parse(self.name, given[p.name])
            elif p.default is REQUIRED:
                raise SqlError(f"CALL {self.name} needs {p.name} => ...")
            elif p.default is not None:
                bound[p.name] = p.default
        return bound


def options(procedure: str, text: str) -> dict[str, str]:
    """Hudi's ``options => 'k1=v1,k2=v2'``."""
    out = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise SqlError(f"CALL {procedure}: options => '{text}' is not a list of key=value separated by commas")
        out[key.strip()] = value.strip()
    return out


#: The ``table`` argument most procedures start with.
TABLE = Parameter("table", default=REQUIRED)
#: A table named by ``table => 't'`` or by ``path => '<base path>'`` (one of the two), as Hudi's
#: compaction procedures take it.
TABLE_OR_PATH = (Parameter("table"), Parameter("path"))
