"""hudiql reads the merge-on-read tables real Apache Hudi wrote (table versions 6 and 8).

Each table of ``tests/data/hudi-tables/sample_table/mor/parquet/`` and
``tests/data/hudi-tables/quickstart_trips_table/mor/avro/`` is unzipped, adopted with
``CREATE TABLE ... LOCATION`` and queried as a snapshot (base files merged with their logs) and
read-optimized (base files only, through ``t_ro`` and through the query type setting). The
expected rows are those of the tables' README; the official reader must agree.

Two variants of the v8 table, edited on disk, check the v8 slicing rules the real table does not
exercise: a delta commit that completes after a compaction was planned, and log files whose
write tokens sort against their commit order.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from conftest import HUDI_TABLES, hudiql_rows, official_rows, unzip
from hudiql.record.schema import META_COLUMNS

SAMPLE = HUDI_TABLES / "sample_table" / "mor" / "parquet"
TRIPS = HUDI_TABLES / "quickstart_trips_table" / "mor" / "avro"

FOUR_ROWS = [(1, "Alice", False), (2, "Bob", False), (3, "Carol", True), (4, "Diana", True)]
#: The base files still hold Alice's first version; her update is in a log file.
FOUR_ROWS_BASE = [(1, "Alice", True), (2, "Bob", False), (3, "Carol", True), (4, "Diana", True)]
#: Sample table -> (snapshot rows, read-optimized rows) of (id, name, isActive).
SAMPLE_EXPECTED = {
    "v6_complexkeygen_hivestyle": (FOUR_ROWS, FOUR_ROWS_BASE),
    "v6_empty": ([], []),
    "v6_nonpartitioned": (FOUR_ROWS, FOUR_ROWS_BASE),
    # log.1 holds a rolled-back delta commit (Alice=false), log.2 its rollback command block,
    # log.3 a later update (Bob=true)
    "v6_nonpartitioned_rollback": (
        [(1, "Alice", True), (2, "Bob", True), (3, "Carol", True)],
        [(1, "Alice", True), (2, "Bob", False), (3, "Carol", True)],
    ),
    "v6_simplekeygen_hivestyle_no_metafields": (FOUR_ROWS, FOUR_ROWS),  # no log files
    "v6_simplekeygen_nonhivestyle": (FOUR_ROWS, FOUR_ROWS_BASE),
    # INSERT OVERWRITE TABLE: a replacecommit kills every earlier file group, logs included
    "v6_simplekeygen_nonhivestyle_overwritetable": ([(4, "Diana", False)], [(4, "Diana", False)]),
}
SAMPLE_COLUMNS = ["id", "name", "isActive"]
#: Columns compared with the official reader besides the meta columns (nested types and timestamps aside).
SAMPLE_SCALAR_COLUMNS = [
    "id", "name", "isActive", "intField", "longField", "floatField", "doubleField", "decimalField", "dateField",
]
NO_META_FIELDS = {"v6_simplekeygen_hivestyle_no_metafields"}

#: The eight trips each trips table starts with: (uuid prefix, rider, fare, city).
EIGHT_TRIPS = [
    ("1dced545", "rider-E", 93.5, "san_francisco"),
    ("334e26e9", "rider-A", 19.1, "san_francisco"),
    ("3eeb61f7", "rider-I", 41.06, "chennai"),
    ("7a84095f", "rider-G", 43.4, "sao_paulo"),
    ("9909a8b1", "rider-D", 33.9, "san_francisco"),
    ("c8abbe79", "rider-J", 17.85, "chennai"),
    ("e3cf430c", "rider-F", 34.15, "sao_paulo"),
    ("e96c4396", "rider-C", 27.7, "san_francisco"),
]


def trips(fares: dict[str, float] | None = None, deleted: tuple[str, ...] = ()) -> list[tuple]:
    """``EIGHT_TRIPS`` with some riders' fares updated and some riders deleted."""
    fares = fares or {}
    return [(u, rider, fares.get(rider, fare), city) for u, rider, fare, city in EIGHT_TRIPS if rider not in deleted]


