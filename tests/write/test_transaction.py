"""The write transaction in one process, made deterministic: a write that started before a commit
(another writer's: a statement run while the write's transaction is open), the table lock, heartbeats
and the rollback of dead writers, post-commit compaction that cannot fail a statement.

Real concurrent processes are in test_concurrency.py."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import hudiql_rows, instants, official_rows, timeline
from hudiql.errors import WriteConflictError
from hudiql.io.storage import Storage
from hudiql.sql.statements import TableName
from hudiql.layout import LOCK_FILE
from hudiql.transaction.process import WriterProcess
from hudiql.transaction.write_transaction import WriteTransaction
from hudiql.services.post_commit import transaction
from hudiql.write.writer import Operation, write_rows

COLS = "id, name, ts, part"


def pending(path: Path) -> list[str]:
    """Instants that did not complete (a completed commit keeps its requested and inflight files)."""
    done = {n.split(".")[0] for n in timeline(path) if n.endswith((".commit", ".deltacommit"))}
    return sorted({n.split(".")[0] for n in timeline(path) if n.endswith((".inflight", ".requested"))} - done)


def create(session, name: str = "t", *props: str, mor: bool = False) -> Path:
    options = ["primaryKey='id'", "preCombineField='ts'", f"type='{'mor' if mor else 'cow'}'", *props]
    session.sql(f"CREATE TABLE {name} (id INT, name STRING, ts INT, part STRING) USING hudi "
                f"PARTITIONED BY (part) TBLPROPERTIES ({', '.join(options)})")
    session.sql(f"INSERT INTO {name} VALUES (1, 'a', 1, 'p1'), (2, 'b', 1, 'p1'), (3, 'c', 1, 'p2')")
    return Path(session.table(TableName(None, name)).base_uri.removeprefix("file://"))


@contextmanager
def started(session, name: str = "t") -> Iterator[WriteTransaction]:
    """The write transaction of a statement on ``name`` that starts now: its instant is inflight and
    its snapshot taken while the statements in the block run, as another writer's would be."""
    with transaction(session.spark, session.table(TableName(None, name)), dict(session.conf)) as txn:
        yield txn


def late_write(session, txn: WriteTransaction, values: str) -> None:
    """Write ``values`` in ``txn``, after the statements that ran since it started."""
    rows = session.spark.sql(f"SELECT * FROM VALUES {values} AS v({COLS})")
    write_rows(txn, rows, Operation.UPSERT)


def test_a_write_older_than_a_commit_to_the_same_file_group_fails_and_leaves_nothing(session):
    path = create(session)
    before = sorted(p.name for p in path.rglob("*.parquet"))
    with started(session) as txn:
        session.sql("INSERT INTO t VALUES (1, 'winner', 2, 'p1')")
        winner = instants(path, "commit")[-1]
        after_winner = sorted(p.name for p in path.rglob("*.parquet"))
        with pytest.raises(WriteConflictError) as caught:
            late_write(session, txn, "(2, 'loser', 2, 'p1')")
    assert txn.instant_time < winner  # the loser started first
    message = str(caught.value)
    assert winner in message and "file group" in message and "run the statement again" in message
    # Nothing of the loser: no data file, no instant, no marker folder, no heartbeat, no lock.
    assert sorted(p.name for p in path.rglob("*.parquet")) == after_winner != before
    assert len(instants(path, "commit")) == 2 and not pending(path)
    assert not list((path / ".hoodie" / ".temp").glob("*")) and not list((path / ".hoodie" / ".heartbeat").glob("*"))
    assert not (path / ".hoodie" / "lock").exists()
    expected = [(1, "winner"), (2, "b"), (3, "c")]
    assert hudiql_rows(session, "SELECT id, name FROM t") == expected
    assert official_rows(path, ["id", "name"]) == expected
    # A retry (a new snapshot) succeeds.
    session.sql("INSERT INTO t VALUES (2, 'retried', 2, 'p1')")
    assert hudiql_rows(session, "SELECT id, name FROM t WHERE id = 2") == [(2, "retried")]


def test_writes_to_other_partitions_both_commit(session):
    create(session)
    with started(session) as txn:
        session.sql("INSERT INTO t VALUES (1, 'x', 2, 'p1')")
        late_write(session, txn, "(3, 'y', 2, 'p2'), (4, 'new', 1, 'p3')")
    assert hudiql_rows(session, "SELECT id, name FROM t") == [(1, "x"), (2, "b"), (3, "y"), (4, "new")]


