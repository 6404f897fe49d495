"""Clustering, as Hudi's size-based clustering does it: small file groups rewritten, sorted, into
fewer ones as one replacecommit with Hudi's clustering plan, commit times kept; run_clustering,
show_clustering and inline clustering; what is refused; the conflict rules with writes.

Every clustered table is read by hudiql and by the official reader (PyPI ``hudi``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from hudiql.errors import ColumnError, HudiqlError, SqlError, WriteConflictError
from hudiql.timeline.replace_plan import decode_clustering
from hudiql.table.table import HudiTable
from hudiql.transaction.heartbeat import WriterHeartbeat

from conftest import hudiql_rows, instants, official_rows, timeline

#: Every insert starts new file groups: the small files clustering is for.
NEW_GROUPS = "'hoodie.parquet.small.file.limit' = '0'"


def live_files(table: Path) -> dict[str, list[str]]:
    """Per partition, the base files of the latest slices, as hudiql's file-system view has them."""
    view = HudiTable.load(str(table)).file_system_view()
    return {p: sorted(s.base_file for s in view.latest_slices(p)) for p in view.partitions()}


def rows_with_meta(session) -> list[tuple]:
    return hudiql_rows(session, "SELECT _hoodie_commit_time, _hoodie_commit_seqno, _hoodie_record_key, id, v, dt FROM t")


def clusterings(table: Path) -> list[str]:
    return instants(table, "replacecommit")


def test_clustering_cow_partitioned(session, warehouse):
    """Three inserts, three file groups per partition; clustering day 'a' (predicate) then the
    rest: one sorted file per partition, the same rows and commit times, one replacecommit each
    with a CLUSTER plan; an incremental read sees nothing new; show_clustering lists both."""
    session.sql("CREATE TABLE t (id INT, v INT, dt STRING) USING hudi PARTITIONED BY (dt) "
                f"TBLPROPERTIES (primaryKey = 'id', {NEW_GROUPS})")
    table = warehouse / "t"
    for n in range(3):
        session.sql(f"INSERT INTO t VALUES ({n}, {9 - n}, 'a'), ({10 + n}, {n}, 'b'), ({20 + n}, {5 - n}, 'a')")
    last_write = instants(table, "commit")[-1]
    before = rows_with_meta(session)
    assert [len(f) for f in live_files(table).values()] == [3, 3]

    [row] = session.sql("CALL run_clustering(table => 't', predicate => \"dt = 'a'\", order => 'V', "
                        "show_involved_partition => true)").collect()
    [first] = clusterings(table)
    assert tuple(row) == (first, 1, "COMPLETED", "dt=a")
    files = live_files(table)
    assert len(files["dt=a"]) == 1 and len(files["dt=b"]) == 3
    assert rows_with_meta(session) == before

    requested = decode_clustering((table / ".hoodie" / f"{first}.replacecommit.requested").read_bytes())
    assert requested.sort_columns == ("v",) and requested.partitions() == ["dt=a"]
    assert len(requested.groups[0].slices) == 3
    completed = json.loads((table / ".hoodie" / f"{first}.replacecommit").read_text())
    assert completed["operationType"] == "CLUSTER"
    assert sorted(completed["partitionToReplaceFileIds"]["dt=a"]) == sorted(s.file_id for s in requested.groups[0].slices)
    [stat] = completed["partitionToWriteStats"]["dt=a"]
    assert stat["numWrites"] == 6 and stat["path"].startswith("dt=a/")
    written = pq.read_table(table / stat["path"])
    assert written.column("v").to_pylist() == sorted(written.column("v").to_pylist())
    assert set(written.column("_hoodie_file_name").to_pylist()) == {files["dt=a"][0]}

    session.sql("CALL run_clustering(table => 't')")  # every partition; no sort columns
    second = clusterings(table)[-1]
    assert [len(f) for f in live_files(table).values()] == [1, 1]
    assert rows_with_meta(session) == before
    assert official_rows(table, ["_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key", "id", "v", "dt"]) == before
    assert hudiql_rows(session, f"SELECT id FROM hudi_table_changes('t', 'latest_state', '{last_write}')") == []
    assert hudiql_rows(session, "CALL show_clustering(table => 't')") == sorted(
        [(first, 1, "COMPLETED", "*"), (second, 2, "COMPLETED", "*")])
    assert hudiql_rows(session, "CALL show_clustering(table => 't', limit => 1)") == [(second, 2, "COMPLETED", "*")]


