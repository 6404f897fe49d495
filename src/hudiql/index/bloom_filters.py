"""The bloom_filters index of a table (``metadata.bloom_filters``), kept with
``hoodie.metadata.index.bloom.filter.enable``: the records a change adds to the metadata delta
commit (the filters its write tasks put in the footers of the base files they wrote, the stubs of
the base files it deleted), its build from the table's latest base files, the compaction of its
file groups, and the lookup of the filters of given files (``index.bloom``, with
``hoodie.bloom.index.use.metadata``).

The filters are metadata, but a file's can be hundreds of KB: write tasks hand them to the driver
with their stats rows (as Hudi's writers read them back from the footers); a build reads them in
Spark tasks, one per base file; lookups and compactions run in Spark tasks, one per file group.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterator

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession

from hudiql.config import registry as K
from hudiql.config.table_config import TableConfig
from hudiql.errors import unreadable_file
from hudiql.formats.bloom_filter import FilterSpec, KeyFooter, footer_filter
from hudiql.index import groups
from hudiql.index.column_stats import write_base
from hudiql.io.storage import Storage
from hudiql.layout import HFILE_EXTENSION, base_file_name, parse_data_file_name, write_token
from hudiql.metadata.bloom_filters import (
    BLOOM_FILTERS_PARTITION,
    BloomFilterSlice,
    FileFilter,
    encode_filter,
    file_group_id,
    filter_key,
)
from hudiql.metadata.records import file_group_index
from hudiql.record.keygen import KeyGenerator, record_keys_of
from hudiql.table.metadata_table import MetadataSlice, MetadataTable, valid_instants
from hudiql.table.table import HudiTable
from hudiql.timeline.commit import WriteStat

_TOKEN = write_token(0, 0, 0)
Entries = list[tuple[bytes, bytes]]
#: The rows a lookup or a build returns: a base file (its path, its partition and name) and its filter.
FILTERS_SCHEMA = "path string, filter_type string, filter string"


def wanted(table: HudiTable) -> bool:
    """Whether writes keep the bloom_filters index (``HudiTable.keeps_index``)."""
    return table.keeps_index(K.BLOOM_FILTERS_ENABLE, BLOOM_FILTERS_PARTITION)


def usable(table: HudiTable) -> bool:
    return table.has_index(BLOOM_FILTERS_PARTITION)


def _group_count(mdt: MetadataTable, table: HudiTable) -> int:
    return len(mdt.latest_slices(BLOOM_FILTERS_PARTITION)) or table.settings.number(K.BLOOM_FILTERS_FILE_GROUPS)


def _add(out: dict[str, Entries], count: int, partition: str, name: str, found: FileFilter,
         file_names: dict[str, str] | None = None) -> None:
    key = filter_key(partition, name)
    group = file_group_id(file_group_index(key, count))
    out.setdefault(group, []).append((key.encode(), encode_filter(found, (file_names or {}).get(group))))


def change_entries(table: HudiTable, mdt: MetadataTable, instant_time: str,
                   filters: dict[tuple[str, str], tuple[str, str]], deleted: dict[str, set[str]]) -> dict[str, Entries]:
    """The records a change at ``instant_time`` adds, by file group: the filters its tasks put in
    the base files they wrote (``filters``: (partition, file name) -> (type code, footer text)),
    and a stub for each base file it deleted (a clean, a rollback)."""
    count = _group_count(mdt, table)
    out: dict[str, Entries] = {}
    for (partition, name), (type_code, text) in sorted(filters.items()):
        _add(out, count, partition, name, FileFilter(type_code, instant_time, text.encode()))
    for partition, names in sorted(deleted.items()):
        for name in sorted(n for n in names if not _is_log(n)):
            _add(out, count, partition, name, FileFilter.deleted(instant_time))
    return out


def _is_log(name: str) -> bool:
    parsed = parse_data_file_name(name)
    return parsed is not None and parsed.is_log


def build(spark: SparkSession, table: HudiTable, mdt: MetadataTable, spec: FilterSpec) -> TableConfig:
    """Build the bloom_filters index of ``table`` from its latest base files (their footers' filters
    read in Spark tasks; a file whose footer has none gets one of its keys, sized by ``spec``) as
    a new partition of its metadata table ``mdt``; returns the table's config as it now is. The
    caller holds the table lock."""
    mdt.storage.delete_dir(BLOOM_FILTERS_PARTITION)  # what a build that crashed left
    files = [(s.partition_path, s.base_file, s.base_path) for s in table.file_system_view().latest_slices() if s.base_file]
    count = table.settings.number(K.BLOOM_FILTERS_FILE_GROUPS)
    instant_time = mdt.timeline.new_instant_time()
    names = {file_group_id(i): base_file_name(file_group_id(i), _TOKEN, instant_time, HFILE_EXTENSION)
             for i in range(count)}
    entries: dict[str, Entries] = {group: [] for group in names}
    if files:
        read = _FooterFilters(table.storage.base_uri, spec, None if table.config.populate_meta_fields else table.keygen)
        found = spark.createDataFrame(files, "partition string, name string, path string") \
            .repartition(max(1, min(len(files), spark.sparkContext.defaultParallelism * 4))) \
            .mapInArrow(read.udf(), f"partition string, name string, {FILTERS_SCHEMA}").collect()
        for row in found:
            _add(entries, count, row.partition, row.name, FileFilter(row.filter_type, instant_time, row.filter.encode()),
                 names)
    stats = [write_base(mdt, BLOOM_FILTERS_PARTITION, group, names[group], entries[group]) for group in sorted(names)]
    return mdt.add_partition(BLOOM_FILTERS_PARTITION, instant_time, stats)


class _FooterFilters:
    """A build task's work: the filter in each given base file's footer, or one of its keys."""

    def __init__(self, base_uri: str, spec: FilterSpec, virtual_keys: KeyGenerator | None) -> None:
        self.base_uri, self.spec, self.virtual_keys = base_uri, spec, virtual_keys

    def udf(self) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
        def filters(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            storage = Storage(self.base_uri)
            for batch in batches:
                rows = batch.to_pylist()
                for row in rows:
                    row.update(self._filter(storage, row["path"]))
                yield pa.RecordBatch.from_pylist(rows, schema=pa.schema(
                    [(n, pa.string()) for n in ("partition", "name", "path", "filter_type", "filter")]))

        return filters

    def _filter(self, storage: Storage, path: str) -> dict[str, str]:
        try:
            with storage.open_input_file(path) as f:
                parquet = pq.ParquetFile(f)
                found = footer_filter(parquet.metadata.metadata or {})
                if found:
                    return {"filter_type": found["bloom_filter_type"], "filter": found["bloom_filter"]}
                columns = self.virtual_keys.record_key_fields if self.virtual_keys else ["_hoodie_record_key"]
                keys = record_keys_of(parquet.read(columns=list(columns)), self.virtual_keys)
        except (pa.ArrowException, OSError) as exc:
            raise unreadable_file(storage.uri(path), exc) from None
        made = footer_filter(KeyFooter(self.spec).add(keys).entries())
        return {"filter_type": made["bloom_filter_type"], "filter": made["bloom_filter"]}


def compact(spark: SparkSession, mdt: MetadataTable, slices: list[MetadataSlice], compaction_time: str) -> list[WriteStat]:
    """Compact bloom_filters file groups ``slices`` into new base HFiles: one Spark task per group
    (``index.groups.compact``), the stubs of deleted files dropped."""
    return groups.compact(spark, mdt, slices, compaction_time, _merged_entries)


def _merged_entries(base: bytes | None, logs: list[tuple[str, bytes]], base_uri: str, name: str) -> Entries:
    return list(BloomFilterSlice(base, logs, base_uri).entries(name))


def file_filters(table: HudiTable, files: DataFrame) -> DataFrame:
    """The filter the index holds of each of ``files`` (``partition`` and ``path`` of base files):
    ``FILTERS_SCHEMA`` rows, a Spark job whose tasks read the index's file groups that hold
    them (a file the index has no filter of is absent)."""
    mdt = MetadataTable.load(table.storage, table.config, table.timeline)
    valid = valid_instants(table.timeline)
    slices = tuple(s.readable(valid) for _, s in sorted(mdt.latest_slices(BLOOM_FILTERS_PARTITION).items()))
    lookup = _FilterLookup(mdt.storage.base_uri, slices)
    parallel = max(1, min(len(slices), files.sparkSession.sparkContext.defaultParallelism))
    return files.repartition(parallel).mapInArrow(lookup.udf(), FILTERS_SCHEMA)


class _FilterLookup:
    """A lookup task's work: the filters of its files, from the file groups that hold them."""

    def __init__(self, mdt_uri: str, slices: tuple[MetadataSlice, ...]) -> None:
        self.mdt_uri, self.slices = mdt_uri, slices

    def udf(self) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
        def lookup(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            wanted: dict[int, dict[str, str]] = {}  # group -> key -> path
            for batch in batches:
                for row in batch.to_pylist():
                    key = filter_key(row["partition"], posixpath.basename(row["path"]))
                    wanted.setdefault(file_group_index(key, len(self.slices)), {})[key] = row["path"]
            storage = Storage(self.mdt_uri)
            out = {"path": [], "filter_type": [], "filter": []}
            for group, paths in sorted(wanted.items()):
                s = self.slices[group]
                logs = s.read_logs(storage)
                with s.ranged_base(storage) as base:
                    found = BloomFilterSlice(base, logs, storage.uri(s.path(s.base_file))).lookup(paths)
                for key, value in found.items():
                    if not value.is_deleted:
                        out["path"].append(paths[key])
                        out["filter_type"].append(value.type_code)
                        out["filter"].append(value.text.decode())
            yield pa.RecordBatch.from_pydict(out, schema=pa.schema([(n, pa.string()) for n in out]))

        return lookup