def test_two_writers_inserting_one_new_key_into_new_file_groups_conflict(session):
    # Tiny files: each write's inserts start a new file group, so only the key check can see it.
    create(session, "t", "'hoodie.parquet.small.file.limit'='0'")
    with started(session) as txn:
        session.sql("INSERT INTO t VALUES (9, 'first', 1, 'p1')")
        with pytest.raises(WriteConflictError, match=r"new record key '9'"):
            late_write(session, txn, "(9, 'second', 1, 'p1')")
    assert hudiql_rows(session, "SELECT id, name FROM t WHERE id = 9") == [(9, "first")]
    # Different new keys in the same partition are no conflict.
    with started(session) as txn:
        session.sql("INSERT INTO t VALUES (10, 'ten', 1, 'p1')")
        late_write(session, txn, "(11, 'eleven', 1, 'p1')")
    assert [r[0] for r in hudiql_rows(session, "SELECT id FROM t")] == [1, 2, 3, 9, 10, 11]


def test_bucket_index_writers_starting_one_bucket_conflict(session):
    create(session, "t", "'hoodie.index.type'='BUCKET'", "'hoodie.bucket.index.num.buckets'='1'")
    with started(session) as txn:
        session.sql("INSERT INTO t VALUES (20, 'x', 1, 'p9')")  # starts bucket 0 of partition p9
        with pytest.raises(WriteConflictError, match=r"bucket 0 of partition 'part=p9'|file group"):
            late_write(session, txn, "(21, 'y', 1, 'p9')")
    assert [r[0] for r in hudiql_rows(session, "SELECT id FROM t WHERE part = 'p9'")] == [20]


def test_a_compaction_planned_past_an_earlier_write_fails_it_and_a_later_write_goes_past_its_plan(session):
    """As under Hudi's optimistic concurrency, a write in flight does not hold a compaction plan
    back: the earlier write to a planned file group fails at its commit (and its statement would run
    again); a write to another file group commits. A single writer's table waits for the write."""
    path = create(session, "m", mor=True)
    session.sql("INSERT INTO m VALUES (1, 'log', 2, 'p1')")  # a log file to compact
    session.sql("INSERT INTO m VALUES (4, 'other', 2, 'p3')")
    with started(session, "m") as txn:
        session.sql("CALL run_compaction(table => 'm', op => 'schedule')")
        with pytest.raises(WriteConflictError, match="compaction .* was planned"):
            late_write(session, txn, "(2, 'early', 2, 'p1')")
    planned = instants(path, "compaction.requested")
    with started(session, "m") as txn:  # a new file group: no conflict with the plan
        late_write(session, txn, "(5, 'new', 2, 'p4')")
    session.sql("SET hoodie.write.concurrency.mode=SINGLE_WRITER")
    session.sql("CALL run_compaction(table => 'm', op => 'run')")
    session.sql("INSERT INTO m VALUES (1, 'log2', 3, 'p1')")
    with started(session, "m") as txn:
        with pytest.raises(WriteConflictError, match=rf"write {txn.instant_time} is still in flight"):
            session.sql("CALL run_compaction(table => 'm', op => 'schedule')")
        late_write(session, txn, "(1, 'log', 4, 'p1')")
    session.sql("SET hoodie.write.concurrency.mode=OPTIMISTIC_CONCURRENCY_CONTROL")
    session.sql("CALL run_compaction(table => 'm', op => 'schedule')")
    planned = instants(path, "compaction.requested")
    # A write that starts after the plan goes to the slices it opens: no conflict, nothing lost.
    with started(session, "m") as txn:
        late_write(session, txn, "(3, 'late', 2, 'p2')")
    session.sql("INSERT INTO m VALUES (2, 'after', 3, 'p1')")
    session.sql("CALL run_compaction(table => 'm', op => 'run')")
    assert len(planned) == 2 and instants(path, "commit") == planned
    expected = [(1, "log"), (2, "after"), (3, "late"), (4, "other"), (5, "new")]
    assert hudiql_rows(session, "SELECT id, name FROM m") == expected
    assert official_rows(path, ["id", "name"]) == expected


