"""A newcomer's first hour with ``hudiql sql``, run as real ``hudiql`` processes: a typo costs no
Spark start, ``--version``, DML results that name their counts, a failing script that says where
it stopped, progress on a terminal, and Ctrl-C that cancels with one line.

Two runs start Spark (tens of seconds each); the others must not start it at all: they run with
``JAVA_HOME`` pointing nowhere, so a Spark start would fail with a different error.
"""

from __future__ import annotations

import importlib.metadata
import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

HUDIQL = str(Path(sys.executable).with_name("hudiql"))
NO_JAVA = {**os.environ, "JAVA_HOME": "/nonexistent-java-home"}
#: Far below a Spark start on this kind of machine (14-45 s), far above a Python start.
NO_SPARK_SECONDS = 15


def hudiql(args: list[str], cwd: Path, env: dict[str, str] | None = None, stdin: int | None = subprocess.DEVNULL):
    started = time.monotonic()
    proc = subprocess.run([HUDIQL, *args], cwd=cwd, env=env or os.environ, stdin=stdin,
                          capture_output=True, text=True, timeout=900)
    return proc, time.monotonic() - started


# ---- no Spark: parse errors before the start, --version ------------------------------------------------


@pytest.mark.parametrize("source, error", [
    (["-e", "SELECT 1;\nSELEC * FROM t"],
     "Error: statement 2 (line 2, column 1): 'SELEC' does not start a statement; did you mean SELECT?"),
    (["-f", "job.sql"],
     "Error: statement 2 (line 3, column 3): 'SELEC' does not start a statement; did you mean SELECT?"),
    (["-i", "init.sql", "-e", "SELECT 1"],
     "Error: init.sql: statement 1 (line 1, column 1): 'CREAT' does not start a statement; did you mean CREATE?"),
    (["-i", "init.sql"],  # the interactive shell: its init file is parsed before Spark starts too
     "Error: init.sql: statement 1 (line 1, column 1): 'CREAT' does not start a statement; did you mean CREATE?"),
])
def test_a_typo_costs_no_spark_start(tmp_path, source, error):
    (tmp_path / "job.sql").write_text("CREATE TABLE t (id INT) USING hudi;\n\n  SELEC * FROM t;\nSELECT 2;\n")
    (tmp_path / "init.sql").write_text("CREAT TABLE t (id INT) USING hudi;\n")
    proc, seconds = hudiql(["sql", "--warehouse", "wh", *source], tmp_path, env=NO_JAVA)
    assert proc.stderr.splitlines() == [error], proc.stderr[-2000:]
    assert proc.returncode == 1 and proc.stdout == ""
    assert seconds < NO_SPARK_SECONDS
    assert not (tmp_path / "wh").exists()


def test_version(tmp_path):
    proc, seconds = hudiql(["--version"], tmp_path, env=NO_JAVA)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == (
        f"hudiql {importlib.metadata.version('hudiql')} (Spark {importlib.metadata.version('pyspark')})")
    assert seconds < NO_SPARK_SECONDS


# ---- a script with DML, then a failure -----------------------------------------------------------------

SCRIPT = """\
CREATE TABLE t (id INT, v STRING, ts BIGINT) USING hudi TBLPROPERTIES (primaryKey='id', preCombineField='ts');
INSERT INTO t VALUES (1, 'a', 10), (2, 'b', 10);
MERGE INTO t USING (SELECT 2 AS id, 'z' AS v, 20L AS ts) s ON t.id = s.id
  WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *;
SELECT id, v FROM t ORDER BY id;
  SELECT no_such_column FROM t;
INSERT INTO t VALUES (3, 'must not run', 30);
"""


@pytest.fixture(scope="module")
def script_run(tmp_path_factory):
    work = tmp_path_factory.mktemp("first_hour_script")
    (work / "job.sql").write_text(SCRIPT)
    proc, _ = hudiql(["sql", "--warehouse", "wh", "-f", "job.sql"], work)
    return proc


