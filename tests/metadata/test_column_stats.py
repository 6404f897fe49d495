"""The column stats index (``index.column_stats``, the metadata table's ``column_stats``
partition): read as Hudi 1.1 writes it, kept by every write of a table that asks for it, equal to
the files' own ranges, and used by queries to skip files without changing their answers."""

from __future__ import annotations

from decimal import Decimal

import pyarrow.parquet as pq
import pytest

from conftest import (
    HUDI_TABLES,
    VERSIONED_COLUMNS,
    VERSIONED_QUERY,
    damage,
    hudiql_rows,
    official_rows,
    unzip,
    versioned_table,
)
from hudiql.config.table_config import TableConfig
from hudiql.errors import ColumnError, OptionError
from hudiql.formats import hfile
from hudiql.index import column_stats
from hudiql.io.storage import Storage
from hudiql.metadata.column_stats import decode_range, ranges_of, stats_key
from hudiql.metadata.index_definitions import IndexDefinitions
from hudiql.metadata.records import file_group_index
from hudiql.sql.statements import TableName
from hudiql.table.metadata_table import MetadataTable

COLUMN_STATS = "'hoodie.metadata.index.column.stats.enable'='true'"
SAMPLE = HUDI_TABLES / "sample_table" / "cow" / "v9_txns_simple_meta.zip"


def live_files(table_path) -> dict[str, str]:
    """Each data file of the table's latest slices (by a listing, as a scan would read them): name -> partition."""
    from hudiql.table.table import HudiTable

    table = HudiTable.load(str(table_path))
    return {name: s.partition_path for s in table.file_system_view().latest_slices()
            for name in ([s.base_file] if s.base_file else []) + list(s.log_files)}


def indexed_ranges(session, name: str = "t"):
    table = session.table(TableName(None, name))
    return table, column_stats.file_ranges(table, column_stats.columns(table), table.file_system_view().partitions())


def test_hudis_column_stats_are_the_ranges_of_its_files(tmp_path):
    """Every column_stats record Hudi 1.1 wrote of a file still on storage: its key is the hashed
    column, partition and file name, it sits in the file group Hudi's hash names, and its range
    and counts are the ones hudiql computes from the file's rows."""
    table = unzip(SAMPLE, tmp_path)
    from hudiql.table.table import HudiTable

    kinds = column_stats.kinds(HudiTable.load(str(table)))
    recorded = {}
    for path in sorted((table / ".hoodie" / "metadata" / "column_stats").glob("*.hfile")):
        data = hfile.HFile(path.read_bytes(), str(path))
        for key, value in data.entries():
            assert file_group_index(key.decode(), 2) == int(path.name[10:14])
            r = decode_range(value, data.file_info["schema"].decode(), kinds)
            recorded[(r.name, r.column)] = (key.decode(), r)
    checked = 0
    for file in table.glob("region=*/*.parquet"):
        for r in ranges_of(file.name, pq.read_table(file), list(kinds)):
            if (file.name, r.column) in recorded:
                key, hudis = recorded[(file.name, r.column)]
                assert key == stats_key(r.column, file.parent.name, file.name)
                assert (hudis.min, hudis.max, hudis.value_count, hudis.null_count) == (r.min, r.max, r.value_count, r.null_count)
                checked += 1
    assert checked >= 16 * 4  # the indexed columns of the files still on storage


