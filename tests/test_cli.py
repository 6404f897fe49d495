"""The ``hudiql sql`` command line, run as a real subprocess.

Each run starts its own JVM (tens of seconds), so the runs are module-scoped fixtures and
several tests check different things about one run: 3 runs that start Spark, 1 that does not.
(``test_first_hour.py`` runs the ``hudiql`` script itself: typos that start no Spark, Ctrl-C.)
Tables the CLI wrote are then read in-process through the shared SparkSession.
"""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import hudiql

from conftest import official_rows

TIME_TAKEN = re.compile(r"Time taken: (\d+\.\d+) seconds, Fetched (\d+) row\(s\)")


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str
    warehouse: Path

    @property
    def out_lines(self) -> list[str]:
        return self.stdout.splitlines()

    @property
    def fetched(self) -> list[int]:
        return [int(m[1]) for m in TIME_TAKEN.findall(self.stderr)]

    @property
    def error_lines(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.startswith("Error:")]


def run_cli(workdir: Path, *args: str) -> Run:
    warehouse = workdir / "wh"
    proc = subprocess.run(
        [sys.executable, "-m", "hudiql.cli", "sql", "--warehouse", str(warehouse), *args],
        cwd=workdir, capture_output=True, text=True, timeout=600,
    )
    return Run(proc.returncode, proc.stdout, proc.stderr, warehouse)


# ---- run 1: a successful -e script --------------------------------------------------------------------

SUCCESS_SQL = """
-- a comment; with a semicolon in it
CREATE TABLE t (id INT, name STRING, amount DECIMAL(10,2), ok BOOLEAN, day DATE, at TIMESTAMP, ts BIGINT, dt STRING)
  USING hudi PARTITIONED BY (dt) TBLPROPERTIES (primaryKey='id', preCombineField='ts');
INSERT INTO t VALUES
  (1, 'a;b', 1.50, true, DATE'2024-01-01', TIMESTAMP'2024-01-01 10:30:00', 10, 'x'),
  (2, NULL, NULL, NULL, NULL, NULL, 20, 'y');;
SELECT id, name, amount, ok, day, at, dt FROM t ORDER BY id;
SELECT id FROM t WHERE id > 100;
SHOW TABLES
"""


@pytest.fixture(scope="module")
def success_run(tmp_path_factory) -> Run:
    return run_cli(tmp_path_factory.mktemp("cli_success"), "-e", SUCCESS_SQL)


def test_success_exit_code_and_no_error(success_run):
    assert success_run.returncode == 0, success_run.stderr[-2000:]
    assert success_run.error_lines == []
    assert "Traceback" not in success_run.stderr


def test_success_rows_are_tab_separated_with_null(success_run):
    lines = success_run.out_lines
    expected = [
        "1\ta;b\t1.50\ttrue\t2024-01-01\t2024-01-01 10:30:00\tx",
        "2\tNULL\tNULL\tNULL\tNULL\tNULL\ty",
    ]
    start = lines.index(expected[0])
    assert lines[start:start + 2] == expected
    assert lines[-1] == "default\tt\tfalse"  # SHOW TABLES, the last statement
    assert "Time taken" not in success_run.stdout


def test_success_time_taken_per_statement(success_run):
    # 5 statements: empty ones (';;') and the comment do not count
    assert len(success_run.fetched) == 5, success_run.stderr[-2000:]
    create, _insert, select, empty, show = success_run.fetched
    assert (create, select, empty, show) == (0, 2, 0, 1)
    # each statement's count is what it printed
    assert sum(success_run.fetched) == len(success_run.out_lines)


def test_success_table_is_readable_in_process(success_run, spark):
    session = hudiql.connect(warehouse=str(success_run.warehouse), spark=spark)
    assert [tuple(r) for r in session.sql("SELECT id, name, ts, dt FROM t ORDER BY id").collect()] == [
        (1, "a;b", 10, "x"), (2, None, 20, "y"),
    ]
    assert official_rows(success_run.warehouse / "t", ["id", "name", "dt"]) == [(1, "a;b", "x"), (2, None, "y")]


# ---- run 2: a -f script with DML whose 5th statement fails in Spark's analysis -------------------------

FAILING_FILE = """\
CREATE TABLE t (id INT, v STRING, ts BIGINT) USING hudi TBLPROPERTIES (primaryKey='id', preCombineField='ts');
INSERT INTO t VALUES (1, 'a', 10), (2, 'b', 10);
MERGE INTO t USING (SELECT 2 AS id, 'z' AS v, 20L AS ts) s ON t.id = s.id
  WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *;
SELECT id, v FROM t ORDER BY id;
  SELECT no_such_column FROM t;
INSERT INTO t VALUES (3, 'must not run', 30);
CREATE TABLE after_failure (id INT) USING hudi;
"""


