"""Hudi tables from plain PySpark: the ``hudi`` data source (PySpark's Python data source API).

``register(spark, session)`` (``hudiql.connect`` calls it) makes ``format("hudi")`` read hudiql's
way: the snapshot (merge-on-read slices merged with their logs), or by option a read-optimized,
incremental or time-travel read, with the session option names of ``SET``:

    spark.read.format("hudi").load(path)
    spark.read.format("hudi").option("hoodie.datasource.query.type", "read_optimized").load(path)
    spark.read.format("hudi").option("as.of.instant", "2024-05-01 10:00:00").load(path)
    spark.read.format("hudi").option("hoodie.datasource.query.type", "incremental")
        .option("hoodie.datasource.read.begin.instanttime", begin).load(path)

and write through hudiql's write path, with Hudi's data source options (``datasource.writer``):

    df.write.format("hudi").option("hoodie.table.name", "t")
        .option("hoodie.datasource.write.recordkey.field", "id").mode("append").save(path)

Spark runs a Python data source's writer without a SparkSession; the registering session's
Python process writes (``datasource.callback``). Registered without a session, writes are refused.

Example:
    >>> _ = session.sql("CREATE TABLE orders (id INT, amount DOUBLE) USING hudi TBLPROPERTIES (primaryKey = 'id')")
    >>> _ = session.sql("INSERT INTO orders VALUES (1, 10.0), (2, 20.0)")
    >>> register(spark, session)
    >>> spark.createDataFrame([(2, 25.0)], "id INT, amount DOUBLE").write.format("hudi").mode("append").save(warehouse + "/orders")
    >>> spark.read.format("hudi").load(warehouse + "/orders").select("id", "amount").orderBy("id").collect()
    [Row(id=1, amount=10.0), Row(id=2, amount=25.0)]
"""

from __future__ import annotations

import functools

from pyspark.sql import SparkSession

from hudiql.datasource import callback
from hudiql.datasource.source import NAME, HudiDataSource
from hudiql.datasource.writer import WritingSession, answer

__all__ = ["NAME", "HudiDataSource", "register"]


def register(spark: SparkSession, session: WritingSession | None = None) -> None:
    """Make ``format("hudi")`` of ``spark`` the hudiql data source, writing through ``session``
    (again registering is harmless; the last registration is the one Spark uses)."""
    if session is None:
        callback.release(spark)
        spark.dataSource.register(HudiDataSource)
        return
    # A class made here, not importable by name: Spark's cloudpickle sends it to the workers by
    # value, with the callback it carries.
    reach = callback.serve(spark, functools.partial(answer, session))
    spark.dataSource.register(type("HudiqlSessionDataSource", (HudiDataSource,), {"callback": reach}))
