"""CALL upgrade_table / downgrade_table: a table moved between versions 6, 8 and 9 with its rows and
history, each step read by hudiql and the official reader alike; what a version cannot hold refused
by name with the table unchanged; a kill -9 at each step of an upgrade leaves a table both readers
read, which the same call then finishes."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from conftest import hudiql_rows, official_rows
from hudiql.config.table_config import TableConfig
from hudiql.errors import SqlError
from hudiql.sql.statements import TableName
from hudiql.timeline.archived import read_archived

COLUMNS = ["id", "name", "ts", "dt"]
QUERY = "SELECT id, name, ts, dt FROM t"


def create(session, kind: str = "mor", version: int = 6, *props: str) -> Path:
    options = ["primaryKey='id'", "preCombineField='ts'", f"type='{kind}'", f"'hoodie.write.table.version'='{version}'",
               "'hoodie.compact.inline'='false'", *props]
    session.sql(f"CREATE TABLE t (id INT, name STRING, ts BIGINT, dt STRING) USING hudi PARTITIONED BY (dt) "
                f"TBLPROPERTIES ({', '.join(options)})")
    session.sql("INSERT INTO t VALUES (1, 'a', 1, 'd1'), (2, 'b', 1, 'd1'), (3, 'c', 1, 'd2')")
    session.sql("UPDATE t SET name = 'bb', ts = 2 WHERE id = 2")  # a log file on merge-on-read
    return Path(session.table(TableName(None, "t")).base_uri.removeprefix("file://"))


def props(table: Path) -> dict[str, str]:
    return TableConfig.parse((table / ".hoodie" / "hoodie.properties").read_bytes()).props


def instant_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.is_file() and p.name[:1].isdigit())


def commits(session) -> list[str]:
    return sorted(r[0] for r in session.sql("CALL show_commits(table => 't', limit => 100)").collect())


def test_upgrade_to_9_and_downgrade_to_6_keep_rows_and_history(session):
    table = create(session)
    session.sql("CALL create_savepoint(table => 't')")
    rows, history = hudiql_rows(session, QUERY), commits(session)
    assert rows == official_rows(table, COLUMNS)

    session.sql("CALL upgrade_table(table => 't', to_version => 'EIGHT')")
    p = props(table)
    assert (p["hoodie.table.version"], p["hoodie.timeline.layout.version"], p["hoodie.table.initial.version"]) == ("8", "2", "6")
    assert p["hoodie.table.keygenerator.type"] == "SIMPLE" and "hoodie.table.keygenerator.class" not in p
    assert instant_files(table / ".hoodie") == [] and not (table / ".hoodie" / "archived").exists()
    moved = instant_files(table / ".hoodie" / "timeline")
    done = [n for n in moved if "_" in n.split(".")[0]]
    assert done and all(n.split(".")[0].split("_")[0] < n.split(".")[0].split("_")[1] for n in done)
    assert any(n.endswith(".savepoint") for n in done) and any(n.endswith(".compaction.requested") for n in moved)
    # the merge-on-read table was compacted first: no log file of version 6's naming is left to read
    assert hudiql_rows(session, QUERY) == official_rows(table, COLUMNS) == rows
    assert commits(session)[:len(history)] == history  # the history kept, and the compaction added

    session.sql("CALL upgrade_table(table => 't', to_version => 9)")
    assert props(table)["hoodie.table.version"] == "9" and props(table)["hoodie.table.ordering.fields"] == "ts"
    session.sql("UPDATE t SET name = 'a9', ts = 9 WHERE id = 1")
    rows = hudiql_rows(session, QUERY)
    assert rows == official_rows(table, COLUMNS) and (1, "a9", 9, "d1") in rows

    session.sql("CALL downgrade_table(table => 't', to_version => 'SIX')")
    p = props(table)
    assert (p["hoodie.table.version"], p["hoodie.timeline.layout.version"]) == ("6", "1")
    assert p["hoodie.table.precombine.field"] == "ts" and "hoodie.table.keygenerator.class" in p
    assert not set(p) & {"hoodie.timeline.path", "hoodie.table.initial.version", "hoodie.table.ordering.fields"}
    assert not (table / ".hoodie" / "timeline").exists() and (table / ".hoodie" / "archived").is_dir()
    assert all("_" not in n.split(".")[0] for n in instant_files(table / ".hoodie"))
    assert hudiql_rows(session, QUERY) == official_rows(table, COLUMNS) == rows
    session.sql("UPDATE t SET name = 'a6', ts = 10 WHERE id = 1")
    assert hudiql_rows(session, QUERY) == official_rows(table, COLUMNS)


@pytest.mark.parametrize("call, message", [
    ("CALL upgrade_table(table => 't', to_version => 'SEVEN')", "to_version SEVEN is not a version hudiql writes; use 6"),
    ("CALL downgrade_table(table => 't', to_version => 8)", "table t is of version 6; CALL upgrade_table moves it"),
    ("CALL upgrade_table(table => 't')", "needs to_version"),
])
def test_a_version_call_hudiql_cannot_make_changes_nothing(session, call, message):
    table = create(session, "cow")
    before = (table / ".hoodie" / "hoodie.properties").read_bytes()
    with pytest.raises(SqlError, match=message):
        session.sql(call)
    assert (table / ".hoodie" / "hoodie.properties").read_bytes() == before


def test_the_archived_timeline_moves_with_the_table_and_back(session):
    """Version 6's archive files become version 8's LSM timeline, and back, with the same archived
    commits (show_archived_commits) and the same rows for both readers."""
    table = create(session, "cow", 6, "'hoodie.keep.min.commits'='2'", "'hoodie.keep.max.commits'='3'",
                   "'hoodie.cleaner.commits.retained'='1'")
    for i in range(3):
        session.sql(f"INSERT INTO t VALUES ({10 + i}, 'x', 1, 'd1')")
    assert list((table / ".hoodie" / "archived").iterdir())  # archived by the writes
    show = "CALL show_archived_commits(table => 't', start_ts => '0', end_ts => '99999999999999999')"
    archived = sorted(session.sql(show).collect())
    rows = hudiql_rows(session, QUERY)
    assert len(archived) >= 2 and rows == official_rows(table, COLUMNS)

    session.sql("CALL upgrade_table(table => 't', to_version => 8)")
    history = table / ".hoodie" / "timeline" / "history"
    assert not (table / ".hoodie" / "archived").exists() and (history / "_version_").read_text() == "1"
    [data_file] = history.glob("*.parquet")
    moved = pq.read_table(data_file).to_pylist()
    assert {r["instantTime"] for r in moved if r["action"] == "commit"} == {r[0] for r in archived}
    assert all(r["metadata"][:4] == b"Obj\x01" for r in moved if r["metadata"])
    assert sorted(session.sql(show).collect()) == archived
    assert hudiql_rows(session, QUERY) == official_rows(table, COLUMNS) == rows

    session.sql("CALL downgrade_table(table => 't', to_version => 6)")
    assert not (table / ".hoodie" / "timeline").exists() and list((table / ".hoodie" / "archived").iterdir())
    assert sorted(session.sql(show).collect()) == archived
    assert hudiql_rows(session, QUERY) == official_rows(table, COLUMNS) == rows
    session.sql("INSERT INTO t VALUES (20, 'y', 1, 'd2')")  # and version 6 archives on, after the converted file
    assert len(hudiql_rows(session, QUERY)) == len(rows) + 1


def test_what_the_other_version_cannot_hold_is_refused_by_name(session):
    session.sql("CREATE TABLE k (id INT, a STRING, b STRING) USING hudi PARTITIONED BY (a, b) "
                "TBLPROPERTIES (primaryKey='id', 'hoodie.write.table.version'='8')")
    with pytest.raises(SqlError, match="keys its records by one field with the complex key generator"):
        session.sql("CALL upgrade_table(table => 'k', to_version => 9)")
    assert session.table(TableName(None, "k")).config.version == 8


_KILLED_UPGRADE = textwrap.dedent("""
    import os, signal, sys
    import hudiql
    from hudiql.config.table_config import TableConfig
    from hudiql.services import table_version
    warehouse, step = sys.argv[1], sys.argv[2]
    session = hudiql.connect(warehouse=warehouse)

    def die(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGKILL)

    if step == "before the switch":  # the new timeline written beside the old one
        save = TableConfig.save
        TableConfig.save = lambda self, storage: die() if self.props.get("hoodie.table.version") == "8" else save(self, storage)
    else:  # switched, the old timeline's files not deleted yet
        table_version._delete_left_over = die
    session.sql("CALL upgrade_table(table => 't', to_version => 8)")
