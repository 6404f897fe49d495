"""``CALL`` procedures: Hudi's names, arguments and output columns, each in the module of its
area (``table_services``: compaction, cleaning, archiving; ``history``: commits, rollbacks,
savepoints; ``clustering``; ``metadata_table``); ``help`` lists them all.

A name may carry Hudi's ``system.`` prefix.

Example:
    >>> procedure("system.run_clean").name
    'run_clean'
    >>> [row for row in _help(None, {"cmd": "show_compaction"})]
    [('show_compaction(table string, path string, limit int = 20) -> timestamp string, operation_size int, state string',)]
"""

from __future__ import annotations

from hudiql.errors import SqlError
from hudiql.procedures import clustering, history, metadata_table, table_services
from hudiql.procedures.base import TABLE_OR_PATH, Context, Parameter, Procedure

__all__ = ["Context", "PROCEDURES", "TABLE_OR_PATH", "procedure"]


def _help(ctx: Context | None, args: dict[str, object]) -> list[tuple]:
    """One line per procedure (or for ``cmd``'s only): its parameters in order, then its output."""
    names = [str(args["cmd"]).lower()] if "cmd" in args else sorted(PROCEDURES)
    rows = []
    for name in names:
        proc = procedure(name)
        params = ", ".join(
            f"{n} {kind}" + (" required" if required else "") + (f" = {default}" if default is not None else "")
            for n, kind, required, default in (p.describe() for p in proc.parameters)
        )
        rows.append((f"{proc.name}({params}) -> {proc.output}",))
    return rows


PROCEDURES: dict[str, Procedure] = {p.name: p for p in (
    *table_services.PROCEDURES,
    *history.PROCEDURES,
    *clustering.PROCEDURES,
    *metadata_table.PROCEDURES,
    Procedure("help", (Parameter("cmd"),), "result string", _help),
)}


def procedure(name: str) -> Procedure:
    """The procedure ``CALL [system.]name`` runs."""
    found = PROCEDURES.get(name.lower().removeprefix("system."))
    if found is None:
        raise SqlError(f"unknown procedure '{name}'; available: {', '.join(sorted(PROCEDURES))} (CALL help() describes each)")
    return found
