"""Concurrent writers on one table, as real processes (issue 13).

Every writer is its own Python process with its own SparkSession (``local[1]``) and its own
``hudiql.connect`` on the same warehouse: ``tests/write/concurrent_writer.py``, fed jobs on stdin.
A JVM takes 5-10 s to start, so three writer processes live for the whole module and run every
scenario; the third is the one killed with SIGKILL, in the last scenario that needs it, and only the
CLI run starts a JVM of its own.

The writers of one scenario wait for a start file, so their statements overlap in time. Each
statement records whether it committed or raised ``WriteConflictError``; any other error fails
the test. After each scenario (``check_table``): no key twice (hudiql and the official reader),
the official reader returns what hudiql's SELECT returns, no write instant left pending, and
every row was written by a statement that succeeded; the scenario then checks that every row a
successful statement wrote last is there and that nothing of a statement that raised is.
"""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass
from itertools import count
from pathlib import Path

import pytest

from conftest import hudiql_rows, official_rows

WRITER_SCRIPT = Path(__file__).with_name("concurrent_writer.py")
INSTANT = re.compile(r"(?<!\d)\d{17}(?!\d)")
#: An instant file: ``T.action[.state]``, or on timeline layout 2 (``.hoodie/timeline/``) ``T_C.action`` once completed.
_TIMELINE_FILE = re.compile(r"^(\d{17})(?:_\d{17})?\.(.+)$")
#: Completed instant files of timeline layout 1 (a compaction completes as ``.commit``).
_COMPLETED = {"commit", "deltacommit", "replacecommit", "clean", "rollback", "savepoint", "restore"}
_WRITE_REQUESTED = {"commit.requested", "deltacommit.requested", "replacecommit.requested"}
COLUMNS = ["_hoodie_record_key", "_hoodie_commit_time", "id", "src"]
STARTUP_TIMEOUT = 300
JOB_TIMEOUT = 900  # a busy 2-core machine runs a small statement in seconds, or in a minute


# ---- writer processes ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Job:
    name: str
    result: Path  # the statements it ran (JSON), rewritten after each

    def results(self) -> list[dict]:
        return json.loads(self.result.read_text()) if self.result.exists() else []


class Writer:
    """One ``concurrent_writer.py`` process: jobs in on stdin, ``READY``/``WAITING``/``DONE`` out."""

    _jobs = count()

    def __init__(self, log_dir: Path, name: str) -> None:
        self.name = name
        self.log = log_dir / f"{name}.stderr"
        env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
        with open(self.log, "w") as err:
            self.proc = subprocess.Popen(
                [sys.executable, str(WRITER_SCRIPT)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=err, text=True, env=env, cwd=log_dir,
            )
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line.strip())
        self.lines.put(None)

    def log_tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:]

    def expect(self, word: str, job: Job | None = None, timeout: float = JOB_TIMEOUT) -> None:
        """Wait for ``word`` (of ``job``); lines of jobs an earlier failed test left behind are skipped."""
        wanted = f"{word} {job.name}" if job else word
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                pytest.fail(f"writer {self.name}: no {wanted} within {timeout} s; its stderr ends:\n{self.log_tail()}")
            if line is None:
                pytest.fail(f"writer {self.name} exited ({self.proc.poll()}) before {wanted}; its stderr ends:\n{self.log_tail()}")
            if job and line == f"FAILED {job.name}":
                pytest.fail(f"writer {self.name}: job {job.name} failed in its setup; its stderr ends:\n{self.log_tail()}")
            if line == wanted:
                return

    def submit(self, workdir: Path, warehouse: Path, statements: list[dict], setup: list[str] = (),
               start_file: Path | None = None, pause: float = 0, until_file: Path | None = None,
               wait_for_pending: str | None = None, die_at: str | None = None) -> Job:
        """Send a job: it runs its setup, prints WAITING, waits for ``start_file``, runs its statements."""
        name = f"{self.name}-job{next(self._jobs)}"
        job = Job(name, workdir / f"{name}.json")
        spec = {"name": name, "warehouse": str(warehouse), "setup": list(setup), "statements": statements,
                "start_file": str(start_file) if start_file else None, "pause": pause,
                "until_file": str(until_file) if until_file else None, "wait_for_pending": wait_for_pending,
                "die_at": die_at, "result_file": str(job.result)}
        self.proc.stdin.write(json.dumps(spec) + "\n")
        self.proc.stdin.flush()
        return job

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()


@pytest.fixture(scope="module")
def writers(tmp_path_factory):
    """Three writer processes, started together (their JVMs start in parallel)."""
    log_dir = tmp_path_factory.mktemp("writers")
    procs = [Writer(log_dir, f"w{i}") for i in (1, 2, 3)]
    try:
        for w in procs:
            w.expect("READY", timeout=STARTUP_TIMEOUT)
        yield procs
    finally:
        for w in procs:
            w.close()


def run_together(workdir: Path, warehouse: Path, jobs: list[tuple[Writer, dict]]) -> list[list[dict]]:
    """Run one job per writer, all released by one start file; the statements each writer ran."""
    start = workdir / f"start-{time.monotonic_ns()}"
    submitted = [(w, w.submit(workdir, warehouse, start_file=start, **spec)) for w, spec in jobs]
    try:
        for w, job in submitted:
            w.expect("WAITING", job)
    finally:
        start.touch()  # also when a writer failed: the others must not wait for ever
    for w, job in submitted:
        w.expect("DONE", job)
    return [job.results() for _, job in submitted]


def no_other_errors(*runs: list[dict]) -> None:
    """Statements either commit or raise WriteConflictError; anything else is a failure."""
    errors = [r for run in runs for r in run if r["outcome"] == "error"]
    assert not errors, "statements failed with errors other than WriteConflictError:\n" + "\n".join(
        f"{r['id']}: {r['error_type']}: {r['message']}\n{r.get('traceback', '')}" for r in errors)


# ---- the table on disk ----------------------------------------------------------------------------

