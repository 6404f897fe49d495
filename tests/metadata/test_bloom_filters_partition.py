"""The bloom_filters index (``index.bloom_filters``, the metadata table's ``bloom_filters``
partition): kept by every write of a table that asks for it, equal to the filters in the footers of
the table's live base files, built for a table that had none (a filter made for a file whose footer
holds none), removed when disabled, and read by the BLOOM index with
``hoodie.bloom.index.use.metadata``, which then opens only the files whose filters may hold a key."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from conftest import VERSIONED_COLUMNS, VERSIONED_QUERY, hudiql_rows, official_rows, versioned_table
from hudiql.config.table_config import TableConfig
from hudiql.errors import OptionError
from hudiql.formats.bloom_filter import FOOTER_BLOOM_FILTER, FOOTER_TYPE_CODE, BloomFilter
from hudiql.io.storage import Storage
from hudiql.metadata.bloom_filters import decode_filter, filter_key
from hudiql.metadata.records import SCHEMA_JSON, file_group_index, index_file_number
from hudiql.sql.statements import TableName
from hudiql.table.metadata_table import MetadataTable

BLOOM_FILTERS = "'hoodie.metadata.index.bloom.filter.enable'='true'"


def live_base_files(session, name: str = "t") -> dict[str, str]:
    """Each base file of the table's latest slices: name -> partition."""
    table = session.table(TableName(None, name))
    return {s.base_file: s.partition_path for s in table.file_system_view().latest_slices() if s.base_file}


def indexed_filters(table_path) -> dict[str, tuple[str, bytes]]:
    """What the bloom_filters partition holds, merged as a reader merges it (base HFiles, then the
    logs' HFile blocks in order; stubs remove): key -> (type code, filter text)."""
    from hudiql.metadata.bloom_filters import BloomFilterSlice as Slice
    from hudiql.table.metadata_table import valid_instants
    from hudiql.timeline.active import Timeline

    storage = Storage(str(table_path))
    config = TableConfig.load(storage)
    mdt = MetadataTable.load(storage, config)
    valid = valid_instants(Timeline.load(storage, config))
    found = {}
    groups = mdt.latest_slices("bloom_filters")
    for s in groups.values():
        s = s.readable(valid)
        base = mdt.storage.read(s.path(s.base_file)) if s.base_file else None
        for key, value in Slice(base, s.read_logs(mdt.storage), "g").entries("x.hfile"):  # (written in hudiql's schema)
            f = decode_filter(value, SCHEMA_JSON)
            found[key.decode()] = (f.type_code, f.text)
            assert file_group_index(key.decode(), len(groups)) == index_file_number(s.file_id)
    return found


def footer_filters(table_path, files: dict[str, str]) -> dict[str, tuple[str, bytes]]:
    out = {}
    for name, partition in files.items():
        footer = pq.ParquetFile(table_path / partition / name).metadata.metadata
        out[filter_key(partition, name)] = (footer[FOOTER_TYPE_CODE.encode()].decode(), footer[FOOTER_BLOOM_FILTER.encode()])
    return out


