"""The option registry (``hudiql.config.registry``): every ``hoodie.*`` option is honoured or refused.

Unit tests call ``validate_table_options`` / ``validate_session_option`` as CREATE TABLE, ALTER
TABLE and SET do; a few run the statements on a real session to check that nothing is written
when an option is refused. The last test reads the package's source: a ``hoodie.*`` key the code
reads cannot be added without registering it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import hudiql
from hudiql.errors import OptionError
from hudiql.config import registry as K
from hudiql.config.registry import is_alterable, validate_session_option, validate_table_options
from hudiql.config.index_config import IndexConfig

NO_ASYNC = ("hudiql cleans and archives after each commit, in the statement (hoodie.clean.automatic, "
            "hoodie.archive.automatic); remove the option or set it to false")
CLEAN_FAMILY = ("hudiql cleans with hoodie.cleaner.policy, hoodie.cleaner.commits.retained, "
                "hoodie.cleaner.fileversions.retained, hoodie.cleaner.hours.retained and hoodie.clean.max.commits, "
                "and archives with hoodie.keep.min.commits and hoodie.keep.max.commits; remove the option")
OVERWRITE_IS_A_STATEMENT = "write INSERT OVERWRITE to replace rows; INSERT INTO takes insert, upsert or bulk_insert"


def table_error(key: str, value: str) -> str:
    with pytest.raises(OptionError) as info:
        validate_table_options({key: value})
    return str(info.value)


def session_error(key: str, value: str) -> str:
    with pytest.raises(OptionError) as info:
        validate_session_option(key, value)
    return str(info.value)


# ---- what issue 12 requires refused, word for word -------------------------------------------------

REFUSED = [
    ("hoodie.table.cdc.enabled", "true",
     "hudiql does not write change data capture (CDC) logs; remove the option or set it to false"),
    ("hoodie.table.cdc.supplemental.logging.mode", "DATA_BEFORE_AFTER",
     "hudiql does not write change data capture (CDC) logs; remove the option or set it to false"),
    ("hoodie.metadata.index.bloom.filter.column.list", "rider",
     "hudiql keeps the metadata table's files partition, record index, column stats, partition stats, bloom filters "
     "and secondary indexes (hoodie.metadata.enable, hoodie.metadata.compact.max.delta.commits, "
     "hoodie.metadata.record.index.enable, hoodie.metadata.record.index.min.filegroup.count, "
     "hoodie.metadata.record.index.max.filegroup.count, hoodie.metadata.index.column.stats.enable, "
     "hoodie.metadata.index.column.stats.column.list, hoodie.metadata.index.partition.stats.enable, "
     "hoodie.metadata.index.bloom.filter.enable, hoodie.metadata.index.bloom.filter.file.group.count; CREATE INDEX), "
     "not its other indexes; remove the option"),
    ("hoodie.clean.async", "true", NO_ASYNC),
    ("hoodie.archive.async", "true", NO_ASYNC),
    ("hoodie.archive.beyond.savepoint", "true",
     "hudiql does not bootstrap tables, and archiving stops at the first savepoint; remove the option or set it to false"),
    ("hoodie.clean.allow.multiple", "false", CLEAN_FAMILY),
    ("hoodie.cleaner.policy.failed.writes", "EAGER",
     "hudiql rolls back a failed write once its heartbeat expired (LAZY); EAGER would roll back the instant of a "
     "writer that is still running"),
    ("hoodie.table.log.file.format", "ORC",
     "hudiql writes Hudi log files, whose data blocks hoodie.logfile.data.block.format makes avro or parquet; "
     "remove the option or set it to HOODIE_LOG or PARQUET"),
    ("hoodie.write.lock.provider", "org.apache.hudi.client.transaction.lock.ZookeeperBasedLockProvider",
     "hudiql locks a table with a file created atomically in its .hoodie folder (FileSystemBasedLockProvider); "
     "remove the option"),
]


@pytest.mark.parametrize(("key", "value", "why"), REFUSED)
def test_required_refusals_as_table_options(key, value, why):
    assert table_error(key, value) == f"{key}={value} is not supported: {why}"


@pytest.mark.parametrize(("key", "value", "why"), [r for r in REFUSED if not r[0].startswith("hoodie.table.")])
def test_required_refusals_as_session_options(key, value, why):
    assert session_error(key, value) == f"{key}={value} is not supported: {why}"


@pytest.mark.parametrize("operation", ["insert_overwrite", "insert_overwrite_table", "INSERT_OVERWRITE"])
def test_overwrite_operations_are_for_insert_overwrite(operation):
    # hoodie.datasource.write.operation decides what INSERT OVERWRITE replaces (tests/write/test_replace.py);
    # hoodie.spark.sql.insert.into.operation is INSERT INTO's, which never replaces rows
    assert validate_session_option("hoodie.datasource.write.operation", operation) == []
    key = "hoodie.spark.sql.insert.into.operation"
    assert session_error(key, operation) == f"{key}={operation} is not supported: {OVERWRITE_IS_A_STATEMENT}"


@pytest.mark.parametrize("key", ["hoodie.datasource.write.operation", "hoodie.spark.sql.insert.into.operation"])
def test_delete_partition_points_at_drop_partition(key):
    assert session_error(key, "delete_partition") == (
        f"{key}=delete_partition is not supported: use ALTER TABLE <table> DROP PARTITION (...); "
        "INSERT takes insert, upsert or bulk_insert")


@pytest.mark.parametrize("operation", ["upsert", "insert", "bulk_insert", "BULK_INSERT"])
def test_write_operations_hudiql_runs_are_accepted(operation):
    assert validate_session_option("hoodie.datasource.write.operation", operation) == []
    assert validate_session_option("hoodie.spark.sql.insert.into.operation", operation) == []


def test_other_operations_say_what_to_use():
    assert session_error("hoodie.datasource.write.operation", "delete") == (
        "hoodie.datasource.write.operation=delete is not supported: "
        "use DELETE FROM <table> WHERE ...; INSERT takes insert, upsert or bulk_insert"
    )
    assert session_error("hoodie.datasource.write.operation", "merge") == (
        "hoodie.datasource.write.operation=merge is not valid; "
        "use insert, upsert, bulk_insert, insert_overwrite or insert_overwrite_table"
    )


def test_a_bloom_filters_sizing_is_checked():
    assert table_error("hoodie.index.bloom.fpp", "2") == (
        "hoodie.index.bloom.fpp=2 is not valid; give a number between 0 and 1 (default 0.000000001)")
    assert session_error("hoodie.index.bloom.num_entries", "0") == (
        "hoodie.index.bloom.num_entries=0 is not valid; give a whole number of keys, at least 1 (default 60000)")


def test_a_bloom_index_lays_file_groups_out_as_simple():
    # Only the lookup differs (index.bloom): a table may switch between them.
    assert IndexConfig.from_settings({"hoodie.index.type": "BLOOM"}, ["id"]).kind == "SIMPLE"
    assert IndexConfig.from_settings({"hoodie.index.type": "simple"}, ["id"]).kind == "SIMPLE"


# ---- values that ask for what hudiql does anyway, and warnings ---------------------------------------


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("hoodie.metadata.enable", "false"),
        ("hoodie.metadata.enable", "FALSE"),
        ("hoodie.table.cdc.enabled", "false"),
        ("hoodie.clean.automatic", "false"),
        ("hoodie.archive.automatic", "false"),
        ("hoodie.clustering.inline", "false"),
        ("hoodie.write.concurrency.mode", "single_writer"),
        ("hoodie.write.concurrency.mode", "optimistic_concurrency_control"),
        ("hoodie.cleaner.policy.failed.writes", "LAZY"),
        ("hoodie.write.lock.provider", "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider"),
        ("hoodie.combine.before.upsert", "true"),
        ("hoodie.datasource.hive_sync.enable", "false"),
        ("hoodie.write.table.version", "6"),
        ("hoodie.write.table.version", "9"),
        ("hoodie.table.version", "8"),
        ("hoodie.table.ordering.fields", "ts"),
        ("hoodie.table.log.file.format", "PARQUET"),  # Hudi log files either way: the block format decides
        ("hoodie.table.log.file.format", "HOODIE_LOG"),
        ("hoodie.logfile.data.block.format", "parquet"),
    ],
)
def test_values_that_match_what_hudiql_does_are_accepted(key, value):
    assert validate_table_options({key: value}) == []


def test_table_version_six_is_accepted_as_a_table_option():
    assert validate_table_options({"hoodie.table.version": "6", "hoodie.timeline.layout.version": "1",
                                   "hoodie.table.base.file.format": "parquet"}) == []


@pytest.mark.parametrize(
    "key", ["hoodie.upsert.shuffle.parallelism", "hoodie.insert.shuffle.parallelism", "hoodie.bulkinsert.shuffle.parallelism",
            "hoodie.parquet.block.size", "hoodie.write.markers.type", "hoodie.embed.timeline.server"],
)
def test_options_that_only_tune_speed_or_layout_warn(key):
    lines = validate_session_option(key, "200")
    assert len(lines) == 1 and lines[0].startswith(f"{key} is ignored: ")
    assert "\n" not in lines[0]
    assert validate_table_options({key: "200"}) == lines


def test_combine_before_insert_takes_a_flag():
    assert session_error("hoodie.combine.before.insert", "maybe").startswith("hoodie.combine.before.insert=maybe")


# ---- misspelt and unknown keys ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "guess"),
    [
        ("hoodie.parquet.max.filesize", "hoodie.parquet.max.file.size"),
        ("hoodie.index.typ", "hoodie.index.type"),
        ("hoodie.bucket.index.numbuckets", "hoodie.bucket.index.num.buckets"),
        ("hoodie.datasource.query.tpye", "hoodie.datasource.query.type"),
        ("hoodie.compact.inlin", "hoodie.compact.inline"),
    ],
)
def test_misspelt_key_names_the_closest(key, guess):
    assert session_error(key, "1") == f"unknown option '{key}'; did you mean '{guess}'?"
    assert table_error(key, "1") == f"unknown table option '{key}'; did you mean '{guess}'?"


def test_unknown_key_without_a_close_one_says_where_the_list_is():
    assert session_error("hoodie.zzzz", "1") == "unknown option 'hoodie.zzzz'; hudiql's options are listed in hudiql.config.registry"


def test_misspelt_short_option_names_the_closest():
    assert table_error("precombine_field", "ts") == "unknown table option 'precombine_field'; did you mean 'preCombineField'?"
    assert table_error("primary_key", "id") == "unknown table option 'primary_key'; did you mean 'primaryKey'?"


def test_non_hoodie_session_keys_are_the_callers_business():
    assert validate_session_option("hudiql.cli.print.header", "true") == []
    assert validate_session_option("spark.sql.shuffle.partitions", "4") == []


# ---- values of implemented keys ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("hoodie.parquet.max.file.size", "big",
         "hoodie.parquet.max.file.size=big is not valid; give a whole number of bytes, at least 1 (default 125829120)"),
        ("hoodie.parquet.max.file.size", "0",
         "hoodie.parquet.max.file.size=0 is not valid; give a whole number of bytes, at least 1 (default 125829120)"),
        ("hoodie.parquet.small.file.limit", "-1",
         "hoodie.parquet.small.file.limit=-1 is not valid; give a whole number of bytes, at least 0 (default 104857600)"),
        ("hoodie.bucket.index.num.buckets", "four",
         "hoodie.bucket.index.num.buckets=four is not valid; give a whole number of buckets, at least 1 (default 256)"),
        ("hoodie.compact.inline.max.delta.commits", "2.5",
         "hoodie.compact.inline.max.delta.commits=2.5 is not valid; give a whole number of delta commits, at least 0 "
         "(default 5)"),
        ("hoodie.compact.inline", "yes", "hoodie.compact.inline=yes is not valid; use true or false"),
        ("hoodie.compact.inline.trigger.strategy", "SOMETIMES",
         "hoodie.compact.inline.trigger.strategy=SOMETIMES is not valid; use NUM_COMMITS, TIME_ELAPSED, "
         "NUM_AND_TIME or NUM_OR_TIME"),
        ("hoodie.parquet.compression.codec", "lzo",
         "hoodie.parquet.compression.codec=lzo is not supported: Arrow cannot write LZO; use snappy, gzip or zstd"),
        ("hoodie.index.type", "HBASE", "hoodie.index.type=HBASE is not valid; use SIMPLE, BUCKET, RECORD_INDEX, BLOOM, GLOBAL_SIMPLE or GLOBAL_BLOOM"),
        ("hoodie.index.bucket.engine", "CONSISTENT_HASHING",
         "hoodie.index.bucket.engine=CONSISTENT_HASHING is not supported: hudiql's bucket index has a fixed number of "
         "buckets; use SIMPLE"),
        ("hoodie.logfile.data.block.format", "orc", "hoodie.logfile.data.block.format=orc is not valid; use avro or parquet"),
    ],
)
def test_bad_values_are_one_clear_line(key, value, message):
    assert session_error(key, value) == message
    assert table_error(key, value) == message


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("hoodie.datasource.query.type", "cdc",
         "hoodie.datasource.query.type=cdc is not supported: hudiql writes no change data capture logs; use "
         "incremental (the latest state of the rows changed, with hoodie.datasource.read.include.deletes=true for "
         "deleted ones)"),
        ("hoodie.datasource.read.incr.fallback.fulltablescan.enable", "yes",
         "hoodie.datasource.read.incr.fallback.fulltablescan.enable=yes is not valid; use true or false"),
        ("hoodie.merge.ordering.enforce", "maybe", "hoodie.merge.ordering.enforce=maybe is not valid; use true or false"),
        ("write.batch.size", "lots", "write.batch.size=lots is not valid; give a size in MB greater than 0 (e.g. 256)"),
    ],
)
def test_bad_session_values(key, value, message):
    assert session_error(key, value) == message


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("hoodie.populate.meta.fields", "no", "hoodie.populate.meta.fields=no is not valid; use true or false"),
        ("hoodie.table.base.file.format", "ORC",
         "hoodie.table.base.file.format=ORC is not supported: hudiql writes hoodie.table.base.file.format=PARQUET; "
         "remove the option or set it to PARQUET"),
        ("hoodie.keygen.timebased.output.timezone", "GMT+8",
         "hoodie.keygen.timebased.output.timezone=GMT+8 is not supported: hudiql formats partition timestamps in UTC; "
         "remove the option or set it to UTC"),
        ("hoodie.keygen.timebased.timestamp.type", "EPOCHMICROSECONDS",
         "hoodie.keygen.timebased.timestamp.type=EPOCHMICROSECONDS is not supported: hudiql reads EPOCHMILLISECONDS, "
         "UNIX_TIMESTAMP (seconds), SCALAR (days) or DATE_STRING partition values"),
        ("hoodie.table.type", "merge",
         "hoodie.table.type=merge is not valid; use COPY_ON_WRITE, MERGE_ON_READ, cow or mor"),
        ("hoodie.datasource.write.keygenerator.type", "SIMPLE",
         "hoodie.datasource.write.keygenerator.type=SIMPLE is not supported: give the class instead: "
         "hoodie.datasource.write.keygenerator.class=SimpleKeyGenerator, ComplexKeyGenerator, "
         "NonpartitionedKeyGenerator, TimestampBasedKeyGenerator, CustomKeyGenerator"),
        ("hoodie.write.table.version", "7", "hoodie.write.table.version=7 is not valid; use 6, 8 or 9"),
        ("hoodie.table.version", "5", "hoodie.table.version=5 is not valid; use 6, 8 or 9"),
        ("hoodie.table.initial.version", "8",
         "hoodie.table.initial.version is written by hudiql from the CREATE TABLE statement; remove the option"),
    ],
)
def test_bad_table_values(key, value, message):
    assert table_error(key, value) == message


def test_good_values_are_accepted_in_any_case():
    assert validate_table_options({
        "hoodie.index.type": "bucket", "hoodie.bucket.index.num.buckets": "4", "hoodie.index.bucket.engine": "simple",
        "hoodie.parquet.max.file.size": "1048576", "hoodie.parquet.compression.codec": "ZSTD",
        "hoodie.compact.inline": "TRUE", "hoodie.compact.inline.trigger.strategy": "num_or_time",
        "hoodie.table.type": "merge_on_read", "type": "MOR", "hoodie.record.merge.mode": "event_time_ordering",
    }) == []
    assert validate_session_option("hoodie.datasource.query.type", "READ_OPTIMIZED") == []
    assert validate_session_option("write.batch.size", "0.5") == []


# ---- where an option may be given ---------------------------------------------------------------------


def test_table_option_given_with_set_says_where_it_belongs():
    assert session_error("hoodie.datasource.write.recordkey.field", "id") == (
        "hoodie.datasource.write.recordkey.field is a table option, not a session option; give it in CREATE TABLE ... "
        "TBLPROPERTIES ('hoodie.datasource.write.recordkey.field'='id')"
    )


def test_session_option_given_to_create_table_says_where_it_belongs():
    assert table_error("hoodie.merge.ordering.enforce", "false") == (
        "hoodie.merge.ordering.enforce is a session option, not a table option; "
        "give it with SET hoodie.merge.ordering.enforce=false"
    )


def test_written_properties_cannot_be_given():
    assert table_error("hoodie.table.name", "other") == (
        "hoodie.table.name is written by hudiql from the CREATE TABLE statement; remove the option"
    )


# ---- ALTER TABLE: what may change after the table is created ------------------------------------------


@pytest.mark.parametrize(
    "key",
    [
        "hoodie.table.recordkey.fields", "hoodie.datasource.write.recordkey.field", "primaryKey",
        "hoodie.table.partition.fields", "hoodie.datasource.write.partitionpath.field",
        "hoodie.table.type", "type", "hoodie.table.keygenerator.class", "hoodie.compaction.payload.class",
        "payloadClass", "hoodie.record.merge.mode", "hoodie.table.precombine.field", "preCombineField",
        "hoodie.index.type", "hoodie.bucket.index.num.buckets", "hoodie.bucket.index.hash.field",
        "hoodie.table.version", "hoodie.table.name", "hoodie.datasource.write.hive_style_partitioning",
        "hoodie.no.such.key",
    ],
)
def test_identity_of_a_table_cannot_change(key):
    assert not is_alterable(key)


@pytest.mark.parametrize(
    "key",
    [
        "hoodie.parquet.max.file.size", "hoodie.parquet.small.file.limit", "hoodie.parquet.compression.codec",
        "hoodie.copyonwrite.record.size.estimate", "hoodie.logfile.data.block.format", "hoodie.compact.inline",
        "hoodie.compact.inline.trigger.strategy", "hoodie.compact.inline.max.delta.commits",
        "hoodie.compact.inline.max.delta.seconds", "hoodie.spark.sql.insert.into.operation",
    ],
)
def test_write_tuning_and_compaction_may_change(key):
    assert is_alterable(key)


# ---- the registry itself ---------------------------------------------------------------------------


def test_implemented_keys_are_hoodie_keys_with_a_where():
    names = K.implemented_keys()
    assert names == sorted(names) and all(n.startswith("hoodie.") for n in names)
    assert {"hoodie.index.type", "hoodie.parquet.max.file.size", "hoodie.datasource.query.type"} <= set(names)
    assert all(K.KEYS[n].where in (K.TABLE, K.SESSION, K.BOTH) for n in names)
    # No key is both implemented and listed as unimplemented: the registry decides once.
    assert [n for n in K.KEYS if K.unimplemented(n)] == []


def test_defaults_are_valid_values():
    for spec in K.KEYS.values():
        if spec.default is not None:
            spec.check(spec.default)


def test_short_options_stand_for_registered_hoodie_keys():
    for spec in K.KEYS.values():
        if spec.same_as is not None:
            assert spec.same_as in K.KEYS and spec.same_as.startswith("hoodie."), spec.name


PACKAGE = Path(hudiql.__file__).parent
#: A quoted ``hoodie.*`` key (a file name such as hoodie.properties is not an option).
_LITERAL = re.compile(r"""["'](hoodie\.[A-Za-z0-9_.]*[A-Za-z0-9_])""")
_NOT_OPTIONS = {"hoodie.properties"}