#: Trips table -> (snapshot rows, read-optimized rows) of (uuid prefix, rider, fare, city).
TRIPS_EXPECTED = {
    # one Avro data block updates rider-D
    "v6_trips_8i1u": (trips({"rider-D": 25.0}), trips()),
    # one delete block (orderingVal IntWrapper(0), "natural order") removes three riders
    "v6_trips_8i3d": (trips(deleted=("rider-A", "rider-C", "rider-D")), trips()),
    # v8: updates and deletes, a compaction, then one more update (of rider-G) in a log on the compacted slice
    "v8_trips_8i3u1d": (
        trips({"rider-A": 0.0, "rider-G": 0.0}, deleted=("rider-F", "rider-J")),
        trips({"rider-A": 0.0}, deleted=("rider-F", "rider-J")),
    ),
}
TRIPS_COLUMNS = ["ts", "uuid", "rider", "driver", "fare", "city"]
TRIPS_SELECT = "SELECT substr(uuid, 1, 8), rider, fare, city FROM "

EXPECTED = {**SAMPLE_EXPECTED, **TRIPS_EXPECTED}
READ_OPTIMIZED = "SET hoodie.datasource.query.type=read_optimized"


def unzip_table(name: str, dest: Path) -> Path:
    """Unzip MOR table ``name`` into ``dest``; returns the table folder."""
    return unzip((TRIPS if name in TRIPS_EXPECTED else SAMPLE) / f"{name}.zip", dest)


def adopt(session, table_dir: Path) -> None:
    session.sql(f"CREATE TABLE t USING hudi LOCATION '{table_dir}'")


def select(name: str, table: str) -> str:
    """The README's columns of table ``name``, read from ``table``."""
    return TRIPS_SELECT + table if name in TRIPS_EXPECTED else f"SELECT {', '.join(SAMPLE_COLUMNS)} FROM {table}"


def test_every_mor_table_is_covered():
    zipped = [p.stem for p in SAMPLE.glob("*.zip")] + [p.stem for p in TRIPS.glob("*.zip")]
    assert sorted(zipped) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_snapshot_rows(session, tmp_path, name):
    adopt(session, unzip_table(name, tmp_path))
    rows = hudiql_rows(session, select(name, "t"))
    assert len(rows) == len(EXPECTED[name][0])
    assert rows == EXPECTED[name][0]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_read_optimized_rows_of_ro_table(session, tmp_path, name):
    adopt(session, unzip_table(name, tmp_path))
    assert hudiql_rows(session, select(name, "t_ro")) == EXPECTED[name][1]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_read_optimized_query_type(session, tmp_path, name):
    adopt(session, unzip_table(name, tmp_path))
    session.sql(READ_OPTIMIZED)
    assert hudiql_rows(session, select(name, "t")) == EXPECTED[name][1]


def compared_columns(name: str) -> list[str]:
    """Columns both readers return alike for table ``name``: meta columns (when stored) and data."""
    data = TRIPS_COLUMNS if name in TRIPS_EXPECTED else SAMPLE_SCALAR_COLUMNS
    return data if name in NO_META_FIELDS else META_COLUMNS + data


@pytest.mark.parametrize("read_optimized", [False, True], ids=["snapshot", "read_optimized"])
@pytest.mark.parametrize("name", sorted(n for n, (rows, _) in EXPECTED.items() if rows))
def test_matches_official_reader(session, tmp_path, name, read_optimized):
    pytest.importorskip("hudi")
    table_dir = unzip_table(name, tmp_path)
    adopt(session, table_dir)
    columns = compared_columns(name)
    table = "t_ro" if read_optimized else "t"
    ours = hudiql_rows(session, f"SELECT {', '.join(columns)} FROM {table}")
    assert ours == official_rows(table_dir, columns, read_optimized=read_optimized)


def test_merged_record_carries_its_delta_commit(session, tmp_path):
    """A record merged from a log keeps the meta columns the log wrote (file name = file id)."""
    adopt(session, unzip_table("v6_trips_8i1u", tmp_path))
    row = session.sql("SELECT * FROM t WHERE rider = 'rider-D'").collect()[0]
    assert (row._hoodie_commit_time, row.fare) == ("20250331030645735", 25.0)
    assert row._hoodie_file_name == "d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0"
    assert row._hoodie_partition_path == "city=san_francisco"


