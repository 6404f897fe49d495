"""hudiql reads the copy-on-write tables real Apache Hudi wrote (table versions 6 and 8).

Each table of ``tests/data/hudi-tables/sample_table/cow/`` is unzipped, adopted with
``CREATE TABLE ... LOCATION`` and queried; the expected rows are those of the tables' README.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import HUDI_TABLES, hudiql_rows, official_rows, unzip
from hudiql.record.schema import META_COLUMNS

COW = HUDI_TABLES / "sample_table" / "cow"

FOUR_ROWS = [(1, "Alice", False), (2, "Bob", False), (3, "Carol", True), (4, "Diana", True)]
#: Table -> its snapshot rows of (id, name, isActive), as the README lists them.
EXPECTED = {
    "v6_complexkeygen_hivestyle": FOUR_ROWS,
    "v6_empty": [],
    "v6_nonpartitioned": FOUR_ROWS,
    "v6_simplekeygen_hivestyle_no_metafields": FOUR_ROWS,
    "v6_simplekeygen_nonhivestyle": FOUR_ROWS,
    "v6_simplekeygen_nonhivestyle_overwritetable": [(4, "Diana", False)],  # through its replacecommit
    "v6_timebasedkeygen_nonhivestyle": FOUR_ROWS,
    "v8_complexkeygen_hivestyle": FOUR_ROWS,
    "v8_empty": [],
    "v8_nonpartitioned": FOUR_ROWS,
    "v8_simplekeygen_hivestyle_no_metafields": FOUR_ROWS,
    "v8_simplekeygen_nonhivestyle": FOUR_ROWS,
}
NO_META_FIELDS = {"v6_simplekeygen_hivestyle_no_metafields", "v8_simplekeygen_hivestyle_no_metafields"}
COMPLEX_KEY = {"v6_complexkeygen_hivestyle", "v8_complexkeygen_hivestyle"}
#: Columns the official reader returns alike for every table (timestamps and nested types aside).
SCALAR_COLUMNS = ["id", "name", "isActive", "intField", "longField", "floatField", "doubleField", "decimalField", "dateField"]


def unzip_table(name: str, dest: Path) -> Path:
    """Unzip COW table ``name`` into ``dest``; returns the table folder."""
    return unzip(COW / f"{name}.zip", dest)


def adopt(session, table_dir: Path) -> None:
    session.sql(f"CREATE TABLE t USING hudi LOCATION '{table_dir}'")


def test_every_cow_table_is_covered():
    # the v9 "txns" tables have a schema of their own: the replays of their scripts cover them
    # (tests/write/test_table_versions.py)
    assert sorted(p.stem for p in COW.glob("*.zip") if "_txns_" not in p.stem) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_snapshot_rows(session, tmp_path, name):
    adopt(session, unzip_table(name, tmp_path))
    assert hudiql_rows(session, "SELECT id, name, isActive FROM t") == EXPECTED[name]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_select_star_starts_with_meta_columns(session, tmp_path, name):
    adopt(session, unzip_table(name, tmp_path))
    df = session.sql("SELECT * FROM t")
    if name in NO_META_FIELDS:
        assert not [c for c in df.columns if c.startswith("_hoodie_")]
        assert df.columns[:3] == ["id", "name", "isActive"]
        return
    assert df.columns[:8] == META_COLUMNS + ["id", "name", "isActive"]
    for row in df.collect():
        key = f"id:{row.id},name:{row.name}" if name in COMPLEX_KEY else str(row.id)
        assert row._hoodie_record_key == key
        assert row._hoodie_file_name.endswith(".parquet") and row._hoodie_commit_time


@pytest.mark.parametrize("name", sorted(n for n, rows in EXPECTED.items() if rows))
def test_matches_official_reader(session, tmp_path, name):
    pytest.importorskip("hudi")
    table_dir = unzip_table(name, tmp_path)
    adopt(session, table_dir)
    columns = SCALAR_COLUMNS if name in NO_META_FIELDS else META_COLUMNS + SCALAR_COLUMNS
    ours = hudiql_rows(session, f"SELECT {', '.join(columns)} FROM t")
    assert ours == official_rows(table_dir, columns)


#: (table, WHERE on partition columns, ids, partitions read or None when the path cannot be pruned)
PARTITION_FILTERS = [
    ("v6_simplekeygen_nonhivestyle", "byteField = 10", [1, 3], {"10"}),
    ("v6_complexkeygen_hivestyle", "byteField = 10 AND shortField = 300", [1, 3], {"byteField=10/shortField=300"}),
    ("v6_complexkeygen_hivestyle", "shortField = 100", [2, 4], {"byteField=20/shortField=100", "byteField=30/shortField=100"}),
    ("v6_simplekeygen_hivestyle_no_metafields", "byteField = 30", [4], {"byteField=30"}),
    ("v6_simplekeygen_nonhivestyle_overwritetable", "byteField = 10", [], set()),  # replaced by the overwrite
    ("v6_simplekeygen_nonhivestyle_overwritetable", "byteField = 30", [4], {"30"}),
    ("v6_timebasedkeygen_nonhivestyle", "ts_str = '2023-04-04T13:01:00.123Z'", [4], None),
    ("v8_complexkeygen_hivestyle", "byteField = 20", [2], {"byteField=20/shortField=100"}),
    ("v8_simplekeygen_nonhivestyle", "byteField IN (10, 30)", [1, 3, 4], {"10", "30"}),
    ("v8_simplekeygen_hivestyle_no_metafields", "byteField = 10", [1, 3], {"byteField=10"}),
]


@pytest.mark.parametrize(("name", "where", "ids", "partitions"), PARTITION_FILTERS)
def test_partition_filter(session, tmp_path, name, where, ids, partitions):
    table_dir = unzip_table(name, tmp_path)
    adopt(session, table_dir)
    df = session.sql(f"SELECT id FROM t WHERE {where}")
    assert sorted(r.id for r in df.collect()) == ids
    if partitions is not None:
        read = {os.path.relpath(os.path.dirname(f.removeprefix("file://")), table_dir) for f in df.inputFiles()}
        assert read == partitions


@pytest.mark.parametrize("name", ["v8_nonpartitioned", "v8_empty"])
def test_v8_tables_are_written_in_their_own_version(session, tmp_path, name):
    table_dir = unzip_table(name, tmp_path)
    adopt(session, table_dir)
    session.sql("INSERT INTO t (id, name, isActive) VALUES (5, 'Eve', true)")
    expected = sorted([*EXPECTED[name], (5, "Eve", True)])
    assert hudiql_rows(session, "SELECT id, name, isActive FROM t") == expected
    assert official_rows(table_dir, ["id", "name", "isActive"]) == expected
    props = (table_dir / ".hoodie" / "hoodie.properties").read_text()
    assert "hoodie.table.version=8" in props
    written = [p.name for p in (table_dir / ".hoodie" / "timeline").iterdir() if p.name.endswith(".commit")]
    assert written and all("_" in n for n in written)  # completed with a completion time, as layout 2 names it