@pytest.mark.parametrize("version, kind", [(9, "mor"), (8, "cow")])
def test_every_write_keeps_each_base_files_filter(session, version, kind):
    """After inserts, upserts, deletes, a compaction and a clean, the index holds exactly the
    filter in the footer of each base file on storage (the live ones, and older versions a clean
    keeps), none of a cleaned file, and both readers agree on the rows."""
    table = versioned_table(session, version, kind, BLOOM_FILTERS, "'hoodie.metadata.compact.max.delta.commits'='3'",
                            "'hoodie.cleaner.commits.retained'='1'")
    session.sql("INSERT INTO t VALUES (1, 'a', 1, 'd1'), (2, 'b', 5, 'd1'), (3, 'c', 1, 'd2')")
    assert TableConfig.load(Storage(str(table))).metadata_partitions == ["bloom_filters", "files"]
    session.sql("SET hoodie.spark.sql.insert.into.operation=upsert")
    session.sql("INSERT INTO t VALUES (1, 'a2', 7, 'd1'), (4, 'd', 2, 'd2')")
    session.sql("UPDATE t SET name = 'zz', ts = 9 WHERE id = 2")
    session.sql("DELETE FROM t WHERE id = 3")
    if kind == "mor":
        session.sql("CALL run_compaction(op => 'run', table => 't')")
    session.sql("CALL run_clean(table => 't')")
    mdt = MetadataTable.load(Storage(str(table)))
    assert mdt.timeline.completed(("compaction",))  # bloom_filters' file groups were compacted too
    assert set(mdt.latest_slices("bloom_filters")) == {f"bloom-filters-000{i}-0" for i in range(4)}
    on_storage = {p.name: p.parent.name for p in table.glob("dt=*/*.parquet")}
    assert set(live_base_files(session)) < set(on_storage) or kind == "mor"
    assert indexed_filters(table) == footer_filters(table, on_storage)
    assert hudiql_rows(session, VERSIONED_QUERY) == official_rows(table, VERSIONED_COLUMNS) == [
        (1, "a2", 7, "d1"), (2, "zz", 9, "d1"), (4, "d", 2, "d2")]


def test_rollbacks_overwrites_restores_and_clustering_keep_it(session):
    """After each action that adds or deletes base files (a rollback, an INSERT OVERWRITE, a restore
    to a savepoint, a clean, a clustering), the index holds the filter of each base file on storage
    and of no other."""
    table = versioned_table(session, 9, "mor", BLOOM_FILTERS)

    def consistent(step: str) -> None:
        on_storage = {p.name: p.parent.name for p in table.glob("dt=*/*.parquet")}
        assert indexed_filters(table) == footer_filters(table, on_storage), f"after {step}"
        assert hudiql_rows(session, VERSIONED_QUERY) == official_rows(table, VERSIONED_COLUMNS), f"after {step}"

    session.sql("INSERT INTO t VALUES (1, 'a', 1, 'd1'), (2, 'b', 1, 'd1'), (3, 'c', 1, 'd2')")
    session.sql("CALL create_savepoint(table => 't')")
    session.sql("INSERT INTO t VALUES (5, 'e', 1, 'd3')")
    latest = session.sql("CALL show_commits(table => 't')").collect()[0][0]
    session.sql(f"CALL rollback_to_instant(table => 't', instant_time => '{latest}')")
    consistent("rollback")
    session.sql("INSERT OVERWRITE t PARTITION (dt = 'd2') SELECT 7, 'g', 1")
    consistent("INSERT OVERWRITE")
    savepoint_time = session.sql("CALL show_savepoints(table => 't')").collect()[0][0]
    session.sql(f"CALL rollback_to_savepoint(table => 't', instant_time => '{savepoint_time}')")
    consistent("restore")
    session.sql(f"CALL delete_savepoint(table => 't', instant_time => '{savepoint_time}')")
    session.sql("INSERT INTO t VALUES (8, 'h', 1, 'd1')")
    session.sql("SET hoodie.cleaner.commits.retained=1")
    session.sql("CALL run_clean(table => 't')")
    consistent("clean")
    session.sql("CALL run_clustering(table => 't')")
    consistent("clustering")