def test_inline_clustering_mor_unpartitioned(session, warehouse):
    """hoodie.clustering.inline with max.commits=3: nothing after two commits, a clustering after
    the third (an update, in logs): the slices merged with their logs into one file group, the
    update's commit time kept on its row; hudiql and the official reader read the same rows."""
    session.sql("CREATE TABLE t (id INT, v INT, dt STRING) USING hudi "
                f"TBLPROPERTIES (primaryKey = 'id', type = 'mor', {NEW_GROUPS}, 'hoodie.compact.inline' = 'false', "
                "'hoodie.clustering.inline' = 'true', 'hoodie.clustering.inline.max.commits' = '3')")
    table = warehouse / "t"
    session.sql("INSERT INTO t VALUES (1, 1, 'x'), (2, 2, 'x')")
    session.sql("INSERT INTO t VALUES (3, 3, 'x')")
    assert clusterings(table) == [] and len(live_files(table)[""]) == 2
    session.sql("UPDATE t SET v = 20 WHERE id = 2")
    [update] = instants(table, "deltacommit")[-1:]
    assert len(clusterings(table)) == 1
    [merged] = live_files(table)[""]
    assert merged is not None
    expected = [(1, 1), (2, 20), (3, 3)]
    assert hudiql_rows(session, "SELECT id, v FROM t") == expected
    assert official_rows(table, ["id", "v"]) == expected
    assert hudiql_rows(session, "SELECT _hoodie_commit_time FROM t WHERE id = 2") == [(update,)]
    session.sql("INSERT INTO t VALUES (4, 4, 'x')")
    assert len(clusterings(table)) == 1  # one commit since the clustering, not three


def test_refused_with_nothing_changed(session, warehouse):
    """Bad arguments, a clustering planned while one is pending, a predicate on a table without
    partitions, a bucket-index table: one line each, and the timeline and files stay as they were."""
    session.sql(f"CREATE TABLE t (id INT, v INT, dt STRING) USING hudi TBLPROPERTIES (primaryKey = 'id', {NEW_GROUPS})")
    table = warehouse / "t"
    session.sql("INSERT INTO t VALUES (1, 1, 'x')")
    session.sql("INSERT INTO t VALUES (2, 2, 'x')")
    [row] = session.sql("CALL run_clustering(table => 't', op => 'schedule')").collect()
    assert row["state"] == "REQUESTED"
    state = (timeline(table), sorted(p.name for p in table.rglob("*.parquet")))
    refusals = {
        "CALL run_clustering(table => 't', ordr => 'v')": (SqlError, "takes no argument 'ordr'"),
        "CALL run_clustering(table => 't', op => 'run')": (SqlError, "op => 'run' is not valid"),
        "CALL run_clustering(table => 't', op => 'execute', order => 'v')": (SqlError, "order => applies when a plan"),
        "CALL run_clustering(table => 't', order_strategy => 'z-order')": (SqlError, "'z-order' is not supported"),
        "CALL run_clustering(table => 't', instants => '1', op => 'schedule')": (SqlError, "op => 'execute' only"),
        "CALL run_clustering(table => 't', instants => '20200101000000000')": (SqlError, "is not a pending clustering"),
        "CALL run_clustering(table => 't', predicate => \"dt = 'x'\")": (SqlError, "is not partitioned"),
        "CALL run_clustering(table => 't', options => 'hoodie.clustering.plan.strategy.daybased.lookback.partitions=2')":
            (HudiqlError, "hoodie.clustering"),
        "CALL run_clustering(table => 't')": (HudiqlError, "has a pending clustering"),
    }
    for sql, (error, text) in refusals.items():
        with pytest.raises(error, match=text) as info:
            session.sql(sql)
        assert "\n" not in str(info.value), sql
        assert (timeline(table), sorted(p.name for p in table.rglob("*.parquet"))) == state, sql
    session.sql("CREATE TABLE b (id INT, v INT) USING hudi TBLPROPERTIES (primaryKey = 'id', 'hoodie.index.type' = 'BUCKET')")
    with pytest.raises(HudiqlError, match="table b uses the bucket index"):
        session.sql("CALL run_clustering(table => 'b')")
    assert timeline(warehouse / "b") == []
    [done] = session.sql("CALL run_clustering(table => 't', op => 'execute')").collect()
    assert tuple(done) == (row["timestamp"], 1, "COMPLETED", "*")
    with pytest.raises(ColumnError, match="'nope' is not a column of table t"):
        session.sql("CALL run_clustering(table => 't', order => 'nope')")
    assert hudiql_rows(session, "SELECT id, v FROM t") == [(1, 1), (2, 2)]


def test_write_to_a_file_group_being_clustered_is_rejected(session, warehouse):
    """A clustering another process runs (its plan pending, its heartbeat beating): an UPDATE of
    a row of its file groups fails with one line, nothing of it committed; an insert into a new
    file group commits. Once the clustering ran, the update succeeds."""
    session.sql(f"CREATE TABLE t (id INT, v INT, dt STRING) USING hudi TBLPROPERTIES (primaryKey = 'id', {NEW_GROUPS})")
    table = warehouse / "t"
    session.sql("INSERT INTO t VALUES (1, 1, 'x'), (2, 2, 'x')")
    [row] = session.sql("CALL run_clustering(table => 't', op => 'schedule')").collect()
    beat = WriterHeartbeat(HudiTable.load(str(table)).storage, row["timestamp"], 60000)
    assert beat.start()
    try:
        before = timeline(table)
        with pytest.raises(WriteConflictError, match=f"clustering {row['timestamp']} is rewriting") as info:
            session.sql("UPDATE t SET v = 10 WHERE id = 1")
        assert "\n" not in str(info.value)
        assert timeline(table) == before
        session.sql("INSERT INTO t VALUES (3, 3, 'x')")
    finally:
        beat.stop()
    session.sql("CALL run_clustering(table => 't', op => 'execute')")
    session.sql("UPDATE t SET v = 10 WHERE id = 1")
    assert hudiql_rows(session, "SELECT id, v FROM t") == [(1, 10), (2, 2), (3, 3)]


