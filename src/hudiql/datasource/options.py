"""The options of ``spark.read.format("hudi")`` and ``df.write.format("hudi")``, checked before
anything is read or written.

Spark hands a Python data source its options with lower-case keys. Each read option is one of
the session keys of ``config.registry`` (the same names as ``SET``), or Hudi's data source spelling
``as.of.instant`` for time travel. A write takes the table's name (``hoodie.table.name``), the
operation (``hoodie.datasource.write.operation``) and any key ``config.registry`` accepts: a table
option (``TBLPROPERTIES``: key and partition fields, table type, ...) describes the table a first
write creates, and must agree with an existing table; a session option (``SET``) applies to this
write. Anything else is one error naming the closest valid option.

Example:
    >>> read_options({"path": "/t", "hoodie.datasource.query.type": "read_optimized"})
    ReadOptions(path='/t', query_type='read_optimized', as_of='', begin='', end='', fallback=False)
    >>> read_options({"path": "/t", "as.of.instant": "2024-05-01"}).as_of
    '2024-05-01'
    >>> read_options({"path": "/t", "as.of.instnt": "2024-05-01"})
    Traceback (most recent call last):
    ...
    hudiql.errors.OptionError: unknown option 'as.of.instnt' of format("hudi"); did you mean 'as.of.instant'?
    >>> w = write_options({"path": "/t", "hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id",
    ...                    "hoodie.parquet.max.file.size": "1000000"}, overwrite=False)
    >>> w.operation, w.replaces, w.table_options["hoodie.datasource.write.recordkey.field"], w.settings
    ('upsert', None, 'id', {'hoodie.parquet.max.file.size': '1000000'})
    >>> write_options({"path": "/t", "hoodie.datasource.write.operation": "upsert"}, overwrite=True).replaces
    'insert_overwrite_table'
    >>> write_options({"path": "/t", "hoodie.datasource.write.operation": "delete_partition"}, overwrite=False)
    Traceback (most recent call last):
    ...
    hudiql.errors.OptionError: hoodie.datasource.write.operation=delete_partition is not supported by df.write.format("hudi"): drop partitions with hudiql SQL: ALTER TABLE <table> DROP PARTITION (...)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from hudiql.config import registry
from hudiql.config import table_config as C
from hudiql.config.registry import TIME_TRAVEL_OPTION
from hudiql.errors import OptionError, closest

PATH_OPTION = "path"

SNAPSHOT, READ_OPTIMIZED, INCREMENTAL = "snapshot", "read_optimized", "incremental"

#: The session keys a read takes, by Spark's lower-cased spelling.
_READ_KEYS = {k.lower(): k for k in (registry.QUERY_TYPE, registry.AS_OF_INSTANT, registry.BEGIN_INSTANT, registry.END_INSTANT,
                                     registry.INCREMENTAL_FALLBACK, registry.INCLUDE_DELETES)}


@dataclass(frozen=True)
class ReadOptions:
    """A checked read: the table's path, the query type, and its instants (``""``: not given)."""

    path: str
    query_type: str
    as_of: str
    begin: str
    end: str
    fallback: bool