def test_a_clustering_planned_past_an_earlier_write_fails_it_and_a_write_elsewhere_commits(session):
    """Clustering, like compaction, is planned while writes are in flight: an earlier write to a
    planned file group fails at its commit, one to a new file group commits, and the clustering
    runs. A single writer's table waits for the write."""
    path = create(session, "c")
    with started(session, "c") as txn:
        session.sql("CALL run_clustering(table => 'c', op => 'schedule')")
        with pytest.raises(WriteConflictError, match="which clustering .* is rewriting"):
            late_write(session, txn, "(2, 'early', 2, 'p1')")
    with started(session, "c") as txn:  # a new partition: a new file group, no conflict with the plan
        late_write(session, txn, "(5, 'new', 2, 'p5')")
    session.sql("CALL run_clustering(table => 'c', op => 'execute')")
    assert instants(path, "replacecommit")
    session.sql("SET hoodie.write.concurrency.mode=SINGLE_WRITER")
    with started(session, "c") as txn:
        with pytest.raises(WriteConflictError, match=rf"write {txn.instant_time} is still in flight"):
            session.sql("CALL run_clustering(table => 'c', op => 'schedule')")
        late_write(session, txn, "(1, 'single', 2, 'p1')")
    expected = [(1, "single"), (2, "b"), (3, "c"), (5, "new")]
    assert hudiql_rows(session, "SELECT id, name FROM c") == expected
    assert official_rows(path, ["id", "name"]) == expected


def test_a_write_that_waited_for_the_lock_while_a_compaction_was_planned_is_newer_than_the_plan(session, monkeypatch):
    """Another process plans a compaction while this write waits for the table lock to start: the
    write's instant is later than the plan, and its rows survive that compaction and the next one
    (an instant time taken before the lock was older than the plan whose slice the write went to,
    and the next compaction left those logs out)."""
    from hudiql.transaction import write_transaction as transaction_module

    path = create(session, "m", mor=True)
    session.sql("INSERT INTO m VALUES (1, 'log', 2, 'p1'), (3, 'log', 2, 'p2')")  # log files to compact
    real_lock = transaction_module.commit_lock
    planned = []

    def lock_won_by_a_compaction_plan(storage, settings, holder):
        if not planned:
            session.sql("CALL run_compaction(table => 'm', op => 'schedule')")
            planned.extend(instants(path, "compaction.requested"))
        return real_lock(storage, settings, holder)

    monkeypatch.setattr(transaction_module, "commit_lock", lock_won_by_a_compaction_plan)
    session.sql("INSERT INTO m VALUES (2, 'waited', 3, 'p1')")
    monkeypatch.setattr(transaction_module, "commit_lock", real_lock)
    [write] = instants(path, "deltacommit")[-1:]
    assert len(planned) == 1 and write > planned[0]
    session.sql("CALL run_compaction(table => 'm')")
    session.sql("INSERT INTO m VALUES (3, 'next', 3, 'p2')")
    session.sql("CALL run_compaction(table => 'm', op => 'scheduleandexecute')")
    expected = [(1, "log"), (2, "waited"), (3, "next")]
    assert hudiql_rows(session, "SELECT id, name FROM m") == expected
    assert official_rows(path, ["id", "name"]) == expected


def test_a_statement_that_changes_no_row_leaves_no_trace(session):
    """Its transaction started (an instant, a heartbeat) before it knew; nothing of it stays."""
    path = create(session)
    files = sorted(str(p.relative_to(path)) for p in path.rglob("*") if p.is_file())
    [counts] = session.sql("UPDATE t SET name = 'x' WHERE id = 999").collect()
    assert counts.num_affected_rows == 0
    [counts] = session.sql("DELETE FROM t WHERE id = 999").collect()
    assert counts.num_affected_rows == 0
    assert sorted(str(p.relative_to(path)) for p in path.rglob("*") if p.is_file()) == files
    assert not pending(path)
    # A statement that fails while planning leaves none either.
    with pytest.raises(Exception, match="nope"):
        session.sql("UPDATE t SET nope = 1 WHERE id = 1")
    assert sorted(str(p.relative_to(path)) for p in path.rglob("*") if p.is_file()) == files


def test_single_writer_mode_skips_the_check_and_describe_shows_the_mode(session):
    create(session)
    rows = {r[0]: r[1] for r in session.sql("DESCRIBE EXTENDED t").collect()}
    assert rows["Concurrency Mode"] == "OPTIMISTIC_CONCURRENCY_CONTROL"
    session.sql("SET hoodie.write.concurrency.mode=SINGLE_WRITER")
    rows = {r[0]: r[1] for r in session.sql("DESCRIBE EXTENDED t").collect()}
    assert rows["Concurrency Mode"] == "SINGLE_WRITER"
    with started(session) as txn:
        session.sql("INSERT INTO t VALUES (1, 'x', 2, 'p1')")
        late_write(session, txn, "(2, 'y', 2, 'p1')")  # the user promised one writer: no check
    with pytest.raises(Exception, match="EAGER would roll back"):
        session.sql("SET hoodie.cleaner.policy.failed.writes=EAGER")