def test_dml_results_carry_their_column_names(script_run):
    lines = script_run.stdout.splitlines()
    assert lines[0].startswith("num_affected_rows=2\t") and "num_inserted_rows=" in lines[0], script_run.stderr[-3000:]
    assert lines[1] == ("num_affected_rows=1\tnum_updated_rows=1\tnum_deleted_rows=0\tnum_inserted_rows=0\t"
                        "num_skipped_older_rows=0")
    assert lines[2:] == ["1\ta", "2\tz"]  # query rows: spark-sql's tab-separated rows, no header


def test_a_failing_statement_says_where_and_how_far_the_script_got(script_run):
    errors = [line for line in script_run.stderr.splitlines() if line.startswith("Error")]
    assert len(errors) == 1 and errors[0].startswith("Error: statement 5 (line 6, column 3): "), script_run.stderr[-3000:]
    assert "no_such_column" in errors[0]
    assert errors[0].endswith("; 4 statement(s) before it completed")
    assert script_run.returncode == 1
    assert "must not run" not in script_run.stdout


def test_a_pipe_gets_no_progress_and_no_spark_banner(script_run):
    for noise in ("[Stage", "Setting default log level", "Traceback", "at org.apache"):
        assert noise not in script_run.stderr


# ---- progress on a terminal, and Ctrl-C -----------------------------------------------------------------

#: Runs for hours unless cancelled; Spark's range checks for a kill between batches.
LONG = "SELECT count(*) FROM range(0, 100000000000, 1, 2) WHERE sha2(CAST(id AS STRING), 256) = ''"


@pytest.fixture(scope="module")
def interrupted_run(tmp_path_factory):
    """``-e`` with a long second statement, stderr on a terminal: wait until Spark's progress bar
    shows its stage running, then SIGINT, as Ctrl-C sends it."""
    work = tmp_path_factory.mktemp("first_hour_ctrl_c")
    master, slave = pty.openpty()
    sql = f"SELECT 1; {LONG}; CREATE TABLE never (id INT) USING hudi"
    proc = subprocess.Popen([HUDIQL, "sql", "--warehouse", "wh", "-e", sql], cwd=work, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=slave, text=True)
    os.close(slave)
    shown, interrupted_at = "", None
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 1)
        if ready:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # the process closed the terminal
                break
            if not chunk:
                break
            shown += chunk.decode(errors="replace")
        _, first_done, after = shown.partition("Time taken")  # the long statement's stage, not SELECT 1's
        if interrupted_at is None and first_done and re.search(r"\[Stage \d+:", after):
            proc.send_signal(signal.SIGINT)
            interrupted_at = time.monotonic()
        if proc.poll() is not None and not ready:
            break
    if proc.poll() is None:
        proc.kill()
    stdout = proc.stdout.read()
    code = proc.wait(timeout=60)
    os.close(master)
    return {"code": code, "stdout": stdout, "stderr": shown, "interrupted_at": interrupted_at,
            "ended_after": time.monotonic() - interrupted_at if interrupted_at else None, "work": work}


def test_a_terminal_shows_spark_starting_and_its_progress(interrupted_run):
    stderr = interrupted_run["stderr"]
    assert interrupted_run["interrupted_at"] is not None, f"no progress bar on the terminal:\n{stderr[-3000:]}"
    assert "Starting Spark..." in stderr


def test_ctrl_c_cancels_the_running_statement_with_one_line(interrupted_run):
    stderr = interrupted_run["stderr"].replace("\r", "\n")
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    assert [line for line in lines if line.startswith("Error")] == [
        "Error: statement 2 (line 1, column 11): cancelled (Ctrl-C); 1 statement(s) before it completed"
    ], stderr[-3000:]
    for noise in ("Traceback", "py4j", "Py4J", "Exception", "KeyboardInterrupt"):
        assert noise not in stderr
    assert interrupted_run["code"] == 130
    assert interrupted_run["ended_after"] < 60  # the cancel, not the hours of the query
    assert interrupted_run["stdout"] == "1\n"
    assert not (interrupted_run["work"] / "wh" / "never").exists()
