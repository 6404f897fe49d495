"""The procedures of clustering: run_clustering and show_clustering, with Hudi's arguments and
output columns (``services.clustering`` plans and runs).

``op``: ``schedule`` plans, ``execute`` runs the pending plans (those ``instants`` names, the
first ``limit``), ``scheduleAndExecute`` (the default) plans and runs the plan. What a plan
covers (``predicate`` on partition columns or ``selected_partitions``, ``order``,
``order_strategy``) only applies when one is made, so ``op => 'execute'`` refuses them.

Example:
    >>> run = {p.name: p for p in PROCEDURES}["run_clustering"]
    >>> run.bind({"table": "orders", "order": "ts"})
    {'table': 'orders', 'order': 'ts', 'show_involved_partition': False}
    >>> _run_clustering(None, {"table": "orders", "op": "optimize"})
    Traceback (most recent call last):
    ...
    hudiql.errors.SqlError: CALL run_clustering: op => 'optimize' is not valid; use schedule, execute or scheduleAndExecute
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError

from hudiql.errors import SqlError
from hudiql.procedures.base import BOOL, INT, TABLE, Context, Parameter, Procedure, options
from hudiql.read.query import partition_filter
from hudiql.services import clustering
from hudiql.sql.parser import DIALECT
from hudiql.config import registry
from hudiql.timeline.replace_plan import pending_clusterings

_OPS = ("schedule", "execute", "scheduleandexecute")
#: Arguments that shape a new plan.
_PLANNING = ("predicate", "selected_partitions", "order", "order_strategy")
#: Hudi's layout optimization strategies; hudiql sorts linearly.
_ORDER_STRATEGIES = ("linear", "z-order", "hilbert")


def _refuse(message: str) -> SqlError:
    return SqlError(f"CALL run_clustering: {message}")


def _operation(args: dict[str, object]) -> str:
    op = str(args["op"]).strip().lower() if "op" in args else None
    if op is not None and op not in _OPS:
        raise _refuse(f"op => '{args['op']}' is not valid; use schedule, execute or scheduleAndExecute")
    if "instants" in args:
        if op not in (None, "execute"):
            raise _refuse("instants => ... names pending plans to run; it goes with op => 'execute' only")
        return "execute"
    return op or "scheduleandexecute"


def _check_arguments(op: str, args: dict[str, object]) -> None:
    if "path" in args:
        raise _refuse("path => is not supported; name the table with table => 't'")
    planning = [a for a in _PLANNING if a in args]
    if op == "execute" and planning:
        raise _refuse(f"{planning[0]} => applies when a plan is made; op => 'execute' runs the pending plans as "
                      "they were planned")
    if "limit" in args and op != "execute":
        raise _refuse("limit => bounds how many pending plans op => 'execute' runs; it goes with that op only")
    if "predicate" in args and "selected_partitions" in args:
        raise _refuse("give predicate => or selected_partitions =>, not both")
    strategy = str(args.get("order_strategy", "linear")).strip().lower()
    if strategy not in _ORDER_STRATEGIES:
        raise _refuse(f"order_strategy => '{args['order_strategy']}' is not valid; use linear")
    if strategy != "linear":
        raise _refuse(f"order_strategy => '{args['order_strategy']}' is not supported: hudiql sorts clustered "
                      "files linearly by order => columns; use 'linear' or leave it out")


def _selected_partitions(ctx: Context, args: dict[str, object]) -> list[str] | None:
    """The partitions a plan may cover: those ``predicate`` (a condition on partition columns)
    or ``selected_partitions`` (paths) name; ``None``: every partition."""
    table = ctx.table
    if "selected_partitions" not in args and "predicate" not in args:
        return None
    view = table.file_system_view()
    if "selected_partitions" in args:
        wanted = [p.strip() for p in str(args["selected_partitions"]).split(",") if p.strip()]
        unknown = [p for p in wanted if p not in set(view.partitions())]
        if unknown:
            raise _refuse(f"selected_partitions => '{unknown[0]}' is not a partition of table {table.config.name}; "
                          "SHOW PARTITIONS lists them")
        return wanted
    text = str(args["predicate"])
    fields = table.config.partition_fields
    if not table.keygen.is_partitioned:
        raise _refuse(f"predicate => '{text}': table {table.config.name} is not partitioned; leave predicate out")
    try:
        condition = sqlglot.parse_one(text, dialect=DIALECT)
    except ParseError as exc:
        raise _refuse(f"predicate => '{text}' is not a SQL condition ({str(exc).splitlines()[0]})") from None
    columns = list(condition.find_all(exp.Column))
    others = [c.sql(dialect=DIALECT) for c in columns if c.table or c.name.lower() not in {f.lower() for f in fields}]
    if not columns or others:
        what = f"{others[0]} is not one" if others else "it names none"
        raise _refuse(f"predicate => '{text}' may name only the partition columns of table {table.config.name} "
                      f"({', '.join(fields)}); {what}")
    keep = partition_filter(ctx.spark, table, view, condition, set(), True)
    if keep is None:
        raise _refuse(f"predicate => '{text}' cannot be matched against the partition paths of table "
                      f"{table.config.name}; name them with selected_partitions => 'p1,p2'")
    return [p for p in view.partitions() if keep(p)]


def _run_clustering(ctx: Context, args: dict[str, object]) -> list[tuple]:
    op = _operation(args)
    _check_arguments(op, args)
    overrides = options("run_clustering", str(args.get("options", "")))
    for key, value in overrides.items():
        registry.validate_session_option(key, value)
    table = ctx.table.with_options(overrides)
    if op == "execute":
        pending = [i for i, _ in pending_clusterings(table.timeline)]
        chosen = pending
        if "instants" in args:
            times = {i.timestamp: i for i in pending}
            wanted = [t.strip() for t in str(args["instants"]).split(",") if t.strip()]
            missing = [t for t in wanted if t not in times]
            if missing:
                raise _refuse(f"instants => '{missing[0]}' is not a pending clustering of table {table.config.name}; "
                              f"pending: {', '.join(times) or 'none'}")
            chosen = [times[t] for t in sorted(set(wanted))]
        if "limit" in args:
            chosen = chosen[:max(0, int(args["limit"]))]
    else:
        partitions = _selected_partitions(ctx, args)
        if partitions == []:
            return []  # the predicate matched no partition: nothing to plan, as in Hudi
        order = str(args["order"]) if "order" in args else None
        planned = clustering.schedule(table, partitions, order)
        chosen = [planned] if planned is not None else []
    if op != "schedule":
        for instant in chosen:
            clustering.execute(ctx.spark, table.refreshed(), instant)
    return clustering.describe(table.refreshed(), None, bool(args["show_involved_partition"]),
                               {i.timestamp for i in chosen})


def _show_clustering(ctx: Context, args: dict[str, object]) -> list[tuple]:
    if "path" in args:
        raise SqlError("CALL show_clustering: path => is not supported; name the table with table => 't'")
    return clustering.describe(ctx.table, int(args["limit"]), bool(args["show_involved_partition"]))


_OUTPUT = "timestamp string, input_group_size int, state string, involved_partitions string"

PROCEDURES: tuple[Procedure, ...] = (
    Procedure("run_clustering", (
        TABLE, Parameter("path"), Parameter("predicate"), Parameter("order"),
        Parameter("show_involved_partition", BOOL, False), Parameter("op"), Parameter("order_strategy"),
        Parameter("options"), Parameter("instants"), Parameter("selected_partitions"), Parameter("limit", INT),
    ), _OUTPUT, _run_clustering),
    Procedure("show_clustering", (
        TABLE, Parameter("path"), Parameter("limit", INT, 20), Parameter("show_involved_partition", BOOL, False),
    ), _OUTPUT, _show_clustering),
)
