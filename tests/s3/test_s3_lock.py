"""The table lock on S3 (a local moto server, ``conftest.py``): ``Storage.create_exclusive`` is a
conditional put there (``If-None-Match: *``), so writes under the default optimistic concurrency
take the lock on S3 as on a local disk, several writer processes share a table, and a lock whose
holder died is broken.

One table serves the module. Two writer processes (``tests/write/concurrent_writer.py``) start
with the module, so that their JVMs boot while the tests in this process run.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections import Counter

import hudiql
import pyarrow.fs as pafs
import pytest
from hudiql.errors import FormatError, StorageError, WriteConflictError
from hudiql.io.storage import OPTIONS_VARIABLE, Storage, _s3_client
from hudiql.layout import LOCK_FILE

from tests.conftest import hudiql_rows
from tests.s3.conftest import BUCKET, REGION
from tests.write.test_concurrency import STARTUP_TIMEOUT, Writer, no_other_errors, run_together

WAREHOUSE = f"s3://{BUCKET}/locking/warehouse"
TABLE = "orders"
TABLE_URI = f"{WAREHOUSE}/{TABLE}"
SEED = [(k, "seed") for k in range(1, 6)]
#: A wait for the lock short enough for a test to see a held lock refuse a write.
SHORT_WAIT = {"hoodie.write.lock.wait_time_ms": "300"}
#: A process that takes the table lock and holds it until it is killed (argv: the table's URI).
HOLD_LOCK = ("import sys, time\n"
             "from hudiql.io.storage import Storage\n"
             "from hudiql.transaction.lock import TableLock\n"
             "TableLock(Storage(sys.argv[1]), {}, 'a writer that dies').acquire()\n"
             "print('LOCKED', flush=True)\n"
             "time.sleep(600)\n")


@pytest.fixture(scope="module")
def writers(s3, tmp_path_factory):
    """Two writer processes that reach the moto server through the standard AWS variables, started
    without waiting for them (``test_two_writer_processes`` waits)."""
    log_dir = tmp_path_factory.mktemp("s3-writers")
    with pytest.MonkeyPatch.context() as patch:
        for option, value in s3.options.items():
            patch.setenv(option.upper(), value)
        patch.delenv(OPTIONS_VARIABLE, raising=False)  # what this process's sessions resolved
        procs = [Writer(log_dir, f"s3w{i}") for i in (1, 2)]
    try:
        yield procs
    finally:
        for w in procs:
            w.close()


def bucket_read(s3, uri: str) -> bytes | None:
    """An object's content as the test reads it past hudiql, or None."""
    fs = pafs.S3FileSystem(access_key=s3.access_key, secret_key=s3.secret_key, endpoint_override=s3.endpoint,
                           region=REGION)
    try:
        with fs.open_input_stream(uri.removeprefix("s3://")) as f:
            return f.read()
    except FileNotFoundError:
        return None


def test_create_exclusive_is_a_conditional_put(s3, writers, monkeypatch):
    """First create True, then False with the first content kept whole; after a delete the name
    is free again (stale-lock breaking deletes and retries); S3's errors are one line naming the
    path and the endpoint; without botocore the storage says what to install."""
    monkeypatch.setenv(OPTIONS_VARIABLE, json.dumps(s3.options))
    storage = Storage(f"s3://{BUCKET}/locking/files")
    first = json.dumps({"holder": "first", "pad": "x" * 200_000}).encode()
    assert storage.can_create_exclusive
    assert storage.create_exclusive("a/lock", first) is True
    assert storage.create_exclusive("a/lock", b"second") is False
    assert bucket_read(s3, storage.uri("a/lock")) == first
    storage.delete("a/lock")
    assert storage.create_exclusive("a/lock", b"third") is True
    assert storage.read("a/lock") == b"third"

    monkeypatch.setenv(OPTIONS_VARIABLE, json.dumps({**s3.options, "aws_secret_access_key": "not-the-secret"}))
    wrong = Storage(f"s3://{BUCKET}/locking/files")
    with pytest.raises(StorageError, match=rf"^cannot reach s3://{BUCKET}/locking/files/b/lock at S3 endpoint "
                                           rf"{s3.endpoint} \(SignatureDoesNotMatch on PutObject: [^\n]*$"):
        wrong.create_exclusive("b/lock", b"x")
    assert bucket_read(s3, wrong.uri("b/lock")) is None

    # No checksum headers S3 does not require: several S3-compatible stores refuse them.
    sent = []
    client = _s3_client(storage._s3_options, storage.fs.region)
    client.meta.events.register("before-send.s3.PutObject", lambda request, **_: sent.append(dict(request.headers)))
    try:
        assert storage.create_exclusive("c/lock", b"x") is True
    finally:
        client.meta.events.unregister("before-send.s3.PutObject")
    [headers] = sent
    assert headers.get("If-None-Match") == b"*" and not [h for h in headers if h.lower().startswith("x-amz-checksum")]

    monkeypatch.setitem(sys.modules, "botocore", None)  # as if it were not installed
    assert not storage.can_create_exclusive
    assert "pip install 'hudiql[s3]'" in storage.create_exclusive_unavailable