def test_a_table_gets_the_index_when_asked_and_loses_it_when_told(session):
    """A table written without the index gets it at its next write that asks (from its base
    files: a filter made of the keys of a file whose footer holds none), and loses it at a write
    that sets the option false."""
    table = versioned_table(session, 9, "cow", "'hoodie.parquet.bloom.filter.enabled'='false'")
    session.sql("INSERT INTO t VALUES (1, 'a', 1, 'd1'), (2, 'b', 5, 'd2')")
    files = live_base_files(session)
    assert all(FOOTER_BLOOM_FILTER.encode() not in pq.ParquetFile(table / p / n).metadata.metadata for n, p in files.items())
    session.sql(f"ALTER TABLE t SET TBLPROPERTIES ({BLOOM_FILTERS}, 'hoodie.parquet.bloom.filter.enabled'='true')")
    session.sql("INSERT INTO t VALUES (3, 'c', 1, 'd3')")
    indexed = indexed_filters(table)
    now = live_base_files(session)
    assert set(indexed) == {filter_key(p, n) for n, p in now.items()}
    for name, partition in files.items():  # built from the keys of files without a footer filter
        keys = pq.read_table(table / partition / name, columns=["_hoodie_record_key"]).column(0)
        type_code, text = indexed[filter_key(partition, name)]
        assert BloomFilter.decode(text, type_code).contains(keys).all()
    session.sql("ALTER TABLE t SET TBLPROPERTIES ('hoodie.metadata.index.bloom.filter.enable'='false')")
    session.sql("INSERT INTO t VALUES (4, 'd', 1, 'd1')")
    assert TableConfig.load(Storage(str(table))).metadata_partitions == ["files"]
    assert not (table / ".hoodie" / "metadata" / "bloom_filters").exists()
    assert hudiql_rows(session, VERSIONED_QUERY) == official_rows(table, VERSIONED_COLUMNS)


@pytest.mark.parametrize("use_metadata", [True, False])
def test_the_bloom_index_reads_filters_and_ranges_from_the_metadata_table(session, tmp_path, use_metadata):
    """With ``hoodie.bloom.index.use.metadata``, an upsert by the BLOOM index finds its keys through
    the metadata table's key ranges and filters, and opens only the base files that may hold them:
    a file whose range holds a key but whose filter rules it out is not read (it is moved away
    while the upsert runs). Through the footers, every file is opened."""
    table = versioned_table(session, 9, "cow", BLOOM_FILTERS, "'hoodie.metadata.index.column.stats.enable'='true'",
                            "'hoodie.index.type'='BLOOM'", f"'hoodie.bloom.index.use.metadata'='{use_metadata}'",
                            "'hoodie.parquet.small.file.limit'='0'")
    for batch in range(4):  # four files per partition, each of its own keys
        rows = ", ".join(f"({batch * 100 + i}, 'n', 1, 'd{i % 2}')" for i in range(20))
        session.sql(f"INSERT INTO t VALUES {rows}")
    # Keys 1, 3, ..., 19: its range ("1" to "9" as text) holds key "101", its filter does not.
    first = min(table.glob("dt=d1/*.parquet"), key=lambda p: p.name.rsplit("_", 1)[1])
    assert pq.read_table(first, columns=["id"]).column(0).to_pylist() == list(range(1, 20, 2))
    away = first.rename(tmp_path / first.name)
    session.sql("SET hoodie.spark.sql.insert.into.operation=upsert")
    upsert = "INSERT INTO t VALUES (101, 'x', 2, 'd1'), (302, 'y', 2, 'd0'), (999, 'z', 2, 'd1')"
    try:
        if use_metadata:
            session.sql(upsert)
        else:
            with pytest.raises(Exception, match=first.name):
                session.sql(upsert)
            return
    finally:
        away.rename(first)
    expected = sorted([(i * 100 + j, "n", 1, f"d{j % 2}") for i in range(4) for j in range(20)
                       if (i * 100 + j) not in (101, 302)] + [(101, "x", 2, "d1"), (302, "y", 2, "d0"), (999, "z", 2, "d1")])
    assert hudiql_rows(session, VERSIONED_QUERY) == official_rows(table, VERSIONED_COLUMNS) == expected


def test_the_index_is_refused_where_no_metadata_table_is_kept(session):
    with pytest.raises(OptionError, match="hoodie.metadata.index.bloom.filter.enable=true: hudiql keeps the metadata "
                                          "table of table versions 8 and 9, and table t is version 6"):
        versioned_table(session, 6, "cow", BLOOM_FILTERS)
        session.sql("INSERT INTO t VALUES (1, 'a', 1, 'd1')")
