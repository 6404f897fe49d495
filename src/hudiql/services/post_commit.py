"""The write of one statement, and the table services that run after it committed, in Hudi's order:
inline compaction of merge-on-read tables, inline clustering, cleaning, archiving.

The write has succeeded once its instant completed, so a service that cannot run (another
writer in flight, a failure) is skipped with a one-line warning and runs after a later write;
it never turns the statement into a failure that a user would retry, applying it twice.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from pyspark.sql import SparkSession

from hudiql.config import registry as K
from hudiql.errors import HudiqlError, from_spark_error, spark_message, warn
from hudiql.services import archive, clean, clustering, compaction
from hudiql.table.table import HudiTable
from hudiql.timeline.active import COMMIT, DELTA_COMMIT, REPLACE_COMMIT
from hudiql.timeline.replace_plan import encode_requested
from hudiql.transaction.write_transaction import WriteTransaction
from hudiql.write.writer import check_write_settings, planned_shuffles


@contextmanager
def transaction(spark: SparkSession, table: HudiTable, replace: bool = False) -> Iterator[WriteTransaction]:
    """The write transaction of one statement that writes ``table``, with the settings the
    statement runs with (``HudiTable.for_statement``; ``replace``: a replacecommit, for
    ``write_rows`` with a ``Replacement`` or ``write_replacement``).

    Started before the statement reads the table: ``txn.table`` is the snapshot its planning and
    its write read. ``write_rows`` / ``write_decided`` commit it (a statement that changes
    nothing leaves it uncommitted: it is rolled back, without a trace); then the post-commit
    services run.
    """
    check_write_settings(table)
    if replace:
        action, requested = REPLACE_COMMIT, encode_requested()
    else:
        action, requested = DELTA_COMMIT if table.config.is_mor else COMMIT, b""
    with planned_shuffles(spark):
        with WriteTransaction.start(spark, table, action, requested) as txn:
            yield txn
    if txn.committed_table is not None:
        run(spark, txn.committed_table)


def run(spark: SparkSession, table: HudiTable) -> None:
    """Run the services ``table.settings`` ask for on ``table``: the table as the write's commit left it
    (its timeline listed under the commit's lock). A service that changed the table hands the next
    one the timeline listed again; one that did nothing, the same table."""
    # (name, what runs it by hand, the flag that turns it on, the service)
    services: list[tuple[str, str, str, Callable[[HudiTable], list]]] = [
        ("inline compaction", "CALL run_compaction", K.INLINE_COMPACT, lambda t: compaction.compact_inline(spark, t)),
        ("inline clustering", "CALL run_clustering", K.INLINE_CLUSTERING, lambda t: clustering.cluster_inline(spark, t)),
        ("cleaning", "CALL run_clean", K.CLEAN_AUTOMATIC, lambda t: clean.run(t)),
        ("archiving", "CALL archive_commits", K.ARCHIVE_AUTOMATIC, archive.archive),
    ]
    if not table.config.is_mor:
        services = services[1:]
    for name, instead, flag, work in services:
        if _service(table, name, instead, flag, work):
            table = table.refreshed()


def _service(table: HudiTable, name: str, instead: str, flag: str,
             work: Callable[[HudiTable], list]) -> bool:
    """Run one service if ``flag`` is on; whether it may have changed the table (it did something,
    or failed)."""
    try:
        return table.settings.flag(flag) and bool(work(table))
    except Exception as exc:  # noqa: BLE001 - whatever went wrong, the write committed
        error = exc if isinstance(exc, HudiqlError) else from_spark_error(exc)
        reason = str(error) if error is not None else f"{type(exc).__name__}: {spark_message(str(exc))}"
        warn(f"the write committed, but {name} of table {table.config.name} did not run ({reason}); "
             f"it runs after a later write, or with {instead}")
        return True
