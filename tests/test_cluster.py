"""hudiql on a real multi-process cluster: Spark's ``local-cluster[2,1,1024]`` (a master and two
workers in the driver's JVM, each executor a process of its own with its own Python workers).

The test suite keeps one SparkSession per run, so the cluster lives in a child Python process
(this file, run as a script). Its executors run a Python that cannot import hudiql from
site-packages (the editable install's path is not on it), so every hudiql task there runs the
package ``hudiql.connect`` shipped (``hudiql.cluster``). The child first starts an application whose executors'
Python has no third-party package at all, then one that has hudiql's dependencies.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

MASTER = "local-cluster[2,1,1024]"
#: The application whose executors cannot import hudiql: one executor shows it, and starts sooner.
BARE_MASTER = "local-cluster[1,1,1024]"
CHILD_TIMEOUT_SECONDS = 900


def _executor_python(folder: Path, name: str, site_packages: str | None) -> str:
    """A Python for the executors: this interpreter without ``site`` (so no ``.pth`` file, hence no
    editable hudiql), seeing ``site_packages`` (hudiql's dependencies) when given."""
    script = folder / name
    path = f'PYTHONPATH="{site_packages}${{PYTHONPATH:+:$PYTHONPATH}}" ' if site_packages else ""
    script.write_text(f'#!/bin/sh\n{path}exec "{sys.executable}" -S "$@"\n')
    script.chmod(0o755)
    return str(script)


def _spark_home(folder: Path) -> str:
    """pyspark's folder, seen through links from ``folder``: the cluster's workers keep their
    files in ``<SPARK_HOME>/work``, which is then a temporary folder, not the installed package."""
    import pyspark

    folder.mkdir()
    for entry in Path(pyspark.__file__).parent.iterdir():
        if entry.name != "work":
            (folder / entry.name).symlink_to(entry)
    return str(folder)


@pytest.fixture(scope="module")
def cluster_run(tmp_path_factory) -> dict:
    """What the child process saw, as JSON (see ``_child``)."""
    folder = tmp_path_factory.mktemp("cluster")
    bare = _executor_python(folder, "bare-python", None)
    plain = _executor_python(folder, "plain-python", sysconfig.get_paths()["purelib"])
    out = folder / "result.json"
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_HOME": _spark_home(folder / "spark-home")}
    env.pop("PYSPARK_PYTHON", None)
    # About a minute on two idle cores: two application starts (four executor JVMs) and ten
    # statements; the limit is for a machine busy with other Spark runs.
    child = subprocess.run(
        [sys.executable, __file__, bare, plain, str(folder / "warehouse"), str(out)],
        env=env, capture_output=True, text=True, timeout=CHILD_TIMEOUT_SECONDS,
    )
    assert child.returncode == 0, child.stderr[-3000:]
    return json.loads(out.read_text())


def test_executors_without_dependencies_fail_at_connect_with_one_line(cluster_run):
    error = cluster_run["bare"]
    assert error["type"] == "ExecutorSetupError"
    assert "\n" not in error["message"]
    assert error["message"].startswith(f"the executors of Spark master {BARE_MASTER} cannot import hudiql (ModuleNotFoundError: No module named")
    assert "install hudiql's dependencies (pyarrow," in error["message"]


def test_upsert_merge_mor_read_compaction_and_df_write_run_on_executors_with_the_shipped_package(cluster_run):
    run = cluster_run["plain"]
    # Without the shipped package the executors cannot import hudiql: every task below needs it.
    assert all(r.startswith("ModuleNotFoundError: No module named 'hudiql'") for r in run["before"]), run["before"]
    assert run["after"] and all(".zip" in r for r in run["after"]), run["after"]  # hudiql from the shipped zip
    assert run["merge"] == [2, 1, 0, 1, 0]  # affected, updated, deleted, inserted, skipped
    assert run["cow"] == [[1, "a", 1], [2, "b2", 2], [3, "c2", 5], [4, "d", 1]]  # 2 upserted, then 3 merged
    assert run["mor_logs"] > 0
    expected_mor = [[1, "x", 1], [2, "y2", 3], [3, "z", 1]]
    assert run["mor_snapshot"] == expected_mor  # log files merged in the executors' Python tasks
    assert run["mor_datasource"] == expected_mor  # spark.read.format("hudi"), read() in the executors
    assert run["compaction"] == "COMPLETED"
    assert run["mor_compacted"] == expected_mor  # the new base files, written by executor tasks
    # df.write.format("hudi"): executor tasks stage the rows, the driver's session commits them
    assert run["mor_written"] == [[1, "x", 1], [2, "y2", 3], [3, "z2", 2], [5, "w", 1]]


def test_task_modules_do_not_import_the_engine():
    """Spark's Python workers import hudiql's task modules in every worker process they start; through
    the package, those must not bring the engine (the session, sqlglot): seconds per worker."""
    code = ("import sys, hudiql.write.handle, hudiql.write.append_handle, hudiql.file_group.reader; "
            "print(sorted(m for m in ('hudiql.session', 'sqlglot') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stdout + done.stderr[-2000:]


# ---- the child process --------------------------------------------------------------------------

def _session(executor_python: str, master: str = MASTER):
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = executor_python
    return (
        SparkSession.builder.master(master)
        .appName("hudiql-cluster-test")
        .config("spark.pyspark.python", executor_python)
        .config("spark.pyspark.driver.python", sys.executable)
        .config("spark.executor.memory", "512m")
        # The executors are short-lived JVMs too: the test run's JVM options (conftest.py) halve their CPU.
        .config("spark.executor.extraJavaOptions", os.environ.get("SPARK_SUBMIT_OPTS", ""))
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )


def _probe(spark) -> list[str]:
    """Where each executor task imports hudiql from, or why it cannot (a closure: shipped by value)."""

    def where(_rows):
        try:
            import hudiql
        except Exception as exc:
            return [f"{type(exc).__name__}: {exc}"]
        return [hudiql.__file__]

    return spark.sparkContext.parallelize(range(2), 2).mapPartitions(where).collect()


def _rows(session, sql: str) -> list[list]:
    return [list(r) for r in session.sql(sql).collect()]


def _child(bare: str, plain: str, warehouse: str, out: str) -> None:
    import hudiql

    result = {}
    spark = _session(bare, BARE_MASTER)
    try:
        hudiql.connect(warehouse=warehouse, spark=spark)
        result["bare"] = {"type": None, "message": "no error"}
    except hudiql.HudiqlError as exc:
        result["bare"] = {"type": type(exc).__name__, "message": str(exc)}
    spark.stop()

    spark = _session(plain)
    run = result["plain"] = {"before": _probe(spark)}
    session = hudiql.connect(warehouse=warehouse, spark=spark)  # ships the package, registers the data source
    run["after"] = _probe(spark)
    session.sql("CREATE TABLE c (id INT, v STRING, ts INT) USING hudi TBLPROPERTIES (primaryKey = 'id', preCombineField = 'ts')")
    session.sql("INSERT INTO c VALUES (1, 'a', 1), (2, 'b', 1)")
    session.sql("INSERT INTO c VALUES (2, 'b2', 2), (3, 'c', 1)")
    run["merge"] = _rows(session, "MERGE INTO c USING (SELECT 3 AS id, 'c2' AS v, 5 AS ts UNION ALL SELECT 4, 'd', 1) s "
                                  "ON c.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")[0]
    run["cow"] = _rows(session, "SELECT id, v, ts FROM c ORDER BY id")
    session.sql("CREATE TABLE m (id INT, v STRING, ts INT) USING hudi TBLPROPERTIES (primaryKey = 'id', "
                "preCombineField = 'ts', type = 'mor', 'hoodie.compact.inline' = 'false')")
    session.sql("INSERT INTO m VALUES (1, 'x', 1), (2, 'y', 1), (3, 'z', 1)")
    session.sql("INSERT INTO m VALUES (2, 'y2', 3)")  # an update: a log file
    run["mor_logs"] = sum(1 for p in Path(warehouse, "m").rglob(".*.log.*"))
    run["mor_snapshot"] = _rows(session, "SELECT id, v, ts FROM m ORDER BY id")
    plain_read = spark.read.format("hudi").load(str(Path(warehouse, "m"))).select("id", "v", "ts").orderBy("id")
    run["mor_datasource"] = [list(r) for r in plain_read.collect()]
    compaction = session.sql("CALL run_compaction(op => 'scheduleandexecute', table => 'm')").collect()
    run["compaction"] = compaction[0]["state"] if compaction else None
    run["mor_compacted"] = _rows(session, "SELECT id, v, ts FROM m ORDER BY id")
    written = spark.createDataFrame([(3, "z2", 2), (5, "w", 1)], "id INT, v STRING, ts INT")
    written.write.format("hudi").mode("append").save(str(Path(warehouse, "m")))  # staged by executor tasks
    run["mor_written"] = _rows(session, "SELECT id, v, ts FROM m ORDER BY id")
    spark.stop()
    Path(out).write_text(json.dumps(result))


if __name__ == "__main__":
    _child(*sys.argv[1:5])