def test_every_key_the_code_names_is_registered():
    # config/registry.py is the registry; every other file must name only keys it registers, so that a
    # new option cannot be read without being validated and listed.
    found: dict[str, str] = {}
    for path in sorted([*PACKAGE.rglob("*.py"), *PACKAGE.rglob("*.sql")]):
        if path.relative_to(PACKAGE).as_posix() == "config/registry.py":
            continue
        for key in _LITERAL.findall(path.read_text()):
            found.setdefault(key, str(path.relative_to(PACKAGE)))
    unregistered = {k: f for k, f in found.items() if k not in _NOT_OPTIONS and not K.is_known(k)}
    assert unregistered == {}
    assert len(found) > 20, "the scan no longer finds the keys the code names"


# ---- on a real session: a refused option leaves nothing behind ----------------------------------------


def test_create_table_with_a_refused_option_creates_nothing(session, warehouse):
    for option in ("'hoodie.metadata.enable'='true'", "'hoodie.write.table.version'='7'", "'hoodie.index.type'='HBASE'",
                   "'hoodie.parquet.max.file.size'='big'", "'hoodie.cleaner.commits.retained'='25'"):
        with pytest.raises(OptionError):
            session.sql(f"CREATE TABLE t (id INT, v STRING) USING hudi TBLPROPERTIES (primaryKey='id', {option})")
        assert not (warehouse / "default.db" / "t").exists() and not (warehouse / "t").exists()
    session.sql("CREATE TABLE t (id INT, v STRING) USING hudi TBLPROPERTIES (primaryKey='id', 'hoodie.metadata.enable'='false')")
    session.sql("INSERT INTO t VALUES (1, 'a')")
    assert [tuple(r) for r in session.sql("SELECT id, v FROM t").collect()] == [(1, "a")]


def test_set_refuses_before_anything_runs(session):
    with pytest.raises(OptionError, match="write INSERT OVERWRITE to replace rows"):
        session.sql("SET hoodie.spark.sql.insert.into.operation=insert_overwrite_table")
    with pytest.raises(OptionError, match="did you mean 'hoodie.parquet.max.file.size'"):
        session.sql("SET hoodie.parquet.max.filesize=1000")
    assert "hoodie.spark.sql.insert.into.operation" not in session.conf
    assert "hoodie.parquet.max.filesize" not in session.conf


def test_set_warns_in_one_line_on_stderr(session, capsys):
    session.sql("SET hoodie.upsert.shuffle.parallelism=8")
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "hoodie.upsert.shuffle.parallelism is ignored" in err[0]