@pytest.fixture(scope="module")
def failing_run(tmp_path_factory) -> Run:
    workdir = tmp_path_factory.mktemp("cli_failing")
    script = workdir / "job.sql"
    script.write_text(FAILING_FILE)
    return run_cli(workdir, "-f", str(script))


def test_failing_file_exit_code_and_one_error_line(failing_run):
    assert failing_run.returncode == 1
    assert len(failing_run.error_lines) == 1, failing_run.stderr[-3000:]
    error = failing_run.error_lines[0]
    assert error.startswith("Error: statement 5 (line 6, column 3): ") and "no_such_column" in error
    assert error.endswith("; 4 statement(s) before it completed")
    assert failing_run.stderr.rstrip().splitlines()[-1] == error  # the error is the last thing said
    assert "Traceback" not in failing_run.stderr


def test_failing_file_statements_before_the_error_ran(failing_run):
    # no 'Time taken' for the failed statement nor later ones; each count is what it printed
    assert failing_run.fetched == [0, 1, 1, 2], failing_run.stderr[-3000:]
    assert sum(failing_run.fetched) == len(failing_run.out_lines)


def test_dml_results_carry_their_column_names(failing_run):
    lines = failing_run.out_lines
    assert lines[0].startswith("num_affected_rows=2\t") and "num_inserted_rows=" in lines[0], failing_run.stderr[-3000:]
    assert lines[1] == ("num_affected_rows=1\tnum_updated_rows=1\tnum_deleted_rows=0\tnum_inserted_rows=0\t"
                        "num_skipped_older_rows=0")
    assert lines[2:] == ["1\ta", "2\tz"]  # query rows: spark-sql's tab-separated rows, no header


def test_failing_file_later_statements_did_not_run(failing_run, spark):
    session = hudiql.connect(warehouse=str(failing_run.warehouse), spark=spark)
    assert [tuple(r) for r in session.sql("SELECT id, v FROM t ORDER BY id").collect()] == [(1, "a"), (2, "z")]
    assert [r[1] for r in session.sql("SHOW TABLES").collect()] == ["t"]
    assert not (failing_run.warehouse / "after_failure").exists()


def test_failing_file_stderr_has_no_java_stack_trace_progress_or_banner(failing_run):
    # 'Error: ...' is the whole report; Spark's own log of the failed query (a JSON record with the
    # Java stack trace) must not reach the user, nor, on a pipe, Spark's progress and banner.
    noisy = [line[:200] for line in failing_run.stderr.splitlines()
             if "at org.apache.spark" in line or "SQLQueryContextLogger" in line]
    assert noisy == []
    for noise in ("[Stage", "Setting default log level", "at org.apache"):
        assert noise not in failing_run.stderr


# ---- run 3: a hudiql error (unknown table) in the middle of a -e script -----------------------------------


@pytest.fixture(scope="module")
def missing_table_run(tmp_path_factory) -> Run:
    sql = (
        "CREATE TABLE a (id INT) USING hudi; "
        "SELECT * FROM missing_table; "
        "CREATE TABLE b (id INT) USING hudi"
    )
    return run_cli(tmp_path_factory.mktemp("cli_missing"), "-e", sql)


def test_hudiql_error_is_one_helpful_line(missing_table_run):
    assert missing_table_run.returncode == 1
    assert missing_table_run.error_lines == [
        "Error: statement 2 (line 1, column 37): table default.missing_table does not exist; see SHOW TABLES; "
        "1 statement(s) before it completed"
    ], missing_table_run.stderr[-2000:]
    assert "Traceback" not in missing_table_run.stderr
    assert "HudiqlError" not in missing_table_run.stderr and "TableNotFoundError" not in missing_table_run.stderr
    assert missing_table_run.stdout == ""


def test_hudiql_error_stops_the_script(missing_table_run):
    assert missing_table_run.fetched == [0]  # only the first CREATE finished
    assert (missing_table_run.warehouse / "a" / ".hoodie" / "hoodie.properties").exists()
    assert not (missing_table_run.warehouse / "b").exists()


# ---- run 4 (no Spark): an unreadable -f file ---------------------------------------------------------------


def test_missing_file_is_one_error_line(tmp_path):
    result = run_cli(tmp_path, "-f", str(tmp_path / "no_such.sql"))
    assert result.returncode == 1
    assert result.error_lines == [f"Error: cannot read {tmp_path / 'no_such.sql'}: No such file or directory"]
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
    assert not result.warehouse.exists()
