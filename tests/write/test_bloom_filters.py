"""Bloom filters in base file footers (``formats.bloom_filter``): byte for byte the ones Hudi 1.1
writes of the same keys, on every base file hudiql writes (commits, compactions, clusterings),
so that Hudi's BLOOM index finds keys in tables hudiql wrote."""

from __future__ import annotations

import pyarrow as pa
import pytest
import pyarrow.parquet as pq

from conftest import HUDI_TABLES, VERSIONED_COLUMNS, VERSIONED_QUERY, hudiql_rows, official_rows, unzip, versioned_table
from hudiql.formats.bloom_filter import (
    DYNAMIC_V0,
    FOOTER_BLOOM_FILTER,
    FOOTER_MAX_KEY,
    FOOTER_MIN_KEY,
    FOOTER_TYPE_CODE,
    SIMPLE,
    BloomFilter,
    FilterSpec,
    KeyFooter,
)

SAMPLE = HUDI_TABLES / "sample_table" / "cow" / "v9_txns_simple_meta.zip"


def test_hudis_footers_are_the_footers_of_their_keys(tmp_path):
    """Every base file of a Hudi 1.1 table: the footer hudiql makes of its record keys (in file
    order), sized as Hudi sizes it, is Hudi's, byte for byte; Hudi's filter, read, holds every key
    and not others; sized for the file's keys (as hudiql writes it), it is a few hundred bytes."""
    table = unzip(SAMPLE, tmp_path)
    files = sorted(table.glob("region=*/*.parquet"))
    assert len(files) >= 10
    for path in files:
        stored = pq.ParquetFile(path).metadata.metadata
        keys = pq.read_table(path, columns=["_hoodie_record_key"]).column(0)
        assert KeyFooter(FilterSpec(fitted=False)).add(keys).entries() == {
            k: stored[k] for k in (FOOTER_BLOOM_FILTER, FOOTER_TYPE_CODE, FOOTER_MIN_KEY, FOOTER_MAX_KEY)
            for k in [k.encode()]}
        fitted = KeyFooter(FilterSpec()).add(keys).entries()[FOOTER_BLOOM_FILTER.encode()]
        assert len(fitted) < 300 and BloomFilter.decode(fitted, DYNAMIC_V0).contains(keys).all()
        hudis = BloomFilter.decode(stored[FOOTER_BLOOM_FILTER.encode()], DYNAMIC_V0)
        assert hudis.contains(keys).all() and not hudis.contains(["TXN-999", "nope", "TXN-0011"]).any()


def java_targets(count: int, per_vector: int, most: int) -> list[int]:
    """The vector Hadoop's dynamic filter (as Hudi bounds it) puts each of ``count`` keys in, key by key."""
    vectors, in_last, reached, index, out = 1, 0, False, 0, []
    for _ in range(count):
        if reached:
            out.append(index % vectors)
            index += 1
        elif in_last >= per_vector and vectors * per_vector < most:
            vectors, in_last = vectors + 1, 0
            out.append(vectors - 1)
        elif in_last >= per_vector:
            reached = True
            out.append(0)
        else:
            out.append(vectors - 1)
        in_last += 1
    return out


def test_a_dynamic_filter_fills_its_vectors_as_hudis_does():
    """Keys fill a vector, then a new one, up to the bound; then go round the vectors; added in
    batches or at once, the vectors are the same; every key added stays a member through a
    round trip of either type, and unknown keys are rarely members."""
    spec = FilterSpec(DYNAMIC_V0, num_entries=10, error_rate=0.01, max_entries=35)
    at_once, in_batches = spec.new(), spec.new()
    keys = [f"key-{i}" for i in range(57)]
    assert at_once._targets(57).tolist() == java_targets(57, 10, 35)
    at_once = spec.new()
    at_once.add(keys)
    for start in range(0, 57, 13):
        in_batches.add(pa.array(keys[start:start + 13]))
    assert len(at_once.vectors) == 4 and at_once.encode() == in_batches.encode()
    for type_code in (DYNAMIC_V0, SIMPLE):
        f = FilterSpec(type_code, 100, 0.001).new()
        f.add(keys + ["ümlaut-ключ", "x"])
        back = BloomFilter.decode(f.encode(), type_code)
        assert back.encode() == f.encode() and back.contains(keys + ["ümlaut-ключ", "x"]).all()
        assert back.contains([f"other-{i}" for i in range(200)]).sum() <= 4


def footers(table_path) -> dict[str, dict[bytes, bytes]]:
    return {p.name: pq.ParquetFile(p).metadata.metadata for p in table_path.glob("dt=*/*.parquet")}


