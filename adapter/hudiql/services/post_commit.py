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
    """Run the services ``settings`` ask for on ``table`` (loaded again: the write is in it)."""
    if table.config.is_mor:
        _service(table, "inline compaction", "CALL run_compaction",
                 lambda: compaction.compact_inline(spark, table.snapshot(), settings))
    _service(table, "inline clustering", "CALL run_clustering",
             lambda: clustering.cluster_inline(spark, table, settings))
    _service(table, "cleaning", "CALL run_clean", lambda: clean.clean_inline(table.snapshot(), settings))
    _service(table, "archiving", "CALL archive_commits", lambda: archive.archive_inline(table.snapshot(), settings))


def _service(table: HudiTable, name: str, instead: str, work: Callable[[], object]) -> None:
    try:
        work()
    except Exception as exc:  # noqa: BLE001 - whatever went wrong, the write committed
        error = exc if isinstance(exc, HudiqlError) else from_spark_error(exc)
        reason = str(error) if error is not None else f"{type(exc).__name__}: {spark_message(str(exc))}"
        warn(f"the write committed, but {name} of table {table.config.name} did not run ({reason}); "
             f"it runs after a later write, or with {instead}")