def timeline_files(table: Path) -> dict[str, set[str]]:
    """Instant time -> suffixes of its files in ``.hoodie/`` (timeline layout 1) or ``.hoodie/timeline/`` (2)."""
    files: dict[str, set[str]] = {}
    folder = table / ".hoodie" / "timeline"
    for p in (folder if folder.is_dir() else table / ".hoodie").iterdir():
        m = _TIMELINE_FILE.match(p.name)
        if m and p.is_file():
            files.setdefault(m[1], set()).add(m[2])
    return files


def completed(table: Path) -> set[str]:
    return {ts for ts, suffixes in timeline_files(table).items() if suffixes & _COMPLETED}


def pending_writes(table: Path) -> set[str]:
    """Write instants (commit, deltacommit, replacecommit) requested or inflight, not completed."""
    return {ts for ts, suffixes in timeline_files(table).items()
            if suffixes & _WRITE_REQUESTED and not suffixes & _COMPLETED}


def completion_ns(table: Path, instant: str) -> int:
    """When an instant completed: the modification time of its completed file."""
    folder = table / ".hoodie" / "timeline"
    [done] = [p for p in (folder if folder.is_dir() else table / ".hoodie").glob(f"{instant}[._]*")
              if p.name.split(".", 1)[1] in _COMPLETED]
    return done.stat().st_mtime_ns


def data_files_of(table: Path, instant: str) -> list[Path]:
    """Data files (base and log) whose name carries the instant, outside ``.hoodie/``."""
    return sorted(p for p in table.rglob(f"*{instant}*") if p.is_file() and ".hoodie" not in p.relative_to(table).parts)


def check_table(session, table: Path, name: str, extra: tuple[str, ...] = ()) -> dict[int, dict]:
    """What every scenario asserts at the end; returns the rows by id."""
    columns = COLUMNS + list(extra)
    ours = hudiql_rows(session, f"SELECT {', '.join(columns)} FROM {name}")
    official = official_rows(table, columns)
    for reader, rows in (("hudiql", ours), ("the official reader", official)):
        twice = {k: n for k, n in Counter(r[0] for r in rows).items() if n > 1}
        assert not twice, f"{reader} returns record keys more than once: {sorted(twice.items())[:10]}"
    assert ours == official, "hudiql and the official reader disagree:\n" + "\n".join(
        f"  only hudiql: {r}" for r in sorted(set(ours) - set(official))[:10]) + "\n" + "\n".join(
        f"  only official: {r}" for r in sorted(set(official) - set(ours))[:10])
    assert not pending_writes(table), f"write instants left pending: {sorted(pending_writes(table))}"
    done = completed(table)
    stray = {r[1] for r in ours} - done
    assert not stray, f"rows carry commit times of instants that never completed: {sorted(stray)}"
    return {r[2]: dict(zip(columns, r)) for r in ours}


def check_conflict_messages(table: Path, runs: list[list[dict]]) -> None:
    """A loser's error is one line naming the winning instant, a completed instant of the table."""
    done = completed(table)
    for r in (r for run in runs for r in run if r["outcome"] == "conflict"):
        message = r["message"]
        assert "\n" not in message.strip(), f"{r['id']}: the conflict error is not one line: {message!r}"
        named = set(INSTANT.findall(message))
        assert named & done, f"{r['id']}: the conflict error names no completed instant of the table: {message!r}"


def values(rows: list[int], src: str) -> str:
    return ", ".join(f"({k}, '{src}')" for k in rows)


NO_RETRIES = "SET hoodie.write.num.retries.on.conflict.failures=0"  # a lost conflict fails the statement


# ---- 1. overlapping keys --------------------------------------------------------------------------

SHARED = list(range(1, 11))  # keys every statement writes


def unique_keys(writer: int, statement: int) -> list[int]:
    return [writer * 1000 + statement * 10 + j for j in range(3)]


