"""MERGE INTO / UPDATE / DELETE: the semantics, table-driven, plus each validation error.

One module-scoped warehouse serves every case: each case owns its own record keys in a shared
table, so one CREATE and one INSERT per table set up all of them. A case runs one statement and
checks, for its keys only: the rows hudiql and the official Hudi reader return (with the stored
partition path), the counts row, that exactly one commit was made (at most one when nothing
changed) and that the commit's extraMetadata records the counts.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import official_rows

import hudiql
from hudiql.errors import ColumnError, DataError, HudiqlError, SqlError

COUNT_NAMES = ("num_affected_rows", "num_updated_rows", "num_deleted_rows", "num_inserted_rows", "num_skipped_older_rows")

TABLES = {
    # event-time (preCombineField), partitioned
    "ev": (
        "CREATE TABLE ev (id INT, name STRING, ts BIGINT, dt STRING) USING hudi PARTITIONED BY (dt) "
        "TBLPROPERTIES (primaryKey='id', preCombineField='ts')",
        ["id", "name", "ts", "dt"],
    ),
    # commit-time: no ordering field
    "ct": ("CREATE TABLE ct (id INT, name STRING, ts BIGINT) USING hudi TBLPROPERTIES (primaryKey='id')", ["id", "name", "ts"]),
    "del": (
        "CREATE TABLE del (id INT, name STRING, ts INT, _hoodie_is_deleted BOOLEAN) USING hudi "
        "TBLPROPERTIES (primaryKey='id', preCombineField='ts')",
        ["id", "name", "ts", "_hoodie_is_deleted"],
    ),
    "pr": (
        "CREATE TABLE pr (id INT, name STRING, ts BIGINT, dt STRING) USING hudi PARTITIONED BY (dt) "
        "TBLPROPERTIES (primaryKey='id', preCombineField='ts')",
        ["id", "name", "ts", "dt"],
    ),
    "src": (
        "CREATE TABLE src (id INT, name STRING, ts BIGINT, dt STRING) USING hudi PARTITIONED BY (dt) "
        "TBLPROPERTIES (primaryKey='id', preCombineField='ts')",
        ["id", "name", "ts", "dt"],
    ),
    "ck": ("CREATE TABLE ck (a INT, b STRING, v INT) USING hudi TBLPROPERTIES (primaryKey='a,b')", ["a", "b", "v"]),
    "logs": ("CREATE TABLE logs (msg STRING, n INT) USING hudi", ["msg", "n"]),
}
PARTITION_COLUMN = {"ev": "dt", "pr": "dt", "src": "dt"}

# rows outside the cases: for the pruning test, the validation tests and the key test
EXTRA_ROWS = {
    "pr": [(1, "a", 1, "d1"), (2, "b", 1, "d1"), (3, "c", 1, "d2"), (4, "d", 1, "d2")],
    "ct": [(90, "v", 5)],
    "ev": [(25, "x", 5, "d1")],
    "src": [(26, "from-src", 6, "d2"), (27, "new-from-src", 1, "d1")],  # a MERGE source table
}


class CountsMismatch(AssertionError):
    """The counts row (not the table rows) differs from the expected counts."""


@dataclass(frozen=True)
class Case:
    name: str
    table: str
    initial: list[tuple]
    statement: str
    expected: list[tuple]  # the rows of this case's keys afterwards
    counts: tuple[int, int, int, int, int]
    watch: tuple = ()  # further keys that must not exist afterwards
    writes: dict | None = None  # partition -> {write stat: expected sum} in the new commit; keys are exact

    @property
    def keys(self) -> set:
        return {r[0] for r in self.initial} | {r[0] for r in self.expected} | set(self.watch)


def values(rows: list[tuple], columns: str) -> str:
    return f"(SELECT * FROM VALUES {', '.join(row_sql(r) for r in rows)} AS v({columns}))"


def row_sql(row: tuple) -> str:
    return "(" + ", ".join(literal(v) for v in row) + ")"


def literal(v) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    return "'" + str(v).replace("'", "''") + "'"


CASES = [
    Case(
        "event_time_older_skipped_equal_and_newer_applied", "ev",
        initial=[(1, "a", 5, "d1"), (2, "b", 5, "d1"), (3, "c", 5, "d2")],
        statement="MERGE INTO ev t USING " + values([(1, "a-older", 4, "d1"), (2, "b-equal", 5, "d1"), (3, "c-newer", 6, "d2")],
                                                   "id, name, ts, dt") + " s ON t.id = s.id WHEN MATCHED THEN UPDATE SET *",
        expected=[(1, "a", 5, "d1"), (2, "b-equal", 5, "d1"), (3, "c-newer", 6, "d2")],
        counts=(2, 2, 0, 0, 1),
    ),
    Case(
        "matched_delete_ignores_ordering_update_does_not", "ev",
        initial=[(4, "d", 5, "d1"), (5, "e", 5, "d2")],
        statement="MERGE INTO ev t USING " + values([(4, "x", 1, "d"), (5, "y", 1, "u")], "id, name, ts, op")
        + " s ON t.id = s.id WHEN MATCHED AND s.op = 'd' THEN DELETE WHEN MATCHED THEN UPDATE SET name = s.name, ts = s.ts",
        expected=[(5, "e", 5, "d2")],
        counts=(1, 0, 1, 0, 1),
    ),
    Case(
        # 6: clause 2 (clause 3 would also hold); 7: the unconditional clause 4; 8: clause 1 before clause 2;
        # 40 / 41: the first / second NOT MATCHED clause; unassigned INSERT columns are NULL,
        # unassigned UPDATE columns (7's ts) keep their stored values.
        "clauses_in_written_order_first_true_wins", "ev",
        initial=[(6, "f", 5, "d1"), (7, "g", 5, "d1"), (8, "h", 5, "d2")],
        statement="MERGE INTO ev AS t USING " + values([(6, 20, "x"), (7, 0, "y"), (8, 15, "z"), (40, 200, "p"), (41, 1, "q")],
                                                      "id, n, tag") + " AS s ON s.id = t.id "
        "WHEN MATCHED AND s.n > 10 AND t.dt = 'd2' THEN DELETE "
        "WHEN MATCHED AND s.n > 10 THEN UPDATE SET name = concat(t.name, ':', upper(s.tag)), ts = t.ts + CAST(s.n AS BIGINT) "
        "WHEN MATCHED AND s.n > 5 THEN DELETE "
        "WHEN MATCHED THEN UPDATE SET name = CASE WHEN s.n = 0 THEN 'zero' ELSE 'other' END "
        "WHEN NOT MATCHED AND s.n > 100 THEN INSERT (id, name, ts, dt) VALUES (s.id, 'big', CAST(s.n AS BIGINT) * 2, 'd1') "
        "WHEN NOT MATCHED THEN INSERT (dt, id) VALUES ('d2', s.id)",
        expected=[(6, "f:X", 25, "d1"), (7, "zero", 5, "d1"), (40, "big", 400, "d1"), (41, None, None, "d2")],
        counts=(5, 2, 1, 2, 0),
    ),
    Case(
        # 9: the greatest ordering value wins, ties to the later source row; 42: a new key, same rule;
        # 43: a null ordering value ranks below every value.
        "duplicate_source_keys_precombined_by_ordering_field", "ev",
        initial=[(9, "i", 5, "d1")],
        statement="MERGE INTO ev t USING " + values(
            [(9, "x", 7, "d1"), (9, "y", 9, "d1"), (9, "z", 9, "d1"), (9, "w", 8, "d1"),
             (42, "p", 3, "d2"), (42, "q", 2, "d2"), (43, "n1", None, "d1"), (43, "n2", 1, "d1"), (43, "n3", None, "d1")],
            "id, name, ts, dt") + " s ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
        expected=[(9, "z", 9, "d1"), (42, "p", 3, "d2"), (43, "n2", 1, "d1")],
        counts=(3, 1, 0, 2, 0),
    ),
    Case(
        # Several source rows for one key are precombined by the ordering field first: the winning source
        # row then takes the first clause whose condition holds. 10: the row with ts 7 wins, so DELETE
        # (not the later row's UPDATE); 11: the row with ts 9 wins, so name 'x' (ts is not assigned, stays 5).
        "duplicate_source_keys_winning_source_row_picks_the_clause", "ev",
        initial=[(10, "j", 5, "d1"), (11, "k", 5, "d1")],
        statement="MERGE INTO ev t USING " + values([(10, "d1", 7, "d"), (10, "u1", 6, "u"), (11, "x", 9, "u"), (11, "y", 2, "u")],
                                                   "id, name, ts, op")
        + " s ON t.id = s.id WHEN MATCHED AND s.op = 'd' THEN DELETE WHEN MATCHED THEN UPDATE SET name = s.name",
        expected=[(11, "x", 5, "d1")],
        counts=(2, 1, 1, 0, 0),
    ),
    Case(
        "partition_move_deletes_old_row_inserts_new_one_in_one_commit", "ev",
        initial=[(12, "l", 5, "d1")],
        statement="MERGE INTO ev t USING (SELECT 12 AS id, 'moved' AS name, 6 AS ts, 'd3' AS dt) s ON t.id = s.id "
                  "WHEN MATCHED THEN UPDATE SET *",
        expected=[(12, "moved", 6, "d3")],
        counts=(1, 1, 0, 0, 0),
        writes={"dt=d1": {"numDeletes": 1, "numInserts": 0}, "dt=d3": {"numInserts": 1, "numDeletes": 0}},
    ),
    Case(
        # 13: stored null -> applies; 14: new null vs stored 5 -> skipped; 15: null vs null -> applies
        "null_ordering_value_ranks_below_every_value", "ev",
        initial=[(13, "m", None, "d1"), (14, "n", 5, "d1"), (15, "o", None, "d2")],
        statement="MERGE INTO ev t USING " + values([(13, "m2", 1, "d1"), (14, "n2", None, "d1"), (15, "o2", None, "d2")],
                                                   "id, name, ts, dt") + " s ON t.id = s.id WHEN MATCHED THEN UPDATE SET *",
        expected=[(13, "m2", 1, "d1"), (14, "n", 5, "d1"), (15, "o2", None, "d2")],
        counts=(2, 2, 0, 0, 1),
    ),
    Case(
        "enforce_false_lets_an_older_update_win", "ev",
        initial=[(16, "p", 5, "d1")],
        statement="SET hoodie.merge.ordering.enforce=false; MERGE INTO ev t USING (SELECT 16 AS id, 'forced' AS name, "
                  "1 AS ts, 'd1' AS dt) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET *",
        expected=[(16, "forced", 1, "d1")],
        counts=(1, 1, 0, 0, 0),
    ),
    Case(
        # 18: ts unchanged (equal) applies, dt unassigned; 19: ts lowered -> skipped; 20: not selected
        "update_statement_keeps_unassigned_columns_and_skips_older", "ev",
        initial=[(18, "r", 5, "d1"), (19, "s", 5, "d2"), (20, "t", 5, "d2")],
        statement="UPDATE ev SET name = upper(name), ts = CASE WHEN id = 19 THEN ts - 1 ELSE ts END WHERE id IN (18, 19)",
        expected=[(18, "R", 5, "d1"), (19, "s", 5, "d2"), (20, "t", 5, "d2")],
        counts=(1, 1, 0, 0, 1),
    ),
    Case(
        "delete_statement", "ev",
        initial=[(21, "u", 5, "d1"), (22, "gone", 5, "d2"), (23, "v", 5, "d2")],
        statement="DELETE FROM ev WHERE id = 21 OR (name = 'gone' AND id BETWEEN 21 AND 23)",
        expected=[(23, "v", 5, "d2")],
        counts=(2, 0, 2, 0, 0),
    ),
    Case(
        "statement_that_changes_nothing", "ev",
        initial=[(24, "w", 5, "d1")],
        statement="MERGE INTO ev t USING " + values([(24, "older", 1, "d1"), (999, "z", 1, "d1")], "id, name, ts, dt")
        + " s ON t.id = s.id WHEN MATCHED THEN UPDATE SET *",
        expected=[(24, "w", 5, "d1")],
        counts=(0, 0, 0, 0, 1),
        watch=(999,),
    ),
    Case(
        # a table as the source, neither side aliased; 26 also moves from d1 to d2
        "source_is_a_table", "ev",
        initial=[(26, "y", 5, "d1")],
        statement="MERGE INTO ev USING src ON ev.id = src.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
        expected=[(26, "from-src", 6, "d2"), (27, "new-from-src", 1, "d1")],
        counts=(2, 1, 0, 1, 0),
    ),
    Case(
        "commit_time_table_matched_clause_always_applies", "ct",
        initial=[(1, "a", 5), (2, "b", 5)],
        statement="MERGE INTO ct t USING " + values([(1, "older", 1), (2, "null-ts", None), (3, "new", 0)], "id, name, ts")
        + " s ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
        expected=[(1, "older", 1), (2, "null-ts", None), (3, "new", 0)],
        counts=(3, 2, 0, 1, 0),
    ),
    Case(
        "commit_time_table_update_statement_lowering_ts_applies", "ct",
        initial=[(4, "c", 5)],
        statement="UPDATE ct SET ts = ts - 4, name = concat(name, '!') WHERE id = 4",
        expected=[(4, "c!", 1)],
        counts=(1, 1, 0, 0, 0),
    ),
    Case(
        # a WHERE is a Spark SQL condition: a subquery may read another hudiql table (src holds 26 in d2)
        "where_subquery_reads_another_table", "ct",
        initial=[(5, "e", 5), (6, "f", 5)],
        statement="DELETE FROM ct WHERE id IN (SELECT id - 21 FROM src WHERE dt = 'd2')",
        expected=[(6, "f", 5)],
        counts=(1, 0, 1, 0, 0),
    ),
    Case(
        # 1: deleted by _hoodie_is_deleted; 2: updated; 3: an older delete is skipped like any older update;
        # 4: an INSERT of a deleted row inserts nothing; 5: inserted.
        "is_deleted_rows_delete_the_key", "del",
        initial=[(1, "a", 5, False), (2, "b", 5, False), (3, "c", 5, False)],
        statement="MERGE INTO del t USING " + values(
            [(1, "x", 6, True), (2, "y", 6, False), (3, "old-delete", 1, True), (4, "z", 1, True), (5, "w", 1, False)],
            "id, name, ts, _hoodie_is_deleted") + " s ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
        expected=[(2, "y", 6, False), (3, "c", 5, False), (5, "w", 1, False)],
        counts=(3, 1, 1, 1, 1),
    ),
]


def case_params():
    for case in CASES:
        yield pytest.param(case, id=case.name)


# ---- helpers ------------------------------------------------------------------------------------

def tree(base: Path) -> dict[str, tuple[int, int]]:
    """Every file of a table (data and timeline) with its size and mtime."""
    return {str(p.relative_to(base)): (p.stat().st_size, p.stat().st_mtime_ns) for p in base.rglob("*") if p.is_file()}


def commit_files(base: Path) -> list[Path]:
    return sorted((base / ".hoodie").glob("*.commit"))


def pending_instants(base: Path) -> set[str]:
    """Writes begun (an inflight file) that did not complete (no commit file); cleans are not writes."""
    hoodie = base / ".hoodie"
    started = {p.name.split(".")[0] for p in hoodie.glob("*.inflight") if not p.name.endswith(".clean.inflight")}
    return started - {p.name.split(".")[0] for p in commit_files(base)}


def write_sums(commit: dict) -> dict[str, dict[str, int]]:
    out = {}
    for partition, stats in commit["partitionToWriteStats"].items():
        sums = out.setdefault(partition, {})
        for s in stats:
            for k in ("numInserts", "numDeletes", "numUpdateWrites"):
                sums[k] = sums.get(k, 0) + s[k]
    return out


def expected_path(table: str, row: tuple) -> str:
    column = PARTITION_COLUMN.get(table)
    return f"{column}={row[TABLES[table][1].index(column)]}" if column else ""


def run_counts(session, sql: str) -> tuple:
    df = session.sql(sql)
    assert tuple(df.columns) == COUNT_NAMES
    rows = df.collect()
    assert len(rows) == 1
    return tuple(rows[0])


def check_unchanged_by(session, base: Path, sql: str, error: type[HudiqlError], *needles: str) -> str:
    before = tree(base)
    with pytest.raises(HudiqlError) as info:
        session.sql(sql)
    assert isinstance(info.value, error), f"{type(info.value).__name__}: {info.value}"
    message = str(info.value)
    for needle in needles:
        assert re.search(needle, message, re.I), f"{needle!r} not in: {message}"
    assert "__hudiql" not in message, f"the message names internal columns: {message}"
    assert tree(base) == before, "a failed statement changed the table's files or timeline"
    return message


# ---- fixtures -----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def wh(spark, tmp_path_factory):
    """A warehouse holding every table, loaded with the initial rows of every case."""
    warehouse = tmp_path_factory.mktemp("merge") / "warehouse"
    session = hudiql.connect(warehouse=str(warehouse), spark=spark)
    initial: dict[str, list[tuple]] = {t: list(rows) for t, rows in EXTRA_ROWS.items()}
    for case in CASES:
        initial.setdefault(case.table, []).extend(case.initial)
    for table in initial:  # the cases of one table own disjoint keys
        owners = [c.keys for c in CASES if c.table == table] + [{r[0] for r in EXTRA_ROWS.get(table, [])}]
        assert sum(len(k) for k in owners) == len(set().union(*owners)), f"cases of {table} share keys"
    for table, (ddl, _) in TABLES.items():
        session.sql(ddl)
    for table, rows in initial.items():
        session.sql(f"INSERT INTO {table} VALUES {', '.join(row_sql(r) for r in rows)}")
    return session, warehouse


# ---- the semantics ------------------------------------------------------------------------------

@pytest.mark.parametrize("case", list(case_params()))
def test_case(wh, case: Case):
    session, warehouse = wh
    base = warehouse / case.table
    columns = TABLES[case.table][1]
    key = columns[0]
    commits_before = commit_files(base)
    try:
        got = run_counts(session, case.statement)
    finally:
        session.sql("SET hoodie.merge.ordering.enforce=true")

    keys = sorted(case.keys)
    expected = sorted(tuple(r) + (expected_path(case.table, r),) for r in case.expected)
    selected = ", ".join(columns + ["_hoodie_partition_path"])
    in_list = ", ".join(literal(k) for k in keys)
    rows = sorted(tuple(r) for r in session.sql(f"SELECT {selected} FROM {case.table} WHERE {key} IN ({in_list})").collect())
    assert rows == expected, "hudiql reads other rows than expected"
    official = [r for r in official_rows(base, columns + ["_hoodie_partition_path"]) if r[0] in case.keys]
    assert official == expected, "the official reader reads other rows than expected"

    new = [p for p in commit_files(base) if p not in commits_before]
    assert not pending_instants(base)
    if sum(case.counts[1:4]) > 0:
        assert len(new) == 1, f"expected one new commit, got {len(new)}"
    else:
        assert len(new) <= 1
    if new:
        commit = json.loads(new[0].read_text())
        recorded = tuple(int(commit["extraMetadata"][f"hudiql.{n}"]) for n in COUNT_NAMES)
        assert recorded == got, "the commit's extraMetadata does not record the returned counts"
        if case.writes is not None:
            sums = write_sums(commit)
            assert set(sums) == set(case.writes), f"partitions written: {sorted(sums)}"
            for partition, stats in case.writes.items():
                assert {k: sums[partition][k] for k in stats} == stats, partition
    if got != case.counts:
        raise CountsMismatch(f"counts {dict(zip(COUNT_NAMES, got))}, expected {dict(zip(COUNT_NAMES, case.counts))}")


def test_update_set_star_keeps_the_key_the_on_condition_matched(wh):
    """ON binds the key to s.k; UPDATE SET * must update the matched row (or be refused), never insert key 77."""
    session, warehouse = wh
    base = warehouse / "ev"
    sql = ("MERGE INTO ev t USING (SELECT 25 AS k, 77 AS id, 'via-k' AS name, 6 AS ts, 'd1' AS dt) s ON t.id = s.k "
           "WHEN MATCHED THEN UPDATE SET *")
    before = tree(base)
    try:
        got = run_counts(session, sql)
    except HudiqlError:
        assert tree(base) == before
        got = None
    rows = [r for r in official_rows(base, ["id", "name", "ts", "dt"]) if r[0] in (25, 77)]
    if got is None:
        assert rows == [(25, "x", 5, "d1")]
    else:
        assert rows == [(25, "via-k", 6, "d1")]
        assert got == (1, 1, 0, 0, 0)


def test_update_and_delete_rewrite_only_the_partition_their_where_fixes(wh):
    """The files of the other partition are made unreadable (same size, so the file-system view,
    which checks sizes from its listing, still takes them for whole): pruning must not even open them."""
    session, warehouse = wh
    base = warehouse / "pr"
    other = list((base / "dt=d2").glob("*.parquet"))
    assert other
    saved = {p: p.read_bytes() for p in other}
    commits_before = commit_files(base)
    try:
        for p in other:
            p.write_bytes(b"\0" * len(saved[p]))
        assert run_counts(session, "UPDATE pr SET name = upper(name) WHERE dt = 'd1' AND id = 1") == (1, 1, 0, 0, 0)
        assert run_counts(session, "DELETE FROM pr WHERE id = 2 AND dt = 'd1'") == (1, 0, 1, 0, 0)
    finally:
        for p, data in saved.items():
            p.write_bytes(data)
    new = [json.loads(p.read_text()) for p in commit_files(base) if p not in commits_before]
    assert len(new) == 2
    assert [sorted(c["partitionToWriteStats"]) for c in new] == [["dt=d1"], ["dt=d1"]]
    expected = [(1, "A", 1, "d1"), (3, "c", 1, "d2"), (4, "d", 1, "d2")]
    assert official_rows(base, ["id", "name", "ts", "dt"]) == expected
    assert sorted(tuple(r) for r in session.sql("SELECT id, name, ts, dt FROM pr").collect()) == expected


def test_merge_reads_only_the_partitions_its_source_rows_reach(wh):
    """ON equates the partition column with the source's: the target is pruned to the source's
    partition values (no literal in ON), so the other partition's (unreadable) files are never opened."""
    session, warehouse = wh
    base = warehouse / "pr"
    other = list((base / "dt=d2").glob("*.parquet"))
    saved = {p: p.read_bytes() for p in other}
    try:
        for p in other:
            p.write_bytes(b"\0" * len(saved[p]))
        counts = run_counts(session, "MERGE INTO pr t USING (SELECT 1 AS id, 'm' AS name, 9 AS ts, 'd1' AS dt "
                                     "UNION ALL SELECT 7, 'n', 1, 'd1') s ON t.id = s.id AND t.dt = s.dt "
                                     "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
    finally:
        for p, data in saved.items():
            p.write_bytes(data)
    assert counts == (2, 1, 0, 1, 0)
    # (after the UPDATE and DELETE of the test before: 1 became 'A', 2 is gone)
    expected = [(1, "m", 9, "d1"), (3, "c", 1, "d2"), (4, "d", 1, "d2"), (7, "n", 1, "d1")]
    assert official_rows(base, ["id", "name", "ts", "dt"]) == expected
    assert sorted(tuple(r) for r in session.sql("SELECT id, name, ts, dt FROM pr").collect()) == expected


# ---- validation ---------------------------------------------------------------------------------

SRC = "(SELECT 1 AS id, 'x' AS name, 1 AS ts, 'd1' AS dt)"
#: A source without a column named as the key: ON alone must match the key (Hudi falls back to such a column).
UNKEYED = "(SELECT 1 AS sid, 'x' AS name, 1 AS ts, 'd1' AS dt)"
VALIDATION = [
    pytest.param("ev", f"MERGE INTO ev t USING {UNKEYED} s ON t.name = s.name WHEN MATCHED THEN DELETE "
                 "WHEN NOT MATCHED THEN INSERT (id, name, ts, dt) VALUES (s.sid, s.name, s.ts, s.dt)", SqlError,
                 [r"t\.id"], id="on_without_record_key"),
    pytest.param("ev", f"MERGE INTO ev t USING {UNKEYED} s ON t.id = t.id WHEN MATCHED THEN DELETE",
                 SqlError, [r"t\.id", "source"], id="on_key_equals_target_column"),
    pytest.param("ev", f"MERGE INTO ev t USING {UNKEYED} s ON t.id = s.sid OR t.name = s.name WHEN MATCHED THEN DELETE",
                 SqlError, [r"t\.id"], id="on_key_under_or"),
    pytest.param("ev", f"MERGE INTO ev t USING {UNKEYED} s ON t.id > s.sid WHEN MATCHED THEN DELETE",
                 SqlError, [r"t\.id"], id="on_key_not_equated"),
    pytest.param("ck", "MERGE INTO ck t USING (SELECT 1 AS a, 'x' AS bb, 1 AS v) s ON t.a = s.a WHEN MATCHED THEN DELETE",
                 SqlError, [r"t\.b"], id="on_misses_one_of_a_composite_key"),
    pytest.param("ev", f"MERGE INTO ev t USING {SRC} s ON t.id = s.id WHEN MATCHED THEN UPDATE SET nope = 1",
                 ColumnError, ["nope"], id="unknown_column_in_update_set"),
    pytest.param("ev", f"MERGE INTO ev t USING {SRC} s ON t.id = s.id WHEN NOT MATCHED THEN INSERT (id, bogus) VALUES (s.id, 1)",
                 ColumnError, ["bogus"], id="unknown_column_in_insert_list"),
    pytest.param("ev", "UPDATE ev SET nope = 1 WHERE id = 1", ColumnError, ["nope"], id="unknown_column_in_update_statement"),
    pytest.param("ev", f"MERGE INTO ev t USING {SRC} s ON t.id = s.id WHEN MATCHED THEN UPDATE SET name = s.nope",
                 SqlError, ["nope"], id="unknown_source_column_in_expression"),
    pytest.param("ev", "MERGE INTO ev t USING (SELECT 1 AS id, 'x' AS name) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET *",
                 ColumnError, ["ts", "dt", r"SET \*"], id="update_set_star_source_lacks_columns"),
    pytest.param("ev", "MERGE INTO ev t USING (SELECT 1 AS id, 'x' AS name, 1 AS ts) s ON t.id = s.id "
                 "WHEN NOT MATCHED THEN INSERT *", ColumnError, [r"\bdt\b", r"INSERT \*"], id="insert_star_source_lacks_columns"),
    pytest.param("ev", f"MERGE INTO ev t USING {SRC} s ON t.id = s.id WHEN NOT MATCHED THEN INSERT (name, dt) VALUES (s.name, s.dt)",
                 ColumnError, [r"\bid\b"], id="insert_leaves_record_key_unassigned"),
    pytest.param("ev", f"MERGE INTO ev t USING {SRC} s ON t.id = s.id WHEN MATCHED THEN UPDATE SET id = s.id + 1",
                 ColumnError, [r"\bid\b"], id="merge_update_assigns_record_key"),
    pytest.param("ev", "UPDATE ev SET id = 100 WHERE id = 1", ColumnError, [r"\bid\b"], id="update_statement_assigns_record_key"),
    pytest.param("ev", "UPDATE ev SET ts = array(1, 2) WHERE id = 1", HudiqlError, [r"\bts\b", "array"],
                 id="update_statement_type_cannot_be_cast"),
    pytest.param("ev", f"MERGE INTO ev t USING {SRC} s ON t.id = s.id WHEN MATCHED THEN UPDATE SET ts = array(1) "
                 "WHEN NOT MATCHED THEN INSERT *", HudiqlError, [r"\bts\b", "array"], id="merge_type_cannot_be_cast"),
    pytest.param("ct", "UPDATE ct SET ts = 'abc' WHERE id = 90", DataError, ["abc"], id="value_cannot_be_cast"),
    pytest.param("ct", "MERGE INTO ct t USING (SELECT 90 AS id, 'x' AS name, 1 AS ts UNION ALL SELECT 90, 'y', 2) s "
                 "ON t.id = s.id WHEN MATCHED THEN UPDATE SET *", DataError, ["'90'", "preCombineField|ordering"],
                 id="duplicate_source_keys_without_ordering_field"),
    pytest.param("ct", "MERGE INTO ct t USING (SELECT 91 AS id, 'x' AS name, 1 AS ts UNION ALL SELECT 91, 'y', 2 UNION ALL "
                 "SELECT 92, 'z', 1) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
                 DataError, ["'91'", "preCombineField|ordering"], id="duplicate_new_source_keys_without_ordering_field"),
    pytest.param("ev", f"MERGE INTO ev s USING {SRC} s ON s.id = s.id WHEN MATCHED THEN DELETE", SqlError, ["alias"],
                 id="source_and_target_share_a_name"),
]


@pytest.mark.parametrize("table, sql, error, needles", VALIDATION)
def test_validation_error_changes_nothing(wh, table, sql, error, needles):
    session, warehouse = wh
    check_unchanged_by(session, warehouse / table, sql, error, *needles)


# ---- every table, read back by the official reader ----------------------------------------------

def test_official_reader_reads_what_hudiql_reads(wh):
    session, warehouse = wh
    for table, (_, columns) in TABLES.items():
        if not commit_files(warehouse / table):
            continue
        ours = sorted(tuple(r) for r in session.sql(f"SELECT {', '.join(columns)} FROM {table}").collect())
        theirs = official_rows(warehouse / table, columns)
        assert theirs == ours, table
        keys = [r[0] for r in theirs]
        assert len(keys) == len(set(keys)), f"{table} holds a record key twice"
