"""Every ``hoodie.*`` option hudiql knows: the ones it implements, and Hudi's that it does not.

The one place that says, for each option key, its default, where it may be given (a table
option of CREATE TABLE ``TBLPROPERTIES`` / ``OPTIONS`` / ``WITH``, a session ``SET k=v``, or
both), the values it takes, and whether ``ALTER TABLE ... SET/UNSET TBLPROPERTIES`` may change
it after the table is created. A key hudiql does not implement is refused with what hudiql
does instead, unless the value asks for what hudiql does anyway (``hoodie.table.cdc.enabled=false``);
a key whose only effect is speed or file layout is accepted with a one-line warning. Any other
``hoodie.*`` key is a typo: the error names the closest implemented key.

Example:
    >>> validate_table_options({"primaryKey": "id", "hoodie.parquet.max.file.size": "big"})
    Traceback (most recent call last):
    ...
    hudiql.errors.OptionError: hoodie.parquet.max.file.size=big is not valid; give a whole number of bytes, at least 1 (default 125829120)
    >>> validate_session_option("hoodie.metadata.enable", "false")
    []
    >>> validate_session_option("hoodie.upsert.shuffle.parallelism", "200")
    ['hoodie.upsert.shuffle.parallelism is ignored: Spark chooses how many tasks a write runs (spark.sql.shuffle.partitions)']
    >>> is_alterable("hoodie.parquet.max.file.size"), is_alterable("hoodie.table.recordkey.fields")
    (True, False)
    >>> setting({}, NUM_BUCKETS)
    '256'
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Mapping

from hudiql.config import table_config as C
from hudiql.errors import OptionError, closest
from hudiql.formats import bloom_filter

TABLE = "table"
SESSION = "session"
BOTH = "table or session"

# Kinds of value.
TEXT = "text"
COLUMNS = "columns"
ENUM = "enum"
BOOL = "bool"
INT = "int"
MEGABYTES = "megabytes"
FRACTION = "fraction"  # a number between 0 and 1, both excluded
#: Written by hudiql from the statement itself (name, schema, ...); never given.
WRITTEN = "written"

# ---- implemented keys, named once ------------------------------------------------------------------
# Keys of hoodie.properties are named in config.table_config; the others here.
RECORD_KEY_OPTION = "hoodie.datasource.write.recordkey.field"
PARTITION_OPTION = "hoodie.datasource.write.partitionpath.field"
PRECOMBINE_OPTION = "hoodie.datasource.write.precombine.field"
PAYLOAD_OPTION = "hoodie.datasource.write.payload.class"
TABLE_TYPE_OPTION = "hoodie.datasource.write.table.type"
KEYGEN_OPTION = "hoodie.datasource.write.keygenerator.class"
WRITE_TABLE_VERSION = "hoodie.write.table.version"
PAYLOAD_ORDERING_FIELD = C.PAYLOAD_ORDERING_FIELD
TIMESTAMP_INPUT_FORMAT = "hoodie.keygen.timebased.input.dateformat"

INDEX_TYPE = "hoodie.index.type"
BUCKET_ENGINE = "hoodie.index.bucket.engine"
NUM_BUCKETS = "hoodie.bucket.index.num.buckets"
HASH_FIELD = "hoodie.bucket.index.hash.field"

MAX_FILE_SIZE = "hoodie.parquet.max.file.size"
SMALL_FILE_LIMIT = "hoodie.parquet.small.file.limit"
COMPRESSION = "hoodie.parquet.compression.codec"
BLOOM_FILTER_ENABLE = "hoodie.parquet.bloom.filter.enabled"
BLOOM_FILTER_TYPE = "hoodie.bloom.index.filter.type"
BLOOM_NUM_ENTRIES = "hoodie.index.bloom.num_entries"
BLOOM_FPP = "hoodie.index.bloom.fpp"
BLOOM_MAX_ENTRIES = "hoodie.bloom.index.filter.dynamic.max.entries"
RECORD_SIZE_ESTIMATE = "hoodie.copyonwrite.record.size.estimate"
LOG_BLOCK_FORMAT = "hoodie.logfile.data.block.format"
WRITE_BATCH_SIZE = "write.batch.size"
WRITE_TASK_MAX_SIZE = "write.task.max.size"

INLINE_COMPACT = "hoodie.compact.inline"
TRIGGER_STRATEGY = "hoodie.compact.inline.trigger.strategy"
MAX_DELTA_COMMITS = "hoodie.compact.inline.max.delta.commits"
MAX_DELTA_SECONDS = "hoodie.compact.inline.max.delta.seconds"

CLEAN_AUTOMATIC = "hoodie.clean.automatic"
CLEANER_POLICY = "hoodie.cleaner.policy"
CLEANER_COMMITS_RETAINED = "hoodie.cleaner.commits.retained"
CLEANER_FILE_VERSIONS_RETAINED = "hoodie.cleaner.fileversions.retained"
CLEANER_HOURS_RETAINED = "hoodie.cleaner.hours.retained"
CLEANER_INCREMENTAL = "hoodie.cleaner.incremental.mode"
CLEAN_TRIGGER_STRATEGY = "hoodie.clean.trigger.strategy"
CLEAN_MAX_COMMITS = "hoodie.clean.max.commits"
ARCHIVE_AUTOMATIC = "hoodie.archive.automatic"
KEEP_MIN_COMMITS = "hoodie.keep.min.commits"
KEEP_MAX_COMMITS = "hoodie.keep.max.commits"
ARCHIVAL_BATCH = "hoodie.commits.archival.batch"

METADATA_ENABLE = "hoodie.metadata.enable"
METADATA_COMPACT_MAX_DELTA_COMMITS = "hoodie.metadata.compact.max.delta.commits"
RECORD_INDEX_ENABLE = "hoodie.metadata.record.index.enable"
RECORD_INDEX_MIN_FILE_GROUPS = "hoodie.metadata.record.index.min.filegroup.count"
RECORD_INDEX_MAX_FILE_GROUPS = "hoodie.metadata.record.index.max.filegroup.count"
COLUMN_STATS_ENABLE = "hoodie.metadata.index.column.stats.enable"
COLUMN_STATS_COLUMNS = "hoodie.metadata.index.column.stats.column.list"
PARTITION_STATS_ENABLE = "hoodie.metadata.index.partition.stats.enable"
BLOOM_FILTERS_ENABLE = "hoodie.metadata.index.bloom.filter.enable"
BLOOM_FILTERS_FILE_GROUPS = "hoodie.metadata.index.bloom.filter.file.group.count"
BLOOM_USE_METADATA = "hoodie.bloom.index.use.metadata"
DATA_SKIPPING = "hoodie.enable.data.skipping"

CONCURRENCY_MODE = "hoodie.write.concurrency.mode"
FAILED_WRITES_POLICY = "hoodie.cleaner.policy.failed.writes"
LOCK_PROVIDER = "hoodie.write.lock.provider"
LOCK_WAIT_MS = "hoodie.write.lock.wait_time_ms"
LOCK_RETRY_WAIT_MS = "hoodie.write.lock.wait_time_ms_between_retry"
LOCK_EXPIRE_MINUTES = "hoodie.write.lock.filesystem.expire"
CONFLICT_RETRIES = "hoodie.write.num.retries.on.conflict.failures"
HEARTBEAT_INTERVAL_MS = "hoodie.client.heartbeat.interval_in_ms"
HEARTBEAT_MISSES = "hoodie.client.heartbeat.tolerable.misses"

INSERT_INTO_OPERATION = "hoodie.spark.sql.insert.into.operation"
OVERWRITE_MODE = "hoodie.datasource.overwrite.mode"
SPARK_OVERWRITE_MODE = "spark.sql.sources.partitionOverwriteMode"
WRITE_OPERATION = "hoodie.datasource.write.operation"
COMBINE_BEFORE_INSERT = "hoodie.combine.before.insert"
ALLOW_DUPLICATE_ON_INSERTS = "hoodie.merge.allow.duplicate.on.inserts"
SCHEMA_ON_READ = "hoodie.schema.on.read.enable"
INSERT_DUP_POLICY = "hoodie.datasource.insert.dup.policy"
#: Hudi's data source spelling of the table's name (``hoodie.table.name``): df.write.format("hudi") takes
#: either; CREATE TABLE names the table itself.
WRITE_TABLE_NAME = "hoodie.datasource.write.table.name"
QUERY_TYPE = "hoodie.datasource.query.type"
#: A name registered over an existing merge-on-read table that reads its base files only.
QUERY_AS_RO_TABLE = "hoodie.query.as.ro.table"
AS_OF_INSTANT = "hoodie.datasource.read.as.of.instant"
# Hudi's data source option for time travel: spark.read.format("hudi").option("as.of.instant", ...).
TIME_TRAVEL_OPTION = "as.of.instant"
BEGIN_INSTANT = "hoodie.datasource.read.begin.instanttime"
END_INSTANT = "hoodie.datasource.read.end.instanttime"
INCREMENTAL_FALLBACK = "hoodie.datasource.read.incr.fallback.fulltablescan.enable"
#: hudiql's own: an incremental read also returns the records deleted in its range (``_hoodie_is_deleted``).
INCLUDE_DELETES = "hoodie.datasource.read.include.deletes"

#: Settings whose key starts with this value are written into each commit's ``extraMetadata``, as in Hudi.
COMMIT_META_PREFIX = "hoodie.datasource.write.commitmeta.key.prefix"

INLINE_CLUSTERING = "hoodie.clustering.inline"
CLUSTERING_MAX_COMMITS = "hoodie.clustering.inline.max.commits"
CLUSTERING_SMALL_FILE_LIMIT = "hoodie.clustering.plan.strategy.small.file.limit"
CLUSTERING_TARGET_FILE_SIZE = "hoodie.clustering.plan.strategy.target.file.max.bytes"
CLUSTERING_SORT_COLUMNS = "hoodie.clustering.plan.strategy.sort.columns"
CLUSTERING_MAX_GROUPS = "hoodie.clustering.plan.strategy.max.num.groups"
#: hudiql's own: ``false`` lets MERGE / UPDATE write a version older than the stored one (COW).
ENFORCE_ORDERING = "hoodie.merge.ordering.enforce"
#: hudiql's own: ``hudiql sql`` prints a header line above query rows.
PRINT_HEADER = "hudiql.cli.print.header"

# Short (non ``hoodie.*``) table options: Spark SQL's and Flink's spellings.
SHORT_PRIMARY_KEY = "primaryKey"
SHORT_ORDERING = ("preCombineField", "orderingFields", "precombine.field", "write.precombine.field")
SHORT_PAYLOAD = ("payloadClass", "payload.class")
#: The payload types (Hudi's ``RecordPayloadType``) of the payload classes hudiql merges by.
PAYLOAD_TYPES = {"HOODIE_AVRO_DEFAULT": C.DEFAULT_PAYLOAD, "OVERWRITE_LATEST_AVRO": C.OVERWRITE_WITH_LATEST_PAYLOAD,
                 "EVENT_TIME_AVRO": C.EVENT_TIME_PAYLOAD}
#: The payload type, as a write option, as the table property Hudi 0.14/0.15 keep it in, and short.
PAYLOAD_TYPE_KEYS = ("hoodie.datasource.write.payload.type", "hoodie.compaction.payload.type", "payloadType")
SHORT_TABLE_TYPE = ("type", "table.type")
SHORT_MERGE_MODE = "recordMergeMode"
RECORD_MERGER_IMPLS = "hoodie.datasource.write.record.merger.impls"
MERGE_CUSTOM_CLASSES = "hoodie.write.record.merge.custom.implementation.classes"
#: Hudi 1.x's record mergers that merge as hudiql does: by the payload class (Avro), or by the
#: ordering field (Spark's, which is event time ordering).
AVRO_MERGER = "org.apache.hudi.common.model.HoodieAvroRecordMerger"
EVENT_TIME_MERGERS = ("org.apache.hudi.HoodieSparkRecordMerger", "org.apache.hudi.DefaultSparkRecordMerger")
FLINK_INDEX_TYPE = "index.type"

SIMPLE_INDEX = "SIMPLE"
BUCKET_INDEX = "BUCKET"
RECORD_INDEX = "RECORD_INDEX"
BLOOM_INDEX = "BLOOM"
GLOBAL_SIMPLE_INDEX = "GLOBAL_SIMPLE"
GLOBAL_BLOOM_INDEX = "GLOBAL_BLOOM"
SIMPLE_UPDATE_PARTITION_PATH = "hoodie.simple.index.update.partition.path"
BLOOM_UPDATE_PARTITION_PATH = "hoodie.bloom.index.update.partition.path"
RECORD_INDEX_UPDATE_PARTITION_PATH = "hoodie.record.index.update.partition.path"
OPTIMISTIC = "OPTIMISTIC_CONCURRENCY_CONTROL"
SINGLE_WRITER = "SINGLE_WRITER"
NON_BLOCKING = "NON_BLOCKING_CONCURRENCY_CONTROL"
FILE_SYSTEM_LOCK = "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider"
IN_PROCESS_LOCK = "org.apache.hudi.client.transaction.lock.InProcessLockProvider"
KEEP_LATEST_COMMITS = "KEEP_LATEST_COMMITS"
KEEP_LATEST_FILE_VERSIONS = "KEEP_LATEST_FILE_VERSIONS"
KEEP_LATEST_BY_HOURS = "KEEP_LATEST_BY_HOURS"
CLEANER_POLICIES = (KEEP_LATEST_COMMITS, KEEP_LATEST_FILE_VERSIONS, KEEP_LATEST_BY_HOURS)
COMPACTION_STRATEGIES = ("NUM_COMMITS", "TIME_ELAPSED", "NUM_AND_TIME", "NUM_OR_TIME")
WRITE_OPERATIONS = ("insert", "upsert", "bulk_insert")
OVERWRITE_OPERATIONS = ("insert_overwrite", "insert_overwrite_table")
OVERWRITE_MODES = ("STATIC", "DYNAMIC")
KEY_GENERATORS = (C.SIMPLE_KEYGEN, C.COMPLEX_KEYGEN, C.NONPARTITIONED_KEYGEN, C.TIMESTAMP_KEYGEN, C.CUSTOM_KEYGEN)
PAYLOADS = (C.DEFAULT_PAYLOAD, C.OVERWRITE_WITH_LATEST_PAYLOAD, C.EVENT_TIME_PAYLOAD)

_OVERWRITE_IS_A_STATEMENT = "write INSERT OVERWRITE to replace rows; INSERT INTO takes insert, upsert or bulk_insert"
_VERSIONS = ("6", "8", "9")


@dataclass(frozen=True)
class Key:
    """An option hudiql implements."""

    name: str
    where: str  # TABLE, SESSION or BOTH
    kind: str = TEXT
    default: str | None = None  # None: derived (see ``doc``) or not set
    values: tuple[str, ...] = ()  # ENUM: accepted values, compared ignoring case
    refused: Mapping[str, str] | None = None  # ENUM: known value (lower case) -> why hudiql refuses it
    otherwise: str | None = None  # ENUM: why any other value is refused (a property hudiql writes one way)
    minimum: int = 0  # INT
    unit: str = ""  # INT: " of bytes", " of seconds", ...
    alterable: bool = False
    doc: str = ""
    #: The ``hoodie.*`` key a short option stands for.
    same_as: str | None = None

    def check(self, value: str) -> None:
        """Raise ``OptionError`` when ``value`` is not one this key takes."""
        text = value.strip()
        if self.kind == WRITTEN:
            raise OptionError(f"{self.name} is written by hudiql from the CREATE TABLE statement; remove the option")
        if self.kind == ENUM:
            allowed = {v.lower() for v in self.values}
            if text.lower() in allowed:
                return
            why = (self.refused or {}).get(text.lower()) or self.otherwise
            if why:
                raise OptionError(f"{self.name}={value} is not supported: {why}")
            choices = ", ".join(self.values[:-1]) + " or " + self.values[-1]
            raise OptionError(f"{self.name}={value} is not valid; use {choices}")
        if self.kind == BOOL and text.lower() not in ("true", "false"):
            raise OptionError(f"{self.name}={value} is not valid; use true or false")
        if self.kind == INT and not (text.isdigit() and int(text) >= self.minimum):
            default = f" (default {self.default})" if self.default else ""
            raise OptionError(
                f"{self.name}={value} is not valid; give a whole number{self.unit}, at least {self.minimum}{default}"
            )
        if self.kind == MEGABYTES:
            try:
                ok = float(text) > 0
            except ValueError:
                ok = False
            if not ok:
                raise OptionError(f"{self.name}={value} is not valid; give a size in MB greater than 0 (e.g. 256)")
        if self.kind == FRACTION:
            try:
                ok = 0 < float(text) < 1
            except ValueError:
                ok = False
            if not ok:
                raise OptionError(f"{self.name}={value} is not valid; give a number between 0 and 1 (default {self.default})")
        if self.kind == COLUMNS and not [c for c in text.split(",") if c.strip()]:
            raise OptionError(f"{self.name} is empty; give one or more column names, separated by commas")

    def parse(self, value: str) -> str | int | bool | float:
        """``value`` read as this key's kind, once checked: INT a number, BOOL a flag, MEGABYTES a
        size in bytes (decimals allowed, as Hudi's Flink options give it), FRACTION a float, ENUM
        the value as the registry spells it; any other kind the text as given."""
        self.check(value)
        text = value.strip()
        if self.kind == INT:
            return int(text)
        if self.kind == BOOL:
            return text.lower() == "true"
        if self.kind == MEGABYTES:
            return max(1, int(float(text) * 1024 * 1024))
        if self.kind == FRACTION:
            return float(text)
        if self.kind == ENUM:
            return next(v for v in self.values if v.lower() == text.lower())
        return value


def _enum(name: str, where: str, values: tuple[str, ...], default: str | None = None, **kw) -> Key:
    return Key(name, where, ENUM, default, values, **kw)


def _fixed(name: str, value: str, why: str | None = None) -> Key:
    """A table property hudiql always writes with one value (it may be repeated, e.g. by SHOW CREATE TABLE)."""
    why = why or f"hudiql writes {name}={value}; remove the option or set it to {value}"
    return Key(name, TABLE, ENUM, value, (value,), otherwise=why)


_KEYGEN_VALUES = KEY_GENERATORS + tuple(k.rsplit(".", 1)[1] for k in KEY_GENERATORS)
_PAYLOAD_VALUES = PAYLOADS + tuple(p.rsplit(".", 1)[1] for p in PAYLOADS)
_TABLE_TYPES = tuple(C.TABLE_TYPE_NAMES)
_INDEX_TYPES = (SIMPLE_INDEX, BUCKET_INDEX, RECORD_INDEX, BLOOM_INDEX, GLOBAL_SIMPLE_INDEX, GLOBAL_BLOOM_INDEX)
_MOVES_KEY = ("true: an upsert of a key stored in another partition deletes it there and inserts it in its new "
              "partition; false: it updates the key where it is stored")
_OPERATION_REFUSED = {
    "delete_partition": "use ALTER TABLE <table> DROP PARTITION (...); INSERT takes insert, upsert or bulk_insert",
    "delete": "use DELETE FROM <table> WHERE ...; INSERT takes insert, upsert or bulk_insert",
    "bootstrap": "hudiql does not bootstrap tables; use insert, upsert or bulk_insert",
}
_MERGE_MODES = (C.EVENT_TIME_ORDERING, C.COMMIT_TIME_ORDERING)
_OTHER_MERGER = ("hudiql merges records by the payload class (HoodieAvroRecordMerger) or by the ordering field "
                 "(HoodieSparkRecordMerger, DefaultSparkRecordMerger); name one of them, or remove the option")
_CUSTOM_MERGE = {"custom": "hudiql merges records by the ordering field (EVENT_TIME_ORDERING) or by commit "
                           "time (COMMIT_TIME_ORDERING); custom mergers are not supported"}

_KEY_LIST: list[Key] = [
    # -- what the table is: fixed when it is created --------------------------------------------------
    Key(C.TABLE_NAME, TABLE, WRITTEN, doc="the table's name, from CREATE TABLE"),
    Key(C.DATABASE_NAME, TABLE, WRITTEN, doc="the table's database, from CREATE TABLE"),
    Key(C.CREATE_SCHEMA, TABLE, WRITTEN, doc="the table's schema (Avro), from CREATE TABLE's columns"),
    Key(C.INDEX_DEFS_PATH, TABLE, WRITTEN, doc="where the definitions of the metadata table's indexes live"),
    Key(C.CHECKSUM, TABLE, WRITTEN, doc="checksum of the table and database names"),
    _enum(C.TABLE_TYPE, TABLE, _TABLE_TYPES, C.COPY_ON_WRITE, doc="copy-on-write or merge-on-read"),
    _enum(TABLE_TYPE_OPTION, TABLE, _TABLE_TYPES, C.COPY_ON_WRITE, same_as=C.TABLE_TYPE),
    _enum(SHORT_TABLE_TYPE[0], TABLE, _TABLE_TYPES, "cow", same_as=C.TABLE_TYPE),
    _enum(SHORT_TABLE_TYPE[1], TABLE, _TABLE_TYPES, "cow", same_as=C.TABLE_TYPE),
    _enum(WRITE_TABLE_VERSION, BOTH, _VERSIONS, "6",
          doc="the table version of a new table (CREATE TABLE, CTAS, or SET before them): 6 is read by every "
              "Hudi reader, 0.x and 1.x; 8 is Hudi 1.0's, 9 Hudi 1.1's. An existing table keeps its own"),
    _enum(C.TABLE_VERSION, TABLE, _VERSIONS, "6", same_as=WRITE_TABLE_VERSION),
    _enum(C.TIMELINE_LAYOUT_VERSION, TABLE, ("1", "2"), "1", doc="1 for table version 6, 2 for 8 and 9"),
    Key(C.TIMELINE_PATH_V8, TABLE, WRITTEN, doc="the timeline's folder in .hoodie (versions 8, 9)"),
    Key(C.TIMELINE_HISTORY_PATH_V8, TABLE, WRITTEN, doc="the archived timeline's folder in the timeline's (versions 8, 9)"),
    Key(C.INITIAL_VERSION_V8, TABLE, WRITTEN, doc="the version the table was created with (versions 8, 9)"),
    Key(C.KEYGEN_TYPE_V8, TABLE, WRITTEN, doc="the key generator by type (versions 8, 9), from the table's keys"),
    Key(C.MERGE_STRATEGY_ID_V8, TABLE, WRITTEN, doc="the merge mode's strategy id (version 8)"),
    Key(C.TABLE_FORMAT_V9, TABLE, WRITTEN, doc="the table's format, native (version 9)"),
    _fixed(C.BASE_FILE_FORMAT, "PARQUET"),
    _fixed(C.ARCHIVELOG_FOLDER, "archived"),
    _fixed(C.TIMELINE_TIMEZONE, "UTC"),
    Key(C.POPULATE_META_FIELDS, TABLE, BOOL, "true",
        doc="false: the meta columns are stored empty and readers derive record keys from the key columns "
            "(the simple, complex or non-partitioned key generator; no incremental reads)"),
    _fixed(C.DROP_PARTITION_COLUMNS, "false", "hudiql keeps partition columns in the data files; remove the option "
                                              "or set it to false"),
    Key(C.RECORD_KEY_FIELDS, TABLE, COLUMNS, doc="record key columns; PRIMARY KEY (...) wins"),
    Key(RECORD_KEY_OPTION, TABLE, COLUMNS, same_as=C.RECORD_KEY_FIELDS),
    Key(SHORT_PRIMARY_KEY, TABLE, COLUMNS, same_as=C.RECORD_KEY_FIELDS),
    Key(C.PARTITION_FIELDS, TABLE, COLUMNS, doc="partition columns; PARTITIONED BY (...) wins"),
    Key(PARTITION_OPTION, TABLE, COLUMNS, same_as=C.PARTITION_FIELDS),
    Key(C.PRECOMBINE_FIELD, TABLE, COLUMNS, doc="the ordering (preCombine) field; none by default"),
    Key(PRECOMBINE_OPTION, TABLE, COLUMNS, same_as=C.PRECOMBINE_FIELD),
    Key(C.ORDERING_FIELDS_V8, TABLE, COLUMNS, same_as=C.PRECOMBINE_FIELD, doc="the table version 9 name of it"),
    *[Key(name, TABLE, COLUMNS, same_as=C.PRECOMBINE_FIELD) for name in SHORT_ORDERING],
    Key(PAYLOAD_ORDERING_FIELD, TABLE, COLUMNS, doc="the ordering field payloads compare; must be the ordering field"),
    _enum(C.KEYGEN_CLASS, TABLE, _KEYGEN_VALUES, doc="derived from the key and partition columns"),
    _enum(KEYGEN_OPTION, TABLE, _KEYGEN_VALUES, same_as=C.KEYGEN_CLASS),
    _enum(C.PAYLOAD_CLASS, TABLE, _PAYLOAD_VALUES,
          doc="DefaultHoodieRecordPayload with an ordering field, else OverwriteWithLatestAvroPayload"),
    _enum(PAYLOAD_OPTION, TABLE, _PAYLOAD_VALUES, same_as=C.PAYLOAD_CLASS),
    *[_enum(name, TABLE, _PAYLOAD_VALUES, same_as=C.PAYLOAD_CLASS) for name in SHORT_PAYLOAD],
    *[_enum(name, TABLE, tuple(PAYLOAD_TYPES), doc="the payload class by its type (stored as the class)",
            otherwise="hudiql merges by HOODIE_AVRO_DEFAULT, OVERWRITE_LATEST_AVRO or EVENT_TIME_AVRO (their payload "
                      "classes); remove the option or use one of them") for name in PAYLOAD_TYPE_KEYS],
    _enum(C.MERGE_MODE, TABLE, _MERGE_MODES, refused=_CUSTOM_MERGE,
          doc="EVENT_TIME_ORDERING with an ordering field, else COMMIT_TIME_ORDERING"),
    _enum(SHORT_MERGE_MODE, TABLE, _MERGE_MODES, refused=_CUSTOM_MERGE, same_as=C.MERGE_MODE),
    _enum(RECORD_MERGER_IMPLS, TABLE, (AVRO_MERGER, *EVENT_TIME_MERGERS), otherwise=_OTHER_MERGER,
          doc="a merger that merges as the table does: the Avro one by its payload class, Spark's by its ordering field"),
    _enum(MERGE_CUSTOM_CLASSES, TABLE, (AVRO_MERGER, *EVENT_TIME_MERGERS), otherwise=_OTHER_MERGER,
          same_as=RECORD_MERGER_IMPLS),
    Key(C.HIVE_STYLE, TABLE, BOOL, doc="true in Spark SQL, false in Flink SQL"),
    Key(C.URL_ENCODE, TABLE, BOOL, "false"),
    _enum(C.TIMESTAMP_TYPE, TABLE, ("EPOCHMILLISECONDS", "UNIX_TIMESTAMP", "SCALAR", "DATE_STRING"),
          refused={v: "hudiql reads EPOCHMILLISECONDS, UNIX_TIMESTAMP (seconds), SCALAR (days) or DATE_STRING "
                      "partition values" for v in ("epochmicroseconds", "mixed")},
          doc="SCALAR for a DATE partition column, EPOCHMILLISECONDS otherwise"),
    _fixed(C.TIMESTAMP_SCALAR_UNIT, "DAYS", "hudiql reads SCALAR partition values as days; remove the option or set it to DAYS"),
    Key(C.TIMESTAMP_OUTPUT_FORMAT, TABLE, TEXT, doc="yyyyMMdd for a DATE partition column, yyyyMMddHH otherwise"),
    _fixed(C.TIMESTAMP_OUTPUT_TZ, "UTC", "hudiql formats partition timestamps in UTC; remove the option or set it to UTC"),
    Key(TIMESTAMP_INPUT_FORMAT, TABLE, TEXT, "yyyy-MM-dd HH:mm:ss", doc="how STRING partition values are parsed"),
    # -- the index: the file groups on storage follow it, so a session may repeat it, not change it ----
    _enum(INDEX_TYPE, BOTH, _INDEX_TYPES, SIMPLE_INDEX,
          doc=f"RECORD_INDEX: the metadata table's record index ({RECORD_INDEX_ENABLE}=true); GLOBAL_SIMPLE, "
              "GLOBAL_BLOOM: SIMPLE and BLOOM looking a key up in every partition"),
    _enum(FLINK_INDEX_TYPE, TABLE, _INDEX_TYPES, SIMPLE_INDEX, same_as=INDEX_TYPE),
    # -- global indexes: where an upsert of a key stored in another partition goes ----------------------
    Key(SIMPLE_UPDATE_PARTITION_PATH, BOTH, BOOL, "true", alterable=True, doc=f"GLOBAL_SIMPLE. {_MOVES_KEY}"),
    Key(BLOOM_UPDATE_PARTITION_PATH, BOTH, BOOL, "true", alterable=True, doc=f"GLOBAL_BLOOM. {_MOVES_KEY}"),
    Key(RECORD_INDEX_UPDATE_PARTITION_PATH, BOTH, BOOL, "false", alterable=True, doc=f"the record index. {_MOVES_KEY}"),
    _enum(BUCKET_ENGINE, BOTH, (SIMPLE_INDEX,), SIMPLE_INDEX,
          refused={"consistent_hashing": "hudiql's bucket index has a fixed number of buckets; use SIMPLE"}),
    Key(NUM_BUCKETS, BOTH, INT, "256", minimum=1, unit=" of buckets", doc="HoodieIndexConfig's default (Flink's is 4)"),
    Key(HASH_FIELD, BOTH, COLUMNS, doc="the record key fields"),
    # -- write tuning: may change at any time --------------------------------------------------------
    Key(MAX_FILE_SIZE, BOTH, INT, str(120 * 1024 * 1024), minimum=1, unit=" of bytes", alterable=True),
    Key(SMALL_FILE_LIMIT, BOTH, INT, str(100 * 1024 * 1024), unit=" of bytes", alterable=True,
        doc="0: no small file handling"),
    _enum(COMPRESSION, BOTH, ("snappy", "gzip", "zstd", "lz4", "brotli", "none"), "snappy", alterable=True,
          refused={"uncompressed": "hudiql spells it 'none'", "lzo": "Arrow cannot write LZO; use snappy, gzip or zstd"}),
    # -- base file footers (formats.bloom_filter): Hudi's BLOOM index looks keys up by them ----------
    Key(BLOOM_FILTER_ENABLE, BOTH, BOOL, None, alterable=True,
        doc="true: each base file's footer holds a bloom filter of its record keys (beside its smallest and largest "
            "key, always there), as Hudi's writers put it there for BLOOM index lookups; not given: true when "
            f"{INDEX_TYPE} is BLOOM"),
    _enum(BLOOM_FILTER_TYPE, BOTH, (bloom_filter.DYNAMIC_V0, bloom_filter.SIMPLE), bloom_filter.DYNAMIC_V0,
          alterable=True),
    Key(BLOOM_USE_METADATA, BOTH, BOOL, "false", alterable=True,
        doc=f"BLOOM: key ranges and bloom filters are read from the metadata table ({COLUMN_STATS_ENABLE}, "
            f"{BLOOM_FILTERS_ENABLE}) where it has them, not from every base file's footer"),
    Key(BLOOM_NUM_ENTRIES, BOTH, INT, str(bloom_filter.NUM_ENTRIES), minimum=1, unit=" of keys", alterable=True,
        doc="the keys a bloom filter (a dynamic one's each vector) is sized for"),
    Key(BLOOM_FPP, BOTH, FRACTION, f"{bloom_filter.ERROR_RATE:.9f}", alterable=True,
        doc="the false positive rate a bloom filter is sized for at that many keys"),
    Key(BLOOM_MAX_ENTRIES, BOTH, INT, str(bloom_filter.MAX_ENTRIES), minimum=1, unit=" of keys", alterable=True,
        doc="the keys a dynamic bloom filter adds vectors for"),
    Key(RECORD_SIZE_ESTIMATE, BOTH, INT, "0", unit=" of bytes", alterable=True, doc="bytes per record; 0: the table's average"),
    _enum(LOG_BLOCK_FORMAT, BOTH, ("avro", "parquet"), "avro", alterable=True,
          refused={"hfile": "hudiql writes log data blocks as avro or parquet"}),
    Key(WRITE_BATCH_SIZE, SESSION, MEGABYTES, "256", doc="MB buffered per file group before a log block is written"),
    Key(WRITE_TASK_MAX_SIZE, SESSION, MEGABYTES, "1024", doc="MB a write task buffers in all"),
    # -- inline compaction of merge-on-read tables ---------------------------------------------------
    Key(INLINE_COMPACT, BOTH, BOOL, "false", alterable=True, doc="true for new merge-on-read tables"),
    _enum(TRIGGER_STRATEGY, BOTH, COMPACTION_STRATEGIES, "NUM_COMMITS", alterable=True),
    Key(MAX_DELTA_COMMITS, BOTH, INT, "5", unit=" of delta commits", alterable=True),
    Key(MAX_DELTA_SECONDS, BOTH, INT, "3600", unit=" of seconds", alterable=True),
    # -- cleaning and archiving after each commit (services.clean, services.archive) -----------------
    Key(CLEAN_AUTOMATIC, BOTH, BOOL, "true", alterable=True, doc="clean after each commit"),
    _enum(CLEANER_POLICY, BOTH, CLEANER_POLICIES, KEEP_LATEST_COMMITS, alterable=True,
          doc="which file slices a clean keeps"),
    Key(CLEANER_COMMITS_RETAINED, BOTH, INT, "10", minimum=1, unit=" of commits", alterable=True,
        doc="KEEP_LATEST_COMMITS: readers can query the table as of this many latest commits"),
    Key(CLEANER_FILE_VERSIONS_RETAINED, BOTH, INT, "3", minimum=1, unit=" of file versions", alterable=True,
        doc="KEEP_LATEST_FILE_VERSIONS: file slices kept per file group"),
    Key(CLEANER_HOURS_RETAINED, BOTH, INT, "24", minimum=1, unit=" of hours", alterable=True,
        doc="KEEP_LATEST_BY_HOURS: readers can query the table as of this many hours ago"),
    Key(CLEANER_INCREMENTAL, BOTH, BOOL, "true", alterable=True,
        doc="a clean looks only at the partitions written since the last clean's earliest retained commit"),
    # Hudi 1.x spells the cleaner's keys hoodie.clean.*; the 0.x names above win when both are given.
    _enum("hoodie.clean.policy", BOTH, CLEANER_POLICIES, alterable=True, same_as=CLEANER_POLICY),
    Key("hoodie.clean.commits.retained", BOTH, INT, minimum=1, alterable=True, same_as=CLEANER_COMMITS_RETAINED),
    Key("hoodie.clean.fileversions.retained", BOTH, INT, minimum=1, alterable=True,
        same_as=CLEANER_FILE_VERSIONS_RETAINED),
    Key("hoodie.clean.hours.retained", BOTH, INT, minimum=1, alterable=True, same_as=CLEANER_HOURS_RETAINED),
    Key("hoodie.clean.incremental.enabled", BOTH, BOOL, alterable=True, same_as=CLEANER_INCREMENTAL),
    _enum(CLEAN_TRIGGER_STRATEGY, BOTH, ("NUM_COMMITS",), "NUM_COMMITS", alterable=True),
    Key(CLEAN_MAX_COMMITS, BOTH, INT, "1", minimum=1, unit=" of commits", alterable=True,
        doc="commits since the last clean before a clean is planned"),
    Key(ARCHIVE_AUTOMATIC, BOTH, BOOL, "true", alterable=True, doc="archive after each commit"),
    Key(KEEP_MIN_COMMITS, BOTH, INT, "20", minimum=1, unit=" of instants", alterable=True,
        doc="instants archiving leaves on the active timeline; must be above hoodie.cleaner.commits.retained"),
    Key(KEEP_MAX_COMMITS, BOTH, INT, "30", minimum=1, unit=" of instants", alterable=True,
        doc="archiving starts when the active timeline holds more instants than this"),
    Key(ARCHIVAL_BATCH, BOTH, INT, "10", minimum=1, unit=" of instants", alterable=True,
        doc="archived instants per log block"),
    # -- the metadata table (table.metadata_table) --------------------------------------------------------
    Key(METADATA_ENABLE, BOTH, BOOL, "true", alterable=True,
        doc="true (Hudi's default): writes of table versions 8 and 9 keep the metadata table's files partition; "
            "false: a write removes the metadata table. Version 6 tables keep none (true given is refused)"),
    Key(METADATA_COMPACT_MAX_DELTA_COMMITS, BOTH, INT, "10", minimum=1, unit=" of delta commits", alterable=True,
        doc="metadata delta commits before the metadata table is compacted"),
    Key(RECORD_INDEX_ENABLE, BOTH, BOOL, "false", alterable=True,
        doc="true: the metadata table keeps the record index (each key's file group), and writes and key lookups "
            "use it; false: a write removes it; not given: writes keep the one the table has"),
    Key(RECORD_INDEX_MIN_FILE_GROUPS, BOTH, INT, "10", minimum=1, unit=" of file groups", alterable=True,
        doc="the fewest file groups a record index is built with (Hudi's default)"),
    Key(RECORD_INDEX_MAX_FILE_GROUPS, BOTH, INT, "10000", minimum=1, unit=" of file groups", alterable=True,
        doc="the most file groups a record index is built with"),
    Key(COLUMN_STATS_ENABLE, BOTH, BOOL, "false", alterable=True,
        doc="true: the metadata table keeps each file's value range per indexed column (column_stats), and "
            "queries skip the files whose ranges exclude their filter; false: a write removes it; not given: "
            "writes keep the one the table has"),
    Key(COLUMN_STATS_COLUMNS, BOTH, COLUMNS, alterable=True,
        doc="the columns column_stats ranges (default: the record key, partition path and commit time meta "
            "columns, then the first 32 data columns)"),
    Key(PARTITION_STATS_ENABLE, BOTH, BOOL, "true", alterable=True,
        doc="with column_stats on a partitioned table, the metadata table also keeps each partition's value ranges "
            "(partition_stats), and queries skip the partitions whose ranges exclude their filter; false: a write "
            "removes it"),
    Key(BLOOM_FILTERS_ENABLE, BOTH, BOOL, "false", alterable=True,
        doc="true: the metadata table keeps each base file's bloom filter of its record keys (bloom_filters), and "
            f"the BLOOM index reads them there with {BLOOM_USE_METADATA}=true; false: a write removes it; not given: "
            "writes keep the one the table has"),
    Key(BLOOM_FILTERS_FILE_GROUPS, BOTH, INT, "4", minimum=1, unit=" of file groups", alterable=True,
        doc="the file groups a bloom_filters index is built with (Hudi's default)"),
    Key(DATA_SKIPPING, BOTH, BOOL, "true", alterable=True,
        doc="queries skip the files and partitions whose column_stats and partition_stats ranges exclude their filter"),
    # -- clustering (services.clustering) -------------------------------------------------------------
    Key(INLINE_CLUSTERING, BOTH, BOOL, "false", alterable=True, doc="cluster after every few commits"),
    Key(CLUSTERING_MAX_COMMITS, BOTH, INT, "4", minimum=1, unit=" of commits", alterable=True,
        doc="commits since the last clustering before inline clustering runs"),
    Key(CLUSTERING_SMALL_FILE_LIMIT, BOTH, INT, str(300 * 1024 * 1024), unit=" of bytes", alterable=True,
        doc="base files below this size are clustered"),
    Key(CLUSTERING_TARGET_FILE_SIZE, BOTH, INT, str(1024 * 1024 * 1024), minimum=1, unit=" of bytes", alterable=True,
        doc="the size clustering writes files up to"),
    Key(CLUSTERING_SORT_COLUMNS, BOTH, COLUMNS, alterable=True, doc="the columns clustered files are sorted by"),
    Key(CLUSTERING_MAX_GROUPS, BOTH, INT, "30", minimum=1, unit=" of groups", alterable=True,
        doc="clustering groups one plan holds"),
    # -- concurrent writers: optimistic and non-blocking concurrency control (transaction.write_transaction) --
    _enum(CONCURRENCY_MODE, BOTH, (OPTIMISTIC, SINGLE_WRITER, NON_BLOCKING), OPTIMISTIC, alterable=True,
          doc="SINGLE_WRITER: no lock and no conflict check; only one process may write the table. "
              "NON_BLOCKING_CONCURRENCY_CONTROL (merge-on-read, version 8+, simple bucket index): writers of one "
              "file group never conflict, each writes its own log files, and readers merge them by the ordering "
              "field (check_concurrency_mode)"),
    _enum(FAILED_WRITES_POLICY, BOTH, ("LAZY",), "LAZY", alterable=True,
          refused={"eager": "hudiql rolls back a failed write once its heartbeat expired (LAZY); EAGER would roll "
                            "back the instant of a writer that is still running",
                   "never": "hudiql rolls back a failed write once its heartbeat expired (LAZY); NEVER would leave "
                            "its files on storage for ever"}),
    _enum(LOCK_PROVIDER, BOTH, (FILE_SYSTEM_LOCK, FILE_SYSTEM_LOCK.rsplit(".", 1)[1], IN_PROCESS_LOCK,
                                IN_PROCESS_LOCK.rsplit(".", 1)[1]), FILE_SYSTEM_LOCK, alterable=True,
          otherwise="hudiql locks a table with a file created atomically in its .hoodie folder "
                    "(FileSystemBasedLockProvider); remove the option",
          doc="InProcessLockProvider is kept by the same lock file, which serializes a process's writers "
              "and other processes' too"),
    Key(LOCK_WAIT_MS, BOTH, INT, "60000", minimum=1, unit=" of milliseconds", alterable=True,
        doc="how long a commit waits for the table lock"),
    Key(LOCK_RETRY_WAIT_MS, BOTH, INT, "50", minimum=1, unit=" of milliseconds", alterable=True,
        doc="Hudi's default is 1000; hudiql holds the lock only for the conflict check and the completion"),
    Key(LOCK_EXPIRE_MINUTES, BOTH, INT, "1", unit=" of minutes", alterable=True,
        doc="a lock older than this is stale (0: only a lock whose process died is); Hudi's default is 0"),
    Key(CONFLICT_RETRIES, BOTH, INT, "3", unit=" of retries", alterable=True,
        doc="how many times a statement that lost a write conflict runs again, on the new snapshot, after a random "
            f"wait of up to the lost attempt's length (at least {LOCK_RETRY_WAIT_MS}), doubled after each loss; "
            "Hudi's default is 0, which fails a statement on its first lost conflict"),
    Key(HEARTBEAT_INTERVAL_MS, BOTH, INT, "60000", minimum=100, unit=" of milliseconds", alterable=True),
    Key(HEARTBEAT_MISSES, BOTH, INT, "2", minimum=1, unit=" of heartbeats", alterable=True,
        doc="a pending write is rolled back once its heartbeat is this many intervals old"),
    # -- what a statement does ------------------------------------------------------------------------
    _enum(INSERT_INTO_OPERATION, BOTH, WRITE_OPERATIONS, alterable=True,
          refused=_OPERATION_REFUSED | {op: _OVERWRITE_IS_A_STATEMENT for op in OVERWRITE_OPERATIONS},
          doc="not given: as Hudi's Spark SQL, upsert into a table with a record key and an ordering field up to "
              "table version 8 (Hudi 0.14 to 1.0), insert otherwise and from version 9 (Hudi 1.1)"),
    _enum(INSERT_DUP_POLICY, BOTH, ("none", "drop", "fail"), "none", alterable=True,
          doc="what an INSERT with operation insert or bulk_insert does with a row whose key the table holds: "
              "none keeps both, drop leaves the row out, fail refuses the statement (Hudi's)"),
    Key(SCHEMA_ON_READ, SESSION, BOOL, "false",
        doc="true: ALTER TABLE may drop and rename columns (as Hudi allows them with it); hudiql rewrites every file "
            "group with the new columns, in one clustering that keeps each row's commit time. A session option: in a "
            "table's properties it would make the official reader refuse the table"),
    Key(ALLOW_DUPLICATE_ON_INSERTS, BOTH, BOOL, "true", alterable=True,
        doc="false: an insert's rows placed in an existing (small) file group merge with its rows by key, as Hudi "
            "0.14's merge handle does (and rows of one key there keep the later); true (0.15's and 1.x's default): "
            "they are added beside them. Hudi's writer treats it as true for an insert whose dup policy is set and "
            "is not fail, as every SQL INSERT's is"),
    Key(COMBINE_BEFORE_INSERT, BOTH, BOOL, None, alterable=True,
        doc="true: an INSERT with operation insert or bulk_insert keeps one row per key of its own rows (the greatest "
            "ordering value); not given: true on a table with a record key and an ordering field up to table version "
            "8, as Hudi's Spark SQL sets it, false from version 9"),
    _enum(WRITE_OPERATION, BOTH, WRITE_OPERATIONS + OVERWRITE_OPERATIONS, refused=_OPERATION_REFUSED, alterable=True,
          doc="what INSERT does, as hoodie.spark.sql.insert.into.operation; an overwrite operation decides "
              "what INSERT OVERWRITE replaces (and INSERT INTO is refused)"),
    _enum(OVERWRITE_MODE, BOTH, OVERWRITE_MODES, alterable=True,
          doc="INSERT OVERWRITE without PARTITION (...): STATIC replaces the whole table, DYNAMIC the partitions "
              f"the new rows land in; default: {SPARK_OVERWRITE_MODE}, else STATIC"),
    Key(COMMIT_META_PREFIX, SESSION, TEXT, "_",
        doc="SET <prefix>k=v writes k's value into the extraMetadata of the session's commits (key with the prefix)"),
    # -- what a query reads (read.query, read.incremental) ---------------------------------------------
    Key(QUERY_AS_RO_TABLE, TABLE, BOOL, "false",
        doc="CREATE TABLE t_ro USING hudi LOCATION '<merge-on-read table>' TBLPROPERTIES (...='true'): the name reads "
            "the table's base files only (kept by the catalog, not in hoodie.properties)"),
    _enum(QUERY_TYPE, SESSION, ("snapshot", "read_optimized", "incremental"), "snapshot",
          refused={"cdc": "hudiql writes no change data capture logs; use incremental (the latest state of the "
                          f"rows changed, with {INCLUDE_DELETES}=true for deleted ones)"},
          doc=f"incremental: the rows the commits in ({BEGIN_INSTANT}, {END_INSTANT}] wrote, in their latest state"),
    Key(AS_OF_INSTANT, SESSION, TEXT, "", doc="every query reads its tables as of this instant (time travel)"),
    Key(BEGIN_INSTANT, SESSION, TEXT, "", doc="incremental queries: after this instant ('earliest': from the first commit)"),
    Key(END_INSTANT, SESSION, TEXT, "", doc="incremental queries: up to this instant; the latest commit by default"),
    Key(INCREMENTAL_FALLBACK, SESSION, BOOL, "false",
        doc="an incremental range reaching cleaned or archived instants is read from a full scan, not refused"),
    Key(INCLUDE_DELETES, SESSION, BOOL, "false",
        doc="incremental queries also return the records deleted in the range, with _hoodie_is_deleted = true"),
    Key(ENFORCE_ORDERING, SESSION, BOOL, "true"),
    Key(PRINT_HEADER, SESSION, BOOL, "false"),
]

#: Every option hudiql implements, by name.
KEYS: dict[str, Key] = {k.name: k for k in _KEY_LIST}


def implemented_keys() -> list[str]:
    """The ``hoodie.*`` keys hudiql implements (for docs), sorted."""
    return sorted(k for k in KEYS if k.startswith("hoodie."))


def short_table_options() -> set[str]:
    """Non ``hoodie.*`` options CREATE TABLE takes (Spark SQL's and Flink's short spellings)."""
    names = {k.name for k in _KEY_LIST if not k.name.startswith("hoodie.") and k.where != SESSION}
    return names | {"connector", "path"}  # Flink's connector='hudi' and path='...', read by the parser


#: The other spellings of a key, by the key they stand for.
_ALIASES: dict[str, list[str]] = {}
for _key in _KEY_LIST:
    if _key.same_as is not None:
        _ALIASES.setdefault(_key.same_as, []).append(_key.name)


def setting(settings: Mapping[str, str], name: str) -> str:
    """The value of ``name`` in ``settings`` (table properties and session settings), or of
    another spelling of it, else its default."""
    for key in (name, *_ALIASES.get(name, ())):
        value = settings.get(key)
        if value is not None:
            return value
    default = KEYS[name].default
    if default is None:
        raise KeyError(f"{name} has no default")
    return default


def effective_settings(table_properties: Mapping[str, str], session: Mapping[str, str] | None = None,
                       statement: Mapping[str, str] | None = None) -> dict[str, str]:
    """What a statement runs with, by the one rule of precedence: a table's property, under the
    session's ``SET``, under the statement's own option (a ``df.write`` option).

    Example:
        >>> effective_settings({MAX_FILE_SIZE: "1", CLEAN_AUTOMATIC: "false"}, {MAX_FILE_SIZE: "2"}, {MAX_FILE_SIZE: "3"})
        {'hoodie.parquet.max.file.size': '3', 'hoodie.clean.automatic': 'false'}
    """
    return {**table_properties, **(session or {}), **(statement or {})}


#: The settings a merge-on-read write checks before it starts: its log buffers, and its post-commit
#: compaction's trigger, read after the commit, when a bad one could no longer fail the statement.
MERGE_ON_READ_WRITE_KEYS = (INLINE_COMPACT, TRIGGER_STRATEGY, MAX_DELTA_COMMITS, MAX_DELTA_SECONDS,
                            WRITE_BATCH_SIZE, WRITE_TASK_MAX_SIZE)


def check_values(settings: Mapping[str, str], names: tuple[str, ...]) -> None:
    """Refuse (``OptionError``) the first of ``names`` whose value in ``settings`` is not valid."""
    for name in names:
        KEYS[name].check(setting(settings, name))


def _typed(settings: Mapping[str, str], name: str, kind: str):
    key = KEYS[name]
    assert key.kind == kind, f"{name} is an option of kind {key.kind}, not {kind}"
    return key.parse(setting(settings, name))


def number(settings: Mapping[str, str], name: str) -> int:
    """The whole number ``settings`` give ``name`` (an INT key), else its default.

    >>> number({}, CLEANER_COMMITS_RETAINED), number({CLEANER_COMMITS_RETAINED: " 3 "}, CLEANER_COMMITS_RETAINED)
    (10, 3)
    """
    return _typed(settings, name, INT)


def fraction(settings: Mapping[str, str], name: str) -> float:
    """The number between 0 and 1 ``settings`` give ``name`` (a FRACTION key), else its default."""
    return _typed(settings, name, FRACTION)


def flag(settings: Mapping[str, str], name: str) -> bool:
    """Whether ``settings`` turn ``name`` (a BOOL key) on, else its default.

    >>> flag({CLEAN_AUTOMATIC: "FALSE"}, CLEAN_AUTOMATIC), flag({}, CLEAN_AUTOMATIC)
    (False, True)
    """
    return _typed(settings, name, BOOL)


def asks_record_index(settings: Mapping[str, str]) -> bool:
    """Whether ``settings`` ask writes to keep the metadata table's record index."""
    return flag(settings, RECORD_INDEX_ENABLE) or choice(settings, INDEX_TYPE) == RECORD_INDEX


def is_single_writer(settings: Mapping[str, str]) -> bool:
    """Whether ``settings`` promise one writer (no lock, no conflict check, nothing to retry)."""
    return choice(settings, CONCURRENCY_MODE) == SINGLE_WRITER


def is_non_blocking(settings: Mapping[str, str]) -> bool:
    """Whether ``settings`` ask for Hudi 1.x's non-blocking concurrency control."""
    return choice(settings, CONCURRENCY_MODE) == NON_BLOCKING


def check_concurrency_mode(settings: Mapping[str, str], table_name: str, version: int, is_mor: bool) -> None:
    """Refuse non-blocking concurrency control where Hudi refuses it: it needs a merge-on-read
    table of version 8 or 9 whose simple bucket index puts each key in a file group every writer
    finds without reading the table (their logs then meet in it, and readers merge them).

    >>> check_concurrency_mode({CONCURRENCY_MODE: NON_BLOCKING, INDEX_TYPE: "BUCKET"}, "t", 8, True)
    >>> check_concurrency_mode({CONCURRENCY_MODE: NON_BLOCKING}, "t", 8, True)
    Traceback (most recent call last):
    ...
    hudiql.errors.OptionError: hoodie.write.concurrency.mode=NON_BLOCKING_CONCURRENCY_CONTROL: it needs hoodie.index.type=BUCKET (table t uses SIMPLE)
    """
    if not is_non_blocking(settings):
        return
    problem = None
    if not is_mor:
        problem = f"it needs a merge-on-read table (table {table_name} is copy-on-write)"
    elif version < 8:
        problem = (f"it needs table version 8 or 9 (table {table_name} is version {version}; CALL upgrade_table "
                   "upgrades it)")
    elif choice(settings, INDEX_TYPE) != BUCKET_INDEX:
        problem = f"it needs {INDEX_TYPE}=BUCKET (table {table_name} uses {choice(settings, INDEX_TYPE)})"
    if problem:
        raise OptionError(f"{CONCURRENCY_MODE}={NON_BLOCKING}: {problem}")


def check_metadata_table(settings: Mapping[str, str], table_name: str, version: int) -> None:
    """Refuse ``hoodie.metadata.enable=true``, given, on a table whose version's metadata table
    hudiql does not keep (version 6: by default, it keeps none there), and a record index,
    column stats or bloom filters index that the table's options rule out."""
    if settings.get(METADATA_ENABLE) is not None and flag(settings, METADATA_ENABLE) and version < 8:
        raise OptionError(f"{METADATA_ENABLE}=true: hudiql keeps the metadata table of table versions 8 and 9, and "
                          f"table {table_name} is version {version}; upgrade it (CALL upgrade_table), create it with "
                          f"{WRITE_TABLE_VERSION}=8 or 9, or set {METADATA_ENABLE}=false")
    for index, what in ((COLUMN_STATS_ENABLE, "column stats"), (BLOOM_FILTERS_ENABLE, "bloom filters")):
        if not flag(settings, index):
            continue
        if version < 8:
            raise OptionError(f"{index}=true: hudiql keeps the metadata table of table versions 8 and "
                              f"9, and table {table_name} is version {version}; upgrade it (CALL upgrade_table) or "
                              f"create it with {WRITE_TABLE_VERSION}=8 or 9")
        if not flag(settings, METADATA_ENABLE):
            raise OptionError(f"{index}=true: {what} live in the metadata table; set {METADATA_ENABLE}=true")
    if not asks_record_index(settings):
        return
    problem = None
    if version < 8:
        problem = (f"hudiql keeps the metadata table of table versions 8 and 9, and table {table_name} is version "
                   f"{version}; upgrade it (CALL upgrade_table) or create it with {WRITE_TABLE_VERSION}=8 or 9")
    elif not flag(settings, METADATA_ENABLE):
        problem = f"the record index lives in the metadata table; set {METADATA_ENABLE}=true"
    elif choice(settings, INDEX_TYPE) == BUCKET_INDEX:
        problem = f"it does not go with {INDEX_TYPE}=BUCKET, which finds file groups without an index"
    if problem:
        raise OptionError(f"{RECORD_INDEX_ENABLE}=true: {problem}")


def size(settings: Mapping[str, str], name: str) -> int:
    """The size in bytes ``settings`` give ``name`` (a MEGABYTES key), else its default.

    >>> size({WRITE_BATCH_SIZE: "0.5"}, WRITE_BATCH_SIZE)
    524288
    >>> size({WRITE_BATCH_SIZE: "0"}, WRITE_BATCH_SIZE)
    Traceback (most recent call last):
    ...
    hudiql.errors.OptionError: write.batch.size=0 is not valid; give a size in MB greater than 0 (e.g. 256)
    """
    return _typed(settings, name, MEGABYTES)


def choice(settings: Mapping[str, str], name: str) -> str:
    """The value ``settings`` give ``name`` (an ENUM key), else its default, spelled as the
    registry spells it.

    >>> choice({CLEANER_POLICY: "keep_latest_file_versions"}, CLEANER_POLICY), choice({}, COMPRESSION)
    ('KEEP_LATEST_FILE_VERSIONS', 'snappy')
    """
    return _typed(settings, name, ENUM)


def commit_extra_metadata(settings: Mapping[str, str]) -> dict[str, str]:
    """The settings a commit records in its ``extraMetadata``: those whose key starts with
    ``hoodie.datasource.write.commitmeta.key.prefix`` (``_`` by default), as Hudi records them.

    Example:
        >>> commit_extra_metadata({"_job.run": "42", "hoodie.index.type": "SIMPLE"})
        {'_job.run': '42'}
    """
    prefix = setting(settings, COMMIT_META_PREFIX)
    return {k: v for k, v in settings.items() if prefix and k.startswith(prefix)}


def is_alterable(key: str) -> bool:
    """May ``ALTER TABLE ... SET/UNSET TBLPROPERTIES`` change ``key`` after the table is created?"""
    spec = KEYS.get(key)
    return bool(spec and spec.alterable)


# ---- Hudi keys hudiql does not implement -------------------------------------------------------------


@dataclass(frozen=True)
class Unimplemented:
    """Hudi options (glob patterns) hudiql does not implement.

    ``accepted``: values that ask for what hudiql does anyway. ``warn``: ignoring the option
    cannot change a result a user sees (speed, parallelism, file layout), so it is a warning.
    """

    patterns: tuple[str, ...]
    why: str
    accepted: tuple[str, ...] = ()
    warn: bool = False

    def matches(self, key: str) -> bool:
        return any(fnmatchcase(key, p) for p in self.patterns)

    def names(self, key: str) -> bool:
        """Whether ``key`` is one of the listed keys, not only in a listed family (``hoodie.index.*``)."""
        return key in self.patterns


_ONE_LOCK = (f"hudiql locks a table with a lock file ({LOCK_PROVIDER}, {LOCK_WAIT_MS}, {LOCK_RETRY_WAIT_MS}, "
             f"{LOCK_EXPIRE_MINUTES}) and decides failed writes by heartbeat ({HEARTBEAT_INTERVAL_MS}, "
             f"{HEARTBEAT_MISSES}); remove the option")

#: First match wins: specific keys before the families they belong to.
UNIMPLEMENTED: list[Unimplemented] = [
    Unimplemented(("hoodie.metadata.*", "hoodie.table.metadata.partitions*"),
                  f"hudiql keeps the metadata table's files partition, record index, column stats, partition stats, "
                  f"bloom filters and secondary indexes ({METADATA_ENABLE}, {METADATA_COMPACT_MAX_DELTA_COMMITS}, "
                  f"{RECORD_INDEX_ENABLE}, {RECORD_INDEX_MIN_FILE_GROUPS}, {RECORD_INDEX_MAX_FILE_GROUPS}, "
                  f"{COLUMN_STATS_ENABLE}, {COLUMN_STATS_COLUMNS}, {PARTITION_STATS_ENABLE}, {BLOOM_FILTERS_ENABLE}, "
                  f"{BLOOM_FILTERS_FILE_GROUPS}; CREATE INDEX), not its other indexes; remove the option", ("false",)),
    Unimplemented(("hoodie.table.cdc.*",), "hudiql does not write change data capture (CDC) logs; remove the option "
                                           "or set it to false", ("false",)),
    Unimplemented(("hoodie.clean.async", "hoodie.archive.async"),
                  f"hudiql cleans and archives after each commit, in the statement ({CLEAN_AUTOMATIC}, "
                  f"{ARCHIVE_AUTOMATIC}); remove the option or set it to false", ("false",)),
    Unimplemented(("hoodie.cleaner.delete.bootstrap.base.file", "hoodie.archive.beyond.savepoint"),
                  "hudiql does not bootstrap tables, and archiving stops at the first savepoint; remove the option "
                  "or set it to false", ("false",)),
    Unimplemented(("hoodie.cleaner.parallelism", "hoodie.archive.delete.parallelism", "hoodie.archive.merge.*"),
                  "it tunes how Hudi's Java services run, not what they keep", warn=True),
    Unimplemented(("hoodie.clean.*", "hoodie.cleaner.*", "hoodie.archive.*"),
                  f"hudiql cleans with {CLEANER_POLICY}, {CLEANER_COMMITS_RETAINED}, {CLEANER_FILE_VERSIONS_RETAINED}, "
                  f"{CLEANER_HOURS_RETAINED} and {CLEAN_MAX_COMMITS}, and archives with {KEEP_MIN_COMMITS} and "
                  f"{KEEP_MAX_COMMITS}; remove the option"),
    Unimplemented(("hoodie.clustering.async.enabled", "hoodie.clustering.schedule.inline"),
                  f"hudiql clusters inline ({INLINE_CLUSTERING}) or by CALL run_clustering; remove the option or set "
                  "it to false", ("false",)),
    Unimplemented(("hoodie.clustering.*", "hoodie.layout.optimize.*"),
                  f"hudiql plans clustering by {CLUSTERING_SMALL_FILE_LIMIT}, {CLUSTERING_TARGET_FILE_SIZE}, "
                  f"{CLUSTERING_SORT_COLUMNS} and {CLUSTERING_MAX_GROUPS}; remove the option"),
    Unimplemented(("hoodie.bloom.*", "hoodie.index.bloom.*"),
                  "it tunes how Hudi's Java BLOOM index runs its lookup, not what it finds", warn=True),
    Unimplemented(("hoodie.simple.index.parallelism", "hoodie.global.simple.index.parallelism"),
                  "Spark chooses the parallelism of hudiql's index lookup (spark.sql.shuffle.partitions)", warn=True),
    Unimplemented(("hoodie.index.class", "hoodie.bucket.index.max.num.buckets", "hoodie.bucket.index.min.num.buckets",
                   "hoodie.global.simple.index.*", "hoodie.simple.index.*", "hoodie.record.index.*",
                   "hoodie.hbase.index.*", "hoodie.bucket.index.*", "hoodie.index.*"),
                  "hudiql's indexes are hoodie.index.type=SIMPLE, BLOOM, GLOBAL_SIMPLE, GLOBAL_BLOOM (with "
                  f"{SIMPLE_UPDATE_PARTITION_PATH}, {BLOOM_UPDATE_PARTITION_PATH}), BUCKET "
                  "(hoodie.bucket.index.num.buckets, hoodie.bucket.index.hash.field) and RECORD_INDEX "
                  f"({RECORD_INDEX_ENABLE}, {RECORD_INDEX_UPDATE_PARTITION_PATH}); remove the option"),
    Unimplemented(("hoodie.table.partition.stats*",),
                  "hudiql keeps no metadata table, and with it no partition stats; remove the option"),
    Unimplemented(("hoodie.datasource.write.keygenerator.type",),
                  "give the class instead: hoodie.datasource.write.keygenerator.class="
                  + ", ".join(k.rsplit(".", 1)[1] for k in KEY_GENERATORS)),
    Unimplemented(("hoodie.compaction.record.merger.strategy", "hoodie.datasource.write.record.merger.*",
                   "hoodie.write.record.merge.*", "hoodie.record.merger.*"),
                  "hudiql merges records by the payload class (payloadClass) and merge mode (recordMergeMode); "
                  "remove the option"),
    Unimplemented(("hoodie.combine.before.upsert", "hoodie.combine.before.delete"),
                  "hudiql always combines rows of one key before an upsert or delete; remove the option", ("true",)),
    Unimplemented(("hoodie.datasource.write.insert.drop.duplicates", "hoodie.sql.bulk.insert.enable"),
                  f"choose what INSERT does with {INSERT_INTO_OPERATION}=insert, upsert or bulk_insert; remove the option",
                  ("false",)),
    Unimplemented(("hoodie.sql.insert.mode",),
                  f"Hudi deprecated it: choose what INSERT does with {INSERT_INTO_OPERATION}=insert, upsert or bulk_insert, "
                  f"and {INSERT_DUP_POLICY}=none, drop or fail; remove the option"),
    Unimplemented(("hoodie.write.lock.*", "hoodie.write.concurrency.*", "hoodie.client.heartbeat.*"), _ONE_LOCK),
    Unimplemented(("hoodie.datasource.write.reconcile.schema", "hoodie.avro.schema.validate",
                   "hoodie.datasource.write.schema.allow.auto.evolution.column.drop"),
                  "hudiql writes the table's own schema (change it with ALTER TABLE); remove the option or set it to false",
                  ("false",)),
    Unimplemented(("hoodie.avro.schema", "hoodie.write.schema", "hoodie.base.path", WRITE_TABLE_NAME),
                  "hudiql takes the schema, name and location from CREATE TABLE; remove the option"),
    Unimplemented(("hoodie.datasource.hive_sync.enable", "hoodie.datasource.meta.sync.enable", "hoodie.meta.sync.enable"),
                  "hudiql does not sync tables to a Hive metastore (its warehouse is the catalog); remove the option",
                  ("false",)),
    Unimplemented(("hoodie.datasource.hive_sync.*", "hoodie.meta.sync.*", "hoodie.meta_sync.*"),
                  "hudiql does not sync tables to a Hive metastore (its warehouse is the catalog); remove the option"),
    Unimplemented(("hoodie.bootstrap.*",), "hudiql does not bootstrap tables from existing files; remove the option"),
    Unimplemented(("hoodie.datasource.read.*", "hoodie.datasource.query.incremental.*", "hoodie.read.timeline.*"),
                  f"hudiql reads as of an instant ({AS_OF_INSTANT}) and incrementally ({BEGIN_INSTANT}, {END_INSTANT}, "
                  f"{INCREMENTAL_FALLBACK}, {INCLUDE_DELETES}); remove the option"),
    Unimplemented(("hoodie.datasource.write.streaming.*",), "hudiql does not write streams; remove the option"),
    Unimplemented(("hoodie.compact.schedule.inline", "hoodie.compaction.reverse.log.read"),
                  "hudiql schedules and runs compaction together (hoodie.compact.inline, CALL run_compaction); "
                  "remove the option or set it to false", ("false",)),
    Unimplemented(("hoodie.compaction.lazy.block.read",),
                  "hudiql reads each log file whole when it merges; nothing else changes", warn=True),
    Unimplemented(("hoodie.compaction.*", "hoodie.log.compaction.*", "hoodie.compact.*"),
                  "hudiql compacts every file group with log files, triggered by hoodie.compact.inline.* or CALL "
                  "run_compaction; remove the option"),
    Unimplemented(("hoodie.orc.*", "hoodie.hfile.*"), "hudiql writes Parquet base files; remove the option"),
    Unimplemented(("hoodie.parquet.outputtimestamptype",),
                  "hudiql writes timestamps as TIMESTAMP_MICROS; remove the option or set it to TIMESTAMP_MICROS",
                  ("TIMESTAMP_MICROS",)),
    Unimplemented(("hoodie.parquet.writelegacyformat.enabled",),
                  "hudiql writes the standard Parquet format; remove the option or set it to false", ("false",)),
    # Hudi 0.x and 1.x write Hudi log files for either value; hoodie.logfile.data.block.format decides their blocks.
    Unimplemented(("hoodie.table.log.file.format",),
                  f"hudiql writes Hudi log files, whose data blocks {LOG_BLOCK_FORMAT} makes avro or parquet; remove the "
                  "option or set it to HOODIE_LOG or PARQUET", ("HOODIE_LOG", "PARQUET")),
    Unimplemented(("hoodie.auto.commit",), "every hudiql statement commits when it ends; remove the option or set it to true",
                  ("true",)),
    # Speed and file layout only: a warning.
    Unimplemented(("hoodie.*.parallelism", "hoodie.*.shuffle.parallelism"),
                  "Spark chooses how many tasks a write runs (spark.sql.shuffle.partitions)", warn=True),
    Unimplemented(("hoodie.parquet.block.size", "hoodie.parquet.page.size", "hoodie.parquet.dictionary.enabled",
                   "hoodie.parquet.compression.ratio", "hoodie.parquet.field_id.write.enabled", "hoodie.logfile.max.size",
                   "hoodie.logfile.data.block.max.size", "hoodie.logfile.to.parquet.compression.ratio",
                   "hoodie.copyonwrite.insert.split.size", "hoodie.copyonwrite.insert.auto.split",
                   "hoodie.record.size.estimation.threshold", "hoodie.merge.small.file.group.candidates.limit"),
                  "hudiql sizes files from hoodie.parquet.max.file.size and hoodie.parquet.small.file.limit", warn=True),
    Unimplemented(("hoodie.write.markers.*", "hoodie.markers.*", "hoodie.embed.timeline.server*", "hoodie.filesystem.view.*",
                   "hoodie.write.buffer.limit.bytes", "hoodie.memory.*", "hoodie.write.status.storage.level*",
                   "hoodie.consistency.check.*", "hoodie.datasource.write.row.writer.enable",
                   "hoodie.spark.sql.optimized.writes.enable", "hoodie.fail.on.timeline.archiving"),
                  "it tunes Hudi's Java writer, which hudiql does not use", warn=True),
]


#: How alike a key in a refused family and an implemented key must be to be taken for its typo.
_TYPO_CUTOFF = 0.9


def unimplemented(key: str) -> Unimplemented | None:
    """The entry for a known Hudi key hudiql does not implement, else ``None``.

    A key that is only in a family (``hoodie.index.*``) and nearly spells an implemented key
    (``hoodie.index.typ``) is a typo, not a Hudi key: ``None``.
    """
    if key in KEYS:
        return None
    entry = next((u for u in UNIMPLEMENTED if u.matches(key)), None)
    if entry is None or entry.names(key):
        return entry
    typo = difflib.get_close_matches(key.lower(), [k.lower() for k in KEYS], n=1, cutoff=_TYPO_CUTOFF)
    return None if typo else entry


def is_known(key: str) -> bool:
    """Implemented, or a Hudi key hudiql knows it does not implement."""
    return key in KEYS or unimplemented(key) is not None


# ---- validation --------------------------------------------------------------------------------------


def _check_hoodie(key: str, value: str, where: str) -> list[str]:
    """Check one ``hoodie.*`` option given as a table option (``where=TABLE``) or SET (``SESSION``)."""
    spec = KEYS.get(key)
    if spec is not None:
        spec.check(value)  # a value hudiql cannot honour says why, wherever it was given
        if spec.where == SESSION and where == TABLE:
            raise OptionError(f"{key} is a session option, not a table option; give it with SET {key}={value}")
        if spec.where == TABLE and where == SESSION:
            raise OptionError(
                f"{key} is a table option, not a session option; give it in CREATE TABLE ... "
                f"TBLPROPERTIES ('{key}'='{value}')"
            )
        return []
    entry = unimplemented(key)
    if entry is None:
        # Compared without the "hoodie." every key shares, which would make any two keys look alike.
        guess = closest(key.removeprefix("hoodie."), [k.removeprefix("hoodie.") for k in implemented_keys()])
        guess = guess and "hoodie." + guess
        hint = f"; did you mean '{guess}'?" if guess else "; hudiql's options are listed in hudiql.config.registry"
        raise OptionError(f"unknown {'table ' if where == TABLE else ''}option '{key}'{hint}")
    if value.strip().lower() in {v.lower() for v in entry.accepted}:
        return []
    if entry.warn:
        return [f"{key} is ignored: {entry.why}"]
    raise OptionError(f"{key}={value} is not supported: {entry.why}")


def check_retention(settings: Mapping[str, str]) -> None:
    """Refuse retention settings that contradict each other, as Hudi's write config does:
    archiving must leave more instants than the cleaner retains (an incremental read of a retained
    commit needs its instant), and starts only above what it leaves.

    Example:
        >>> check_retention({CLEANER_COMMITS_RETAINED: "25"})
        Traceback (most recent call last):
        ...
        hudiql.errors.OptionError: hoodie.keep.min.commits=20 must be greater than hoodie.cleaner.commits.retained=25: raise hoodie.keep.min.commits (and hoodie.keep.max.commits above it) or lower hoodie.cleaner.commits.retained
    """
    retained, keep_min, keep_max = (number(settings, key) for key in (CLEANER_COMMITS_RETAINED, KEEP_MIN_COMMITS,
                                                                     KEEP_MAX_COMMITS))
    if keep_min <= retained:
        raise OptionError(f"{KEEP_MIN_COMMITS}={keep_min} must be greater than {CLEANER_COMMITS_RETAINED}={retained}: "
                          f"raise {KEEP_MIN_COMMITS} (and {KEEP_MAX_COMMITS} above it) or lower {CLEANER_COMMITS_RETAINED}")
    if keep_max <= keep_min:
        raise OptionError(f"{KEEP_MAX_COMMITS}={keep_max} must be greater than {KEEP_MIN_COMMITS}={keep_min}: "
                          f"raise {KEEP_MAX_COMMITS} or lower {KEEP_MIN_COMMITS}")


def validate_table_options(options: dict[str, str]) -> list[str]:
    """Check CREATE TABLE options; raise ``OptionError`` on the first bad one, return warning lines."""
    warnings: list[str] = []
    short = short_table_options()
    for key, value in options.items():
        value = "" if value is None else str(value)
        if key.startswith("hoodie."):
            warnings += _check_hoodie(key, value, TABLE)
        elif key in short:
            if key in KEYS:
                KEYS[key].check(value)
        else:
            guess = closest(key, short)
            hint = (f"; did you mean '{guess}'?" if guess
                    else f"; valid names are {', '.join(sorted(short))} or a 'hoodie.*' key")
            raise OptionError(f"unknown table option '{key}'{hint}")
    return warnings


def validate_session_option(key: str, value: str, commit_prefix: str = "_") -> list[str]:
    """Check ``SET key=value``; raise ``OptionError`` when it is bad, return warning lines.

    ``spark.*`` keys are Spark's business, and a key with the session's commit-metadata prefix
    (``commit_prefix``) is the commits' (``commit_extra_metadata``); any other key must be a
    session option of the registry (``hoodie.*``, ``write.batch.size``, ``hudiql.cli.print.header``):
    a typo is an error naming the closest one, never a setting nothing reads.
    """
    if key.startswith("spark.") or (commit_prefix and key.startswith(commit_prefix)):
        return []
    if key.startswith("hoodie."):
        return _check_hoodie(key, value, SESSION)
    spec = KEYS.get(key)
    session_keys = [k for k, s in KEYS.items() if s.where != TABLE]
    if spec is None or spec.where == TABLE:
        guess = closest(key, session_keys)
        hint = f"; did you mean '{guess}'?" if guess else "; SET takes spark.*, hoodie.* and hudiql's own session options"
        raise OptionError(f"unknown session option '{key}'{hint}")
    spec.check(value)
    return []
