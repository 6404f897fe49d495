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
  costs what its keys cost, not what the touched partitions hold. The index is global (below).

- ``BLOOM``: as ``SIMPLE``, but only the base files whose footers' key range and bloom filter
  may hold an incoming key are read (``index.bloom``).

- ``GLOBAL_SIMPLE``, ``GLOBAL_BLOOM``: as ``SIMPLE`` and ``BLOOM``, but a key is looked up in
  every partition, so the table keeps each key once. An upsert of a key stored in another partition
  than its incoming row's is, as in Hudi's ``HoodieIndexUtils``: with the index's
  ``*.update.partition.path`` true (GLOBAL_SIMPLE's and GLOBAL_BLOOM's default), a delete where it
  is stored plus an insert in the new partition, unless the stored row wins by the merge rule (an
  ordering value the incoming row's does not reach: then the row stays, as the merge keeps it);
  false (the record index's default), an update where it is stored (the row keeps its partition;
  its partition column takes the incoming value, as in Hudi). A delete deletes the key where it is
  stored. Inserts and bulk inserts look nothing up, as in Hudi. A table without partitions is
  the same either way.

Which index a table uses is its ``IndexConfig`` (``config.index_config``).
"""

from __future__ import annotations

import json

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import Window
from pyspark.sql import functions as F

from hudiql.config import registry as K
from hudiql.config.index_config import NUM_BUCKETS, IndexConfig
from hudiql.errors import HudiqlError
from hudiql.index import bloom, record_index
from hudiql.layout import bucket_file_id, bucket_of_file_id
from hudiql.read.snapshot import SOURCE_FILE, snapshot, stored_keys
from hudiql.table.fsview import FileSystemView
from hudiql.record.keygen import EMPTY_KEY, NULL_KEY, java_hash_code
from hudiql.record.schema import IS_DELETED, PARTITION_PATH, RECORD_KEY, field_root
from hudiql.table.table import HudiTable
from hudiql.write.handle import DELETE, FILE_ID

#: Set on tagged rows of a bucket index: the row's bucket has no file group yet.
NEW_GROUP = "__hudiql_new_group"
# A global lookup's columns: where a key is stored, its stored ordering value, and the decisions.
STORED_PARTITION = "__hudiql_stored_partition"
STORED_ORDERING = "__hudiql_stored_ordering"
_HERE, _FIRST = "__hudiql_here", "__hudiql_first"
_INT_RANGE = 1 << 32


def tag(
    spark: SparkSession,
    table: HudiTable,
    index: IndexConfig,
    incoming: DataFrame,
    partitions: list[str],
    view: FileSystemView,
    lookup: bool,
    logs_start_groups: bool = False,
) -> tuple[DataFrame, int | None]:
    """``incoming`` with ``FILE_ID``, the file group storing each key, and
    how many file groups the index may start (``None``: bucket assignment decides).

    The simple index tags only keys it finds (and only when ``lookup``: upserts); the bucket
    index tags every row, and sets ``NEW_GROUP`` where the group is still to be created.
    ``logs_start_groups`` (non-blocking concurrency control): a bucket without a file group is
    started by the write's log file, as an update of its fixed file id, not as a new group.
    """
    if index.is_bucket:
        return _tag_buckets(index, incoming, partitions, view, K.is_non_blocking(table.settings),
                            logs_start_groups)
    if lookup and _uses_record_index(table):
        return _placed(table, incoming, _located_by_record_index(table, incoming, view), view), None
    slices = [s for s in view.read_slices() if s.base_file]
    if not (lookup and table.has_record_key and slices):
        return incoming.withColumn(FILE_ID, F.lit(None).cast("string")), None
    if is_global(table):
        return _placed(table, incoming, _located_globally(spark, table, incoming, view, slices), view), None
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


def is_global(table: HudiTable) -> bool:
    """Whether upserts look a key up in every partition (GLOBAL_SIMPLE, GLOBAL_BLOOM, the record
    index), on a partitioned table: the write's file system view must then hold every partition,
    and rows of one key combine whatever their partition (as Hudi's write helper dedups them)."""
    if not (table.has_record_key and table.keygen.is_partitioned) or table.index.is_bucket:
        return False
    return _uses_record_index(table) or table.settings.choice(K.INDEX_TYPE) in (K.GLOBAL_SIMPLE_INDEX,
                                                                                 K.GLOBAL_BLOOM_INDEX)


def moves_keys(table: HudiTable) -> bool:
    """With a global index: whether an upsert of a key stored in another partition moves it there
    (the index's ``*.update.partition.path``), else updates it where it is stored."""
    kind = table.settings.choice(K.INDEX_TYPE)
    if kind == K.GLOBAL_BLOOM_INDEX:
        return table.settings.flag(K.BLOOM_UPDATE_PARTITION_PATH)
    if kind == K.GLOBAL_SIMPLE_INDEX:
        return table.settings.flag(K.SIMPLE_UPDATE_PARTITION_PATH)
    return table.settings.flag(K.RECORD_INDEX_UPDATE_PARTITION_PATH)


def _uses_record_index(table: HudiTable) -> bool:
    return record_index.usable(table) and record_index.wanted(table)


def _located_by_record_index(table: HudiTable, incoming: DataFrame, view: FileSystemView) -> DataFrame:
    """(record key, ``STORED_PARTITION``, ``FILE_ID``) of the incoming keys the record index
    holds. An entry of a file group the view no longer holds is no location: the index may keep a
    deleted key's last place. (``view`` holds every partition of a partitioned table.)"""
    found = record_index.RecordIndex.of(table).tag(incoming.select(RECORD_KEY))
    groups = sorted({s.file_id for s in view.latest_slices()})
    held = F.col(record_index.LOCATED_FILE_ID).isin(groups) if groups else F.lit(False)
    return found.where(held).select(RECORD_KEY, F.col(record_index.LOCATED_PARTITION).alias(STORED_PARTITION),
                                    F.col(record_index.LOCATED_FILE_ID).alias(FILE_ID))


def _located_globally(spark: SparkSession, table: HudiTable, incoming: DataFrame, view: FileSystemView,
                      slices: list) -> DataFrame:
    """(record key, ``STORED_PARTITION``, ``FILE_ID``[, ``STORED_ORDERING``]) of the incoming keys
    stored in any partition: GLOBAL_BLOOM through the base files' footers, GLOBAL_SIMPLE by reading
    every latest slice's keys (merged with its logs, as Hudi reads the existing records)."""
    keys = incoming.select(RECORD_KEY)
    if bloom.wanted(table):
        found = bloom.located(spark, table, keys, slices, any_partition=True)
        return found.select(RECORD_KEY, F.col(PARTITION_PATH).alias(STORED_PARTITION), F.col("file_id").alias(FILE_ID))
    ordering = table.merge_rule.ordering_field if table.merge_rule.is_event_time and moves_keys(table) else None
    found = stored_rows(table, view, ordering).join(keys, RECORD_KEY, "left_semi")
    return found.select(RECORD_KEY, F.col(PARTITION_PATH).alias(STORED_PARTITION),
                        F.regexp_extract(F.col(SOURCE_FILE), r"^([^_]+)", 1).alias(FILE_ID),
                        *([F.col(ordering).alias(STORED_ORDERING)] if ordering else []))


def _placed(table: HudiTable, incoming: DataFrame, located: DataFrame, view: FileSystemView) -> DataFrame:
    """``incoming`` with ``FILE_ID``, placed by where ``located`` (see ``_located_globally``)
    says its keys are stored, by the rules of a global index (module docstring). A moved key is a
    ``DELETE`` row where it is stored plus an insert; a key stored in several partitions (inserts
    may write one twice) is kept once: the copy in the incoming row's partition is updated, and
    with moves the others are deleted, else each is updated where it is."""
    stored = F.col(STORED_PARTITION)
    if not table.keygen.is_partitioned:
        return incoming.join(located.drop(STORED_PARTITION, STORED_ORDERING), RECORD_KEY, "left")
    rows = incoming.join(located, RECORD_KEY, "left")
    elsewhere = stored.isNotNull() & (stored != F.col(PARTITION_PATH))
    deleting = F.coalesce(F.col(DELETE), F.lit(False)) if DELETE in incoming.columns else F.lit(False)
    if IS_DELETED in incoming.columns:
        deleting = deleting | F.coalesce(F.col(IS_DELETED), F.lit(False))
    moves = moves_keys(table)
    rule = table.merge_rule
    if moves and rule.is_event_time and STORED_ORDERING not in rows.columns:
        rows = rows.join(_stored_ordering(table, view), [RECORD_KEY, STORED_PARTITION], "left")
    wins = rule.incoming_wins_column(F.col(STORED_ORDERING), F.col(rule.ordering_field)) if (
        moves and rule.is_event_time) else F.lit(True)
    placed = rows.select(
        *[c for c in incoming.columns if c not in (PARTITION_PATH, DELETE)],
        F.when(elsewhere, stored).otherwise(F.col(PARTITION_PATH)).alias(PARTITION_PATH),
        (deleting | (elsewhere & wins)).alias(DELETE) if moves else deleting.alias(DELETE),
        F.col(FILE_ID),
    )
    if not moves:
        return placed
    # The moved row's insert, once per key, unless a copy is stored in its partition already.
    by_key = Window.partitionBy(RECORD_KEY)
    moved = elsewhere & ~deleting & wins
    here = F.max(F.coalesce(stored == F.col(PARTITION_PATH), F.lit(False)).cast("int")).over(by_key) == 1
    first = F.row_number().over(by_key.orderBy(moved.desc(), stored)) == 1
    inserts = rows.withColumn(_HERE, here).withColumn(_FIRST, first).where(moved & F.col(_FIRST) & ~F.col(_HERE)).select(
        *[c for c in incoming.columns if c != DELETE], F.lit(False).alias(DELETE), F.lit(None).cast("string").alias(FILE_ID))
    return placed.unionByName(inserts)


def _stored_ordering(table: HudiTable, view: FileSystemView) -> DataFrame:
    """(record key, ``STORED_PARTITION``, ``STORED_ORDERING``) of every stored row: a moved key's
    stored ordering value decides whether it moves (read only where the lookup did not read it)."""
    ordering = table.merge_rule.ordering_field
    rows = stored_rows(table, view, ordering)
    return rows.select(RECORD_KEY, F.col(PARTITION_PATH).alias(STORED_PARTITION), F.col(ordering).alias(STORED_ORDERING))


def stored_rows(table: HudiTable, view: FileSystemView, ordering: str | None) -> DataFrame:
    """Record key, partition path, ``SOURCE_FILE`` (and the ordering field's column) of every row
    of the latest slices, merged with their logs; derived by the key generator on a table without
    meta fields."""
    spark = SparkSession.getActiveSession()
    extra = [field_root(ordering)] if ordering else []
    if table.config.populate_meta_fields:
        return snapshot(spark, table, view, columns=[RECORD_KEY, PARTITION_PATH, *extra], with_file_name=True)
    keygen = table.keygen
    roots = list(dict.fromkeys(field_root(f) for f in [*keygen.record_key_fields, *keygen.partition_fields, *extra]))
    rows = snapshot(spark, table, view, columns=roots, with_file_name=True)
    return rows.select(keygen.record_key().alias(RECORD_KEY), keygen.partition_path(table.schema).alias(PARTITION_PATH),
                       SOURCE_FILE, *extra)


def _tag_buckets(
    index: IndexConfig, incoming: DataFrame, partitions: list[str], view: FileSystemView, fixed_ids: bool,
    logs_start_groups: bool,
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
            {"file_id": existing.get(bucket) or _new_bucket_file_id(partition, bucket, fixed_ids, view.replaced),
             "new": bucket not in existing and not logs_start_groups}
            for bucket in range(index.num_buckets)
        ]
    located = plan_constant(groups, "map<string, array<struct<file_id: string, new: boolean>>>")
    bucket = bucket_id(F.col(RECORD_KEY), index.hash_fields, index.num_buckets)
    group = F.element_at(F.try_element_at(located, F.col(PARTITION_PATH)), bucket + 1)
    missing = sum(1 for slots in groups.values() for slot in slots if slot["new"])
    return incoming.withColumn(FILE_ID, group["file_id"]).withColumn(NEW_GROUP, group["new"]), missing


def _new_bucket_file_id(partition: str, bucket: int, fixed: bool, replaced: set[tuple[str, str]]) -> str:
    """The id of a bucket's new file group: random, or ``fixed`` (non-blocking concurrency
    control), past the fixed ids of the bucket's groups a replacecommit replaced in the
    partition: a group of a replaced id would stay hidden from readers."""
    generation = 0
    while fixed and (partition, bucket_file_id(bucket, True, generation)) in replaced:
        generation += 1
    return bucket_file_id(bucket, fixed, generation)


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
