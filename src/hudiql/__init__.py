"""hudiql: upsert tables in the Apache Hudi on-disk format, from plain SQL, on Spark.

Example (``spark`` is an existing SparkSession; without it, ``connect`` starts a local one):
    >>> import hudiql
    >>> session = hudiql.connect(warehouse=warehouse, spark=spark)
    >>> _ = session.sql("CREATE TABLE t (id INT, v STRING) USING hudi TBLPROPERTIES (primaryKey = 'id')")
    >>> session.sql("INSERT INTO t VALUES (1, 'a'), (2, 'b')").first()
    Row(num_affected_rows=2, num_updated_rows=0, num_deleted_rows=0, num_inserted_rows=2, num_skipped_older_rows=0)
    >>> session.sql("SELECT id, v FROM t ORDER BY id").collect()
    [Row(id=1, v='a'), Row(id=2, v='b')]
"""

from typing import TYPE_CHECKING

from hudiql.errors import HudiqlError
from hudiql.version import __version__

if TYPE_CHECKING:
    from hudiql.session import Session, connect

__all__ = ["HudiqlError", "Session", "__version__", "connect"]


def __getattr__(name: str) -> object:
    """``Session`` and ``connect``, imported on first use: they bring Spark, sqlglot and the whole
    engine, and Spark's Python workers, which import hudiql's task modules (file groups, log
    files) for every worker process they start, need none of it."""
    if name in ("Session", "connect"):
        from hudiql import session

        return getattr(session, name)
    raise AttributeError(f"module 'hudiql' has no attribute {name!r}")
