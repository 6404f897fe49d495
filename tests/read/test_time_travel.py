"""Time travel and incremental reads: a table as of each of its commits, and the rows the commits of
a range changed, on copy-on-write and merge-on-read tables, partitioned and not, across updates,
deletes, an overwrite (replacecommit) and a compaction; then on a table the cleaner and the archiver
worked on; and the refusals.

Each table's expected contents are kept in Python beside it, commit by commit: per key, its value
and the instant that last wrote it.
"""

from __future__ import annotations

import pytest
from hudiql.errors import HudiqlError, SqlError
from hudiql.timeline.clean_plan import decode_metadata
from hudiql.table.table import HudiTable
from hudiql.timeline.active import parse_instant_time

from conftest import hudiql_rows


class History:
    """A table and its expected state after each commit: {id: (v, commit time)}."""

    def __init__(self, session, warehouse, name: str) -> None:
        self.session, self.path, self.name = session, warehouse / name, name
        self.states: list[tuple[str, dict[int, tuple[str, str]]]] = []  # (commit, state)

    def latest_commit(self) -> str:
        # The write's own instant (a compaction after it is not a write of rows).
        commits = [i for i in HudiTable.load(str(self.path)).timeline.completed() if i.action != "compaction"]
        return commits[-1].timestamp

    def write(self, sql: str, change) -> str:
        """Run a write; ``change(state, commit)`` gives the state after it."""
        self.session.sql(sql)
        commit = self.latest_commit()
        before = self.states[-1][1] if self.states else {}
        self.states.append((commit, change(dict(before), commit)))
        return commit

    def as_of(self, commit: str) -> dict[int, tuple[str, str]]:
        return next(state for c, state in reversed(self.states) if c <= commit)

    def changes(self, begin: str, end: str) -> list[tuple]:
        """Expected ``latest_state`` rows of (begin, end]: (id, v, commit time)."""
        state = self.as_of(end)
        return sorted((k, v, c) for k, (v, c) in state.items() if begin < c <= end)

    def deleted(self, begin: str, end: str) -> list[int]:
        return sorted(set(self.as_of(begin)) - set(self.as_of(end)))


def upsert(rows):
    def change(state, commit):
        state.update({k: (v, commit) for k, v in rows})
        return state
    return change


def delete(*ids):
    def change(state, commit):
        for k in ids:
            state.pop(k)
        return state
    return change


def rows_as_of(session, name: str, instant: str) -> list[tuple]:
    return hudiql_rows(session, f"SELECT id, v, _hoodie_commit_time FROM {name} TIMESTAMP AS OF '{instant}'")


def expected(state: dict[int, tuple[str, str]]) -> list[tuple]:
    return sorted((k, v, c) for k, (v, c) in state.items())


