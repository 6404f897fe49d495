"""Connections: each dbt connection is one hudiql ``Session`` on the profile's warehouse.

dbt opens a connection per node and thread and closes it when the node is done, so a ``SET`` a
materialization runs (the write operation of an overwrite, say) never reaches the next node, as in
``hudiql run``. Every session shares one SparkSession: the active (or default) one of the process
when there is one (a test run's, a notebook's, ``spark-submit``'s), else a local one started with
the profile's ``master`` and ``spark_conf``.

hudiql has no transactions across statements (each write commits its own Hudi instant), so BEGIN
and COMMIT send nothing.

``profiles.yml``::

    my_project:
      target: dev
      outputs:
        dev:
          type: hudiql
          warehouse: /data/warehouse     # a folder or URI; relative paths are from the working folder
          schema: analytics              # the hudiql database models go to
          threads: 2
          master: local[*]               # only when dbt starts Spark itself
          spark_conf: {spark.driver.memory: 4g}
          storage_options:               # tables on S3: over the AWS variables and ~/.aws/config
            aws_endpoint_url: http://127.0.0.1:9000
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from dbt.adapters.contracts.connection import (
    AdapterResponse,
    Connection,
    ConnectionState,
    Credentials,
)
from dbt.adapters.events.logging import AdapterLogger
from dbt.adapters.exceptions.connection import FailedToConnectError
from dbt.adapters.sql import SQLConnectionManager
from dbt_common.exceptions import DbtDatabaseError, DbtRuntimeError
from pyspark.errors import PySparkRuntimeError
from pyspark.sql import SparkSession

import hudiql
from hudiql.console import quiet_python_errors
from hudiql.errors import HudiqlError, OptionError
from hudiql.io.storage import checked_options
from hudiql.session import Result, Session

logger = AdapterLogger("hudiql")

#: The column that DML results (INSERT, MERGE, UPDATE, DELETE) carry their row count in.
AFFECTED_ROWS = "num_affected_rows"


@dataclass
class HudiqlCredentials(Credentials):
    """The ``profiles.yml`` target: the warehouse, and how to start Spark when no session is running."""

    # hudiql has one level of names (a database, which dbt calls schema): ``database``, when given,
    # must name the same one, and is then left empty (relations have no database part).
    database: str | None = None  # type: ignore[assignment]
    schema: str = "default"
    warehouse: str = "warehouse"
    master: str = "local[*]"
    spark_conf: dict[str, str] = field(default_factory=dict)
    #: How tables on S3 are reached, over the AWS variables (``hudiql.connect(storage_options=...)``).
    storage_options: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.database is not None and self.database != self.schema:
            raise DbtRuntimeError(
                f"profiles.yml: database '{self.database}' differs from schema '{self.schema}'; hudiql has one level "
                "of names, so leave database out (or set it to the schema)"
            )
        self.database = ""
        try:
            self.storage_options = checked_options(self.storage_options)
        except OptionError as exc:
            raise DbtRuntimeError(f"profiles.yml: {exc}") from None

    @property
    def type(self) -> str:
        return "hudiql"

    @property
    def unique_field(self) -> str:
        return self.warehouse

    def _connection_keys(self) -> tuple[str, ...]:
        return ("warehouse", "schema", "master")

    def spark_settings(self) -> dict[str, str]:
        """What a SparkSession dbt starts itself is built with."""
        return {"spark.master": self.master, **{str(k): str(v) for k, v in self.spark_conf.items()}}


def spark_session() -> SparkSession | None:
    """The process's running SparkSession (active in this thread, else the default one), or ``None``."""
    try:
        return SparkSession.active()
    except PySparkRuntimeError:  # NO_ACTIVE_OR_DEFAULT_SESSION
        return None


class HudiqlCursor:
    """A DB-API-like cursor over a hudiql Session: the last statement's rows, fetched on demand."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.result: Result | None = None
        self.rows_affected = -1
        self.statements = 0

    def execute(self, sql: str, bindings: Any = None) -> None:
        if bindings:
            raise DbtRuntimeError("hudiql runs SQL text without bindings; put the values in the statement")
        results = self.session.execute(sql)
        self.statements = len(results)
        self.result = results[-1] if results else None
        self.rows_affected = -1
        if self.result is not None and AFFECTED_ROWS in self.result.df.columns:
            self.rows_affected = int(self.result.df.first()[AFFECTED_ROWS])

    @property
    def description(self) -> list[tuple] | None:
        """Name and type code (Spark's type name) of each column; ``None`` for a statement without rows."""
        if self.result is None or not self.result.is_rows:
            return None
        return [(f.name, f.dataType.simpleString(), None, None, None, None, f.nullable) for f in self.result.df.schema.fields]

    def fetchall(self) -> list[tuple]:
        return [tuple(row) for row in self.result.df.collect()] if self.description is not None else []

    def fetchone(self) -> tuple | None:
        rows = self.fetchmany(1)
        return rows[0] if rows else None

    def fetchmany(self, size: int) -> list[tuple]:
        return [tuple(row) for row in self.result.df.take(size)] if self.description is not None else []

    def close(self) -> None:
        self.result = None


class HudiqlHandle:
    """The connection's handle: its hudiql Session."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def cursor(self) -> HudiqlCursor:
        return HudiqlCursor(self.session)

    def rollback(self) -> None:
        """Nothing to undo: every write already committed (or failed without a trace) on its own."""

    def close(self) -> None:
        self.session.temp_views.clear()


class HudiqlConnectionManager(SQLConnectionManager):
    TYPE = "hudiql"

    @classmethod
    def open(cls, connection: Connection) -> Connection:
        if connection.state == ConnectionState.OPEN:
            return connection
        credentials: HudiqlCredentials = connection.credentials
        try:
            spark = spark_session()
            session = hudiql.connect(warehouse=credentials.warehouse, spark=spark,
                                     conf=None if spark else credentials.spark_settings(),
                                     storage_options=credentials.storage_options)
            if session.catalog.database_exists(credentials.schema):
                session.database = credentials.schema
            quiet_python_errors()  # dbt's one-line message, without PySpark's Java stack trace before it
        except Exception as exc:
            connection.handle, connection.state = None, ConnectionState.FAIL
            raise FailedToConnectError(f"hudiql: cannot open warehouse {credentials.warehouse}: {exc}") from exc
        connection.handle, connection.state = HudiqlHandle(session), ConnectionState.OPEN
        return connection

    @classmethod
    def get_response(cls, cursor: HudiqlCursor) -> AdapterResponse:
        return AdapterResponse(_message="OK", rows_affected=cursor.rows_affected, code="OK")

    @classmethod
    def data_type_code_to_name(cls, type_code: str) -> str:
        return type_code

    def cancel(self, connection: Connection) -> None:
        """Nothing to cancel apart from Spark jobs, which the shared SparkSession's other users own too."""

    @contextmanager
    def exception_handler(self, sql: str) -> Iterator[None]:
        try:
            yield
        except HudiqlError as exc:
            raise DbtDatabaseError(str(exc)) from exc
        except DbtRuntimeError:
            raise
        except Exception as exc:
            logger.debug(f"hudiql error running: {sql}")
            text = str(exc).strip()
            raise DbtRuntimeError(f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}") from exc

    # hudiql has no multi-statement transactions: each write is its own Hudi commit.
    def add_begin_query(self) -> None:
        return None

    def add_commit_query(self) -> None:
        return None

    def session(self) -> Session:
        """The hudiql Session of this thread's connection (opened on first use)."""
        return self.get_thread_connection().handle.session


__all__ = ["HudiqlConnectionManager", "HudiqlCredentials"]
