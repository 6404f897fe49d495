"""Tables whose oldest instants were archived: their files stay visible, to reads and writes.

Hudi's archiver moves old completed instants out of ``.hoodie/`` (into ``.hoodie/archived/``) once
a table has more than ``hoodie.keep.max.commits`` of them. Its readers then take every instant
older than the first completed write left on the timeline as committed. Here the tests archive by
moving the instant files themselves into ``.hoodie/archived/``: readers never open that folder, so
its content does not matter (Hudi writes an archive log file there instead).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from conftest import HUDI_TABLES, hudiql_rows, instants, logs, official_rows, unzip
from hudiql.formats import log_file as L

TRIPS = HUDI_TABLES / "quickstart_trips_table" / "mor" / "avro"
SELECT = "SELECT id, name, ts, dt FROM "
COLS = ["id", "name", "ts", "dt"]


def archive(table: Path, count: int) -> list[str]:
    """Move the oldest ``count`` instants (all their state files) out of the active timeline."""
    hoodie = table / ".hoodie"
    times = sorted({p.name.split(".", 1)[0] for p in hoodie.iterdir() if p.is_file() and p.name[0].isdigit()})
    (hoodie / "archived").mkdir(exist_ok=True)
    for instant in times[:count]:
        for p in hoodie.glob(f"{instant}.*"):
            shutil.move(p, hoodie / "archived" / p.name)
    return times[:count]


@pytest.mark.parametrize(
    ("name", "riders"),
    [
        # the first delta commit wrote the base files; the second an update of rider-D in a log
        ("v6_trips_8i1u", {"rider-A", "rider-C", "rider-D", "rider-E", "rider-F", "rider-G", "rider-I", "rider-J"}),
        # the second delta commit deleted riders A, C and D with a delete block
        ("v6_trips_8i3d", {"rider-E", "rider-F", "rider-G", "rider-I", "rider-J"}),
    ],
)
def test_hudi_table_with_its_first_delta_commit_archived(session, tmp_path, name, riders):
    table = unzip(TRIPS / f"{name}.zip", tmp_path)
    archive(table, 1)
    session.sql(f"CREATE TABLE t USING hudi LOCATION '{table}'")
    rows = hudiql_rows(session, "SELECT rider, fare FROM t")
    assert {r for r, _ in rows} == riders
    if "rider-D" in riders:
        assert ("rider-D", 25.0) in rows
    assert len(hudiql_rows(session, "SELECT rider FROM t_ro")) == 8
    columns = ["_hoodie_commit_time", "_hoodie_record_key", "uuid", "rider", "fare", "city"]
    ours = hudiql_rows(session, f"SELECT {', '.join(columns)} FROM t")
    assert ours == official_rows(table, columns)


def test_cow_table_writes_and_reads_file_groups_of_archived_commits(session, warehouse):
    session.sql("CREATE TABLE c (id INT, name STRING, ts BIGINT, dt STRING) USING hudi PARTITIONED BY (dt) "
                "TBLPROPERTIES (primaryKey='id', preCombineField='ts')")
    session.sql("INSERT INTO c VALUES (1,'a',1,'x'), (2,'b',1,'x')")
    session.sql("INSERT INTO c VALUES (3,'c',1,'y')")
    session.sql("INSERT INTO c VALUES (3,'c2',2,'y')")
    path = warehouse / "c"
    [first] = archive(path, 1)  # the only commit of partition x
    expected = [(1, "a", 1, "x"), (2, "b", 1, "x"), (3, "c2", 2, "y")]
    assert hudiql_rows(session, SELECT + "c") == expected
    # an upsert finds the archived commit's rows: it rewrites their file group, it adds no copies
    session.sql("INSERT INTO c VALUES (1,'a2',2,'x')")
    expected[0] = (1, "a2", 2, "x")
    assert hudiql_rows(session, SELECT + "c") == expected
    assert official_rows(path, COLS) == expected
    versions = sorted((path / "dt=x").glob("*.parquet"), key=lambda p: p.name.rsplit("_", 1)[1])
    assert len(versions) == 2 and versions[0].name.endswith(f"_{first}.parquet")
    assert len({p.name.split("_")[0] for p in versions}) == 1  # one file group, a new slice


@pytest.fixture
def archived_mor(session, warehouse) -> Path:
    """A merge-on-read table whose first two delta commits were archived: the one that wrote the
    base file, and the one that wrote the first log file. No delta commit left on the timeline
    lists that log file."""
    session.sql("CREATE TABLE m (id INT, name STRING, ts BIGINT, dt STRING) USING hudi "
                "TBLPROPERTIES (primaryKey='id', preCombineField='ts', type='mor', "
                "'hoodie.compact.inline'='false', 'hoodie.parquet.small.file.limit'='0')")
    session.sql("INSERT INTO m VALUES (1,'a',1,'x'), (2,'b',1,'x'), (3,'c',1,'x')")
    session.sql("INSERT INTO m VALUES (1,'a2',2,'x')")
    session.sql("DELETE FROM m WHERE id = 3")
    session.sql("INSERT INTO m VALUES (2,'b2',2,'x')")
    path = warehouse / "m"
    assert len(logs(path)) == 3
    archive(path, 2)
    assert len(instants(path, "deltacommit")) == 2
    return path


MOR_ROWS = [(1, "a2", 2, "x"), (2, "b2", 2, "x")]
MOR_BASE_ROWS = [(1, "a", 1, "x"), (2, "b", 1, "x"), (3, "c", 1, "x")]


def test_mor_table_reads_logs_of_archived_delta_commits(session, archived_mor):
    assert hudiql_rows(session, SELECT + "m") == MOR_ROWS
    assert hudiql_rows(session, SELECT + "m_ro") == MOR_BASE_ROWS
    assert official_rows(archived_mor, COLS) == MOR_ROWS
    assert official_rows(archived_mor, COLS, read_optimized=True) == MOR_BASE_ROWS


def test_mor_table_upserts_and_compacts_after_archiving(session, archived_mor):
    session.sql("INSERT INTO m VALUES (1,'a3',3,'x'), (4,'d',1,'x')")
    expected = [(1, "a3", 3, "x"), (2, "b2", 2, "x"), (4, "d", 1, "x")]
    assert hudiql_rows(session, SELECT + "m") == expected
    session.sql("CALL run_compaction(op => 'scheduleandexecute', table => 'm')")
    assert hudiql_rows(session, SELECT + "m") == expected
    assert hudiql_rows(session, SELECT + "m_ro") == expected
    assert official_rows(archived_mor, COLS) == expected


def _crashed_write(table: Path, whole_blocks: int, cut: int | None) -> tuple[Path, str]:
    """A delta commit that crashed while appending to a log file of the archived slice: its
    requested and inflight instant, the marker hudiql's writers leave first, and a new log file
    version with ``whole_blocks`` blocks of it, then a block cut short after ``cut`` bytes (a
    negative ``cut`` counts from its end; None: no cut block)."""
    latest = instants(table, "deltacommit")[-1]
    crashed = str(int(latest) + 1)
    hoodie = table / ".hoodie"
    (hoodie / f"{crashed}.deltacommit.requested").write_bytes(b"")
    (hoodie / f"{crashed}.deltacommit.inflight").write_bytes(b"")
    newest = logs(table)[-1]
    [block] = L.read_blocks(newest.read_bytes(), str(newest))
    stem, version_token = newest.name.rsplit(".log.", 1)
    partial = newest.with_name(f"{stem}.log.{int(version_token.split('_')[0]) + 1}_0-99-0")
    (hoodie / ".temp" / crashed).mkdir(parents=True)
    (hoodie / ".temp" / crashed / f"{partial.name}.marker.APPEND").write_bytes(b"")
    data = L.encode_block(L.LogBlock(block.block_type, {**block.header, L.INSTANT_TIME: crashed}, block.content))
    partial.write_bytes(data * whole_blocks + (data[:cut] if cut is not None else b""))
    return partial, crashed


@pytest.mark.parametrize(
    ("whole_blocks", "cut"), [(0, 40), (1, -10), (1, None)], ids=["cut-in-header", "whole+cut-in-content", "whole"]
)
def test_crashed_write_on_an_archived_slice_stays_invisible(session, archived_mor, whole_blocks, cut):
    partial, crashed = _crashed_write(archived_mor, whole_blocks, cut)
    assert hudiql_rows(session, SELECT + "m") == MOR_ROWS
    # the next write rolls the crashed one back first
    session.sql("INSERT INTO m VALUES (4,'d',1,'x')")
    assert not partial.exists() and crashed not in instants(archived_mor, "deltacommit.inflight")
    assert hudiql_rows(session, SELECT + "m") == [*MOR_ROWS, (4, "d", 1, "x")]


def test_damaged_log_of_an_archived_delta_commit_is_an_error_naming_it(session, archived_mor):
    oldest = logs(archived_mor)[0]  # written by an archived delta commit
    oldest.write_bytes(oldest.read_bytes()[:-20])
    with pytest.raises(Exception, match=re.escape(oldest.name)) as failure:
        hudiql_rows(session, SELECT + "m")
    assert "truncated" in str(failure.value)
