"""A write never leaves a metadata table stale: hudiql, which does not maintain one yet, removes it
under the table lock before it changes the table, as Hudi's writer does with
``hoodie.metadata.enable=false`` (``table.metadata_table``, ``transaction.prologue``).

The real v8 and v9 tables (``v8_trips_8i3u1d``, ``v9_nonpartitioned_rollback``) have a metadata table
that the official reader lists them through. No real v6 table of the test data carries one, although Hudi 0.11-0.15 writers keep one by
default: the v6 tables here are real v6 tables given that v8 table's ``.hoodie/metadata/`` and the
properties a v6 writer sets with it (``hoodie.table.metadata.partitions``).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import HUDI_TABLES, hudiql_rows, official_rows, unzip
from hudiql.io.storage import Storage
from hudiql.table import metadata_table
from hudiql.config.table_config import METADATA_PARTITIONS, TableConfig

TRIPS = HUDI_TABLES / "quickstart_trips_table" / "mor" / "avro"
SAMPLE_COW = HUDI_TABLES / "sample_table" / "cow"
V8_WITH_METADATA_TABLE = TRIPS / "v8_trips_8i3u1d.zip"
V9_WITH_METADATA_TABLE = HUDI_TABLES / "sample_table" / "mor" / "avro" / "v9_nonpartitioned_rollback.zip"
TRIPS_COLUMNS = ["uuid", "rider", "fare", "city"]
SAMPLE_COLUMNS = ["id", "name", "isActive"]
REMOVED = "removed the metadata table"


def properties(table: Path) -> dict[str, str]:
    return TableConfig.parse((table / ".hoodie" / "hoodie.properties").read_bytes()).props


def v6_with_metadata_table(zipped: Path, tmp_path: Path) -> Path:
    """Real v6 table ``zipped`` carrying a metadata table, as a Hudi 0.14 writer leaves it."""
    table = unzip(zipped, tmp_path / "v6")
    donor = unzip(V8_WITH_METADATA_TABLE, tmp_path / "donor")
    shutil.copytree(donor / ".hoodie" / "metadata", table / ".hoodie" / "metadata")
    with open(table / ".hoodie" / "hoodie.properties", "a") as props:
        props.write(f"{METADATA_PARTITIONS}=files\n{METADATA_PARTITIONS}.inflight=\n")
    return table


V6_CASES = {
    # kind -> (real v6 table, a statement that changes it, a query of it, the columns the official reader compares)
    "mor": (TRIPS / "v6_trips_8i1u.zip", "UPDATE t SET fare = 50.0 WHERE rider = 'rider-A'",
            "SELECT uuid, rider, fare, city FROM t", TRIPS_COLUMNS),
    "cow": (SAMPLE_COW / "v6_nonpartitioned.zip", "DELETE FROM t WHERE id = 2",
            "SELECT id, name, isActive FROM t", SAMPLE_COLUMNS),
}


@pytest.mark.parametrize("kind", sorted(V6_CASES))
def test_write_removes_the_metadata_table_of_a_v6_table(session, tmp_path, capsys, kind):
    pytest.importorskip("hudi")
    zipped, statement, query, columns = V6_CASES[kind]
    table = v6_with_metadata_table(zipped, tmp_path)
    session.sql(f"CREATE TABLE t USING hudi LOCATION '{table}'")
    before = hudiql_rows(session, query)
    capsys.readouterr()

    session.sql(statement)

    warnings = [line for line in capsys.readouterr().err.splitlines() if REMOVED in line]
    assert len(warnings) == 1 and "keeps none on version 6 tables (CALL upgrade_table" in warnings[0]
    assert not (table / ".hoodie" / "metadata").exists()
    props = properties(table)
    assert props[METADATA_PARTITIONS] == "" and props[METADATA_PARTITIONS + ".inflight"] == ""
    after = hudiql_rows(session, query)
    assert after != before and len(after) in (len(before), len(before) - 1)
    assert after == official_rows(table, columns)

    session.sql(statement)  # nothing left to remove: no second line
    assert REMOVED not in capsys.readouterr().err


def test_a_crash_between_the_two_steps_leaves_a_readable_table_and_the_next_write_finishes(
        session, tmp_path, monkeypatch):
    """The property goes first: with it cleared and the folder still there, readers list storage;
    the next write deletes the folder."""
    pytest.importorskip("hudi")
    zipped, statement, query, columns = V6_CASES["mor"]
    table = v6_with_metadata_table(zipped, tmp_path)
    session.sql(f"CREATE TABLE t USING hudi LOCATION '{table}'")
    before = hudiql_rows(session, query)
    real_delete_dir = Storage.delete_dir

    def crash_on_metadata_table(storage, rel=""):
        if rel.endswith("metadata"):
            raise OSError("killed")
        real_delete_dir(storage, rel)

    monkeypatch.setattr(Storage, "delete_dir", crash_on_metadata_table)
    with pytest.raises(Exception, match="killed"):
        session.sql(statement)
    monkeypatch.undo()

    assert (table / ".hoodie" / "metadata").is_dir() and properties(table)[METADATA_PARTITIONS] == ""
    assert hudiql_rows(session, query) == before == official_rows(table, columns)
    session.sql(statement)
    assert not (table / ".hoodie" / "metadata").exists()
    assert hudiql_rows(session, query) == official_rows(table, columns) != before


V8_V9_CASES = {
    # version -> (real table with a metadata table listing its files, a statement, a query, the columns compared)
    8: (V8_WITH_METADATA_TABLE, "UPDATE t SET fare = 50.0 WHERE rider = 'rider-A'",
        "SELECT uuid, rider, fare, city FROM t", TRIPS_COLUMNS),
    9: (V9_WITH_METADATA_TABLE, "UPDATE t SET txn_type = 'refund' WHERE txn_id = 'TXN-003'",
        "SELECT txn_id, txn_ts, txn_type FROM t", ["txn_id", "txn_ts", "txn_type"]),
}


@pytest.mark.parametrize("version", sorted(V8_V9_CASES))
def test_write_removes_the_metadata_table_of_a_v8_or_v9_table(session, tmp_path, capsys, version):
    """With hoodie.metadata.enable=false. The official reader lists these tables through their
    metadata table: after hudiql's write it lists storage, and reads the rows hudiql wrote."""
    pytest.importorskip("hudi")
    zipped, statement, query, columns = V8_V9_CASES[version]
    table = unzip(zipped, tmp_path)
    assert "files" in properties(table)[METADATA_PARTITIONS].split(",")
    session.sql(f"CREATE TABLE t USING hudi LOCATION '{table}'")
    before = hudiql_rows(session, query)
    assert before == official_rows(table, columns)
    capsys.readouterr()

    session.sql("SET hoodie.metadata.enable=false")
    session.sql(statement)

    assert len([line for line in capsys.readouterr().err.splitlines() if REMOVED in line]) == 1
    assert not (table / ".hoodie" / "metadata").exists() and properties(table)[METADATA_PARTITIONS] == ""
    assert properties(table)["hoodie.table.version"] == str(version)  # written in its own version
    after = hudiql_rows(session, query)
    assert after != before and len(after) == len(before)
    assert after == official_rows(table, columns)


def test_removal_keeps_the_v8_table_listed_right_at_each_step(tmp_path):
    """The official reader lists a v8 table through its metadata table (``files`` in the property);
    after the first step it lists storage, after the second too: the same rows each time."""
    pytest.importorskip("hudi")
    table = unzip(V8_WITH_METADATA_TABLE, tmp_path)
    storage = Storage(str(table))
    assert "files" in TableConfig.load(storage).metadata_partitions
    rows = official_rows(table, TRIPS_COLUMNS)
    assert len(rows) == 6

    # step one alone (a crash before the folder goes): the property is cleared
    config = TableConfig.load(storage)
    TableConfig({**config.props, METADATA_PARTITIONS: "", METADATA_PARTITIONS + ".inflight": ""}).save(storage)
    assert metadata_table.has_metadata_table(storage, TableConfig.load(storage))  # the folder is left
    assert official_rows(table, TRIPS_COLUMNS) == rows

    metadata_table.remove_metadata_table(storage)
    assert not metadata_table.has_metadata_table(storage, TableConfig.load(storage))
    assert official_rows(table, TRIPS_COLUMNS) == rows