# Version 9 merge-on-read here (its V2 layout, logs ranged too); the V1 layout of version 8 below.
@pytest.mark.parametrize("version, kind", [(9, "mor")])
def test_every_write_keeps_each_files_ranges(session, version, kind):
    """After inserts, upserts, deletes, a compaction and a clean, the index ranges every file of
    the latest slices as its rows do, and has no range of a deleted file."""
    table = versioned_table(session, version, kind, COLUMN_STATS, "'hoodie.metadata.compact.max.delta.commits'='3'",
                            "'hoodie.cleaner.commits.retained'='1'")
    session.sql("INSERT INTO t VALUES (1, 'a', 1, 'd1'), (2, 'b', 5, 'd1'), (3, 'c', 1, 'd2')")
    config = TableConfig.load(Storage(str(table)))
    assert config.metadata_partitions == ["column_stats", "files", "partition_stats"]
    defs = IndexDefinitions.load(Storage(str(table)), config)
    assert defs.source_fields("column_stats") == ["_hoodie_commit_time", "_hoodie_partition_path",
                                                  "_hoodie_record_key", "id", "name", "ts", "dt"]
    session.sql("SET hoodie.spark.sql.insert.into.operation=upsert")
    session.sql("INSERT INTO t VALUES (1, 'a2', 7, 'd1'), (4, 'd', 2, 'd2')")
    session.sql("UPDATE t SET name = 'zz', ts = 9 WHERE id = 2")
    session.sql("DELETE FROM t WHERE id = 3")
    if kind == "mor":
        session.sql("CALL run_compaction(op => 'run', table => 't')")
    _, before_clean = indexed_ranges(session)
    session.sql("CALL run_clean(table => 't')")
    table_obj, ranges = indexed_ranges(session)
    assert set(ranges) < set(before_clean)  # the clean removed the ranges of the files it deleted
    mdt = MetadataTable.load(table_obj.storage)
    assert mdt.timeline.completed(("compaction",))  # column_stats' file groups were compacted too
    assert set(mdt.latest_slices("column_stats")) == {"col-stats-0000-0", "col-stats-0001-0"}
    files = live_files(table)
    for name, partition in files.items():
        if name.endswith(".parquet"):
            rows = pq.read_table(table / partition / name)
            expected = {r.column: (r.min, r.max, r.value_count, r.null_count) for r in ranges_of(name, rows, list(ranges[name]))}
            assert {c: (r.min, r.max, r.value_count, r.null_count) for c, r in ranges[name].items()} == expected
    on_storage = {p.name for p in table.glob("dt=*/*") if not p.name.startswith(".hoodie")}
    assert set(ranges) <= on_storage  # cleaned files' ranges are gone
    assert hudiql_rows(session, VERSIONED_QUERY) == official_rows(table, VERSIONED_COLUMNS) == [
        (1, "a2", 7, "d1"), (2, "zz", 9, "d1"), (4, "d", 2, "d2")]


@pytest.mark.parametrize("version", [8, 9])
def test_each_version_writes_its_layout(version):
    """Version 9 writes Hudi 1.1's V2 values (a value type; decimals as unscaled bytes, dates as
    days in an IntWrapper), version 8 Hudi 1.0's V1 (no value type; DecimalWrapper, DateWrapper);
    each reads back as written."""
    import io

    import fastavro
    from pyspark.sql import types as T

    from hudiql.metadata.column_stats import ColumnRange, ValueKind, encode_range
    from hudiql.metadata.records import _PARSED, SCHEMA_JSON

    kinds = {"d": ValueKind.of(T.DecimalType(10, 2)), "day": ValueKind.of(T.DateType())}
    for column, low, high in [("d", Decimal("-1.50"), Decimal("25.00")), ("day", 19737, 19743)]:
        value = encode_range(ColumnRange("f.parquet", column, low, high, 3, 1), kinds[column], version)
        stats = fastavro.schemaless_reader(io.BytesIO(value), _PARSED, return_record_name=True)["ColumnStatsMetadata"][1]
        wrapper = stats["minValue"][0].rsplit(".", 1)[1]
        if version == 9:
            assert wrapper == {"d": "BytesWrapper", "day": "IntWrapper"}[column]
            assert stats["valueType"][1]["typeOrdinal"] == {"d": 10, "day": 12}[column]
        else:
            assert wrapper == {"d": "DecimalWrapper", "day": "DateWrapper"}[column] and stats["valueType"] is None
        back = decode_range(value, SCHEMA_JSON, kinds)
        assert (back.min, back.max, back.value_count, back.null_count) == (low, high, 3, 1)


