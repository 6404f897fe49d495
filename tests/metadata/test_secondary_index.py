"""Secondary indexes (``CREATE INDEX``; ``index.secondary_index``, the metadata table's
``secondary_index_<name>`` partitions): read as Hudi 1.1 writes them, built and kept by hudiql's
writes, used by queries on the indexed column, and refused in one line when they cannot be."""

from __future__ import annotations

import pytest

from conftest import HUDI_TABLES, damage, hudiql_rows, official_rows, unzip, versioned_table
from hudiql.config.table_config import TableConfig
from hudiql.errors import ColumnError, HudiqlError, OptionError, SqlError
from hudiql.formats import hfile
from hudiql.index import secondary_index
from hudiql.io.storage import Storage
from hudiql.metadata.index_definitions import IndexDefinitions
from hudiql.metadata.secondary_index import group_of, parse_key
from hudiql.sql.statements import TableName
from hudiql.table.metadata_table import MetadataTable
from hudiql.write import dml

RECORD_INDEX = "'hoodie.metadata.record.index.enable'='true'"
SAMPLE = HUDI_TABLES / "sample_table" / "cow" / "v9_txns_simple_meta.zip"


def test_hudis_secondary_index_files_place_entries_as_hudi_does(tmp_path):
    """Every entry of the secondary indexes Hudi 1.1 wrote is ``value$key`` in the file group of
    its value (V2), and names a row the table holds with that value."""
    table = unzip(SAMPLE, tmp_path)
    found = {}
    for path in sorted((table / ".hoodie" / "metadata" / "secondary_index_merchant_idx").glob("*.hfile")):
        group = int(path.name.split("-")[4])
        for key, _ in hfile.HFile(path.read_bytes(), str(path)).entries():
            assert group_of(key.decode(), 10, 9) == group
            value, record_key = parse_key(key.decode())
            found[record_key] = value
    rows = dict(official_rows(table, ["txn_id", "merchant_name"]))
    assert found == rows and None in found.values()  # TXN-003 has no merchant


def test_hudis_secondary_index_finds_rows(session, tmp_path):
    """A query on an indexed column of Hudi's table reads the file groups its index names."""
    table_path = unzip(SAMPLE, tmp_path)
    session.sql(f"CREATE TABLE t USING hudi LOCATION '{table_path}'")
    table = session.table(TableName(None, "t"))
    index = {i.name: i for i in secondary_index.indexes(table)}["merchant_idx"]
    assert secondary_index.record_keys(table, index, ["Grab", "Uber", "nobody"]) == {"TXN-008", "TXN-014"}
    date_index = {i.name: i for i in secondary_index.indexes(table)}["txn_date_idx"]
    assert secondary_index.record_keys(table, date_index, ["19737"]) == {"TXN-001", "TXN-003"}
    assert hudiql_rows(session, "SELECT txn_id FROM t WHERE txn_date = DATE '2024-01-15' ORDER BY txn_id") == [
        ("TXN-001",), ("TXN-003",)]
    assert [tuple(r) for r in session.sql("SHOW INDEXES FROM t").collect()] == [
        ("column_stats", "column_stats", ""), ("partition_stats", "partition_stats", ""),
        ("record_index", "record_index", ""), ("secondary_index_merchant_idx", "secondary_index", "merchant_name"),
        ("secondary_index_txn_date_idx", "secondary_index", "txn_date")]


