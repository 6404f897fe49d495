"""hudiql: upsert tables in the Apache Hudi on-disk format, from plain SQL, on Spark.

Example:
    >>> import hudiql
    >>> session = hudiql.connect(warehouse="/tmp/wh")
    >>> session.sql("CREATE TABLE t (id INT, v STRING) USING hudi TBLPROPERTIES (primaryKey='id')")
    >>> session.sql("INSERT INTO t VALUES (1, 'a')")
    >>> session.sql("SELECT id, v FROM t").collect()
"""

from hudiql.errors import HudiqlError
from hudiql.session import Session, connect

__all__ = ["HudiqlError", "Session", "connect"]
__version__ = "0.1.0"