def test_column_stats_need_a_metadata_table(session):
    with pytest.raises(OptionError, match="column stats live in the metadata table"):
        versioned_table(session, 9, "cow", COLUMN_STATS, "'hoodie.metadata.enable'='false'")
    with pytest.raises(OptionError, match="table versions 8 and 9"):
        versioned_table(session, 6, "cow", COLUMN_STATS)


def file_with(table_path, session, where: str):
    """The one data file that holds the rows ``where`` selects."""
    names = {r[0] for r in session.sql(f"SELECT _hoodie_file_name FROM t WHERE {where}").collect()}
    assert len(names) == 1
    return next(table_path.glob(f"dt=*/{names.pop()}"))


@pytest.mark.parametrize("kind", ["mor"])  # copy-on-write: the Hudi table below, and the random filters
def test_a_query_reads_only_the_files_its_filter_may_match(session, kind):
    """Files whose ranges exclude the filter are not read by a query, an UPDATE or a DELETE (a
    damaged one is never noticed), on a non-partition column; a merge-on-read slice whose log holds
    matching values is read."""
    table = versioned_table(session, 9, kind, COLUMN_STATS, "'hoodie.parquet.small.file.limit'='0'")
    session.sql("INSERT INTO t VALUES (1, 'a', 1, 'd1'), (2, 'b', 2, 'd1')")
    session.sql("INSERT INTO t VALUES (3, 'c', 10, 'd1'), (4, 'd', 12, 'd1')")
    session.sql("INSERT INTO t VALUES (5, 'e', 20, 'd2')")
    if kind == "mor":  # a log of the first file group now holds ts = 30
        session.sql("UPDATE t SET ts = 30 WHERE id = 1")
    damage(file_with(table, session, "id = 3"))
    assert hudiql_rows(session, "SELECT id FROM t WHERE ts >= 20 ORDER BY id") == ([(1,), (5,)] if kind == "mor" else [(5,)])
    assert hudiql_rows(session, "SELECT id FROM t WHERE ts IN (2, 20) OR name = 'zz'") == [(2,), (5,)]
    assert hudiql_rows(session, "SELECT id FROM t WHERE ts BETWEEN 19 AND 21 AND dt = 'd2'") == [(5,)]
    assert hudiql_rows(session, "SELECT count(*) FROM t WHERE name IS NULL") == [(0,)]
    session.sql("UPDATE t SET name = 'u' WHERE ts >= 20")  # UPDATE and DELETE skip files too
    session.sql("DELETE FROM t WHERE ts BETWEEN 19 AND 21")
    assert hudiql_rows(session, "SELECT id, name FROM t WHERE ts >= 20") == ([(1, "u")] if kind == "mor" else [])
    session.sql("SET hoodie.enable.data.skipping=false")
    with pytest.raises(Exception, match="(?i)parquet"):  # now the damaged file is read
        session.sql("SELECT id FROM t WHERE ts >= 20").collect()
    with pytest.raises(Exception, match="(?i)parquet"):
        session.sql("UPDATE t SET name = 'v' WHERE ts >= 20")


