"""Running on a real cluster: the hudiql package reaches the executors.

hudiql's Spark tasks (writes, merged reads, compaction) run hudiql code in the executors' Python
workers. On a cluster (any master but ``local`` / ``local[...]``) those workers run in other
processes, often on other hosts, where hudiql may not be installed: ``prepare_executors`` ships
the driver's own hudiql package to them (a zip of it, added with ``SparkContext.addPyFile``, once
per SparkContext), then runs a tiny job that imports hudiql there. An executor that cannot
import it (most often: a dependency such as pyarrow is missing from its Python) fails here with
one line, rather than as a task failure deep in the first write. hudiql's dependencies are not
shipped: they hold compiled code that must match the workers' platform, so they are installed there.

Example:
    >>> is_cluster_master("local[2]"), is_cluster_master("local-cluster[2,1,1024]"), is_cluster_master("yarn")
    (False, True, True)
    >>> sorted(n for n in zipfile.ZipFile(package_zip(tempfile.mkdtemp())).namelist() if n.count("/") == 1)[:2]
    ['hudiql/__init__.py', 'hudiql/catalog.py']
"""

from __future__ import annotations

import tempfile
import weakref
import zipfile
from pathlib import Path

from pyspark import SparkContext
from pyspark.sql import SparkSession

from hudiql.version import __version__
from hudiql.errors import ExecutorSetupError

#: The SparkContexts whose executors got the package and passed the check.
_PREPARED: weakref.WeakSet[SparkContext] = weakref.WeakSet()

#: What an executor's Python needs besides hudiql (hudiql's runtime dependencies), for the error.
WORKER_DEPENDENCIES = "pyarrow, pandas, fastavro, xxhash, sqlglot, jinja2, pyyaml"


def is_cluster_master(master: str) -> bool:
    """Do executors run outside the driver's process (anything but ``local`` / ``local[...]``)?"""
    return not (master == "local" or master.startswith("local["))


def prepare_executors(spark: SparkSession) -> None:
    """Ship the hudiql package to the executors of ``spark``'s cluster and check that they can
    import it; nothing to do on a local master, or when done before for this SparkContext.
    Raises ``ExecutorSetupError`` (one line saying what to install or set) otherwise."""
    context = spark.sparkContext
    if not is_cluster_master(context.master) or context in _PREPARED:
        return
    if _package_folder().is_dir():  # else hudiql came in an archive (spark-submit --py-files) Spark ships already
        context.addPyFile(package_zip(tempfile.mkdtemp(prefix="hudiql-executors-")))
    problems = _check_executors(context)
    if problems:
        raise ExecutorSetupError(
            f"the executors of Spark master {context.master} cannot import hudiql ({problems[0]}); install "
            f"hudiql's dependencies ({WORKER_DEPENDENCIES}) in the executors' Python, the same Python version "
            "as the driver's (spark.pyspark.python or PYSPARK_PYTHON names it)"
        )
    _PREPARED.add(context)


def package_zip(folder: str) -> str:
    """A zip of the installed hudiql package (its ``.py`` files and resources, no bytecode) in
    ``folder``; returns its path."""
    package = _package_folder()
    target = Path(folder) / "hudiql.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(package.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                archive.write(path, Path("hudiql") / path.relative_to(package))
    return str(target)


def _package_folder() -> Path:
    return Path(__file__).resolve().parent


def _check_executors(context: SparkContext) -> list[str]:
    """Why executors could not import hudiql (at this version), one reason each; empty when all could.
    One task per core, so that every executor is likely asked."""
    version = __version__

    # Nested, so that Spark ships the function by value: the worker must not need hudiql to
    # unpickle the check of whether it has hudiql.
    def probe(_rows):
        import importlib
        import sys

        try:
            module = importlib.import_module("hudiql")
            # The package imports its engine on first use: import what Spark's tasks run (the
            # writer's and the readers' task modules), and with it every dependency a task may need.
            importlib.import_module("hudiql.write.writer")
        except Exception as exc:  # any failure to import is the answer
            return [f"{type(exc).__name__}: {exc} (Python {sys.version.split()[0]})"]
        found = getattr(module, "__version__", "?")
        return [] if found == version else [f"they import hudiql {found} from {module.__file__}, the driver has {version}"]

    slots = max(1, context.defaultParallelism)
    try:
        return sorted(set(context.parallelize(range(slots), slots).mapPartitions(probe).collect()))
    except Exception as exc:  # the workers' Python could not even run the check
        return [f"the check job failed: {_first_line(exc)}"]


def _first_line(exc: Exception) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    reason = next((line for line in lines if "Error" in line and "Traceback" not in line), lines[0] if lines else "")
    return reason[:300]
