"""A writer process for tests/write/test_concurrency.py: one SparkSession (local[1]), jobs from stdin.

Starting a JVM costs 5-10 s, so one process runs many jobs. The protocol is line based:
- the process prints ``READY`` once Spark is up;
- each stdin line is a job (JSON): ``warehouse``, ``setup`` (statements run before the start,
  e.g. ``SET`` and a warm-up ``SELECT``), ``statements`` (``[{"id", "sql"}]``), ``start_file``
  (wait until it exists, so that several processes start together), ``pause`` (seconds between
  statements), ``until_file`` (repeat the statements until it exists), ``wait_for_pending`` (a
  glob of pending instant files, e.g. ``<table>/.hoodie/*.compaction.inflight``: every statement
  after the first waits, at most ``wait_limit`` seconds, until such an instant is in flight, so
  that it starts while another process's action runs), ``die_at`` (``completion``: the process
  kills itself with SIGKILL when it is about to complete a data instant, after the metadata table
  recorded it) and ``result_file``;
- after the setup it prints ``WAITING <job>``, after the last statement ``DONE <job>``
  (``ABANDONED <job>`` when the start file never came, ``FAILED <job>`` when the setup failed).

The result file (JSON, rewritten after every statement, so a killed writer leaves what it did)
lists each statement run: its id, wall-clock start and end, ``outcome`` (``ok``, ``conflict``
for ``WriteConflictError``, ``error`` for anything else), the error's type and message, the rows
the statement returned and what it printed on stderr (``Warning: ...`` lines).
"""

from __future__ import annotations

import glob
import io
import json
import os
import sys
import time
import traceback
from contextlib import redirect_stderr


#: Seconds a job waits for its start file, and repeats its statements at most.
_LIMIT = 900


class _Tee(io.TextIOBase):
    """stderr that is also kept, so that a statement's warnings land in its result."""

    def __init__(self, real) -> None:
        self.real = real
        self.kept = io.StringIO()

    def write(self, text: str) -> int:
        self.real.write(text)
        self.kept.write(text)
        return len(text)

    def flush(self) -> None:
        self.real.flush()


def _write_json(path: str, value) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        json.dump(value, f)
    os.replace(tmp, path)


def _wait_for(path: str, limit: float) -> bool:
    deadline = time.monotonic() + limit
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


def _wait_for_pending(pattern: str, limit: float) -> None:
    """Until a file matches ``pattern`` whose instant has no completed ``.commit`` yet."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        for path in glob.glob(pattern):
            folder, name = os.path.split(path)
            if not os.path.exists(os.path.join(folder, name.split(".", 1)[0] + ".commit")):
                return
        time.sleep(0.002)


def _run_statement(session, statement: dict) -> dict:
    from hudiql.errors import WriteConflictError

    record = {"id": statement["id"], "sql": statement["sql"], "start": time.time(), "pid": os.getpid()}
    tee = _Tee(sys.stderr)
    try:
        with redirect_stderr(tee):
            rows = session.sql(statement["sql"]).collect()
        record.update(outcome="ok", rows=[[None if v is None else str(v) for v in r] for r in rows])
    except WriteConflictError as exc:
        record.update(outcome="conflict", error_type=type(exc).__name__, message=str(exc))
    except Exception as exc:  # any other error fails the test that reads the result
        record.update(outcome="error", error_type=type(exc).__name__, message=str(exc),
                      traceback=traceback.format_exc())
    record["end"] = time.time()
    record["stderr"] = tee.kept.getvalue()
    return record


def _die_at_completion() -> None:
    """SIGKILL this process when it completes an instant of a data table (not of a metadata table,
    which records a data instant before it completes)."""
    import signal

    from hudiql.timeline.active import Timeline

    complete = Timeline.complete

    def dying(self, instant, content):
        if "/.hoodie/metadata" not in self.storage.base_uri:
            os.kill(os.getpid(), signal.SIGKILL)
        return complete(self, instant, content)

    Timeline.complete = dying


def run_job(spark, job: dict) -> None:
    import hudiql

    session = hudiql.connect(warehouse=job["warehouse"], spark=spark)
    for text in job.get("setup", []):
        session.sql(text).collect()
    print(f"WAITING {job['name']}", flush=True)
    # A test that failed never creates its files: the job is dropped, the process stays usable.
    if job.get("start_file") and not _wait_for(job["start_file"], _LIMIT):
        print(f"ABANDONED {job['name']}", flush=True)
        return
    if job.get("die_at") == "completion":
        _die_at_completion()
    results: list[dict] = []
    until = job.get("until_file")
    deadline = time.monotonic() + _LIMIT
    while True:
        for statement in job["statements"]:
            if results and job.get("wait_for_pending"):
                _wait_for_pending(job["wait_for_pending"], job.get("wait_limit", 30))
            results.append(_run_statement(session, statement))
            _write_json(job["result_file"], results)
            if job.get("pause"):
                time.sleep(job["pause"])
        if not until or os.path.exists(until) or time.monotonic() > deadline:
            break
    print(f"DONE {job['name']}", flush=True)


def main() -> None:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[1]")
        .appName(f"hudiql-concurrent-writer-{os.getpid()}")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "1")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "1g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    print("READY", flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        job = json.loads(line)
        try:
            run_job(spark, job)
        except Exception:
            traceback.print_exc()
            print(f"FAILED {job.get('name')}", flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