def test_skipping_never_changes_an_answer(session):
    """Random filters over a table of several files (inserts, updates as logs, deletes) return the
    same rows with data skipping as without."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    versioned_table(session, 9, "mor", COLUMN_STATS, "'hoodie.parquet.small.file.limit'='0'")
    for batch in range(4):
        rows = ", ".join(f"({i}, '{chr(97 + i % 7)}{batch}', {i * 3 % 17}, 'd{i % 3}')" for i in range(batch * 5, batch * 5 + 5))
        session.sql(f"INSERT INTO t VALUES {rows}")
    session.sql("SET hoodie.spark.sql.insert.into.operation=upsert")
    session.sql("UPDATE t SET ts = ts + 40, name = NULL WHERE id % 4 = 1")
    session.sql("DELETE FROM t WHERE id = 7")

    atoms = st.one_of(
        st.builds(lambda op, v: f"ts {op} {v}", st.sampled_from(["=", "<", "<=", ">", ">=", "<>"]), st.integers(-1, 60)),
        st.builds(lambda op, v: f"{v} {op} id", st.sampled_from(["=", "<", ">="]), st.integers(-1, 21)),
        st.builds(lambda v: f"name = '{v}'", st.sampled_from(["a0", "b1", "c3", "zz"])),
        st.builds(lambda a, b: f"ts BETWEEN {a} AND {b}", st.integers(0, 50), st.integers(0, 50)),
        st.builds(lambda vs: f"id IN ({', '.join(map(str, vs))})", st.lists(st.integers(0, 25), min_size=1, max_size=3)),
        st.sampled_from(["name IS NULL", "name IS NOT NULL", "dt = 'd1'", "ts > 45.5"]),
    )
    filters = st.recursive(atoms, lambda inner: st.builds(lambda a, op, b: f"({a} {op} {b})", inner,
                                                         st.sampled_from(["AND", "OR"]), inner), max_leaves=3)

    @settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
    @given(filters)
    def check(where):
        query = f"SELECT id, name, ts, dt FROM t WHERE {where}"
        session.sql("SET hoodie.enable.data.skipping=true")
        skipped = hudiql_rows(session, query)
        session.sql("SET hoodie.enable.data.skipping=false")
        assert skipped == hudiql_rows(session, query), where

    check()


def test_a_hudi_table_with_indexes_gets_column_stats_hudiql_keeps(session, tmp_path):
    """A Hudi 1.1 table (files, column_stats, partition_stats, record index, secondary indexes)
    written with column stats and without the record index: its metadata table is rebuilt with what
    the write keeps, the column stats ranged from its files, and queries skip by them; Hudi's reader
    reads the rows."""
    table_path = unzip(SAMPLE, tmp_path)
    session.sql(f"CREATE TABLE t USING hudi LOCATION '{table_path}'")
    session.sql("SET hoodie.metadata.index.column.stats.enable=true")
    session.sql("SET hoodie.metadata.record.index.enable=false")
    session.sql("INSERT INTO t SELECT 'TXN-100', 'ACC-Z', 1700900000100L, TIMESTAMP '2024-02-01 10:00:00', "
                "DATE '2024-02-01', 10.00, 'USD', 'debit', 'Corner Shop', false, 0.00, '{}', 'us'")
    config = TableConfig.load(Storage(str(table_path)))
    assert config.metadata_partitions == ["column_stats", "files", "partition_stats"]
    assert official_rows(table_path, ["txn_id"]) == hudiql_rows(session, "SELECT txn_id FROM t")
    assert ("TXN-100",) in official_rows(table_path, ["txn_id"])
    table, ranges = indexed_ranges(session)
    on_storage = {p.name for p in table_path.glob("region=*/*.parquet")}
    assert {n for n in live_files(table_path) if n.endswith(".parquet")} <= set(ranges) <= on_storage
    damage(next(p for p in (table_path / "region=apac").glob("*.parquet")))
    query = "SELECT txn_id FROM t WHERE txn_date >= DATE '2024-02-01' AND amount < 11"
    assert hudiql_rows(session, query) == [("TXN-100",)]


def test_a_column_list_names_columns_of_the_table(session, warehouse):
    """A listed column the table lacks is refused in one line, nothing written; listed columns
    are the ones ranged."""
    versioned_table(session, 9, "cow", COLUMN_STATS, "'hoodie.metadata.index.column.stats.column.list'='ts,nope'")
    with pytest.raises(ColumnError, match="names nope, a column table t does not have"):
        session.sql("INSERT INTO t VALUES (1, 'a', 1, 'd1')")
    assert hudiql_rows(session, "SELECT count(*) FROM t") == [(0,)]
    session.sql("ALTER TABLE t SET TBLPROPERTIES ('hoodie.metadata.index.column.stats.column.list'='ts, name')")
    session.sql("INSERT INTO t VALUES (1, 'a', 1, 'd1')")
    table, ranges = indexed_ranges(session)
    assert {c for file in ranges.values() for c in file} == {"ts", "name"}
