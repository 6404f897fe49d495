"""A newcomer's first hour with ``hudiql sql``, run as real ``hudiql`` processes: a typo costs no
Spark start, ``--version``, progress on a terminal, and Ctrl-C that cancels with one line. (DML
results that name their counts and a failing script that says where it stopped: ``test_cli.py``.)

One run starts Spark (tens of seconds); the others must not start it at all: they run with
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