@pytest.mark.parametrize(("table_type", "partitioned"), [("cow", True), ("cow", False), ("mor", True), ("mor", False)])
def test_time_travel_and_incremental_reads_follow_every_commit(session, warehouse, table_type, partitioned):
    """Each commit's view, and each range's changes, before and after an overwrite and (MOR) a
    compaction; time travel by instant, by date-time and by the session option."""
    part = "PARTITIONED BY (day)" if partitioned else ""
    session.sql(f"CREATE TABLE t (id INT, v STRING, day STRING) USING hudi {part} "
                f"TBLPROPERTIES (primaryKey = 'id', 'hoodie.spark.sql.insert.into.operation'='upsert', type = '{table_type}', 'hoodie.compact.inline' = 'false')")
    h = History(session, warehouse, "t")
    c1 = h.write("INSERT INTO t VALUES (1, 'a', 'd1'), (2, 'b', 'd2'), (3, 'c', 'd1')", upsert([(1, "a"), (2, "b"), (3, "c")]))
    c2 = h.write("INSERT INTO t VALUES (2, 'b2', 'd2'), (4, 'd', 'd2')", upsert([(2, "b2"), (4, "d")]))
    c3 = h.write("DELETE FROM t WHERE id = 1", delete(1))
    if table_type == "mor":
        session.sql("CALL run_compaction(op => 'scheduleandexecute', table => 't')")
        assert any(i.action == "compaction" for i in HudiTable.load(str(h.path)).timeline.completed())
    c4 = h.write("UPDATE t SET v = 'c4' WHERE id = 3", upsert([(3, "c4")]))
    # An overwrite of everything: one replacecommit whose new file groups hold all rows.
    c5 = h.write("INSERT OVERWRITE t SELECT 4 AS id, 'd5' AS v, 'd2' AS day UNION ALL SELECT 6, 'f', 'd1'",
                 lambda state, commit: {4: ("d5", commit), 6: ("f", commit)})
    c6 = h.write("INSERT INTO t VALUES (6, 'f6', 'd1')", upsert([(6, "f6")]))
    commits = [c1, c2, c3, c4, c5, c6]

    for commit in commits:
        assert rows_as_of(session, "t", commit) == expected(h.as_of(commit)), commit
    # The other spellings of a time: a date-time (UTC, the timeline's zone), an instant to the second.
    same_time = parse_instant_time(c2).strftime("%Y-%m-%d %H:%M:%S.") + c2[14:]
    assert rows_as_of(session, "t", same_time) == expected(h.as_of(c2))
    assert rows_as_of(session, "t", c3[:14]) == expected(h.as_of(c3[:14] + "999"))
    session.sql(f"SET hoodie.datasource.read.as.of.instant={c2}")
    assert hudiql_rows(session, "SELECT id, v, _hoodie_commit_time FROM t") == expected(h.as_of(c2))
    session.sql("SET hoodie.datasource.read.as.of.instant=")
    assert hudiql_rows(session, "SELECT id, v, _hoodie_commit_time FROM t") == expected(h.as_of(c6))

    def changes(begin, end=None):
        bounds = f"'{begin}'" + (f", '{end}'" if end else "")
        return hudiql_rows(session, f"SELECT id, v, _hoodie_commit_time FROM hudi_table_changes('t', 'latest_state', {bounds})")

    assert changes("earliest") == expected(h.as_of(c6))
    for begin, end in [(c1, c2), (c1, c4), (c2, c3), (c3, c4), (c4, c5), (c2, None), (c5, None)]:
        assert changes(begin, end) == h.changes(begin, end or c6), (begin, end)
    # The session's spelling; deletes on request, each as it was at begin.
    session.sql("SET hoodie.datasource.query.type=incremental")
    session.sql(f"SET hoodie.datasource.read.begin.instanttime={c2}")
    session.sql(f"SET hoodie.datasource.read.end.instanttime={c4}")
    assert hudiql_rows(session, "SELECT id, v, _hoodie_commit_time FROM t") == h.changes(c2, c4)
    session.sql("SET hoodie.datasource.read.include.deletes=true")
    got = hudiql_rows(session, "SELECT id, v, _hoodie_commit_time, _hoodie_is_deleted FROM t")
    gone = [(k, h.as_of(c2)[k][0], c4, True) for k in h.deleted(c2, c4)]
    assert got == sorted([(k, v, c, False) for k, v, c in h.changes(c2, c4)] + gone) and gone
    session.sql(f"SET hoodie.datasource.read.begin.instanttime={c4}")
    session.sql(f"SET hoodie.datasource.read.end.instanttime={c5}")
    got = hudiql_rows(session, "SELECT id, _hoodie_is_deleted FROM t")  # the overwrite deleted 2 and 3
    assert got == sorted([(k, False) for k, _, _ in h.changes(c4, c5)] + [(k, True) for k in h.deleted(c4, c5)])
    assert h.deleted(c4, c5) == [2, 3]
    session.sql("SET hoodie.datasource.query.type=snapshot")