def read_options(options: Mapping[str, str]) -> ReadOptions:
    """``options`` as given to ``load``, checked; raises ``OptionError`` naming the first bad one."""
    given: dict[str, str] = {}
    for name, value in options.items():
        key = _READ_KEYS.get(name.lower())
        if name.lower() == TIME_TRAVEL_OPTION:
            key = registry.AS_OF_INSTANT
        elif key is None and name.lower() != PATH_OPTION:
            guess = closest(name, [*_READ_KEYS.values(), TIME_TRAVEL_OPTION])
            hint = f"; did you mean '{guess}'?" if guess else f"; a read takes {', '.join(sorted(_READ_KEYS.values()))} and {TIME_TRAVEL_OPTION}"
            raise OptionError(f"unknown option '{name}' of format(\"hudi\"){hint}")
        if key is not None:
            registry.validate_session_option(key, value)
            given[key] = value
    path = options.get(PATH_OPTION)
    if not path:
        raise OptionError('format("hudi") needs the table\'s path: spark.read.format("hudi").load("/path/to/table")')
    if registry.flag(given, registry.INCLUDE_DELETES):
        raise OptionError(
            f'{registry.INCLUDE_DELETES}=true is not supported by format("hudi"); read deleted records with hudiql SQL: '
            f"hudiql.connect(spark=spark).sql(\"SET {registry.INCLUDE_DELETES}=true\"), then SELECT ... FROM "
            f"hudi_table_changes('{path}', 'latest_state', '<begin>')"
        )
    read = ReadOptions(
        path=path,
        query_type=registry.choice(given, registry.QUERY_TYPE),
        as_of=registry.setting(given, registry.AS_OF_INSTANT).strip(),
        begin=registry.setting(given, registry.BEGIN_INSTANT).strip(),
        end=registry.setting(given, registry.END_INSTANT).strip(),
        fallback=registry.flag(given, registry.INCREMENTAL_FALLBACK),
    )
    if read.query_type == INCREMENTAL and not read.begin:
        raise OptionError(f"an incremental read needs .option('{registry.BEGIN_INSTANT}', '<instant>' or 'earliest')")
    if read.query_type == INCREMENTAL and read.as_of:
        raise OptionError(f"an incremental read takes {registry.BEGIN_INSTANT} and {registry.END_INSTANT}, not "
                          f"{TIME_TRAVEL_OPTION}; give one kind of read")
    if read.query_type != INCREMENTAL and (read.begin or read.end):
        raise OptionError(f"{registry.BEGIN_INSTANT} and {registry.END_INSTANT} need .option('{registry.QUERY_TYPE}', 'incremental')")
    return read


# ---- writes --------------------------------------------------------------------------------------

#: The operations ``df.write.format("hudi")`` runs (``hoodie.datasource.write.operation``); upsert by default.
UPSERT, INSERT, BULK_INSERT, DELETE = "upsert", "insert", "bulk_insert", "delete"
INSERT_OVERWRITE, INSERT_OVERWRITE_TABLE = "insert_overwrite", "insert_overwrite_table"
WRITE_OPERATIONS = (UPSERT, INSERT, BULK_INSERT, DELETE, INSERT_OVERWRITE, INSERT_OVERWRITE_TABLE)
_REFUSED_OPERATIONS = {
    "delete_partition": "drop partitions with hudiql SQL: ALTER TABLE <table> DROP PARTITION (...)",
    "bootstrap": "hudiql does not bootstrap tables from existing files",
    **{f"{op}_prepped": "hudiql tags records itself; use " + op for op in (UPSERT, INSERT, BULK_INSERT, DELETE)},
}

#: Option keys by Spark's lower-cased spelling.
_CANONICAL = {k.lower(): k for k in registry.KEYS}
_NAME_KEYS = (C.TABLE_NAME, registry.WRITE_TABLE_NAME)


@dataclass(frozen=True)
class WriteOptions:
    """A checked write: where, the table's name (``""``: not given), the operation, the save mode,
    the table options (of the table a first write creates) and this write's session settings."""

    path: str
    name: str
    operation: str
    overwrite: bool
    table_options: dict[str, str]
    settings: dict[str, str]
    warnings: tuple[str, ...] = ()

    @property
    def replaces(self) -> str | None:
        """The overwrite operation the write runs as, if it replaces rows: save mode overwrite
        replaces the whole table (but with operation insert_overwrite, the partitions the rows land in)."""
        if self.operation in (INSERT_OVERWRITE, INSERT_OVERWRITE_TABLE):
            return self.operation
        return INSERT_OVERWRITE_TABLE if self.overwrite else None