def test_a_lock_released_while_a_waiter_reads_it_reads_as_released(s3, monkeypatch):
    """pyarrow opens an S3 object with a HEAD and reads it with a GET: a lock its holder deletes
    between the two is released, not an unreachable endpoint (the waiter tries to take it again)."""
    monkeypatch.setenv(OPTIONS_VARIABLE, json.dumps(s3.options))
    storage = Storage(f"s3://{BUCKET}/locking/released")
    storage.write(LOCK_FILE, b"held")
    real = storage.fs

    class ReleasedWhileOpened:
        def __getattr__(self, name):
            return getattr(real, name)

        def open_input_stream(self, path):
            stream = real.open_input_stream(path)
            real.delete_file(path)  # the holder releases the lock
            return stream

    monkeypatch.setattr(Storage, "fs", property(lambda self: ReleasedWhileOpened()))
    assert storage.read_if_exists(LOCK_FILE) is None
    storage.write(LOCK_FILE, b"held")
    with pytest.raises(FormatError, match=r"^missing file s3://.*/\.hoodie/lock$"):
        storage.read(LOCK_FILE)


def test_a_lock_is_deleted_only_while_it_holds_what_was_read(s3, monkeypatch):
    """Breaking a stale lock and releasing one delete it only while it holds what the deleter read:
    a lock another writer took between the read and the delete stays (a conditional delete)."""
    monkeypatch.setenv(OPTIONS_VARIABLE, json.dumps(s3.options))
    storage = Storage(f"s3://{BUCKET}/locking/breaking")
    storage.write(LOCK_FILE, b"stale")
    assert storage.delete_if_holds(LOCK_FILE, b"another") is False
    assert bucket_read(s3, storage.uri(LOCK_FILE)) == b"stale"

    # Between the deleter's read and its delete, another writer breaks the stale lock and takes it.
    client = _s3_client(storage._s3_options, storage.fs.region)
    read = client.get_object

    def read_then_taken(**request):
        answer = {**read(**request)}
        answer["Body"] = io.BytesIO(answer["Body"].read())
        storage.delete(LOCK_FILE)
        assert storage.create_exclusive(LOCK_FILE, b"fresh")
        return answer

    with monkeypatch.context() as patch:
        patch.setattr(client, "get_object", read_then_taken)
        assert storage.delete_if_holds(LOCK_FILE, b"stale") is False
    assert bucket_read(s3, storage.uri(LOCK_FILE)) == b"fresh"
    assert storage.delete_if_holds(LOCK_FILE, b"fresh") is True and bucket_read(s3, storage.uri(LOCK_FILE)) is None
    assert storage.delete_if_holds(LOCK_FILE, b"fresh") is False  # gone


