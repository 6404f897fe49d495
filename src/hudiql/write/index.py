"""The index: which file group stores, or receives, each incoming record (``hoodie.index.type``).

- ``SIMPLE`` (the default): incoming keys are joined with the record keys of the latest base
  files in the touched partitions. Keys found are updates of
  their file group; the others are inserts, placed by bucket assignment (``write.bucket``).
- ``BUCKET`` (Hudi's simple bucket index): a key's file group follows from the key alone.
  Bucket = (Java ``List<String>.hashCode()`` of the hash-field values ``& Integer.MAX_VALUE``)
  ``% hoodie.bucket.index.num.buckets``, and the file group of bucket b in a partition is the
  one whose file id starts with b as 8 digits. Nothing is read from storage, so a write costs
  what its rows cost, not what the table holds. Every record of a bucket that has a file group
  goes to it (a log append in a merge-on-read table); a bucket without one gets a new group.

- the record index (``hoodie.index.type=RECORD_INDEX`` or ``hoodie.metadata.record.index.enable``,
  where the metadata table has one: ``index.record_index``): incoming keys are looked up in it, one
  Spark task per index file group reading only the blocks that may hold its keys, so an upsert
  costs what its keys cost, not what the touched partitions hold. The index is global: a key stored
  in another partition than its incoming row's is refused (Hudi would update it where it is).

- ``BLOOM``: as ``SIMPLE``, but only the base files whose footers' key range and bloom filter
  may hold an incoming key are read (``index.bloom``).

The other Hudi index types are refused (``hudiql.config.registry`` says why).

Which index a table uses is its ``IndexConfig`` (``config.index_config``).
"""

from __future__ import annotations

import json

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from hudiql.config.index_config import NUM_BUCKETS, IndexConfig
from hudiql.errors import HudiqlError
from hudiql.index import bloom, record_index
from hudiql.layout import bucket_file_id, bucket_of_file_id
from hudiql.read.snapshot import SOURCE_FILE, stored_keys
from hudiql.table.fsview import FileSystemView
from hudiql.record.keygen import EMPTY_KEY, NULL_KEY, java_hash_code
from hudiql.record.schema import PARTITION_PATH, RECORD_KEY
from hudiql.table.table import HudiTable
from hudiql.write.handle import FILE_ID

#: Set on tagged rows of a bucket index: the row's bucket has no file group yet.
NEW_GROUP = "__hudiql_new_group"
_INT_RANGE = 1 << 32


def tag(
    spark: SparkSession,
    table: HudiTable,
    index: IndexConfig,
    incoming: DataFrame,
    partitions: list[str],
    view: FileSystemView,
    lookup: bool,
) -> tuple[DataFrame, int | None]:
    """``incoming`` with ``FILE_ID``, the file group storing each key, and
    how many file groups the index may start (``None``: bucket assignment decides).

    The simple index tags only keys it finds (and only when ``lookup``: upserts); the bucket
    index tags every row, and sets ``NEW_GROUP`` where the group is still to be created.
    """
    if index.is_bucket:
        return _tag_buckets(index, incoming, partitions, view)
    if lookup and record_index.usable(table) and record_index.wanted(table):
        return _tag_by_record_index(table, incoming, partitions, view), None
    slices = [s for s in view.read_slices() if s.base_file]
    if not (lookup and table.has_record_key and slices):
        return incoming.withColumn(FILE_ID, F.lit(None).cast("string")), None
    if bloom.wanted(table):
        found = bloom.located(spark, table, incoming.select(RECORD_KEY, PARTITION_PATH), slices)
        return incoming.join(found.withColumnRenamed("file_id", FILE_ID), [RECORD_KEY, PARTITION_PATH], "left"), None
    existing = stored_keys(spark, table, [s.base_path for s in slices], with_file_name=True).select(
        RECORD_KEY, PARTITION_PATH, F.regexp_extract(F.col(SOURCE_FILE), r"^([^_]+)_", 1).alias(FILE_ID)
    )
    # Inner join first: Spark may broadcast the (small) batch keys instead of shuffling every
    # stored key; the left join of the batch with the matches is then small on both sides.
    keys = incoming.select(RECORD_KEY, PARTITION_PATH)
    matches = existing.join(keys, [RECORD_KEY, PARTITION_PATH])
    return incoming.join(matches, [RECORD_KEY, PARTITION_PATH], "left"), None


