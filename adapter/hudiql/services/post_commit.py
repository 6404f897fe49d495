"""Table services that run after a write committed, in Hudi's order: inline compaction of
merge-on-read tables, inline clustering, cleaning, archiving.

The write has succeeded once its instant completed, so a service that cannot run (another
writer in flight, a failure) is skipped with a one-line warning and runs after a later write;
it never turns the statement into a failure that a user would retry, applying it twice.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from pyspark.sql import SparkSession

from hudiql.errors import HudiqlError, from_spark_error, spark_message, warn
from hudiql.services import archive, clean, clustering, compaction
from hudiql.table.table import HudiTable


def run(spark: SparkSession, table: HudiTable, settings: Mapping[str, str]) -> None:
    """Run the services ``settings`` ask for on ``table``: the table as the write's commit left it
    (its timeline listed under the commit's lock). A service that changed the table hands the next
    one the timeline listed again; one that did nothing, the same table."""
    services: list[tuple[str, str, Callable[[HudiTable], list]]] = [
        ("inline compaction", "CALL run_compaction", lambda t: compaction.compact_inline(spark, t, settings)),
        ("inline clustering", "CALL run_clustering", lambda t: clustering.cluster_inline(spark, t, settings)),
        ("cleaning", "CALL run_clean", lambda t: clean.clean_inline(t, settings)),
        ("archiving", "CALL archive_commits", lambda t: archive.archive_inline(t, settings)),
    ]
    if not table.config.is_mor:
        services = services[1:]
    for name, instead, work in services:
        if _service(table, name, instead, work):
            table = table.refreshed()


def _service(table: HudiTable, name: str, instead: str, work: Callable[[HudiTable], list]) -> bool:
    """Run one service; whether it may have changed the table (it did something, or failed)."""
    try:
        return bool(work(table))
    except Exception as exc:  # noqa: BLE001 - whatever went wrong, the write committed
        error = exc if isinstance(exc, HudiqlError) else from_spark_error(exc)
        reason = str(error) if error is not None else f"{type(exc).__name__}: {spark_message(str(exc))}"
        warn(f"the write committed, but {name} of table {table.config.name} did not run ({reason}); "
             f"it runs after a later write, or with {instead}")
        return True
