"""The history procedures (show_commits and DESCRIBE HISTORY, show_commit_files,
show_commit_write_stats, show_fsview_all / latest) and savepoints: kept by the cleaner and the
archiver, restored by rollback_to_savepoint (hudiql and the official reader read the rows as of
the savepoint), and what they refuse, changing nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hudiql.errors import SqlError
from hudiql.timeline.rollback_plan import decode_restore_metadata, decode_restore_plan
from hudiql.timeline.savepoint import savepointed_paths

from conftest import hudiql_rows, instants, official_rows, timeline


def files(table: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(table)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in table.rglob("*") if p.is_file() and p.name != "lock" and ".heartbeat" not in p.parts}


def test_history_procedures_describe_the_commits_and_slices(session, warehouse):
    session.sql("CREATE TABLE t (id INT, v INT, dt STRING) USING hudi PARTITIONED BY (dt) "
                "TBLPROPERTIES (primaryKey = 'id', type = 'mor', 'hoodie.compact.inline' = 'false')")
    table = warehouse / "t"
    session.sql("INSERT INTO t VALUES (1, 0, 'a'), (2, 0, 'b')")
    session.sql("UPDATE t SET v = 1 WHERE id = 1")
    deltas = instants(table, "deltacommit")
    commits = session.sql("CALL show_commits(table => 't')").collect()
    assert [(r.commit_time, r.action) for r in commits] == [(deltas[1], "deltacommit"), (deltas[0], "deltacommit")]
    assert (commits[1].total_files_added, commits[1].total_partitions_written, commits[1].total_records_written) == (2, 2, 2)
    assert (commits[0].total_files_updated, commits[0].total_update_records_written) == (1, 1)
    assert commits[0].state_transition_time >= deltas[1]
    assert [tuple(r) for r in session.sql("DESCRIBE HISTORY t").collect()] == [tuple(r) for r in commits]
    assert session.sql("CALL show_commits('t', 1)").count() == 1

    [update] = session.sql(f"CALL show_commit_files(table => 't', instant_time => '{deltas[1]}')").collect()
    meta = json.loads((table / ".hoodie" / f"{deltas[1]}.deltacommit").read_text())
    [stat] = meta["partitionToWriteStats"]["dt=a"]
    assert (update.action, update.partition_path, update.file_id, update.previous_commit, update.total_records_updated,
            update.file_size) == ("deltacommit", "dt=a", stat["fileId"], deltas[0], 1, stat["fileSizeInBytes"])
    [stats] = session.sql(f"CALL show_commit_write_stats(table => 't', instant_time => '{deltas[0]}')").collect()
    assert stats.total_records_written == 2 and stats.avg_record_size == -(-stats.total_bytes_written // 2)
    with pytest.raises(SqlError, match="table t has no completed commit 1; CALL show_commits"):
        session.sql("CALL show_commit_files(table => 't', instant_time => '1')")

    latest = {r.partition: r for r in session.sql("CALL show_fsview_latest(table => 't')").collect()}
    assert latest["dt=a"].num_delta_files == 1 and latest["dt=b"].num_delta_files == 0
    assert latest["dt=a"].data_file.endswith(".parquet") and latest["dt=a"].delta_files_compaction_scheduled.count(".log.") == 1
    assert latest["dt=a"].delta_size_compaction_scheduled == latest["dt=a"].total_delta_file_size > 0
    before_update = session.sql(f"CALL show_fsview_all(table => 't', max_instant => '{deltas[1]}')").collect()
    assert {(r.partition, r.num_delta_files) for r in before_update} == {("dt=a", 0), ("dt=b", 0)}
    assert [r.partition for r in session.sql("CALL show_fsview_all(table => 't', path_regex => 'dt=b')").collect()] == ["dt=b"]


# After the restore every completed commit left is savepointed: the archived first commit's files
# are still read (Timeline.committed() starts at the first completed write).
@pytest.mark.parametrize("kind", ["cow", "mor"])
def test_savepoint_is_kept_by_cleaning_and_archiving_and_restored(session, warehouse, kind):
    session.sql(f"CREATE TABLE t (id INT, v INT, dt STRING) USING hudi PARTITIONED BY (dt) "
                f"TBLPROPERTIES (primaryKey = 'id', type = '{kind}', 'hoodie.cleaner.policy' = 'KEEP_LATEST_FILE_VERSIONS', "
                "'hoodie.cleaner.fileversions.retained' = '1', 'hoodie.compact.inline.max.delta.commits' = '1', "
                "'hoodie.keep.min.commits' = '2', 'hoodie.keep.max.commits' = '3', 'hoodie.cleaner.commits.retained' = '1')")
    table = warehouse / "t"
    session.sql("INSERT INTO t VALUES (1, 0, 'a'), (2, 0, 'b')")
    session.sql("UPDATE t SET v = 1 WHERE id = 1")
    saved = hudiql_rows(session, "SELECT id, v, dt FROM t")
    session.sql("CALL create_savepoint('t', '', 'admin', 'before the backfill')")
    [savepoint] = instants(table, "savepoint")
    assert instants(table, "savepoint.inflight") == [savepoint]
    assert [tuple(r) for r in session.sql("CALL show_savepoints(table => 't')").collect()] == [(savepoint,)]
    kept = savepointed_paths((table / ".hoodie" / f"{savepoint}.savepoint").read_bytes())
    for v in range(2, 6):
        session.sql(f"UPDATE t SET v = {v} WHERE id IN (1, 2)")
    session.sql("INSERT OVERWRITE t SELECT 3, 0, 'c'")
    # The cleaner kept one version per file group, but not of the savepointed slices; the archiver stopped at it.
    assert instants(table, "clean") and all((table / p).exists() for p in kept)
    assert (table / ".hoodie" / "archived").exists() and savepoint in {n.split(".")[0] for n in timeline(table)}

    snapshot = files(table)
    for sql, message in [
        ("CALL rollback_to_savepoint(table => 't', instant_time => '1')", f"table t has no savepoint 1; its savepoints are {savepoint}"),
        ("CALL delete_savepoint(table => 't', instant_time => '1')", "table t has no savepoint 1"),
        ("CALL create_savepoint(table => 't', commit_time => '1')", "commit 1 of table t does not exist"),
        (f"CALL create_savepoint(table => 't', commit_time => '{savepoint}')", "is savepointed already"),
        ("CALL create_savepoint(table => 't', path => '/x')", "path => is not supported"),
    ]:
        with pytest.raises(SqlError, match=message):
            session.sql(sql)
        assert files(table) == snapshot

    session.sql("CALL rollback_to_savepoint(table => 't')")  # the latest savepoint
    assert hudiql_rows(session, "SELECT id, v, dt FROM t") == saved == official_rows(table, ["id", "v", "dt"])
    [restore] = instants(table, "restore")
    plan = decode_restore_plan((table / ".hoodie" / f"{restore}.restore.requested").read_bytes())
    rolled_back = decode_restore_metadata((table / ".hoodie" / f"{restore}.restore").read_bytes())
    assert plan.savepoint == savepoint and [t for t, _ in plan.instants] == rolled_back
    assert rolled_back and all(t > savepoint for t in rolled_back) and rolled_back == sorted(rolled_back, reverse=True)
    assert len(instants(table, "rollback")) == len(rolled_back)
    session.sql("CALL delete_savepoint('t')")
    assert session.sql("CALL show_savepoints(table => 't')").count() == 0
    with pytest.raises(SqlError, match="table t has no savepoint; CALL create_savepoint"):
        session.sql("CALL rollback_to_savepoint(table => 't')")