# ---- the lock ---------------------------------------------------------------------------------------

def write_lock(path: Path, pid: int, age_s: float = 0) -> None:
    holder = {"holder": "commit 1", "host": os.uname().nodename, "pid": pid,
              "acquired_ms": int((time.time() - age_s) * 1000)}
    (path / ".hoodie" / "lock").write_text(json.dumps(holder))


def test_a_held_lock_times_out_with_a_clear_error_and_nothing_is_written(session):
    path = create(session)
    write_lock(path, os.getpid())  # held by a live process (this one), fresh
    session.sql("SET hoodie.write.lock.wait_time_ms=300")
    with pytest.raises(WriteConflictError, match=r"could not take the lock of table .* within 300 ms .*run the statement again"):
        session.sql("INSERT INTO t VALUES (1, 'x', 2, 'p1')")
    (path / ".hoodie" / "lock").unlink()  # still the one we wrote: a lock is never broken while fresh
    assert len(instants(path, "commit")) == 1 and not pending(path)
    assert hudiql_rows(session, "SELECT id, name FROM t WHERE id = 1") == [(1, "a")]


def test_a_stale_lock_of_a_dead_process_or_an_old_one_is_broken(session):
    path = create(session)
    dead = os.fork()
    if dead == 0:
        os._exit(0)
    os.waitpid(dead, 0)
    write_lock(path, dead)
    session.sql("INSERT INTO t VALUES (1, 'x', 2, 'p1')")
    write_lock(path, os.getpid(), age_s=120)  # alive, but older than hoodie.write.lock.filesystem.expire (1 min)
    session.sql("INSERT INTO t VALUES (1, 'y', 3, 'p1')")
    assert hudiql_rows(session, "SELECT id, name FROM t WHERE id = 1") == [(1, "y")]
    assert not (path / ".hoodie" / "lock").exists()


def test_a_lock_is_deleted_only_while_its_name_holds_the_file_read(tmp_path, monkeypatch):
    """Of two writers breaking one stale lock, the slower deletes nothing: deleters take turns on the
    file they read (an exclusive flock), and by the slower one's turn the faster one has deleted it
    and taken the lock anew, in another file."""
    storage = Storage(str(tmp_path))
    lock = tmp_path / LOCK_FILE
    storage.write(LOCK_FILE, b"stale")
    assert storage.delete_if_holds(LOCK_FILE, b"another") is False and lock.read_bytes() == b"stale"

    take_turn = fcntl.flock

    def faster_breaker_first(fd, operation):
        if lock.read_bytes() == b"stale":  # the other breaker's turn came first
            lock.unlink()
            assert storage.create_exclusive(LOCK_FILE, b"fresh")
        take_turn(fd, operation)

    monkeypatch.setattr(fcntl, "flock", faster_breaker_first)
    assert storage.delete_if_holds(LOCK_FILE, b"stale") is False
    assert lock.read_bytes() == b"fresh"
    assert storage.delete_if_holds(LOCK_FILE, b"fresh") is True and not lock.exists()
    assert storage.delete_if_holds(LOCK_FILE, b"fresh") is False  # gone


# ---- heartbeats ---------------------------------------------------------------------------------------

def crashed_write(path: Path, instant: str, heartbeat_age_s: float | None, interval_ms: int = 3000) -> Path:
    """The traces of a writer that created its instant and a data file, then stopped."""
    hoodie = path / ".hoodie"
    (hoodie / f"{instant}.commit.requested").write_bytes(b"")
    (hoodie / f"{instant}.inflight").write_bytes(b"")
    name = f"deadbeef-0000-0000-0000-000000000000-0_0-1-0_{instant}.parquet"
    data = path / "part=p1" / name
    data.write_bytes(b"not yet whole")
    marker = hoodie / ".temp" / instant / "part=p1" / f"{name}.marker.CREATE"
    marker.parent.mkdir(parents=True)
    marker.write_bytes(b"")
    if heartbeat_age_s is not None:
        beat = hoodie / ".heartbeat" / instant
        beat.parent.mkdir(exist_ok=True)
        beat.write_text(str(interval_ms))  # the interval its writer beats at
        then = time.time() - heartbeat_age_s
        os.utime(beat, (then, then))
    return data