""")


@pytest.mark.parametrize("step", ["before the switch", "after the switch"])
def test_an_upgrade_killed_at_each_step_leaves_a_readable_table_and_the_call_finishes_it(session, warehouse, step):
    table = create(session, "cow")
    rows = hudiql_rows(session, QUERY)
    killed = subprocess.run([sys.executable, "-c", _KILLED_UPGRADE, str(warehouse), step],
                            capture_output=True, text=True, timeout=300)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    assert props(table)["hoodie.table.version"] == ("6" if step == "before the switch" else "8")
    assert hudiql_rows(session, QUERY) == official_rows(table, COLUMNS) == rows

    session.sql("CALL upgrade_table(table => 't', to_version => 8)")
    assert props(table)["hoodie.table.version"] == "8" and instant_files(table / ".hoodie") == []
    assert hudiql_rows(session, QUERY) == official_rows(table, COLUMNS) == rows
    session.sql("INSERT INTO t VALUES (4, 'd', 1, 'd2')")
    assert hudiql_rows(session, QUERY) == official_rows(table, COLUMNS) == sorted([*rows, (4, "d", 1, "d2")])


def test_archived_compactions_and_cleans_move_between_the_forms(session):
    """A version 8 merge-on-read table whose LSM timeline holds compactions (their plans) and cleans,
    downgraded to 6: its archive files hold the same instants (a compaction's request with its plan),
    and upgraded again, the same LSM rows."""
    table = create(session, "mor", 8, "'hoodie.keep.min.commits'='2'", "'hoodie.keep.max.commits'='3'",
                   "'hoodie.cleaner.commits.retained'='1'", "'hoodie.compact.inline.max.delta.commits'='1'")
    for i in range(4):
        session.sql(f"UPDATE t SET ts = ts + 1 WHERE id = {1 + i % 3}")
        session.sql("CALL run_compaction(table => 't', op => 'scheduleandexecute')")
    history = table / ".hoodie" / "timeline" / "history"
    archived = [r for f in history.glob("*.parquet") for r in pq.read_table(f).to_pylist()]
    compactions = {r["instantTime"] for r in archived if r["action"] == "commit" and r["plan"]}
    assert compactions and any(r["action"] == "clean" for r in archived)
    rows = hudiql_rows(session, QUERY)
    assert rows == official_rows(table, COLUMNS)

    session.sql("CALL downgrade_table(table => 't', to_version => 6)")
    entries = {(a.timestamp, a.action, a.state.name)
               for a in read_archived(session.table(TableName(None, "t")).storage, TableConfig.parse(
                   (table / ".hoodie" / "hoodie.properties").read_bytes()))}
    assert {(t, "compaction", "REQUESTED") for t in compactions} <= entries
    assert {(r["instantTime"], r["action"], "COMPLETED") for r in archived} <= entries
    assert hudiql_rows(session, QUERY) == official_rows(table, COLUMNS) == rows

    session.sql("CALL upgrade_table(table => 't', to_version => 8)")
    again = [r for f in history.glob("*.parquet") for r in pq.read_table(f).to_pylist()]
    assert sorted((r["instantTime"], r["action"], r["plan"] is not None) for r in again) == sorted(
        (r["instantTime"], r["action"], r["plan"] is not None) for r in archived)
    assert hudiql_rows(session, QUERY) == official_rows(table, COLUMNS) == rows
