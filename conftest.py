"""Fixtures of every test run, for the tests (``tests/``) and the docstring examples of the package
(``src/hudiql/``, collected by ``--doctest-modules``): one real local SparkSession per test
process (the run's two worker processes, ``-n 2`` in pyproject.toml, have one each).

Docstring examples find these names (``doctest_namespace``):
- ``warehouse``: the path (``str``) of a warehouse folder of its own, one per docstring;
- ``spark``: the run's SparkSession;
- ``session``: ``hudiql.connect(warehouse=warehouse, spark=spark)``.
``spark`` and ``session`` are given only to docstrings whose examples name them, so that modules
with pure examples never start Spark; those that do share the one session of the run.
"""

from __future__ import annotations

import os
import re
import sys

import pytest

import hudiql

# Every Spark the tests start works on a few rows, and the suite is bound by the CPU of a two-core
# machine: compiling whole stages and a parallel garbage collector cost more CPU than they save.
# (Expressions keep Spark's default code generation: interpreting them all, NO_CODEGEN, fails on
# `reflect` inside a higher-order function.) The CLI and writer processes the tests spawn live
# seconds, so they also skip the JIT's optimizing tier (half of a short CLI run's CPU); the run's own
# session lives for the whole run and keeps it (without it the run takes a third longer).
_SESSION_JVM_OPTIONS = f"{os.environ.get('SPARK_SUBMIT_OPTS', '')} -XX:+UseSerialGC".strip()
os.environ["SPARK_SUBMIT_OPTS"] = f"{_SESSION_JVM_OPTIONS} -XX:TieredStopAtLevel=1"
os.environ.setdefault("PYSPARK_SUBMIT_ARGS", "--conf spark.sql.codegen.wholeStage=false pyspark-shell")


@pytest.fixture(scope="session")
def spark():
    """The one SparkSession of this test process (local[2]), shared by every test and docstring it runs."""
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    child_options, os.environ["SPARK_SUBMIT_OPTS"] = os.environ["SPARK_SUBMIT_OPTS"], _SESSION_JVM_OPTIONS
    try:
        spark = (
            SparkSession.builder.master("local[2]")
            .appName("hudiql-tests")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.default.parallelism", "2")
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.driver.memory", "2g")
            .getOrCreate()
        )
    finally:
        os.environ["SPARK_SUBMIT_OPTS"] = child_options
    spark.sparkContext.setLogLevel("ERROR")
    yield spark
    spark.stop()


_SPARK_NAMES = re.compile(r"\b(spark|session)\b")


@pytest.fixture(autouse=True)
def _doctest_names(request, doctest_namespace):
    """The names above, for one docstring; they are removed after it, so that no docstring
    passes only because another one ran before it."""
    if not isinstance(request.node, pytest.DoctestItem):
        yield
        return
    warehouse = str(request.getfixturevalue("tmp_path") / "warehouse")
    names: dict[str, object] = {"warehouse": warehouse}
    used = set(_SPARK_NAMES.findall("".join(example.source for example in request.node.dtest.examples)))
    if used:
        names["spark"] = request.getfixturevalue("spark")
    if "session" in used:
        names["session"] = hudiql.connect(warehouse=warehouse, spark=names["spark"])
    doctest_namespace.update(names)
    yield
    for name in names:
        doctest_namespace.pop(name, None)
