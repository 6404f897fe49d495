"""Bloom filters in base file footers (``formats.bloom_filter``): byte for byte the ones Hudi 1.1
writes of the same keys, on every base file hudiql writes (commits, compactions, clusterings),
so that Hudi's BLOOM index finds keys in tables hudiql wrote."""

from __future__ import annotations

import pyarrow as pa
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
    order) is Hudi's, byte for byte; Hudi's filter, read, holds every key and not others."""
    table = unzip(SAMPLE, tmp_path)
    files = sorted(table.glob("region=*/*.parquet"))
    assert len(files) >= 10
    for path in files:
        stored = pq.ParquetFile(path).metadata.metadata
        keys = pq.read_table(path, columns=["_hoodie_record_key"]).column(0)
        assert KeyFooter(FilterSpec()).add(keys).entries() == {
            k: stored[k] for k in (FOOTER_BLOOM_FILTER, FOOTER_TYPE_CODE, FOOTER_MIN_KEY, FOOTER_MAX_KEY)
            for k in [k.encode()]}
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
    """Base files of inserts, updates, a compaction and a clustering each hold the bloom filter of
    their keys and their smallest and largest key; with the filter off, the keys' bounds only;
    Hudi's reader reads the table."""
    table_path = versioned_table(session, 9, "mor", "'hoodie.parquet.small.file.limit'='0'")
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
    session.sql("SET hoodie.parquet.bloom.filter.enabled=false")
    session.sql("INSERT INTO t VALUES (5, 'e', 1, 'd3')")
    [name] = set(footers(table_path)) - set(written)
    stored = footers(table_path)[name]
    assert FOOTER_BLOOM_FILTER.encode() not in stored and stored[FOOTER_MIN_KEY.encode()] == b"5"
    assert hudiql_rows(session, VERSIONED_QUERY) == official_rows(table_path, VERSIONED_COLUMNS) == [
        (1, "a", 1, "d1"), (2, "b", 9, "d1"), (3, "c", 1, "d2"), (4, "d", 2, "d1"), (5, "e", 1, "d3")]