def upsert_statement(table: str, writer: int, statement: int) -> dict:
    """An upsert of the shared keys and three keys of its own, as INSERT VALUES, INSERT SELECT or MERGE."""
    src = f"w{writer}s{statement}"
    keys = SHARED + unique_keys(writer, statement)
    first = unique_keys(writer, statement)[0]
    ranges = (f"SELECT CAST(id AS INT) AS id FROM range({SHARED[0]}, {SHARED[-1] + 1}) UNION ALL "
              f"SELECT CAST(id AS INT) AS id FROM range({first}, {first + 3})")
    form = statement % 3
    if form == 1:
        sql = f"INSERT INTO {table} VALUES {values(keys, src)}"
    elif form == 2:
        sql = f"INSERT INTO {table} SELECT id, '{src}' AS src FROM ({ranges})"
    else:
        sql = (f"MERGE INTO {table} USING (SELECT id, '{src}' AS src FROM ({ranges})) s ON {table}.id = s.id "
               "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
    return {"id": src, "sql": sql, "writer": writer, "keys": keys}


def check_overlapping(session, table: Path, name: str, runs: list[list[dict]]) -> dict[int, dict]:
    """The rows after overlapping upserts, against what each statement reported."""
    statements = [r for run in runs for r in run]
    ok = [r for r in statements if r["outcome"] == "ok"]
    failed = [r for r in statements if r["outcome"] == "conflict"]
    rows = check_table(session, table, name)
    by_src = Counter(r["src"] for r in rows.values())
    # Nothing of a statement that raised is visible, everything a successful one wrote alone is.
    for r in failed:
        assert by_src[r["id"]] == 0, f"{r['id']} raised ({r['message']}) but {by_src[r['id']]} of its rows are visible"
    instant_of: dict[str, str] = {}
    for r in ok:
        mine = [rows.get(k) for k in r["unique"]]
        assert all(mine) and {m["src"] for m in mine} == {r["id"]}, (
            f"{r['id']} committed but its own keys {r['unique']} read {[m and m['src'] for m in mine]}")
        [instant_of[r["id"]]] = {m["_hoodie_commit_time"] for m in mine}
    assert len(set(instant_of.values())) == len(instant_of), f"two statements share a commit: {instant_of}"
    assert set(by_src) <= {"seed"} | {r["id"] for r in ok}, f"rows of unknown writes: {by_src}"
    # Two successful writes of one key cannot overlap under OCC: the key holds the value of the one
    # with the greatest instant, and that one also completed last.
    last = max(ok, key=lambda r: instant_of[r["id"]], default=None)
    if last is not None:
        last_done = max(ok, key=lambda r: completion_ns(table, instant_of[r["id"]]))
        assert last_done["id"] == last["id"], (
            f"{last['id']} has the greatest instant but {last_done['id']} completed after it: "
            f"{ {i: instant_of[i] for i in (last['id'], last_done['id'])} }")
    for k in SHARED:
        want = (last["id"], instant_of[last["id"]]) if last else ("seed", rows[k]["_hoodie_commit_time"])
        assert (rows[k]["src"], rows[k]["_hoodie_commit_time"]) == want, (
            f"shared key {k} holds {rows[k]['src']} at {rows[k]['_hoodie_commit_time']}; the last successful "
            f"write was {want} (successes: {instant_of})")
    return rows


def test_overlapping_upserts_one_commit_per_conflicting_pair(writers, session, warehouse, tmp_path):
    n_writers = len(writers)  # three: every pair of them conflicts
    name = "t"
    table = warehouse / name
    session.sql(f"CREATE TABLE {name} (id INT, src STRING) USING hudi TBLPROPERTIES (primaryKey='id', 'hoodie.spark.sql.insert.into.operation'='upsert')")
    session.sql(f"INSERT INTO {name} VALUES {values(SHARED, 'seed')}")
    plans = {w: [upsert_statement(name, w, s) for s in (1, 2, 3)] for w in range(1, n_writers + 1)}
    jobs = [(writers[w - 1], {"statements": [{"id": p["id"], "sql": p["sql"]} for p in plans[w]],
                              "setup": [NO_RETRIES, f"SELECT count(*) FROM {name}"]}) for w in plans]
    runs = run_together(tmp_path, warehouse, jobs)
    keys = {p["id"]: p["keys"] for ps in plans.values() for p in ps}
    for run in runs:
        for r in run:
            r["unique"] = [k for k in keys[r["id"]] if k not in SHARED]
    assert [len(run) for run in runs] == [3] * n_writers
    no_other_errors(*runs)
    check_overlapping(session, table, name, runs)
    check_conflict_messages(table, runs)
    conflicts = [r for run in runs for r in run if r["outcome"] == "conflict"]
    assert conflicts, (
        f"{n_writers} writers upserted the same keys at the same time and every statement committed: "
        + str([(r["id"], round(r["start"], 2), round(r["end"], 2)) for run in runs for r in run]))

    # A retry of a statement that lost succeeds, and its rows are the latest.
    retry = conflicts[0]
    [counts] = session.sql(retry["sql"]).collect()
    assert counts.num_affected_rows == len(keys[retry["id"]])
    retry_run = dict(retry, outcome="ok", start=time.time(), end=time.time())
    runs_after = [[r for r in run if r is not retry] for run in runs] + [[retry_run]]
    rows = check_overlapping(session, table, name, runs_after)
    assert {rows[k]["src"] for k in SHARED} == {retry["id"]}


def test_a_lost_conflict_is_retried_on_the_new_snapshot(writers, session, warehouse, tmp_path):
    """With retries (``hoodie.write.num.retries.on.conflict.failures``, 3 by default; 10 here) the
    same overlapping upserts all commit: a statement that lost runs again on the new snapshot, and
    says so in one warning line."""
    name = "r"
    table = warehouse / name
    session.sql(f"CREATE TABLE {name} (id INT, src STRING) USING hudi TBLPROPERTIES (primaryKey='id', "
                "'hoodie.spark.sql.insert.into.operation'='upsert')")
    session.sql(f"INSERT INTO {name} VALUES {values(SHARED, 'seed')}")
    plans = {w: [upsert_statement(name, w, s) for s in (1, 2, 3)] for w in range(1, len(writers) + 1)}
    setup = ["SET hoodie.write.num.retries.on.conflict.failures=10", f"SELECT count(*) FROM {name}"]
    jobs = [(writers[w - 1], {"statements": [{"id": p["id"], "sql": p["sql"]} for p in plans[w]], "setup": setup})
            for w in plans]
    runs = run_together(tmp_path, warehouse, jobs)
    keys = {p["id"]: p["keys"] for ps in plans.values() for p in ps}
    for run in runs:
        for r in run:
            r["unique"] = [k for k in keys[r["id"]] if k not in SHARED]
    no_other_errors(*runs)
    statements = [r for run in runs for r in run]
    assert [r["outcome"] for r in statements] == ["ok"] * len(statements), [(r["id"], r.get("message")) for r in statements]
    retried = [r for r in statements if "running the statement again on the new snapshot" in r["stderr"]]
    assert retried, "no statement lost a conflict, so no retry was seen: the scenario proves nothing"
    check_overlapping(session, table, name, runs)


# ---- 2. disjoint partitions -----------------------------------------------------------------------

def test_disjoint_partitions_all_commit(writers, session, warehouse, tmp_path):
    name = "pt"
    table = warehouse / name
    session.sql(f"CREATE TABLE {name} (id INT, src STRING, p STRING) USING hudi PARTITIONED BY (p) "
                "TBLPROPERTIES (primaryKey='id', 'hoodie.spark.sql.insert.into.operation'='upsert')")
    seeded = {w: [w * 1000 + j for j in range(1, 6)] for w in (1, 2, 3)}
    session.sql(f"INSERT INTO {name} VALUES " + ", ".join(
        f"({k}, 'seed', 'p{w}')" for w, ks in seeded.items() for k in ks))
    jobs, new_keys = [], {}
    for w in (1, 2, 3):
        statements = []
        for s in (1, 2, 3):
            src = f"w{w}s{s}"
            new_keys[src] = [w * 1000 + 100 + s * 10 + j for j in range(3)]
            rows = ", ".join(f"({k}, '{src}', 'p{w}')" for k in seeded[w] + new_keys[src])
            statements.append({"id": src, "sql": f"INSERT INTO {name} VALUES {rows}"})
        jobs.append((writers[w - 1], {"statements": statements, "setup": [f"SELECT count(*) FROM {name}"]}))
    runs = run_together(tmp_path, warehouse, jobs)
    no_other_errors(*runs)
    outcomes = {r["id"]: (r["outcome"], r.get("message")) for run in runs for r in run}
    assert all(o == "ok" for o, _ in outcomes.values()), f"writers of disjoint partitions conflicted: {outcomes}"
    rows = check_table(session, table, name, ("p",))
    for w in (1, 2, 3):
        assert {(rows[k]["src"], rows[k]["p"]) for k in seeded[w]} == {(f"w{w}s3", f"p{w}")}
        for s in (1, 2, 3):
            assert {(rows[k]["src"], rows[k]["p"]) for k in new_keys[f"w{w}s{s}"]} == {(f"w{w}s{s}", f"p{w}")}
    assert len(rows) == 3 * 5 + 9 * 3


# ---- 3. merge-on-read: a writer and compaction ------------------------------------------------------

def check_sequential_writer(rows: dict[int, dict], run: list[dict], shared: list[int], own: dict[str, list[int]]) -> None:
    """One writer's statements ran one after the other: each that committed holds its own keys,
    nothing of one that raised is visible, and the last that committed holds the shared keys."""
    ok = [r for r in run if r["outcome"] == "ok"]
    visible = Counter(x["src"] for x in rows.values())
    for r in run:
        if r["outcome"] == "ok":
            mine = [rows.get(k) for k in own[r["id"]]]
            assert all(m and m["src"] == r["id"] for m in mine), f"{r['id']} committed but its rows read {mine}"
        else:
            assert not visible[r["id"]], f"{r['id']} raised ({r['message']}) but {visible[r['id']]} of its rows are visible"
    want = ok[-1]["id"] if ok else "seed"
    assert {rows[k]["src"] for k in shared} == {want}, f"shared keys {[rows[k]['src'] for k in shared]}, want {want}"


def mor_updates(name: str, writer: int, statements: int, shared: list[int], own_base: int) -> tuple[list[dict], dict]:
    """Statements that update existing keys only (the shared ones and three of their own), so that
    each delta commit appends log files: work for compaction."""
    plans, own = [], {}
    for s in range(1, statements + 1):
        src = f"w{writer}s{s}"
        own[src] = [own_base + s * 10 + 2 * j for j in range(3)]  # of own_base's parity
        rows = ", ".join(f"({k}, '{src}', 'p{k % 4}')" for k in shared + own[src])
        plans.append({"id": src, "sql": f"INSERT INTO {name} VALUES {rows}"})
    return plans, own


#: Rows of the compacted table: enough that a compaction takes a while.
MOR_ROWS = 100_000
MOR_SEED = "SELECT CAST(id AS INT), 'seed', concat('p', CAST(id % 4 AS STRING)) FROM range(1, {n}{step})"


def test_mor_writer_against_running_compaction(writers, session, warehouse, tmp_path):
    name = "m"
    table = warehouse / name
    session.sql(f"CREATE TABLE {name} (id INT, src STRING, p STRING) USING hudi PARTITIONED BY (p) TBLPROPERTIES "
                "(primaryKey='id', 'hoodie.spark.sql.insert.into.operation'='upsert', type='mor', 'hoodie.compact.inline'='false')")
    session.sql(f"INSERT INTO {name} {MOR_SEED.format(n=MOR_ROWS + 1, step='')}")
    session.sql(f"INSERT INTO {name} {MOR_SEED.format(n=MOR_ROWS + 1, step=', 2')}")  # log files to compact
    statements, own = mor_updates(name, 1, 6, SHARED, 1000)
    stop = tmp_path / "stop-compacting"
    start = tmp_path / "start"
    warm = [f"SELECT count(*) FROM {name}"]
    # Between two statements of the writer a compaction can be scheduled (none is while a write is
    # in flight); the writer's next statement starts as soon as that compaction is inflight.
    writer = writers[0].submit(tmp_path, warehouse, statements, warm, start,
                               wait_for_pending=str(table / ".hoodie" / "*.compaction.inflight"))
    compactor = writers[1].submit(
        tmp_path, warehouse, [{"id": "compact", "sql": f"CALL run_compaction(table => '{name}')"}], warm, start,
        pause=0.1, until_file=stop)
    try:
        writers[0].expect("WAITING", writer)
        writers[1].expect("WAITING", compactor)
        start.touch()
        writers[0].expect("DONE", writer)
    finally:
        start.touch()
        stop.touch()
    writers[1].expect("DONE", compactor)
    run, compactions = writer.results(), compactor.results()
    no_other_errors(run, compactions)
    assert any(r["outcome"] == "ok" for r in run), f"no write committed: {[(r['id'], r.get('message')) for r in run]}"
    compacted = [c for c in compactions if c["outcome"] == "ok" and c["rows"]]
    during = [(w["id"], w["outcome"]) for w in run for c in compacted if c["start"] < w["start"] < c["end"]]
    assert during, "no write started while a compaction ran; compactions that compacted: " + str(
        [(round(c["start"] % 1000, 1), round(c["end"] - c["start"], 1), c["rows"]) for c in compacted])
    rows = check_table(session, table, name, ("p",))
    check_sequential_writer(rows, run, SHARED, own)
    assert len(rows) == MOR_ROWS

    # With the writer gone a compaction runs, and the compacted files hold the same rows.
    session.sql(f"CALL run_compaction(table => '{name}')").collect()
    assert check_table(session, table, name, ("p",)) == rows
    assert official_rows(table, COLUMNS, read_optimized=True) == official_rows(table, COLUMNS)


def mine(writer: int) -> list[int]:
    """Shared keys of writer 1 or 2: even keys (partitions p0, p2) or odd keys (p1, p3)."""
    return [k for k in SHARED if k % 2 == writer - 1]


def test_mor_inline_compaction_with_two_writers(writers, session, warehouse, tmp_path):
    """Each statement compacts inline while the other writer may be in flight: a compaction that
    cannot run is the statement's warning, never its failure. The writers write disjoint partitions,
    so every statement commits: a statement's snapshot is taken with its instant, under the lock a
    compaction is planned under, so a plan made meanwhile is in it and the write goes past it."""
    name = "mi"
    table = warehouse / name
    session.sql(f"CREATE TABLE {name} (id INT, src STRING, p STRING) USING hudi PARTITIONED BY (p) TBLPROPERTIES "
                "(primaryKey='id', 'hoodie.spark.sql.insert.into.operation'='upsert', type='mor', 'hoodie.compact.inline'='true', "
                "'hoodie.compact.inline.max.delta.commits'='1')")
    session.sql(f"INSERT INTO {name} {MOR_SEED.format(n=10_001, step='')}")
    plans = {w: mor_updates(name, w, 4, mine(w), w * 1000 + w - 1) for w in (1, 2)}
    jobs = [(writers[w - 1], {"statements": plans[w][0], "setup": [f"SELECT count(*) FROM {name}"]}) for w in (1, 2)]
    runs = run_together(tmp_path, warehouse, jobs)
    no_other_errors(*runs)
    for run in runs:
        assert all(r["outcome"] == "ok" for r in run), f"a write failed: {[(r['id'], r.get('message')) for r in run]}"
    rows = check_table(session, table, name, ("p",))
    for w, run in zip((1, 2), runs):
        check_sequential_writer(rows, run, mine(w), plans[w][1])
    assert len(rows) == 10_000


# ---- non-blocking concurrency control -------------------------------------------------------------

NON_BLOCKING_ROWS = 20_000


def test_non_blocking_writers_and_a_compactor_all_commit(writers, session, warehouse, tmp_path):
    """Hudi 1.x's non-blocking concurrency control on a version 8 merge-on-read table with the
    bucket index: two writers upsert overlapping keys (all in the same file groups) and insert new
    keys into a new partition (both start its buckets' file groups) while a third process keeps
    compacting. No statement fails; every key holds the row with the greatest ordering value any
    statement gave it (the shared keys: writer 2's last statement's), each writer's new keys their
    statement's row, and after a final compaction the official reader agrees (it reads no file
    group that has only log files)."""
    name = "nb"
    table = warehouse / name
    session.sql(f"CREATE TABLE {name} (id INT, src STRING, ts INT, p STRING) USING hudi PARTITIONED BY (p) "
                "TBLPROPERTIES (primaryKey='id', preCombineField='ts', type='mor', 'hoodie.write.table.version'='8', "
                "'hoodie.index.type'='BUCKET', 'hoodie.bucket.index.num.buckets'='4', 'hoodie.compact.inline'='false', "
                "'hoodie.write.concurrency.mode'='NON_BLOCKING_CONCURRENCY_CONTROL')")
    session.sql(f"INSERT INTO {name} SELECT CAST(id AS INT), 'seed', 0, concat('p', CAST(id % 4 AS STRING)) "
                f"FROM range(1, {NON_BLOCKING_ROWS + 1})")
    session.sql(f"CALL run_compaction(table => '{name}')").collect()  # every group gets a base file
    statements = 5
    plans, own = {}, {}
    for w in (1, 2):
        plans[w] = []
        for s in range(1, statements + 1):
            src = f"w{w}s{s}"
            own[src] = [50_000 * w + s * 10 + j for j in range(3)]  # new keys, in a new partition
            # A later statement orders after every earlier one of either writer: ts = s, then the writer.
            rows = ", ".join([*(f"({k}, '{src}', {10 * s + w}, 'p{k % 4}')" for k in SHARED),
                              *(f"({k}, '{src}', {10 * s + w}, 'new')" for k in own[src])])
            plans[w].append({"id": src, "sql": f"INSERT INTO {name} VALUES {rows}"})
    stop, start = tmp_path / "stop-compacting", tmp_path / "start"
    warm = [f"SELECT count(*) FROM {name}"]
    # No retry: a statement that conflicted would fail.
    submitted = [(writers[w - 1], writers[w - 1].submit(tmp_path, warehouse, plans[w], [NO_RETRIES, *warm], start))
                 for w in (1, 2)]
    compactor = writers[2].submit(tmp_path, warehouse, [{"id": "compact", "sql": f"CALL run_compaction(table => '{name}')"}],
                                  warm, start, pause=0.1, until_file=stop)
    try:
        for w, job in [*submitted, (writers[2], compactor)]:
            w.expect("WAITING", job)
        start.touch()
        for w, job in submitted:
            w.expect("DONE", job)
    finally:
        start.touch()
        stop.touch()
    writers[2].expect("DONE", compactor)
    runs, compactions = [job.results() for _, job in submitted], compactor.results()
    no_other_errors(*runs, compactions)
    for run in runs:
        assert all(r["outcome"] == "ok" for r in run), f"a write failed: {[(r['id'], r.get('message')) for r in run]}"
    assert not [r for r in compactions if r["outcome"] != "ok"], [r.get("message") for r in compactions]
    assert any(c["rows"] for c in compactions), "the compactor never compacted"
    a, b = runs
    overlapped = [(x["id"], y["id"]) for x in a for y in b if x["start"] < y["end"] and y["start"] < x["end"]]
    assert overlapped, "no two statements of the writers ran at the same time"

    def expected(rows: dict[int, dict]) -> None:
        assert len(rows) == NON_BLOCKING_ROWS + sum(len(keys) for keys in own.values())
        for k in SHARED:
            assert (rows[k]["src"], rows[k]["ts"]) == (f"w2s{statements}", 10 * statements + 2), rows[k]
        for src, keys in own.items():
            assert {(rows[k]["src"], rows[k]["p"]) for k in keys} == {(src, "new")}, (src, [rows[k] for k in keys])
        assert {rows[k]["src"] for k in range(SHARED[-1] + 1, NON_BLOCKING_ROWS + 1)} == {"seed"}

    ours = hudiql_rows(session, f"SELECT {', '.join(COLUMNS)}, ts, p FROM {name}")
    expected({r[2]: dict(zip([*COLUMNS, "ts", "p"], r)) for r in ours})
    new_groups = {p.name.split("_")[0].lstrip(".") for p in (table / "p=new").iterdir() if ".log." in p.name}
    assert new_groups <= {f"0000000{b}-0000-0000-0000-000000000000-0" for b in range(4)}, new_groups
    session.sql(f"CALL run_compaction(table => '{name}')").collect()
    expected(check_table(session, table, name, ("ts", "p")))
    assert official_rows(table, COLUMNS, read_optimized=True) == official_rows(table, COLUMNS)


def test_two_fresh_writers_appending_to_one_file_group_keep_the_winners_log(session, warehouse, tmp_path):
    """Two writer processes started alike (their Spark stages numbered alike) update one file group
    of a merge-on-read table at once: on timeline layout 1 both pick the slice's next log version,
    so their log files must differ by write token; the loser's abort then removes its own file only,
    and the winner's rows stay readable by both readers."""
    name = "fa"
    table = warehouse / name
    session.sql(f"CREATE TABLE {name} (id INT, src STRING) USING hudi TBLPROPERTIES (primaryKey='id', "
                "'hoodie.spark.sql.insert.into.operation'='upsert', type='mor', 'hoodie.compact.inline'='false')")
    session.sql(f"INSERT INTO {name} VALUES {values(SHARED, 'seed')}")
    fresh = [Writer(tmp_path, f"fresh{i}") for i in (1, 2)]
    try:
        for w in fresh:
            w.expect("READY", timeout=STARTUP_TIMEOUT)
        jobs = [(w, {"statements": [{"id": f"f{i}", "sql": f"INSERT INTO {name} VALUES {values(SHARED, f'f{i}')}"}],
                     "setup": [NO_RETRIES, f"SELECT count(*) FROM {name}"]}) for i, w in enumerate(fresh, 1)]
        runs = run_together(tmp_path, warehouse, jobs)
    finally:
        for w in fresh:
            w.close()
    no_other_errors(*runs)
    winners = [r["id"] for run in runs for r in run if r["outcome"] == "ok"]
    rows = check_table(session, table, name)
    assert winners and {rows[k]["src"] for k in SHARED} == {winners[-1]}
    logs = [p.name for p in table.rglob(".*.log.*")]
    assert len(logs) == len(winners), f"log files {logs} for {len(winners)} committed writes"


def test_what_another_process_wrote_between_two_statements_is_seen(writers, session, warehouse, tmp_path):
    """This process keeps what it read of a table and its metadata table between statements: it
    lists the metadata timeline again only when the data timeline changed. Another process's
    write between two statements changes it: this process's next query sees the other's rows, an
    UPDATE by key finds a key the other wrote through the record index, and the metadata table
    this process writes next still lists the other's files (the official reader lists the table
    through it)."""
    name = "seen"
    table = warehouse / name
    session.sql(f"CREATE TABLE {name} (id INT, src STRING) USING hudi TBLPROPERTIES (primaryKey='id', "
                "'hoodie.write.table.version'='9', 'hoodie.metadata.record.index.enable'='true')")
    session.sql(f"INSERT INTO {name} VALUES {values(list(range(1, 11)), 'here')}")
    assert session.sql(f"SELECT count(*) FROM {name}").collect()[0][0] == 10  # what this process keeps
    runs = run_together(tmp_path, warehouse, [(writers[0], {"statements": [
        {"id": "other", "sql": f"INSERT INTO {name} VALUES {values(list(range(11, 21)), 'other')}"}]})])
    assert [r["outcome"] for r in runs[0]] == ["ok"]
    assert session.sql(f"SELECT count(*) FROM {name}").collect()[0][0] == 20
    session.sql(f"UPDATE {name} SET src = 'updated' WHERE id = 15")
    session.sql(f"INSERT INTO {name} VALUES {values([21], 'here')}")
    expected = sorted([(i, "here") for i in [*range(1, 11), 21]] + [(i, "other") for i in range(11, 21) if i != 15]
                      + [(15, "updated")])
    assert hudiql_rows(session, f"SELECT id, src FROM {name}") == expected
    assert official_rows(table, ["id", "src"]) == expected


# ---- 4. a writer killed with SIGKILL ------------------------------------------------------------------

HEARTBEAT_MS = 60000  # long: a rollback within it is the dead process seen, not an expired heartbeat
HEARTBEAT_SETTINGS = [f"SET hoodie.client.heartbeat.interval_in_ms={HEARTBEAT_MS}"]


def test_a_killed_writer_is_rolled_back_by_the_next_write_at_once(writers, session, warehouse, tmp_path):
    """A writer killed (SIGKILL) mid-write on this host: its heartbeat names its process, so the
    next writer knows it failed at once, rolls its instant back and commits, long before the
    heartbeat would expire; both readers see the committed rows only."""
    name = "k"
    table = warehouse / name
    session.sql(f"CREATE TABLE {name} (id INT, src STRING, p STRING) USING hudi PARTITIONED BY (p) "
                "TBLPROPERTIES (primaryKey='id', 'hoodie.spark.sql.insert.into.operation'='upsert')")
    session.sql(f"INSERT INTO {name} VALUES (1, 'seed', 'b'), (2, 'seed', 'a0')")
    setup = HEARTBEAT_SETTINGS + [f"SELECT count(*) FROM {name}"]
    victim = writers[2]  # no later scenario needs it
    try:
        # A writes 8 partitions, one file group each: its first files exist well before it could complete.
        big = {"id": "A", "sql": f"INSERT INTO {name} SELECT CAST(id AS INT), 'A', concat('a', CAST(id % 8 AS STRING)) "
                                 "FROM range(1000000, 1600000)"}
        a_start, b_start = tmp_path / "start-a", tmp_path / "start-b"
        a_job = victim.submit(tmp_path, warehouse, [big], setup, a_start)
        b_job = writers[0].submit(tmp_path, warehouse, [{"id": "B", "sql": f"INSERT INTO {name} VALUES (10, 'B', 'b')"}],
                                  setup, b_start)
        victim.expect("WAITING", a_job)
        writers[0].expect("WAITING", b_job)
        before = set(timeline_files(table))
        a_start.touch()
        a_instant, deadline = None, time.monotonic() + JOB_TIMEOUT
        while time.monotonic() < deadline:
            new = {ts: s for ts, s in timeline_files(table).items() if ts not in before}
            assert not any(s & _COMPLETED for s in new.values()), (
                f"A completed before it could be killed ({new}); make its write larger")
            inflight = [ts for ts, s in new.items() if "inflight" in s]
            if inflight:
                [a_instant] = inflight
                if data_files_of(table, a_instant):
                    break
            time.sleep(0.02)
        else:
            pytest.fail(f"A never had an inflight instant with data files; its stderr ends:\n{victim.log_tail()}")
        os.kill(victim.proc.pid, signal.SIGKILL)
        victim.proc.wait()
        killed_at = time.time()
        b_start.touch()  # B writes at once, while A's heartbeat is fresh
        writers[0].expect("DONE", b_job)
    finally:
        b_start.touch()
        victim.close()
    [b] = b_job.results()
    assert b["outcome"] == "ok", f"B failed next to the dead writer: {b.get('error_type')}: {b.get('message')}"
    assert a_job.results() == [], "A finished its statement although it was killed"
    assert b["end"] - killed_at < HEARTBEAT_MS / 1000, "B ended after A's heartbeat could have expired: proves nothing"
    left = timeline_files(table).get(a_instant, set())
    assert not left & {"inflight", "commit.requested"}, f"A's instant {a_instant} is still pending: {sorted(left)}"
    assert not data_files_of(table, a_instant), f"A's data files are still there: {data_files_of(table, a_instant)}"
    assert not (table / ".hoodie" / ".heartbeat" / a_instant).exists()
    rows = check_table(session, table, name, ("p",))
    assert sorted((r["id"], r["src"], r["p"]) for r in rows.values()) == [(1, "seed", "b"), (2, "seed", "a0"), (10, "B", "b")]


def test_a_compaction_killed_mid_run_runs_again_at_once(session, warehouse, tmp_path):
    """A compaction's process killed while its instant is inflight: the next compaction run, at
    once, knows the process is gone, rolls the instant back to requested and runs the same plan;
    then both readers, read-optimized too, see every row."""
    name = "kc"
    table = warehouse / name
    session.sql(f"CREATE TABLE {name} (id INT, src STRING, p STRING) USING hudi PARTITIONED BY (p) TBLPROPERTIES "
                "(primaryKey='id', 'hoodie.spark.sql.insert.into.operation'='upsert', type='mor', "
                "'hoodie.compact.inline'='false')")
    session.sql(f"INSERT INTO {name} {MOR_SEED.format(n=MOR_ROWS + 1, step='')}")
    session.sql(f"INSERT INTO {name} SELECT CAST(id AS INT), 'update', concat('p', CAST(id % 4 AS STRING)) "
                f"FROM range(1, {MOR_ROWS + 1}, 2)")  # a log in every file group
    expected = check_table(session, table, name, ("p",))
    session.sql(f"CALL run_compaction(table => '{name}', op => 'schedule')").collect()
    victim = Writer(tmp_path, "compactor")  # its own process: the writers' third one was killed before
    victim.expect("READY", timeout=STARTUP_TIMEOUT)
    go = tmp_path / "start-compaction"
    job = victim.submit(tmp_path, warehouse, [{"id": "compact", "sql": f"CALL run_compaction(table => '{name}')"}],
                        HEARTBEAT_SETTINGS + [f"SELECT count(*) FROM {name}"], go)
    try:
        victim.expect("WAITING", job)
        go.touch()
        deadline = time.monotonic() + JOB_TIMEOUT
        while not list((table / ".hoodie").glob("*.compaction.inflight")):
            assert time.monotonic() < deadline and victim.proc.poll() is None, "the compaction never became inflight"
            time.sleep(0.01)
        os.kill(victim.proc.pid, signal.SIGKILL)
        victim.proc.wait()
    finally:
        go.touch()
        victim.close()
    assert job.results() == [], "the compaction finished before it could be killed; make it larger"
    [planned] = [p.name.split(".")[0] for p in (table / ".hoodie").glob("*.compaction.inflight")]
    session.sql(f"CALL run_compaction(table => '{name}')").collect()  # at once: its heartbeat is fresh
    assert (table / ".hoodie" / f"{planned}.commit").exists(), "the killed compaction's plan did not run again"
    assert check_table(session, table, name, ("p",)) == expected
    assert official_rows(table, COLUMNS, read_optimized=True) == official_rows(table, COLUMNS)


KILL_ROWS = 200_000


@pytest.mark.parametrize(("step", "version"), [("marker", 6), ("bulk_insert", 6), ("completion", 8), ("clustering", 8)])
def test_a_process_killed_at_a_step_leaves_a_table_that_works_at_once(session, warehouse, tmp_path, step, version):
    """A process killed (SIGKILL) at one step of its action: a write (an upsert, or a bulk insert,
    whose tasks write files as their rows arrive) once its first file's marker exists, a write
    about to complete its instant (on version 8, after its metadata table commit), a clustering
    once it writes files. At once, long before its heartbeat could expire: a pending
    clustering runs again, a write and a compaction commit, and both readers return the rows of
    the statements that completed, nothing of the killed one."""
    name = f"kill_{step}"
    table = warehouse / name
    session.sql(f"CREATE TABLE {name} (id INT, src STRING, p STRING) USING hudi PARTITIONED BY (p) TBLPROPERTIES "
                f"(primaryKey='id', type='mor', 'hoodie.write.table.version'='{version}', 'hoodie.compact.inline'='false', "
                "'hoodie.spark.sql.insert.into.operation'='upsert')")
    seed = "SELECT CAST(id AS INT), 'seed', concat('p', CAST(id % 2 AS STRING)) FROM range({}, {})"
    session.sql(f"INSERT INTO {name} {seed.format(1, KILL_ROWS // 2)}")
    session.sql(f"INSERT INTO {name} {seed.format(KILL_ROWS // 2, KILL_ROWS + 1)}")  # two file groups per partition
    model = {i: ("seed", f"p{i % 2}") for i in range(1, KILL_ROWS + 1)}
    if step == "clustering":
        statement = f"CALL run_clustering(table => '{name}')"
    else:
        statement = (f"INSERT INTO {name} SELECT CAST(id AS INT), 'A', concat('p', CAST(id % 2 AS STRING)) "
                     f"FROM range(1, {KILL_ROWS + 1})")
    victim = Writer(tmp_path, f"victim-{step}")
    go = tmp_path / "go"
    try:
        victim.expect("READY", timeout=STARTUP_TIMEOUT)
        bulk = ["SET hoodie.spark.sql.insert.into.operation=bulk_insert"] if step == "bulk_insert" else []
        job = victim.submit(tmp_path, warehouse, [{"id": "A", "sql": statement}],
                            HEARTBEAT_SETTINGS + bulk + [f"SELECT count(*) FROM {name}"], go,
                            die_at="completion" if step == "completion" else None)
        victim.expect("WAITING", job)
        go.touch()
        deadline = time.monotonic() + JOB_TIMEOUT
        while victim.proc.poll() is None:
            assert time.monotonic() < deadline, f"{step}: the victim never reached its step"
            if step != "completion" and list((table / ".hoodie" / ".temp").glob("*/**/*.marker.*")):
                os.kill(victim.proc.pid, signal.SIGKILL)
            time.sleep(0.01)
        killed_at = time.time()
        assert victim.proc.returncode == -signal.SIGKILL, f"the victim ended otherwise:\n{victim.log_tail()}"
    finally:
        go.touch()
        victim.close()
    assert job.results() == [], f"{step}: the killed statement finished"
    if step == "clustering":
        # (a clustering is pending as a replacecommit on layout 1, as a clustering on layout 2)
        [planned] = [ts for ts, s in timeline_files(table).items() if s & {"replacecommit.inflight", "clustering.inflight"}]
        session.sql(f"CALL run_clustering(table => '{name}', op => 'execute')").collect()
        assert "replacecommit" in timeline_files(table)[planned], "the killed clustering did not run again"
    session.sql(f"INSERT INTO {name} VALUES (1, 'B', 'p1'), (2, 'B', 'p0'), ({KILL_ROWS + 1}, 'B', 'p1')")
    model.update({1: ("B", "p1"), 2: ("B", "p0"), KILL_ROWS + 1: ("B", "p1")})
    session.sql(f"CALL run_compaction(table => '{name}')").collect()
    assert time.time() - killed_at < HEARTBEAT_MS / 1000, "slower than the heartbeat's expiry: proves nothing"
    rows = check_table(session, table, name, ("p",))
    assert {i: (r["src"], r["p"]) for i, r in rows.items()} == model
    assert official_rows(table, COLUMNS, read_optimized=True) == official_rows(table, COLUMNS)


# ---- 5. the CLI ---------------------------------------------------------------------------------------

def test_cli_conflict_exits_1_with_one_line_naming_the_winner(writers, session, warehouse, tmp_path):
    """``hudiql sql`` runs a long upsert; a writer commits to the same file group meanwhile."""
    name = "c"
    table = warehouse / name
    session.sql(f"CREATE TABLE {name} (id INT, src STRING) USING hudi TBLPROPERTIES (primaryKey='id', 'hoodie.spark.sql.insert.into.operation'='upsert')")
    session.sql(f"INSERT INTO {name} VALUES {values(SHARED, 'seed')}")
    go = tmp_path / "start"
    job = writers[0].submit(tmp_path, warehouse, [{"id": "w", "sql": f"INSERT INTO {name} VALUES (1, 'w')"}],
                            [f"SELECT count(*) FROM {name}"], go)
    writers[0].expect("WAITING", job)
    before = set(timeline_files(table))
    cli = subprocess.Popen(
        [sys.executable, "-m", "hudiql.cli", "sql", "--warehouse", str(warehouse), "-e",
         f"{NO_RETRIES}; INSERT INTO {name} SELECT CAST(id AS INT), 'cli' FROM range(1, 1000000)"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYSPARK_PYTHON": sys.executable},
    )
    try:
        deadline = time.monotonic() + JOB_TIMEOUT
        while not any("inflight" in s for ts, s in timeline_files(table).items() if ts not in before):
            assert cli.poll() is None and time.monotonic() < deadline, "the CLI's write never became inflight"
            time.sleep(0.02)
        go.touch()
        writers[0].expect("DONE", job)
        _, err = cli.communicate(timeout=JOB_TIMEOUT)
    finally:
        go.touch()
        if cli.poll() is None:
            cli.kill()
            cli.wait()
    [w] = job.results()
    assert w["outcome"] == "ok", f"the short write failed: {w.get('message')}"
    assert cli.returncode == 1, f"the CLI's conflicting write exited {cli.returncode}; stderr ends:\n{err[-2000:]}"
    rows = check_table(session, table, name)
    winner = rows[1]["_hoodie_commit_time"]
    assert rows[1]["src"] == "w"
    error_lines = [line for line in err.splitlines() if line.startswith("Error:")]
    assert len(error_lines) == 1 and winner in error_lines[0], f"want one Error line naming {winner}: {error_lines}"
    assert "Traceback" not in err
    assert not [r for r in rows.values() if r["src"] == "cli"], "the CLI's failed write is visible"
