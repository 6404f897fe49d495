"""CALL rollback_to_instant: the latest commit undone in Hudi's format, on COW and MOR, partitioned
and not (hudiql and the official reader read the rows as they were before it); what it refuses,
changing nothing; a rollback a crash cut short, finished by the next write."""

from __future__ import annotations

from pathlib import Path

import pytest
from hudiql.errors import SqlError
from hudiql.transaction import rollback
from hudiql.timeline.rollback_plan import decode_metadata, decode_plan, encode_plan
from hudiql.table.table import HudiTable

from conftest import hudiql_rows, instants, official_rows, timeline


def files(table: Path) -> dict[str, tuple[int, int]]:
    """Every file of the table with its size and modification time: what 'nothing changed' compares."""
    return {str(p.relative_to(table)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in table.rglob("*") if p.is_file() and p.name != "lock" and ".heartbeat" not in p.parts}


def rows(session, table: Path, columns: str) -> list[tuple]:
    got = hudiql_rows(session, f"SELECT {columns} FROM t")
    assert official_rows(table, [c.strip() for c in columns.split(",")]) == got
    return got


def latest(table: Path) -> str:
    return max(n.split(".", 1)[0] for n in timeline(table) if n.split(".", 1)[1] in ("commit", "deltacommit", "replacecommit"))


@pytest.mark.parametrize("kind, partitioned", [("cow", True), ("mor", False)])
def test_rollback_of_the_latest_commit_restores_the_snapshot_before_it(session, warehouse, kind, partitioned):
    """An update, an insert overwrite (replacecommit) and on MOR a compaction, each rolled back:
    the rows are those before it, the files it wrote are gone, its instant too, and a completed
    rollback instant (plan and metadata in Hudi's Avro) names them. The table takes writes after."""
    session.sql(f"CREATE TABLE t (id INT, v INT, dt STRING) USING hudi {'PARTITIONED BY (dt)' if partitioned else ''} "
                f"TBLPROPERTIES (primaryKey = 'id', type = '{kind}', 'hoodie.compact.inline' = 'false')")
    table = warehouse / "t"
    session.sql("INSERT INTO t VALUES (1, 0, 'a'), (2, 0, 'b'), (3, 0, 'a')")
    before = rows(session, table, "id, v, dt")
    stored = set(files(table))
    session.sql("UPDATE t SET v = 7 WHERE id IN (1, 2)")
    update = latest(table)
    assert rows(session, table, "id, v, dt") != before
    written = set(files(table)) - stored

    session.sql(f"CALL rollback_to_instant(table => 't', instant_time => '{update}')")
    assert rows(session, table, "id, v, dt") == before
    assert not [n for n in timeline(table) if n.startswith(update)]
    data_written = {f for f in written if not f.startswith(".hoodie")}
    assert data_written and not data_written & set(files(table))  # its base / log files are deleted
    [rb] = instants(table, "rollback")
    assert instants(table, "rollback.requested") == [rb] and instants(table, "rollback.inflight") == [rb]
    plan = decode_plan((table / ".hoodie" / f"{rb}.rollback.requested").read_bytes())
    meta = decode_metadata((table / ".hoodie" / f"{rb}.rollback").read_bytes())
    assert (plan.instant_time, meta.instant_time) == (update, update)
    assert {Path(p).name for paths in meta.deleted.values() for p in paths} == {Path(f).name for f in data_written}

    # A replacecommit rolled back: the file groups it replaced are live again.
    session.sql("INSERT OVERWRITE t SELECT 9, 9, 'a'")
    assert rows(session, table, "id, v, dt") == [(9, 9, "a")]
    session.sql(f"CALL system.rollback_to_instant('t', '{latest(table)}')")  # positional, Hudi's prefix
    assert rows(session, table, "id, v, dt") == before

    if kind == "mor":
        session.sql("UPDATE t SET v = 5 WHERE id = 3")
        updated = rows(session, table, "id, v, dt")
        session.sql("CALL run_compaction(op => 'scheduleandexecute', table => 't')")
        compaction = latest(table)
        assert (table / ".hoodie" / f"{compaction}.compaction.requested").exists()
        session.sql(f"CALL rollback_to_instant(table => 't', instant_time => '{compaction}')")
        assert not [n for n in timeline(table) if n.startswith(compaction)]  # not pending again either
        assert rows(session, table, "id, v, dt") == updated  # read from the logs again
        assert not [f for f in files(table) if compaction in f]

    session.sql("INSERT INTO t VALUES (4, 1, 'b')")
    assert (4, 1, "b") in rows(session, table, "id, v, dt")


def test_bad_rollbacks_are_refused_and_change_nothing(session, warehouse):
    session.sql("CREATE TABLE t (id INT, v INT) USING hudi TBLPROPERTIES (primaryKey = 'id')")
    table = warehouse / "t"
    session.sql("INSERT INTO t VALUES (1, 0)")
    first = latest(table)
    session.sql("INSERT INTO t VALUES (2, 0)")
    second = latest(table)
    session.sql(f"CALL create_savepoint(table => 't', commit_time => '{second}')")
    snapshot = files(table)

    def refused(sql: str, message: str) -> None:
        with pytest.raises(SqlError, match=message) as info:
            session.sql(sql)
        assert "\n" not in str(info.value)
        assert files(table) == snapshot

    refused(f"CALL rollback_to_instant(table => 't', instant_time => '{first}')",
            f"{first} is not the latest commit of table t: {second} completed after it; roll back {second} first")
    refused("CALL rollback_to_instant(table => 't', instant_time => '20200101000000000')",
            "table t has no instant 20200101000000000; CALL show_commits")
    refused(f"CALL rollback_to_instant(table => 't', instant_time => '{second}')",
            rf"savepoint {second} protects {second}; CALL delete_savepoint\(table => 't', instant_time => '{second}'\) first")
    refused("CALL rollback_to_instant(table => 't')", "needs instant_time")
    session.sql(f"CALL delete_savepoint(table => 't', instant_time => '{second}')")
    # A write in flight after the commit (its writer alive: a heartbeat) may have read it.
    t = HudiTable.load(str(table))
    pending = t.timeline.start("commit", "29990101000000000")
    (table / ".hoodie" / ".heartbeat").mkdir(exist_ok=True)
    (table / ".hoodie" / ".heartbeat" / "29990101000000000").write_text("600000")
    snapshot = files(table)
    refused(f"CALL rollback_to_instant(table => 't', instant_time => '{second}')",
            f"commit 29990101000000000 is in flight after {second}; wait until it finishes")
    refused("CALL rollback_to_instant(table => 't', instant_time => '29990101000000000')", "has not completed")
    t.timeline.remove_pending(pending)


def test_a_rollback_cut_short_is_finished_by_the_next_write(session, warehouse):
    """A crash after the plan, the commit's completed file and one of its files were deleted:
    readers do not read the half-deleted commit, and the next write finishes the rollback."""
    session.sql("CREATE TABLE t (id INT, v INT, dt STRING) USING hudi PARTITIONED BY (dt) "
                "TBLPROPERTIES (primaryKey = 'id')")
    table = warehouse / "t"
    session.sql("INSERT INTO t VALUES (1, 0, 'a'), (2, 0, 'b')")
    before = rows(session, table, "id, v, dt")
    session.sql("INSERT INTO t VALUES (1, 1, 'a'), (2, 1, 'b')")
    commit = latest(table)
    t = HudiTable.load(str(table))
    instant = t.timeline.completed()[-1]
    plan = rollback.plan_rollback(t, instant)
    t.timeline.request("rollback", "29990101000000000", encode_plan(plan))
    (table / ".hoodie" / f"{commit}.commit").unlink()
    first = plan.requests[0]
    (table / first.partition_path / Path(first.files[0]).name).unlink()
    assert rows(session, table, "id, v, dt") == before  # pending: invisible, even half deleted

    session.sql("INSERT INTO t VALUES (3, 0, 'a')")
    assert instants(table, "rollback") == ["29990101000000000"]
    assert not [n for n in timeline(table) if n.startswith(commit)]
    assert not any(Path(p).name in files(table) for r in plan.requests for p in r.files)
    assert rows(session, table, "id, v, dt") == sorted(before + [(3, 0, "a")])