def _tag_by_record_index(table: HudiTable, incoming: DataFrame, partitions: list[str], view: FileSystemView) -> DataFrame:
    """``incoming`` with ``FILE_ID`` from the record index (null for a new key)."""
    found = record_index.RecordIndex.of(table).tag(incoming.select(RECORD_KEY))
    tagged = incoming.join(found, RECORD_KEY, "left")
    stored = F.col(record_index.LOCATED_PARTITION)
    groups = sorted({s.file_id for s in view.latest_slices()})
    # An entry of a file group the view no longer holds, in a partition it covers, is no location
    # (the index may keep a deleted key's last place).
    held = F.col(record_index.LOCATED_FILE_ID).isin(groups) if groups else F.lit(False)
    covered = stored.isin(partitions) if partitions else F.lit(False)
    same = stored == F.col(PARTITION_PATH)
    moved = stored.isNotNull() & ~same & (held | ~covered)
    refusal = F.concat(
        F.lit("hudiql.errors.DataError: record key "), F.col(RECORD_KEY), F.lit(" is stored in partition '"), stored,
        F.lit("' and arrives in partition '"), F.col(PARTITION_PATH),
        F.lit("'; the record index is global, so a key keeps its partition: delete the row first, then insert it "
              "(if no row has the key, the index lags a delete: CALL delete_metadata_table, and the next write "
              "builds it again)"))
    return tagged.select(
        *incoming.columns,
        F.when(moved, F.raise_error(refusal)).when(same & held, F.col(record_index.LOCATED_FILE_ID)).alias(FILE_ID),
    )


def _tag_buckets(
    index: IndexConfig, incoming: DataFrame, partitions: list[str], view: FileSystemView
) -> tuple[DataFrame, int]:
    groups: dict[str, list[dict]] = {}  # per partition, per bucket: its file group
    for partition in partitions:
        existing: dict[int, str] = {}
        for s in view.latest_slices(partition):
            bucket = bucket_of_file_id(s.file_id)
            if bucket is None or bucket >= index.num_buckets:
                raise HudiqlError(
                    f"file group {s.file_id} in partition '{partition}' is not one of the table's "
                    f"{index.num_buckets} buckets ({NUM_BUCKETS}); the bucket count of a table cannot change"
                )
            if bucket in existing:
                raise HudiqlError(f"partition '{partition}' has two file groups for bucket {bucket}: {existing[bucket]} and {s.file_id}")
            existing[bucket] = s.file_id
        groups[partition] = [
            {"file_id": existing.get(bucket, bucket_file_id(bucket)), "new": bucket not in existing}
            for bucket in range(index.num_buckets)
        ]
    located = plan_constant(groups, "map<string, array<struct<file_id: string, new: boolean>>>")
    bucket = bucket_id(F.col(RECORD_KEY), index.hash_fields, index.num_buckets)
    group = F.element_at(F.try_element_at(located, F.col(PARTITION_PATH)), bucket + 1)
    missing = sum(1 for slots in groups.values() for slot in slots if slot["new"])
    return incoming.withColumn(FILE_ID, group["file_id"]).withColumn(NEW_GROUP, group["new"]), missing


def plan_constant(value: object, spark_type: str) -> Column:
    """``value`` (made on the driver, JSON-able) as one constant of the query plan, of
    ``spark_type``: Spark folds the parsed literal, and a lookup into it runs no Spark job, where
    a join with a frame made on the driver runs one to broadcast it."""
    return F.from_json(F.lit(json.dumps(value)), spark_type)


def bucket_id(record_key: Column, hash_fields: tuple[str, ...], num_buckets: int) -> Column:
    """Hudi's bucket of a record key, as Hudi 0.14 / 0.15 compute it.

    A key without ``:`` (one key field) hashes as itself; a complex key ``a:1,b:2`` hashes the
    values of the hash fields, in key order (``__null__`` as null, ``__empty__`` as "").
    """
    fields = F.array(*[F.lit(f) for f in hash_fields])
    pairs = F.transform(F.split(record_key, ","), lambda part: F.split(part, ":", 2))
    kept = F.filter(pairs, lambda kv: (F.size(kv) == 1) | F.array_contains(fields, kv[0]))
    values = F.transform(
        kept,
        lambda kv: F.when(F.size(kv) == 1, kv[0])
        .when(kv[1] == NULL_KEY, F.lit(None).cast("string"))
        .when(kv[1] == EMPTY_KEY, F.lit(""))
        .otherwise(kv[1]),
    )
    hash_keys = F.when(F.instr(record_key, ":") == 0, F.array(record_key)).otherwise(values)
    # List.hashCode(): h = 31 * h + element hash, from 1; int arithmetic kept as longs mod 2^32.
    list_hash = F.aggregate(
        hash_keys, F.lit(1).cast("long"), lambda h, s: (h * 31 + java_string_hash(s)) % _INT_RANGE
    )
    return (list_hash.bitwiseAND(0x7FFFFFFF) % num_buckets).cast("int")


def java_string_hash(text: Column) -> Column:
    """Java's ``String.hashCode()`` (0 for null) as an unsigned 32-bit value in a long."""
    return F.pmod(java_hash_code(text), F.lit(_INT_RANGE))