def test_writes_on_s3_take_the_lock(s3, spark, writers, monkeypatch):
    """The default mode writes on S3; a write waits for the lock another process holds, and takes
    it once that process is killed; without botocore, a write is refused with what to do."""
    session = hudiql.connect(warehouse=WAREHOUSE, spark=spark, storage_options=s3.options)
    session.sql(f"CREATE TABLE {TABLE} (id INT, src STRING) USING hudi TBLPROPERTIES (primaryKey = 'id', 'hoodie.spark.sql.insert.into.operation'='upsert')")
    session.sql(f"INSERT INTO {TABLE} VALUES " + ", ".join(f"({k}, '{src}')" for k, src in SEED))
    assert hudiql_rows(session, f"SELECT id, src FROM {TABLE}") == SEED
    assert bucket_read(s3, f"{TABLE_URI}/{LOCK_FILE}") is None  # released

    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, TABLE_URI], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, OPTIONS_VARIABLE: json.dumps(s3.options)})
    try:
        assert holder.stdout.readline().strip() == "LOCKED"
        assert json.loads(bucket_read(s3, f"{TABLE_URI}/{LOCK_FILE}"))["pid"] == holder.pid
        waiting = hudiql.connect(warehouse=WAREHOUSE, spark=spark, conf=SHORT_WAIT, storage_options=s3.options)
        with pytest.raises(WriteConflictError, match=rf"could not take the lock of table {TABLE_URI} within 300 ms "
                                                     rf"\(held by a writer that dies of process {holder.pid} on "):
            waiting.sql(f"INSERT INTO {TABLE} VALUES (6, 'blocked')")
    finally:
        holder.kill()
        holder.wait()
    session.sql(f"INSERT INTO {TABLE} VALUES (6, 'after the holder died')")  # breaks the stale lock
    assert hudiql_rows(session, f"SELECT id, src FROM {TABLE} WHERE id = 6") == [(6, "after the holder died")]
    assert bucket_read(s3, f"{TABLE_URI}/{LOCK_FILE}") is None

    monkeypatch.setitem(sys.modules, "botocore", None)  # as if it were not installed
    with pytest.raises(WriteConflictError, match=rf"^table {TABLE_URI}: hudiql cannot lock a table on this storage "
                                                 r"\(.*pip install 'hudiql\[s3\]'.*\); if only one process writes it, "
                                                 r"SET hoodie.write.concurrency.mode=SINGLE_WRITER$"):
        session.sql(f"INSERT INTO {TABLE} VALUES (7, 'refused')")
    single = hudiql.connect(warehouse=WAREHOUSE, spark=spark, storage_options=s3.options,
                            conf={"hoodie.write.concurrency.mode": "SINGLE_WRITER"})
    single.sql(f"DELETE FROM {TABLE} WHERE id = 6")
    assert hudiql_rows(session, f"SELECT id, src FROM {TABLE}") == SEED


def upsert(writer: int) -> tuple[dict, list[tuple]]:
    """An upsert of keys no other statement writes: one seed key updated, two new ones; its rows."""
    src = f"w{writer}"
    rows = [(writer, src), (writer * 100 + 1, src), (writer * 100 + 2, src)]
    return {"id": src, "sql": f"INSERT INTO {TABLE} VALUES " + ", ".join(f"({k}, '{v}')" for k, v in rows)}, rows


def test_two_writer_processes(s3, spark, writers, tmp_path):
    """Two processes upsert disjoint keys of one file group at once under the default (optimistic)
    mode: each statement commits or loses with a one-line WriteConflictError naming the instant it
    lost to, the first to complete always commits, and the table holds exactly the rows of the
    statements that committed."""
    for w in writers:
        w.expect("READY", timeout=STARTUP_TIMEOUT)
    plans = {w: upsert(w) for w in (1, 2)}
    jobs = [(writers[w - 1], {"statements": [statement], "setup": [f"SELECT count(*) FROM {TABLE}"]})
            for w, (statement, _) in plans.items()]
    results = [r for run in run_together(tmp_path, WAREHOUSE, jobs) for r in run]
    no_other_errors(results)
    report = [{k: r.get(k) for k in ("id", "outcome", "start", "end", "message")} for r in results]
    assert len(results) == 2 and any(r["outcome"] == "ok" for r in results), report

    session = hudiql.connect(warehouse=WAREHOUSE, spark=spark, storage_options=s3.options)
    commits = {r.commit_time for r in session.sql(f"CALL show_commits(table => '{TABLE}', limit => 100)").collect()}
    for r in results:
        if r["outcome"] == "conflict":  # not the refusal of a table that cannot be locked
            assert "\n" not in r["message"] and any(c in r["message"] for c in commits), report
    expected = dict(SEED)
    for r in results:
        if r["outcome"] == "ok":
            expected.update(plans[int(r["id"][1:])][1])
    rows = hudiql_rows(session, f"SELECT id, src FROM {TABLE}")
    assert Counter(k for k, _ in rows).most_common(1)[0][1] == 1, ("a key read twice", rows, report)
    assert rows == sorted(expected.items()), report
    assert bucket_read(s3, f"{TABLE_URI}/{LOCK_FILE}") is None
