"""Hudi tables from plain PySpark: the ``hudi`` data source (PySpark's Python data source API).

``register(spark)`` (``hudiql.connect`` calls it) makes ``format("hudi")`` read hudiql's way:
the snapshot (merge-on-read slices merged with their logs), or by option a read-optimized,
incremental or time-travel read, with the session option names of ``SET``:

    spark.read.format("hudi").load(path)
    spark.read.format("hudi").option("hoodie.datasource.query.type", "read_optimized").load(path)
    spark.read.format("hudi").option("as.of.instant", "2024-05-01 10:00:00").load(path)
    spark.read.format("hudi").option("hoodie.datasource.query.type", "incremental")
        .option("hoodie.datasource.read.begin.instanttime", begin).load(path)

``df.write.format("hudi")`` is refused with the way to write instead (hudiql SQL on the same
SparkSession): see ``source.HudiDataSource.writer``.

Example:
    >>> _ = session.sql("CREATE TABLE orders (id INT, amount DOUBLE) USING hudi TBLPROPERTIES (primaryKey = 'id')")
    >>> _ = session.sql("INSERT INTO orders VALUES (1, 10.0), (2, 20.0)")
    >>> register(spark)
    >>> spark.read.format("hudi").load(warehouse + "/orders").select("id", "amount").orderBy("id").collect()
    [Row(id=1, amount=10.0), Row(id=2, amount=20.0)]
"""

from __future__ import annotations

from pyspark.sql import SparkSession

from hudiql.datasource.source import NAME, HudiDataSource

__all__ = ["NAME", "HudiDataSource", "register"]


def register(spark: SparkSession) -> None:
    """Make ``format("hudi")`` of ``spark`` the hudiql data source (again registering is harmless)."""
    spark.dataSource.register(HudiDataSource)