def test_a_pending_write_with_a_live_heartbeat_is_left_alone_until_it_expires(session):
    path = create(session)
    instant = "20200101000000000"
    data = crashed_write(path, instant, heartbeat_age_s=0, interval_ms=3000)
    session.sql("INSERT INTO t VALUES (5, 'e', 1, 'p1')")
    assert pending(path) == [instant] and data.exists()  # its writer may be alive
    time.sleep(6.5)  # past 2 missed beats of 3 s
    session.sql("INSERT INTO t VALUES (6, 'f', 1, 'p1')")
    assert not pending(path) and not data.exists()
    assert not (path / ".hoodie" / ".heartbeat" / instant).exists()
    assert [r[0] for r in hudiql_rows(session, "SELECT id FROM t")] == [1, 2, 3, 5, 6]


def test_a_pending_write_without_a_heartbeat_is_rolled_back(session):
    path = create(session)
    data = crashed_write(path, "20200101000000000", heartbeat_age_s=None)
    session.sql("INSERT INTO t VALUES (5, 'e', 1, 'p1')")
    assert not pending(path) and not data.exists()


def test_a_pending_write_of_a_gone_process_on_this_host_is_rolled_back_at_once(session):
    """A heartbeat names its writer's process: one that ran on this host and is gone failed, and
    the next write rolls it back although its heartbeat is fresh; a writer on another host is only
    judged by its heartbeat's age."""
    path = create(session)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # a process that ran here and ended
    here = {**WriterProcess.current().as_dict(), "pid": gone.pid, "started": None, "jvm_pid": None}
    elsewhere = {**here, "host": "another-host"}
    for instant, process in (("20200101000000000", here), ("20200101000000001", elsewhere)):
        crashed_write(path, instant, heartbeat_age_s=0, interval_ms=60000)
        (path / ".hoodie" / ".heartbeat" / instant).write_text(json.dumps({"interval_ms": 60000, **process}))
    session.sql("INSERT INTO t VALUES (5, 'e', 1, 'p1')")
    assert pending(path) == ["20200101000000001"]
    assert not (path / ".hoodie" / ".heartbeat" / "20200101000000000").exists()
    assert [r[0] for r in hudiql_rows(session, "SELECT id FROM t")] == [1, 2, 3, 5]


# ---- post-commit services --------------------------------------------------------------------------

def test_inline_compaction_that_cannot_run_warns_and_the_statement_succeeds(session, capfd):
    path = create(session, "m", "'hoodie.compact.inline'='true'", "'hoodie.compact.inline.max.delta.commits'='1'",
                  mor=True)
    capfd.readouterr()
    # Another writer in flight, earlier than any compaction: a single writer's plan must wait for it
    # (under optimistic concurrency it need not: the write would conflict at its commit).
    crashed_write(path, "20200101000000000", heartbeat_age_s=0, interval_ms=600_000)
    session.sql("SET hoodie.write.concurrency.mode=SINGLE_WRITER")
    result = session.sql("INSERT INTO m VALUES (1, 'kept', 2, 'p1')").first()
    assert result.num_updated_rows == 1
    err = capfd.readouterr().err
    assert "Warning: the write committed, but inline compaction of table m did not run" in err
    assert "20200101000000000 is still in flight" in err
    assert hudiql_rows(session, "SELECT id, name FROM m WHERE id = 1") == [(1, "kept")]
    assert not instants(path, "compaction.requested")


def test_inline_compaction_runs_a_plan_left_pending_first(session):
    path = create(session, "m", mor=True)
    session.sql("INSERT INTO m VALUES (1, 'log', 2, 'p1')")
    session.sql("CALL run_compaction(table => 'm', op => 'schedule')")
    planned = instants(path, "compaction.requested")
    assert planned and not instants(path, "commit")[1:]
    session.sql("ALTER TABLE m SET TBLPROPERTIES ('hoodie.compact.inline'='true', "
                "'hoodie.compact.inline.max.delta.commits'='100')")
    session.sql("INSERT INTO m VALUES (3, 'later', 2, 'p2')")
    assert planned[0] in instants(path, "commit")  # the pending plan ran, though no new one was due
    expected = [(1, "log"), (2, "b"), (3, "later")]
    assert hudiql_rows(session, "SELECT id, name FROM m") == expected
    assert official_rows(path, ["id", "name"]) == expected