def test_every_base_file_gets_its_keys_footer(session):
    """With the filter on, base files of inserts, updates, a compaction and a clustering each hold
    the bloom filter of their keys and their smallest and largest key; with it off (the default of
    a table that is not looked up by BLOOM), the keys' bounds only; Hudi's reader reads the table."""
    table_path = versioned_table(session, 9, "mor", "'hoodie.parquet.small.file.limit'='0'",
                                 "'hoodie.parquet.bloom.filter.enabled'='true'")
    session.sql("INSERT INTO t VALUES (1, 'a', 1, 'd1'), (2, 'b', 5, 'd1'), (3, 'c', 1, 'd2')")
    session.sql("INSERT INTO t VALUES (4, 'd', 2, 'd1')")
    session.sql("SET hoodie.spark.sql.insert.into.operation=upsert")
    session.sql("UPDATE t SET ts = 9 WHERE id = 2")
    session.sql("CALL run_compaction(op => 'run', table => 't')")
    session.sql("CALL run_clustering(table => 't')")
    written = footers(table_path)
    assert len(written) >= 5
    for name, stored in written.items():
        path = next(table_path.glob(f"dt=*/{name}"))
        keys = pq.read_table(path, columns=["_hoodie_record_key"]).column(0)
        f = BloomFilter.decode(stored[FOOTER_BLOOM_FILTER.encode()], stored[FOOTER_TYPE_CODE.encode()].decode())
        assert f.contains(keys).all()
        assert (stored[FOOTER_MIN_KEY.encode()], stored[FOOTER_MAX_KEY.encode()]) == (
            min(keys.to_pylist()).encode(), max(keys.to_pylist()).encode())
    session.sql("ALTER TABLE t UNSET TBLPROPERTIES ('hoodie.parquet.bloom.filter.enabled')")
    session.sql("INSERT INTO t VALUES (5, 'e', 1, 'd3')")
    [name] = set(footers(table_path)) - set(written)
    stored = footers(table_path)[name]
    assert FOOTER_BLOOM_FILTER.encode() not in stored and stored[FOOTER_MIN_KEY.encode()] == b"5"
    assert hudiql_rows(session, VERSIONED_QUERY) == official_rows(table_path, VERSIONED_COLUMNS) == [
        (1, "a", 1, "d1"), (2, "b", 9, "d1"), (3, "c", 1, "d2"), (4, "d", 2, "d1"), (5, "e", 1, "d3")]


def damage_pages(path) -> bytes:
    """Corrupt a parquet file's data pages, its footer left readable; returns what it held."""
    data = bytearray(path.read_bytes())
    kept = bytes(data)
    footer_end = len(data) - 8 - int.from_bytes(data[-8:-4], "little")
    data[4:footer_end] = bytes(b ^ 0xFF for b in data[4:footer_end])
    path.write_bytes(bytes(data))
    return kept


def test_a_bloom_index_reads_only_the_files_that_may_hold_a_key(session):
    """An upsert finds each key through the footers: a file whose key range excludes it, or whose
    bloom filter does not hold it, is never read (its pages damaged, the upsert succeeds); the
    file that holds it is; the rows are SIMPLE's, and Hudi's reader reads them."""
    table_path = versioned_table(session, 9, "cow", "'hoodie.index.type'='BLOOM'", "'hoodie.parquet.small.file.limit'='0'")
    session.sql("INSERT INTO t VALUES (1, 'a', 1, 'd1'), (5, 'e', 1, 'd1')")
    first = {p.name for p in table_path.glob("dt=d1/*.parquet")}
    session.sql("INSERT INTO t VALUES (7, 'g', 1, 'd1'), (9, 'i', 1, 'd1')")
    [second] = {p.name for p in table_path.glob("dt=d1/*.parquet")} - first
    [first] = first
    session.sql("SET hoodie.spark.sql.insert.into.operation=upsert")
    kept = damage_pages(table_path / "dt=d1" / first)  # keys 1 and 5: its range holds 3, its filter not
    session.sql("INSERT INTO t VALUES (3, 'c', 2, 'd1'), (7, 'g2', 2, 'd1')")
    (table_path / "dt=d1" / first).write_bytes(kept)
    expected = [(1, "a", 1, "d1"), (3, "c", 2, "d1"), (5, "e", 1, "d1"), (7, "g2", 2, "d1"), (9, "i", 1, "d1")]
    assert hudiql_rows(session, VERSIONED_QUERY) == official_rows(table_path, VERSIONED_COLUMNS) == expected
    damage_pages(table_path / "dt=d1" / first)
    with pytest.raises(Exception, match="(?i)parquet|corrupt|damaged|cannot be read"):
        session.sql("INSERT INTO t VALUES (5, 'e2', 3, 'd1')").collect()  # the file that holds 5 is read


def test_a_bloom_index_finds_keys_in_hudis_files(session, tmp_path):
    """On a Hudi 1.1 table, upserts through Hudi's own footers update the stored rows."""
    table_path = unzip(SAMPLE, tmp_path)
    session.sql(f"CREATE TABLE t USING hudi LOCATION '{table_path}'")
    session.sql("SET hoodie.index.type=BLOOM")
    session.sql("SET hoodie.spark.sql.insert.into.operation=upsert")
    before = official_rows(table_path, ["txn_id"])
    session.sql("INSERT INTO t SELECT txn_id, account_id, txn_ts + 1, txn_datetime, txn_date, amount, currency, "
                "'reversed', merchant_name, is_international, fee_amount, txn_metadata, region FROM t "
                "WHERE txn_id IN ('TXN-001', 'TXN-011')")
    assert official_rows(table_path, ["txn_id"]) == before
    assert hudiql_rows(session, "SELECT txn_id FROM t WHERE txn_type = 'reversed' ORDER BY txn_id") == [
        ("TXN-001",), ("TXN-011",)]
