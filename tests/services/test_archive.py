"""Archiving, as Hudi archives: old instants move from ``.hoodie/`` into the v6 archived log
(``.hoodie/archived/.commits_.archive.<n>_1-0-1``, Avro ``HoodieArchivedMetaEntry`` records),
never past the cleaner's earliest retained commit, a savepoint or a pending compaction; the table
reads the same with hudiql and the official reader (PyPI ``hudi``) before and after.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hudiql.formats.log_file import SCHEMA, read_avro_records, read_blocks
from hudiql.services import archive as archiving
from hudiql.services import compaction
from hudiql.timeline.archived import ARCHIVED_META_ENTRY_SCHEMA, read_archived
from hudiql.timeline.clean_plan import decode_metadata
from hudiql.timeline.commit import CommitMetadata
from hudiql.timeline.savepoint import encode_savepoint
from hudiql.table.table import HudiTable

from conftest import hudiql_rows, instants, official_rows, timeline

RETENTION = ("'hoodie.keep.min.commits' = '4', 'hoodie.keep.max.commits' = '6', "
             "'hoodie.cleaner.commits.retained' = '2'")
#: The tests that archive step by step call the archiver themselves.
BY_HAND = "'hoodie.archive.automatic' = 'false'"
COLS = ["id", "v", "dt"]
#: Field order of Hudi's HoodieArchivedMetaEntry.avsc (0.14 / 0.15).
ENTRY_FIELDS = [
    "hoodieCommitMetadata", "hoodieCleanMetadata", "hoodieCompactionMetadata", "hoodieRollbackMetadata",
    "hoodieSavePointMetadata", "commitTime", "actionType", "version", "hoodieCompactionPlan", "hoodieCleanerPlan",
    "actionState", "hoodieReplaceCommitMetadata", "hoodieRequestedReplaceMetadata", "HoodieInflightReplaceMetadata",
    "hoodieIndexCommitMetadata", "stateTransitionTime",
]


def archive_now(session, table: Path, **overrides: str) -> list[str]:
    """Archive as a write of ``table`` in this session would; the instant times moved."""
    loaded = HudiTable.load(str(table)).for_statement(session.conf, overrides)
    return [i.timestamp for i in archiving.archive(loaded)]


def completed_writes(table: Path) -> list[str]:
    return sorted({*instants(table, "commit"), *instants(table, "deltacommit"), *instants(table, "replacecommit")})


def last_clean_retained(table: Path) -> str:
    last = instants(table, "clean")[-1]
    return decode_metadata((table / ".hoodie" / f"{last}.clean").read_bytes()).earliest_commit_to_retain


def archived(table: Path) -> dict[str, set[tuple[str, str]]]:
    """Per archived instant time, its (action, state) records."""
    out: dict[str, set[tuple[str, str]]] = {}
    for a in read_archived(HudiTable.load(str(table)).storage, HudiTable.load(str(table)).config):
        out.setdefault(a.timestamp, set()).add((a.action, a.state.name))
    return out


def assert_reads(session, table: Path, expected: list[tuple]) -> None:
    assert hudiql_rows(session, "SELECT id, v, dt FROM t") == expected
    assert official_rows(table, COLS) == expected


def test_cow_archiving_keeps_the_timeline_short_and_the_table_readable(session, warehouse, monkeypatch):
    """keep.min=4, keep.max=6, cleaner retains 2 and runs after each commit: once 7 commits are
    active the 3 oldest go, each with its requested and inflight files, and the cleans by the same
    count; a crash between the archive log and the deletes changes nothing readers see and the next
    run finishes; a stalled cleaner and a savepoint stop archiving."""
    session.sql("CREATE TABLE t (id INT, v INT, dt STRING) USING hudi PARTITIONED BY (dt) "
                f"TBLPROPERTIES (primaryKey = 'id', {RETENTION}, {BY_HAND}, 'hoodie.commits.archival.batch' = '4')")
    table = warehouse / "t"
    session.sql("INSERT INTO t VALUES (1, 0, 'a'), (2, 0, 'b')")
    for v in range(1, 6):
        session.sql("UPDATE t SET v = v + 1 WHERE id = 1")
        assert archive_now(session, table) == []  # at most 6 commits: nothing to do
    session.sql("UPDATE t SET v = v + 1 WHERE id = 1")
    commits = completed_writes(table)
    assert len(commits) == 7
    files_before = timeline(table)
    contents = {t: CommitMetadata.decode((table / ".hoodie" / f"{t}.commit").read_bytes()) for t in commits[:3]}

    # A crash after the archive log was written, before any instant file was deleted.
    def crash(*_):
        raise RuntimeError("killed")

    monkeypatch.setattr(archiving, "_delete_instant_files", crash)
    with pytest.raises(RuntimeError):
        archive_now(session, table)
    assert timeline(table) == files_before
    assert set(archived(table)) == set(commits[:3])
    assert_reads(session, table, [(1, 6, "a"), (2, 0, "b")])
    monkeypatch.undo()

    moved = archive_now(session, table)
    assert moved == commits[:3]  # the oldest, so that keep.min remain
    assert completed_writes(table) == commits[3:]
    assert max(moved) < last_clean_retained(table)
    assert_reads(session, table, [(1, 6, "a"), (2, 0, "b")])
    gone = [n for n in files_before if n not in timeline(table)]
    assert sorted(gone) == sorted(f"{t}.{s}" for t in moved for s in ("commit.requested", "inflight", "commit"))
    records = archived(table)  # written twice (the crashed run and this one), read once each
    assert {t: records[t] for t in moved} == {
        t: {("commit", "REQUESTED"), ("commit", "INFLIGHT"), ("commit", "COMPLETED")} for t in moved}
    for a in read_archived(HudiTable.load(str(table)).storage, HudiTable.load(str(table)).config):
        if a.state.name == "COMPLETED":
            stats = contents[a.timestamp].write_stats
            assert a.metadata["operationType"] == contents[a.timestamp].operation_type
            assert sorted(s["fileId"] for p in a.metadata["partitionToWriteStats"].values() for s in p) == sorted(
                s.file_id for s in stats)
            assert json.loads(a.metadata["extraMetadata"]["schema"])["type"] == "record"
    archive_dir = table / ".hoodie" / "archived"
    assert sorted(p.name for p in archive_dir.iterdir()) == [".commits_.archive.1_1-0-1", ".commits_.archive.2_1-0-1"]
    blocks = read_blocks((archive_dir / ".commits_.archive.2_1-0-1").read_bytes(), "archive")
    assert [len(read_avro_records(b, "archive")) for b in blocks] == [4, 4, 1]  # 9 records, batches of 4
    header = json.loads(blocks[0].header[SCHEMA])
    assert header == ARCHIVED_META_ENTRY_SCHEMA and [f["name"] for f in header["fields"]] == ENTRY_FIELDS
    assert {f["name"]: f["type"][0] for f in header["fields"]} == {n: "int" if n == "version" else "null" for n in ENTRY_FIELDS}

    for _ in range(4):  # more commits, each followed by a clean: the cleans are archived by count too
        session.sql("UPDATE t SET v = v + 1 WHERE id = 1")
        archive_now(session, table)
        assert 4 <= len(completed_writes(table)) <= 6
        assert len(instants(table, "clean")) <= 6
    assert len(timeline(table)) <= 2 * 3 * 6
    cleans = [t for t, records in archived(table).items() if ("clean", "COMPLETED") in records]
    assert cleans and all(archived(table)[t] == {("clean", s) for s in ("REQUESTED", "INFLIGHT", "COMPLETED")} for t in cleans)
    assert min(instants(table, "clean")) > max(cleans)

    # The cleaner stalls: archiving stops at the earliest commit its last clean retained.
    session.sql("SET hoodie.clean.automatic = false")
    retained = last_clean_retained(table)
    for _ in range(4):
        session.sql("UPDATE t SET v = v + 1 WHERE id = 1")
    active = completed_writes(table)
    assert len(active) - 4 > len([c for c in active if c < retained])  # the count rule alone would move more
    assert [t for t in archive_now(session, table) if t in active] == [c for c in active if c < retained]
    assert completed_writes(table)[0] == retained

    # A savepoint at the second active commit: only the commit before it may go.
    session.sql("SET hoodie.clean.automatic = true")
    session.sql("UPDATE t SET v = v + 1 WHERE id = 1")
    active = completed_writes(table)
    assert len(active) > 6 and last_clean_retained(table) > active[1]
    kept = [p.name for p in table.rglob("*.parquet") if p.name.endswith(f"_{active[1]}.parquet")]
    (table / ".hoodie" / f"{active[1]}.savepoint").write_bytes(encode_savepoint("test", 0, "", {"dt=a": kept}))
    assert [t for t in archive_now(session, table) if t in active] == active[:1]
    assert completed_writes(table) == active[1:]
    assert_reads(session, table, [(1, 15, "a"), (2, 0, "b")])

    # The procedures: Hudi's result row, and the archived commits with their totals, newest first.
    loaded = HudiTable.load(str(table)).for_statement(session.conf)
    assert archiving.archive_commits(loaded, 4, 6, 2) == [(0,)]
    every = sorted(t for t, records in archived(table).items() if ("commit", "COMPLETED") in records)
    rows = archiving.show_archived_commits(loaded, 100, "0", "99999999999999999")
    assert [r[0] for r in rows] == every[::-1]
    assert rows[-1][2:] == (rows[-1][2], 2, 0, 2, 2, 0, 0)  # the INSERT: 2 files added in 2 partitions, 2 records
    assert archiving.show_archived_commits(loaded, 2, every[0], every[3]) == rows[-4:-2]
    assert archiving.show_archived_commits(loaded, 10) == []  # Hudi's default window: 10 to 1 days ago


def test_mor_archiving_never_passes_a_pending_compaction(session, warehouse):
    """Merge-on-read with inline compaction every 3 delta commits: compactions are archived as
    Hudi archives them (the plan, then the commit with operation COMPACT); with a compaction
    pending, only commits before the latest completed one before it may go."""
    session.sql("CREATE TABLE t (id INT, v INT, dt STRING) USING hudi PARTITIONED BY (dt) "
                f"TBLPROPERTIES (type = 'mor', primaryKey = 'id', {RETENTION}, {BY_HAND}, "
                "'hoodie.compact.inline' = 'true', 'hoodie.compact.inline.max.delta.commits' = '3')")
    table = warehouse / "t"
    session.sql("INSERT INTO t VALUES (1, 0, 'a'), (2, 0, 'b')")
    for _ in range(9):
        session.sql("UPDATE t SET v = v + 1 WHERE id = 1")
        archive_now(session, table)
        assert len(completed_writes(table)) <= 6
    records = archived(table)
    compacted = [t for t, r in records.items() if ("compaction", "REQUESTED") in r]
    assert compacted and all(records[t] == {("compaction", "REQUESTED"), ("compaction", "INFLIGHT"), ("commit", "COMPLETED")}
                             for t in compacted)
    by_time = {(a.timestamp, a.state.name): a for a in read_archived(HudiTable.load(str(table)).storage, HudiTable.load(str(table)).config)}
    assert by_time[(compacted[0], "COMPLETED")].metadata["operationType"] == "COMPACT"
    assert by_time[(compacted[0], "REQUESTED")].metadata["operations"]
    assert any(("deltacommit", "COMPLETED") in r for r in records.values())
    assert_reads(session, table, [(1, 9, "a"), (2, 0, "b")])

    session.sql("SET hoodie.compact.inline = false")
    session.sql("UPDATE t SET v = v + 1 WHERE id = 2")
    loaded = HudiTable.load(str(table)).for_statement(session.conf)
    pending = compaction.schedule(loaded)
    assert pending is not None
    for _ in range(6):
        session.sql("UPDATE t SET v = v + 1 WHERE id = 1")
    read_optimized = official_rows(table, COLS, read_optimized=True)
    before_pending = [c for c in completed_writes(table) if c < pending.timestamp]
    assert len(completed_writes(table)) - 4 > len(before_pending) - 1  # the count rule alone would move more
    # Its plan holds back the cleaner too: the last clean may have retained an earlier commit.
    bound = min(before_pending[-1], last_clean_retained(table))
    assert [t for t in archive_now(session, table) if t in before_pending] == [c for c in before_pending if c < bound]
    assert completed_writes(table)[0] == bound
    assert instants(table, "compaction.requested")[-1] == pending.timestamp
    # hudi-rs 0.5 does not merge the logs of a pending compaction's slice: its read-optimized view compares
    assert hudiql_rows(session, "SELECT id, v, dt FROM t") == [(1, 15, "a"), (2, 1, "b")]
    assert official_rows(table, COLS, read_optimized=True) == read_optimized
    session.sql("SET hoodie.compact.inline = true")
    session.sql("UPDATE t SET v = v + 1 WHERE id = 1")  # runs the pending compaction, then archiving may pass it
    assert archive_now(session, table)
    assert_reads(session, table, [(1, 16, "a"), (2, 1, "b")])


def test_archiving_runs_after_each_commit(session, warehouse):
    """With hoodie.archive.automatic (the default) every write archives after its commit."""
    session.sql(f"CREATE TABLE t (id INT, v INT, dt STRING) USING hudi TBLPROPERTIES (primaryKey = 'id', {RETENTION})")
    table = warehouse / "t"
    session.sql("INSERT INTO t VALUES (1, 0, 'a')")
    for _ in range(8):
        session.sql("UPDATE t SET v = v + 1 WHERE id = 1")
        assert len(completed_writes(table)) <= 6
    # 9 commits: the 7th went over keep.max=6 and the 3 oldest moved; 8 and 9 left 6 on the timeline.
    moved = [t for t, records in archived(table).items() if ("commit", "COMPLETED") in records]
    assert len(moved) == 3 and max(moved) < min(completed_writes(table))
    assert_reads(session, table, [(1, 8, "a")])