def write_options(options: Mapping[str, str], overwrite: bool) -> WriteOptions:
    """``options`` of ``df.write.format("hudi")`` (``overwrite``: save mode overwrite), checked;
    raises ``OptionError`` naming the first bad one."""
    names: set[str] = set()
    operation = UPSERT
    table_options: dict[str, str] = {}
    settings: dict[str, str] = {}
    warnings: list[str] = []
    for given, value in options.items():
        key = _CANONICAL.get(given.lower(), given)
        spec = registry.KEYS.get(key)
        if key.lower() == PATH_OPTION:
            continue
        if key in _NAME_KEYS:
            names.add(value.strip())
        elif key == registry.WRITE_OPERATION:
            operation = _operation(value)
        elif spec is not None and spec.where == registry.SESSION:
            warnings += registry.validate_session_option(key, value)
            settings[key] = value
        elif spec is not None or key.startswith("hoodie."):
            warnings += registry.validate_table_options({key: value})  # an unknown hoodie.* key names the closest
            table_options[key] = value
            if spec is not None and spec.where == registry.BOTH:
                settings[key] = value  # a write setting too, as SET gives it
        else:
            guess = closest(key, [*_NAME_KEYS, registry.WRITE_OPERATION, *registry.KEYS])
            hint = f"; did you mean '{guess}'?" if guess else "; it takes hoodie.* keys (hudiql.config.registry)"
            raise OptionError(f'unknown option \'{given}\' of df.write.format("hudi"){hint}')
    path = options.get(PATH_OPTION)
    if not path:
        raise OptionError('df.write.format("hudi") needs the table\'s path: .save("/path/to/table")')
    if len(names) > 1:
        raise OptionError(f"{C.TABLE_NAME} and {registry.WRITE_TABLE_NAME} name different tables ({', '.join(sorted(names))}); "
                          "give one name")
    if overwrite and operation == DELETE:
        raise OptionError(f'{registry.WRITE_OPERATION}={DELETE} cannot run in save mode overwrite; use .mode("append")')
    return WriteOptions(path, next(iter(names), ""), operation, overwrite, table_options, settings, tuple(warnings))


def _operation(value: str) -> str:
    operation = value.strip().lower()
    if operation in WRITE_OPERATIONS:
        return operation
    why = _REFUSED_OPERATIONS.get(operation)
    if why:
        raise OptionError(f'{registry.WRITE_OPERATION}={value} is not supported by df.write.format("hudi"): {why}')
    raise OptionError(f"{registry.WRITE_OPERATION}={value} is not valid; use {', '.join(WRITE_OPERATIONS[:-1])} "
                      f"or {WRITE_OPERATIONS[-1]}")


def check_table_options(write: WriteOptions, config: C.TableConfig) -> None:
    """Refuse a write whose table options (key or partition fields, table type, ...) differ from
    those of the table it writes: they are fixed when a table is created."""
    for key, value in write.table_options.items():
        spec = registry.KEYS.get(key)
        if spec is None or spec.where != registry.TABLE:
            continue
        canonical = spec.same_as or key
        try:
            stored = registry.setting(config.props, canonical)
        except KeyError:
            stored = ""
        if not _same(spec.kind, canonical, value, stored):
            raise OptionError(
                f"{key}={value} differs from the table at {write.path}, which has {canonical}={stored or '(none)'}; "
                "a table's options are fixed when it is created: remove the option, or write to a new path"
            )
    if write.name and write.name.lower() != config.name.lower():
        raise OptionError(f"the table at {write.path} is named {config.name}, not {write.name} ({C.TABLE_NAME}); "
                          f"give {C.TABLE_NAME}={config.name} or leave it out")


def _same(kind: str, key: str, given: str, stored: str) -> bool:
    """Whether option ``key`` given as ``given`` says what the table's ``stored`` value says."""
    given, stored = given.strip(), stored.strip()
    if kind == registry.COLUMNS:
        return [c.strip().lower() for c in given.split(",") if c.strip()] == [c.strip().lower() for c in stored.split(",") if c.strip()]
    if key == C.TABLE_TYPE:
        return C.table_type(given) == C.table_type(stored or C.COPY_ON_WRITE)
    if kind in (registry.ENUM, registry.BOOL):
        # Class names (key generator, payload) may be given without their package.
        return given.lower().rsplit(".", 1)[-1] == stored.lower().rsplit(".", 1)[-1]
    return given == stored  # text, such as a date format: "MM" is not "mm"