@pytest.mark.parametrize("ordering", ["ts", None])
def test_incremental_reads_of_merge_on_read_follow_the_merge_rule(session, warehouse, ordering):
    """Under event time a later commit's record with a lower ordering value loses to the stored
    one, so the key did not change; under commit time it wins. The changes after each commit are
    the snapshot's rows written after it (the base file is read for the merge only when one of
    its rows could win: a log record ordered below it, or a delete)."""
    precombine = f", preCombineField = '{ordering}'" if ordering else ""
    session.sql(f"CREATE TABLE e (id INT, v STRING, ts INT) USING hudi TBLPROPERTIES (primaryKey = 'id', 'hoodie.spark.sql.insert.into.operation'='upsert', type = 'mor', "
                f"'hoodie.compact.inline' = 'false'{precombine})")
    writes = ["INSERT INTO e VALUES (1, 'a', 5), (2, 'b', 5), (3, 'c', 5), (4, 'd', 5)",
              "INSERT INTO e VALUES (1, 'a2', 3), (2, 'b2', 7)",  # 1: lower ordering value than stored
              "INSERT INTO e VALUES (3, 'c3', 9)",                 # above everything stored
              "DELETE FROM e WHERE id = 4",
              "INSERT INTO e VALUES (2, 'b5', 6), (3, 'c5', 10)"]  # 2: below its log record, above the base
    commits = []
    for sql in writes:
        session.sql(sql)
        commits.append(HudiTable.load(str(warehouse / "e")).timeline.completed()[-1].timestamp)
    assert len([f for f in (warehouse / "e").iterdir() if ".log." in f.name]) == 4
    latest = hudiql_rows(session, "SELECT id, v, _hoodie_commit_time FROM e")
    if ordering:
        assert [(k, v) for k, v, _ in latest] == [(1, "a"), (2, "b2"), (3, "c5")]
    else:
        assert [(k, v) for k, v, _ in latest] == [(1, "a2"), (2, "b5"), (3, "c5")]
    for begin in commits[:-1]:
        got = hudiql_rows(session, f"SELECT id, v, _hoodie_commit_time FROM hudi_table_changes('e', 'latest_state', '{begin}')")
        assert got == [r for r in latest if r[2] > begin], begin


@pytest.mark.parametrize("table_type", ["cow", "mor"])
def test_time_travel_and_incremental_reads_respect_cleaning_and_archiving(session, warehouse, capsys, table_type):
    """The cleaner keeps 2 commits and the archiver 3 to 4 instants (merge-on-read: with an inline
    compaction after 3 delta commits): older instants are refused, naming the earliest readable
    one; the full-scan fallback answers with a line saying so."""
    session.sql(f"CREATE TABLE c (id INT, v STRING) USING hudi TBLPROPERTIES (primaryKey = 'id', 'hoodie.spark.sql.insert.into.operation'='upsert', type = '{table_type}', "
                "'hoodie.compact.inline.max.delta.commits' = '3', "
                "'hoodie.cleaner.commits.retained' = '2', 'hoodie.keep.min.commits' = '3', 'hoodie.keep.max.commits' = '4')")
    h = History(session, warehouse, "c")
    commits = [h.write(f"INSERT INTO c VALUES ({i % 3}, 'v{i}')", upsert([(i % 3, f"v{i}")])) for i in range(8)]
    table = HudiTable.load(str(h.path))
    assert (h.path / ".hoodie" / "archived").exists() and any((h.path / ".hoodie" / "archived").iterdir())
    first_active = table.timeline.completed()[0].timestamp
    assert first_active > commits[0]
    cleans = table.timeline.completed(("clean",))
    earliest = decode_metadata(table.timeline.read(cleans[-1])).earliest_commit_to_retain
    assert commits[2] < earliest <= commits[-2]
    cleaned = max(c for c in commits if c < earliest)  # the commit before what the cleaner kept

    with pytest.raises(SqlError) as info:
        session.sql(f"SELECT * FROM c TIMESTAMP AS OF '{commits[2]}'")
    assert str(info.value) == (f"table c as of {commits[2]} ('{commits[2]}'): the cleaner removed the files of that "
                               f"time; the earliest instant it can read is {earliest} (hoodie.cleaner.commits.retained "
                               "keeps more)")
    assert rows_as_of(session, "c", earliest) == expected(h.as_of(earliest))

    def changes(begin, end=None):
        bounds = f"'{begin}'" + (f", '{end}'" if end else "")
        return hudiql_rows(session, f"SELECT id, v, _hoodie_commit_time FROM hudi_table_changes('c', 'latest_state', {bounds})")

    begin = max(cleaned, first_active)  # older than what the cleaner kept, not archived: exact
    assert changes(begin) == h.changes(begin, commits[-1])
    assert changes("earliest") == expected(h.as_of(commits[-1]))
    with pytest.raises(SqlError) as info:
        changes(commits[0])
    assert str(info.value) == (
        f"incremental read of table c after {commits[0]} up to {commits[-1]}: the commits after {commits[0]} reach "
        f"instants archived out of the active timeline (its first commit is {first_active}); begin later, or SET "
        "hoodie.datasource.read.incr.fallback.fulltablescan.enable=true to compute it from a full scan")
    with pytest.raises(SqlError, match="the cleaner removed the files of its end"):
        changes("earliest", cleaned)
    capsys.readouterr()
    session.sql("SET hoodie.datasource.read.incr.fallback.fulltablescan.enable=true")
    assert changes(commits[0]) == h.changes(commits[0], commits[-1])
    assert "computed from a full scan of the latest snapshot" in capsys.readouterr().err