@pytest.mark.parametrize("version, kind", [(9, "mor")])  # version 8's layout: the test below
def test_an_index_is_built_kept_and_used(session, monkeypatch, version, kind):
    """CREATE INDEX builds the index from the table's rows; inserts, upserts, MERGE and UPDATE add
    their rows' entries; a query and an UPDATE on the column read only the file groups it names
    (another group's damaged file is never noticed); DROP INDEX removes it."""
    monkeypatch.setattr(dml, "LOOKUP_WORTH_BYTES", 0)
    table = versioned_table(session, version, kind, RECORD_INDEX, "'hoodie.parquet.small.file.limit'='0'",
                            "'hoodie.metadata.compact.max.delta.commits'='3'")
    session.sql("INSERT INTO t VALUES (1, 'a', 1, 'd1'), (2, 'b', 1, 'd1'), (3, 'c', 1, 'd2')")
    session.sql("CREATE INDEX name_idx ON t (name)")
    config = TableConfig.load(Storage(str(table)))
    assert config.metadata_partitions == ["files", "record_index", "secondary_index_name_idx"]
    assert IndexDefinitions.load(Storage(str(table)), config).source_fields("secondary_index_name_idx") == ["name"]
    session.sql("SET hoodie.spark.sql.insert.into.operation=upsert")
    session.sql("INSERT INTO t VALUES (4, 'd', 1, 'd2'), (1, 'a2', 2, 'd1')")
    session.sql("UPDATE t SET name = 'bb', ts = 2 WHERE id = 2")
    session.sql("MERGE INTO t USING (SELECT 5 AS id, 'e' AS name, 1L AS ts, 'd3' AS dt) s ON t.id = s.id "
                "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
    t = session.table(TableName(None, "t"))
    assert MetadataTable.load(t.storage).timeline.completed(("compaction",))  # its groups compacted too
    index = secondary_index.indexes(t)[0]
    assert secondary_index.record_keys(t, index, ["a2", "bb", "e", "d", "c"]) == {"1", "2", "5", "4", "3"}
    other = next(p for p in (table / "dt=d2").glob("*.parquet"))
    damage(other)  # rows 3 and 4 live in dt=d2
    assert hudiql_rows(session, "SELECT id, name FROM t WHERE name = 'bb'") == [(2, "bb")]
    assert hudiql_rows(session, "SELECT id FROM t WHERE name IN ('a2', 'e', 'zz') ORDER BY id") == [(1,), (5,)]
    assert hudiql_rows(session, "SELECT id FROM t WHERE name = 'b'") == []  # the stale entry reads in vain
    session.sql("UPDATE t SET ts = 9 WHERE name = 'e'")
    assert hudiql_rows(session, "SELECT id, ts FROM t WHERE name = 'e'") == [(5, 9)]
    session.sql("DROP INDEX name_idx ON t")
    assert TableConfig.load(Storage(str(table))).metadata_partitions == ["files", "record_index"]
    assert not (table / ".hoodie" / "metadata" / "secondary_index_name_idx").exists()
    session.sql("DROP INDEX IF EXISTS name_idx ON t")


def test_a_version_8_index_spreads_a_value_by_key(session):
    """Version 8 (Hudi 1.0's V1 layout) places entries by the whole key: a value's keys are found
    across the index's file groups."""
    versioned_table(session, 8, "cow", RECORD_INDEX)
    rows = ", ".join(f"({i}, '{'even' if i % 2 else 'odd'}', 1, 'd{i % 3}')" for i in range(12))
    session.sql(f"INSERT INTO t VALUES {rows}")
    session.sql("CREATE INDEX kind_idx ON t (name)")
    session.sql("INSERT INTO t VALUES (12, 'odd', 1, 'd0')")
    t = session.table(TableName(None, "t"))
    index = secondary_index.indexes(t)[0]
    found = secondary_index.record_keys(t, index, ["odd"])
    assert found == {str(i) for i in range(0, 13, 2)}
    groups = {group_of(f"odd${key}", index.count, 8) for key in found}
    assert len(groups) > 1  # spread over groups, yet all found
    assert hudiql_rows(session, "SELECT count(*) FROM t WHERE name = 'odd'") == [(7,)]


def test_index_refusals(session):
    """An index on a missing column, a duplicate name, a table without a record index or metadata
    table, another index type: one line each, nothing written."""
    versioned_table(session, 9, "cow")
    session.sql("INSERT INTO t VALUES (1, 'a', 1, 'd1')")
    with pytest.raises(OptionError, match=r"ALTER TABLE t SET TBLPROPERTIES \('hoodie.metadata.record.index.enable'='true'\)"):
        session.sql("CREATE INDEX i ON t (name)")
    session.sql("ALTER TABLE t SET TBLPROPERTIES ('hoodie.metadata.record.index.enable'='true')")
    with pytest.raises(ColumnError, match="table t has no column nope"):
        session.sql("CREATE INDEX i ON t (nope)")
    with pytest.raises(SqlError, match="hoodie.metadata.index.column.stats.enable=true"):
        session.sql("CREATE INDEX i ON t USING column_stats (name)")
    with pytest.raises(SqlError, match="hoodie.metadata.index.bloom.filter.enable=true"):
        session.sql("CREATE INDEX i ON t USING bloom_filters (name)")
    with pytest.raises(SqlError, match=r"OPTIONS \(expr\) is not supported"):
        session.sql("CREATE INDEX i ON t USING secondary_index (ts) OPTIONS (expr='from_unixtime')")
    with pytest.raises(SqlError, match="covers one column"):
        session.sql("CREATE INDEX i ON t (name, ts)")
    session.sql("CREATE INDEX i ON t (name)")
    with pytest.raises(SqlError, match="has an index named i"):
        session.sql("CREATE INDEX i ON t (ts)")
    session.sql("CREATE INDEX IF NOT EXISTS i ON t (ts)")
    with pytest.raises(HudiqlError, match="has no index j"):
        session.sql("DROP INDEX j ON t")
    session.sql("DROP TABLE t")
    versioned_table(session, 9, "cow", "'hoodie.metadata.enable'='false'")
    with pytest.raises(OptionError, match="indexes live in the metadata table"):
        session.sql("CREATE INDEX i ON t (name)")


def test_a_write_that_drops_the_record_index_drops_the_indexes_beside_it(session):
    """INSERT OVERWRITE moves keys without recording them: the record index goes, and the
    secondary indexes with it (definitions included)."""
    table = versioned_table(session, 9, "cow", RECORD_INDEX)
    session.sql("INSERT INTO t VALUES (1, 'a', 1, 'd1')")
    session.sql("CREATE INDEX i ON t (name)")
    session.sql("INSERT OVERWRITE t VALUES (2, 'b', 1, 'd1')")
    config = TableConfig.load(Storage(str(table)))
    assert "secondary_index_i" not in config.metadata_partitions
    assert "secondary_index_i" not in IndexDefinitions.load(Storage(str(table)), config).definitions
    assert hudiql_rows(session, "SELECT id FROM t WHERE name = 'b'") == [(2,)]