@pytest.mark.parametrize(
    ("name", "city", "riders"),
    [
        ("v6_trips_8i1u", "san_francisco", ["rider-A", "rider-C", "rider-D", "rider-E"]),
        ("v6_trips_8i3d", "san_francisco", ["rider-E"]),
        ("v8_trips_8i3u1d", "sao_paulo", ["rider-G"]),
    ],
)
def test_partition_filter_on_merged_slices(session, tmp_path, name, city, riders):
    adopt(session, unzip_table(name, tmp_path))
    df = session.sql(f"SELECT rider FROM t WHERE city = '{city}'")
    assert sorted(r.rider for r in df.collect()) == riders


# ---- v8 slicing rules, on edited copies of v8_trips_8i3u1d ----------------------------------------

V8 = "v8_trips_8i3u1d"
COMPACTION = ("20251220210129235", "20251220210129883")  # requested, completed
LAST_DELTA_COMMIT = ("20251220210130911", "20251220210131755")  # updates rider-G on the compacted slice


def without_metadata_table(table_dir: Path) -> None:
    """Drop the metadata table, so that readers list storage and see the edited file names."""
    shutil.rmtree(table_dir / ".hoodie" / "metadata")
    props = table_dir / ".hoodie" / "hoodie.properties"
    lines = props.read_text().splitlines()
    props.write_text("".join(f"{line}\n" for line in lines if not line.startswith("hoodie.table.metadata.partitions")))


def rename_files(table_dir: Path, replacements: dict[str, str]) -> None:
    """Replace substrings of every file name of the table (timeline and data files)."""
    for root, _, names in os.walk(table_dir):
        for name in names:
            new = name
            for old, value in replacements.items():
                new = new.replace(old, value)
            if new != name:
                os.rename(Path(root) / name, Path(root) / new)


def test_v8_log_of_delta_commit_completed_after_compaction_plan(session, tmp_path):
    """The compaction is re-timed to be planned while the last delta commit was in flight
    (requested before it, completed after it): that log is not in the plan, so it belongs on top
    of the compacted slice by its completion time, though its name's instant is older."""
    table_dir = unzip_table(V8, tmp_path)
    without_metadata_table(table_dir)
    planned, completed = "20251220210131000", "20251220210131500"
    assert LAST_DELTA_COMMIT[0] < planned < completed < LAST_DELTA_COMMIT[1]
    rename_files(table_dir, {COMPACTION[0]: planned, COMPACTION[1]: completed})
    adopt(session, table_dir)
    assert hudiql_rows(session, TRIPS_SELECT + "t") == TRIPS_EXPECTED[V8][0]
    columns = META_COLUMNS + TRIPS_COLUMNS
    assert hudiql_rows(session, f"SELECT {', '.join(columns)} FROM t") == official_rows(table_dir, columns)


def test_v8_logs_merge_in_commit_order_whatever_their_write_tokens(session, tmp_path):
    """Without the compaction, chennai's slice has rider-J's update (``…_20251220210127080.log.1_0-1072-3078``)
    and then its delete; the delete's log gets a write token sorting first (a new Spark
    application restarts stage ids). v8 logs all have version 1: the instant orders them."""
    table_dir = unzip_table(V8, tmp_path)
    without_metadata_table(table_dir)
    for path in table_dir.rglob(f"*{COMPACTION[0]}*"):
        path.unlink()
    rename_files(table_dir, {"_20251220210128625.log.1_0-1097-3150": "_20251220210128625.log.1_0-101-7"})
    adopt(session, table_dir)
    assert hudiql_rows(session, TRIPS_SELECT + "t") == TRIPS_EXPECTED[V8][0]
    columns = META_COLUMNS + TRIPS_COLUMNS
    assert hudiql_rows(session, f"SELECT {', '.join(columns)} FROM t") == official_rows(table_dir, columns)