def test_bad_time_travel_and_incremental_input_is_refused(session, warehouse):
    session.sql("CREATE TABLE b (id INT, v STRING) USING hudi TBLPROPERTIES (primaryKey = 'id', 'hoodie.spark.sql.insert.into.operation'='upsert')")
    with pytest.raises(SqlError, match="has no commit yet"):
        session.sql("SELECT * FROM b TIMESTAMP AS OF '2024-01-01'")
    session.sql("INSERT INTO b VALUES (1, 'a')")
    first = HudiTable.load(str(warehouse / "b")).timeline.completed()[0].timestamp
    session.sql("INSERT INTO b VALUES (1, 'b')")
    refused = {
        "SELECT * FROM b VERSION AS OF 1":
            "'b VERSION AS OF 1': a Hudi table has no version numbers; read it as of an instant: b TIMESTAMP AS OF "
            "'<instant>' (CALL show_commits(table => 'b') lists them)",
        "SELECT * FROM b TIMESTAMP AS OF 'yesterday'":
            "table b: TIMESTAMP AS OF 'yesterday' is not an instant; write 'yyyyMMddHHmmss[SSS]', "
            "'yyyy-MM-dd HH:mm:ss[.SSS]' or 'yyyy-MM-dd'",
        "SELECT * FROM b TIMESTAMP AS OF '2001-01-01'":
            f"table b has no commit at or before 20010101000000000 ('2001-01-01'); its first commit is {first}",
        f"SELECT * FROM hudi_table_changes('b', 'latest_state', '{first}', '20010101000000000')":
            f"table b: the begin instant {first} is after the end instant 20010101000000000; an incremental read "
            "covers the commits after begin, up to end",
        "SELECT * FROM hudi_table_changes('b', 'cdc', 'earliest')":
            "hudi_table_changes: query type 'cdc' is not supported; use 'latest_state' (hudiql writes no change data "
            "capture logs, which 'cdc' reads)",
        "SELECT * FROM hudi_table_changes('b', 'latest_state')":
            "hudi_table_changes takes ('<table or path>', 'latest_state', 'earliest' or '<begin instant>'[, "
            "'<end instant>']), each a quoted string",
        "SELECT * FROM hudi_table_changes('nope', 'latest_state', 'earliest')":
            "hudi_table_changes: table default.nope does not exist; see SHOW TABLES",
    }
    for sql, message in refused.items():
        with pytest.raises(HudiqlError) as info:
            session.sql(sql)
        assert str(info.value).endswith(message), sql
    session.sql("SET hoodie.datasource.query.type=incremental")
    with pytest.raises(SqlError, match="SET hoodie.datasource.read.begin.instanttime=<instant>"):
        session.sql("SELECT * FROM b")
    session.sql("SET hoodie.datasource.read.begin.instanttime=earliest")
    # A path names the table too.
    assert hudiql_rows(session, f"SELECT id, v FROM hudi_table_changes('{warehouse / 'b'}', 'latest_state', '{first}')") \
        == [(1, "b")]
    assert hudiql_rows(session, "SELECT id, v FROM b") == [(1, "b")]