def test_write_to_a_planned_file_group_is_rejected(session, warehouse):
    """A clustering plan on storage that nobody runs yet: a write to its file groups is refused."""
    session.sql(f"CREATE TABLE t (id INT, v INT, dt STRING) USING hudi TBLPROPERTIES (primaryKey = 'id', {NEW_GROUPS})")
    session.sql("INSERT INTO t VALUES (1, 1, 'x')")
    session.sql("CALL run_clustering(table => 't', op => 'schedule')")
    with pytest.raises(WriteConflictError, match="is rewriting"):
        session.sql("UPDATE t SET v = 10 WHERE id = 1")


@pytest.mark.parametrize("table_type", ["cow", "mor"])
def test_inserts_go_around_a_pending_clustering(session, warehouse, table_type):
    """While a clustering plan waits to be run, new keys go to other file groups than its (as
    Hudi's upsert partitioner skips them), so an INSERT succeeds; an update of a planned group is
    still refused, and once the clustering ran every row is there."""
    session.sql("CREATE TABLE t (id INT, v INT, dt STRING) USING hudi PARTITIONED BY (dt) "
                f"TBLPROPERTIES (primaryKey = 'id', type = '{table_type}', 'hoodie.compact.inline' = 'false')")
    table = warehouse / "t"
    session.sql("INSERT INTO t VALUES (1, 1, 'x'), (2, 2, 'y')")
    session.sql("INSERT INTO t VALUES (3, 3, 'x')")  # into the small file group of 'x'
    [row] = session.sql("CALL run_clustering(table => 't', op => 'schedule')").collect()
    planned = decode_clustering((table / ".hoodie" / f"{row['timestamp']}.replacecommit.requested").read_bytes())
    assert planned.file_groups()
    session.sql("INSERT INTO t VALUES (4, 4, 'x'), (5, 5, 'y')")
    view = HudiTable.load(str(table)).file_system_view()
    assert not {(s.partition_path, s.file_id) for s in view.latest_slices()
                if s.base_instant > row["timestamp"]} & planned.file_groups()
    with pytest.raises(WriteConflictError, match="is rewriting"):
        session.sql("UPDATE t SET v = 10 WHERE id = 1")
    session.sql("CALL run_clustering(table => 't', op => 'execute')")
    expected = [(1, 1, "x"), (2, 2, "y"), (3, 3, "x"), (4, 4, "x"), (5, 5, "y")]
    assert hudiql_rows(session, "SELECT id, v, dt FROM t") == expected
    assert official_rows(table, ["id", "v", "dt"]) == expected


def test_clustering_loses_to_a_write_after_its_plan(session, warehouse):
    """A write (of another program, which did not see the plan) committed between a clustering's
    plan and its run: the clustering fails with one line, nothing of it is committed or left,
    its plan is gone, and the write's rows stay."""
    session.sql("CREATE TABLE t (id INT, v INT, dt STRING) USING hudi PARTITIONED BY (dt) "
                f"TBLPROPERTIES (primaryKey = 'id', {NEW_GROUPS})")
    table = warehouse / "t"
    session.sql("INSERT INTO t VALUES (1, 1, 'a'), (2, 2, 'b')")
    session.sql("INSERT INTO t VALUES (3, 3, 'a')")
    [row] = session.sql("CALL run_clustering(table => 't', op => 'schedule')").collect()
    plan = table / ".hoodie" / f"{row['timestamp']}.replacecommit.requested"
    content = plan.read_bytes()
    plan.unlink()  # the other program's write does not see it...
    session.sql("UPDATE t SET v = 30 WHERE id = 3")
    plan.write_bytes(content)  # ...which was made before that write
    before = ([n for n in timeline(table) if not n.startswith(row["timestamp"])],
              sorted(p.name for p in table.rglob("*.parquet")))
    with pytest.raises(WriteConflictError, match=f"replacecommit {row['timestamp']} conflicts with commit") as info:
        session.sql("CALL run_clustering(table => 't', op => 'execute')")
    assert "\n" not in str(info.value)
    assert (timeline(table), sorted(p.name for p in table.rglob("*.parquet"))) == before
    expected = [(1, 1, "a"), (2, 2, "b"), (3, 30, "a")]
    assert hudiql_rows(session, "SELECT id, v, dt FROM t") == expected
    assert official_rows(table, ["id", "v", "dt"]) == expected
