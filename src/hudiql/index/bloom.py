"""The BLOOM index (``hoodie.index.type=BLOOM``) and the bloom filters it reads: which filter a write
puts in each base file's footer (``hoodie.parquet.bloom.filter.enabled`` and Hudi's sizing
options, ``formats.bloom_filter``), and the lookup that finds each incoming key's file group by
them, as Hudi's ``HoodieBloomIndex`` does.

A lookup is one Spark job: tasks read each latest base file's footer for its smallest and largest
key; incoming keys are joined with the files of their partition whose key range holds them; then a
task per candidate file tests its keys against the file's bloom filter and reads the file's keys
only when one may be there, to confirm. A file whose footer has no range or no filter (written
before hudiql wrote them, or with the filter off) is a candidate for every key of its partition
and is read. Like ``SIMPLE``, the index is not global: a key is looked up in its own partition;
``GLOBAL_BLOOM`` looks it up in every partition (``write.index``).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from hudiql.config import registry as K
from hudiql.errors import unreadable_file
from hudiql.file_group import FileSlice
from hudiql.formats.bloom_filter import (
    FOOTER_BLOOM_FILTER,
    FOOTER_MAX_KEY,
    FOOTER_MIN_KEY,
    FOOTER_TYPE_CODE,
    SIMPLE,
    BloomFilter,
    FilterSpec,
)
from hudiql.index import bloom_filters, column_stats
from hudiql.io.storage import Storage
from hudiql.record.keygen import KeyGenerator, record_keys_of
from hudiql.record.schema import PARTITION_PATH, RECORD_KEY
from hudiql.table.table import HudiTable

BLOOM_INDEX = "BLOOM"
_RANGES = "partition string, file_id string, path string, min_key string, max_key string"
_FOUND = f"{RECORD_KEY} string, {PARTITION_PATH} string, file_id string"


def filter_spec(table: HudiTable) -> FilterSpec | None:
    """The bloom filter the table's base files get: as ``hoodie.parquet.bloom.filter.enabled``
    says; when it says nothing, when the table's keys are looked up by it (``BLOOM``) or its
    metadata table keeps the filters (``index.bloom_filters``). None: their
    footers hold the smallest and largest key only (hashing every key written costs about 0.1 s per
    100,000 keys, which Hudi's documentation also advises saving where no BLOOM index reads them)."""
    s = table.settings
    if not (s.flag(K.BLOOM_FILTER_ENABLE) if K.BLOOM_FILTER_ENABLE in s else wanted(table) or bloom_filters.wanted(table)):
        return None
    return FilterSpec(s.choice(K.BLOOM_FILTER_TYPE), s.number(K.BLOOM_NUM_ENTRIES), s.fraction(K.BLOOM_FPP),
                      s.number(K.BLOOM_MAX_ENTRIES))


def wanted(table: HudiTable) -> bool:
    """Whether the statement's settings ask key lookups to use bloom filters (BLOOM, GLOBAL_BLOOM)."""
    return table.settings.choice(K.INDEX_TYPE) in (BLOOM_INDEX, K.GLOBAL_BLOOM_INDEX)


def located(spark: SparkSession, table: HudiTable, keys: DataFrame, slices: list[FileSlice],
            any_partition: bool = False) -> DataFrame:
    """(record key, partition path, file id) of each of ``keys`` (record key, partition path) that
    a base file of ``slices`` holds; ``any_partition`` (GLOBAL_BLOOM): ``keys`` are record keys
    only, looked up in every partition's files, and the partition path is the file's.

    With ``hoodie.bloom.index.use.metadata``, the key ranges come from the metadata table's column
    stats and the filters from its bloom_filters, where it keeps them: only the files whose filter
    may hold a key are opened."""
    from_metadata = table.settings.flag(K.BLOOM_USE_METADATA)
    ranges = _metadata_ranges(spark, table, slices) if from_metadata and _ranges_kept(table) else None
    if ranges is None:
        files = spark.createDataFrame([(s.partition_path, s.file_id, s.base_path) for s in slices],
                                      "partition string, file_id string, path string")
        ranges = files.repartition(max(1, min(len(slices), spark.sparkContext.defaultParallelism * 4))) \
            .mapInArrow(_key_ranges(table.storage.base_uri), _RANGES)
    within = (F.col("min_key").isNull() | F.col(RECORD_KEY).between(F.col("min_key"), F.col("max_key")))
    if any_partition:
        candidates = keys.join(ranges, within).select(RECORD_KEY, F.col("partition").alias(PARTITION_PATH),
                                                      "file_id", "path")
    else:
        candidates = keys.join(ranges, (keys[PARTITION_PATH] == ranges["partition"]) & within) \
            .select(RECORD_KEY, PARTITION_PATH, "file_id", "path")
    check = _CandidateCheck(table.storage.base_uri, None if table.config.populate_meta_fields else table.keygen)
    if not (from_metadata and bloom_filters.usable(table)):
        return candidates.groupBy("path").applyInArrow(check.udf(), _FOUND)
    # Each file's filter meets its candidates once, in the task that checks them (a filter can be
    # hundreds of KB: it does not ride on every candidate row).
    files = spark.createDataFrame([(s.partition_path, s.base_path) for s in slices], "partition string, path string")
    filters = bloom_filters.file_filters(table, files)
    return candidates.groupBy("path").cogroup(filters.groupBy("path")).applyInArrow(check.with_filters(), _FOUND)


def _ranges_kept(table: HudiTable) -> bool:
    """Whether the table's column stats range the record key of its base files."""
    return column_stats.usable(table) and RECORD_KEY in column_stats.columns(table)


def _metadata_ranges(spark: SparkSession, table: HudiTable, slices: list[FileSlice]) -> DataFrame:
    """``_RANGES`` of the base files of ``slices`` from the table's column stats (on the driver:
    one record per file); a file they have no range of gets none (a candidate for every key)."""
    found = column_stats.file_ranges(table, [RECORD_KEY], sorted({s.partition_path for s in slices}))
    rows = []
    for s in slices:
        key_range = found.get(s.base_file, {}).get(RECORD_KEY)
        known = key_range is not None and key_range.min is not None and key_range.max is not None
        rows.append((s.partition_path, s.file_id, s.base_path, key_range.min if known else None,
                     key_range.max if known else None))
    return spark.createDataFrame(rows, _RANGES)


def _key_ranges(base_uri: str):
    """Per base file (a row of partition, file id, path): its footer's smallest and largest key."""
    def ranges(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        storage = Storage(base_uri)
        for batch in batches:
            rows = batch.to_pylist()
            for row in rows:
                footer = _footer(storage, row["path"])
                low, high = footer.get(FOOTER_MIN_KEY.encode()), footer.get(FOOTER_MAX_KEY.encode())
                row["min_key"] = low.decode() if low is not None and high is not None else None
                row["max_key"] = high.decode() if low is not None and high is not None else None
            yield pa.RecordBatch.from_pylist(rows, schema=pa.schema(
                [(n, pa.string()) for n in ("partition", "file_id", "path", "min_key", "max_key")]))
    return ranges


def _maybe_held(candidates: pa.Table, text: str | bytes, type_code: str) -> pa.Table:
    """The candidates whose keys filter ``text`` may hold (all of them when it cannot be read)."""
    try:
        maybe = BloomFilter.decode(text, type_code).contains(candidates.column(RECORD_KEY))
    except (ValueError, struct.error):
        return candidates
    return candidates.filter(pa.array(maybe))


def _footer(storage: Storage, path: str) -> dict[bytes, bytes]:
    try:
        with storage.open_input_file(path) as f:
            return pq.ParquetFile(f).metadata.metadata or {}
    except (pa.ArrowException, OSError) as exc:
        raise unreadable_file(storage.uri(path), exc) from None


class _CandidateCheck:
    """A task's work per candidate file: the keys its bloom filter may hold, confirmed by its keys."""

    def __init__(self, base_uri: str, virtual_keys: KeyGenerator | None) -> None:
        self.base_uri, self.virtual_keys = base_uri, virtual_keys

    def udf(self):
        """For ``applyInArrow``: one file's candidates in, its found keys out."""
        def check(candidates: pa.Table) -> pa.Table:
            return self.found(candidates)
        return check

    def with_filters(self):
        """For a cogrouped ``applyInArrow``: one file's candidates and the metadata table's filter
        of it (``bloom_filters.FILTERS_SCHEMA``; none when it has none) in, its found keys out."""
        def check(candidates: pa.Table, filters: pa.Table) -> pa.Table:
            given = (filters.column("filter")[0].as_py(), filters.column("filter_type")[0].as_py()) \
                if filters.num_rows else None
            return self.found(candidates, given)
        return check

    def found(self, candidates: pa.Table, given: tuple[str, str] | None = None) -> pa.Table:
        """The candidate keys the file holds: those its filter may hold, confirmed by its keys (a
        filter hudiql cannot read is no filter: the file's keys decide). The filter is ``given``
        (the metadata table's: text, type code) or the footer's; a file whose filter rules every
        key out is not opened."""
        if given is not None:
            candidates = _maybe_held(candidates, *given)
        if not candidates.num_rows:
            return pa.table({name: pa.array([], pa.string()) for name in (RECORD_KEY, PARTITION_PATH, "file_id")})
        storage = Storage(self.base_uri)
        path = candidates.column("path")[0].as_py()
        try:
            with storage.open_input_file(path) as f:
                parquet = pq.ParquetFile(f)
                footer = parquet.metadata.metadata or {}
                stored_filter = footer.get(FOOTER_BLOOM_FILTER.encode())
                if given is None and stored_filter is not None:
                    type_code = footer.get(FOOTER_TYPE_CODE.encode(), b"").decode() or SIMPLE
                    candidates = _maybe_held(candidates, stored_filter, type_code)
                if candidates.num_rows:
                    wanted = self.virtual_keys.record_key_fields if self.virtual_keys else [RECORD_KEY]
                    stored = record_keys_of(parquet.read(columns=list(wanted)), self.virtual_keys)
                    candidates = candidates.filter(pc.is_in(candidates.column(RECORD_KEY), value_set=stored))
        except (pa.ArrowException, OSError) as exc:
            raise unreadable_file(storage.uri(path), exc) from None
        return pa.table({RECORD_KEY: candidates.column(RECORD_KEY), PARTITION_PATH: candidates.column(PARTITION_PATH),
                         "file_id": candidates.column("file_id")})
