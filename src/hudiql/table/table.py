"""A Hudi table on storage, as one statement sees it: the statement's context. Its config
(``hoodie.properties``, read once), the settings the statement runs with (``for_statement``: the
table's properties under the session's ``SET`` and the statement's options), its timeline (listed
when first needed, listed again only by ``refreshed()``), schema, key generator, index and file
system view, each derived once and handed to the snapshots the statement takes after.

Example:
    >>> _ = session.sql("CREATE TABLE orders (id BIGINT, ts TIMESTAMP, day STRING) USING hudi PARTITIONED BY (day) "
    ...                 "TBLPROPERTIES (primaryKey = 'id', preCombineField = 'ts')")
    >>> table = HudiTable.load(warehouse + "/orders")
    >>> table.config.record_key_fields, table.config.partition_fields, table.schema.simpleString()
    (['id'], ['day'], 'struct<id:bigint,ts:timestamp,day:string>')
    >>> table.merge_rule, table.keygen.class_name
    (MergeRule(mode='EVENT_TIME_ORDERING', ordering_field='ts'), 'org.apache.hudi.keygen.SimpleKeyGenerator')
    >>> table.timeline.instants, table.file_system_view().partitions()      # nothing written yet
    ([], [])
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property

from pyspark.sql import types as T

from hudiql.config.index_config import IndexConfig
from hudiql.config.settings import Settings
from hudiql.config.table_config import TableConfig, damaged_properties
from hudiql.errors import FormatError, TableNotFoundError
from hudiql.file_group.reader import SliceReader
from hudiql.io.storage import Storage
from hudiql.layout import META_FOLDER, PROPERTIES_FILE
from hudiql.table.fsview import FileSystemView, read_commit_metadata
from hudiql.table.metadata_table import listing_files
from hudiql.record.keygen import KeyGenerator
from hudiql.record.merge import MergeRule
from hudiql.record.schema import from_avro, to_arrow, with_meta_columns, without_meta_columns
from hudiql.timeline.active import Timeline


def has_table(storage: Storage) -> bool:
    """Whether ``storage``'s folder holds a Hudi table: it has ``.hoodie/``. A ``.hoodie/`` without
    ``hoodie.properties`` is a damaged table, not an absent one: ``HudiTable.load`` says so."""
    return storage.is_dir(META_FOLDER)


class _FromConfig:
    """What a statement derives from the table's config, each once, for every snapshot it takes."""

    def __init__(self, config: TableConfig) -> None:
        self._config = config

    @cached_property
    def keygen(self) -> KeyGenerator:
        return KeyGenerator.from_config(self._config)

    @cached_property
    def merge_rule(self) -> MergeRule:
        return MergeRule.from_config(self._config)

    @cached_property
    def index(self) -> IndexConfig:
        return IndexConfig.from_settings(self._config.props, self._config.record_key_fields)


class HudiTable:
    """One table, as loaded at one moment, with one statement's settings; ``refreshed()`` for a
    newer timeline. Its timeline is read when first needed, unless given."""

    def __init__(self, storage: Storage, config: TableConfig, timeline: Timeline | None = None,
                 settings: Settings | None = None, derived: _FromConfig | None = None) -> None:
        self.storage = storage
        self.config = config
        #: What the statement runs with: the table's properties alone until ``for_statement``.
        self.settings = settings if settings is not None else Settings(config.props)
        self._derived = derived if derived is not None else _FromConfig(config)
        self._timeline = timeline
        self._full_view: FileSystemView | None = None
        #: Checked by ``transaction.prologue.open_for_write`` (once per statement: its services share it).
        self.opened_for_write = False

    @classmethod
    def load(cls, base_uri: str) -> HudiTable:
        storage = Storage(base_uri)
        found = cls._find(storage)
        if found is None:
            raise TableNotFoundError(f"no Hudi table at {storage.base_uri} (missing {PROPERTIES_FILE})")
        return found

    @classmethod
    def find(cls, base_uri: str) -> HudiTable | None:
        """The table at ``base_uri``, loaded by one read of its properties; None when there is no
        table there (a ``.hoodie/`` without properties is a damaged table: an error)."""
        return cls._find(Storage(base_uri))

    @classmethod
    def _find(cls, storage: Storage) -> HudiTable | None:
        config = TableConfig.load_if_exists(storage)
        if config is None:
            if has_table(storage):
                raise damaged_properties(storage, "missing")
            return None
        return cls(storage, config)

    @classmethod
    def create(cls, base_uri: str, config: TableConfig) -> HudiTable:
        storage = Storage(base_uri)
        storage.makedirs(config.archive_folder)
        config.save(storage)
        return cls(storage, config)

    @property
    def base_uri(self) -> str:
        return self.storage.base_uri

    @property
    def timeline(self) -> Timeline:
        if self._timeline is None:
            self._timeline = Timeline.load(self.storage, self.config)
        return self._timeline

    def refreshed(self) -> HudiTable:
        """This table with its timeline listed again (the config as loaded: a statement reads
        ``hoodie.properties`` once)."""
        return self.with_timeline(Timeline.load(self.storage, self.config))

    def with_timeline(self, timeline: Timeline) -> HudiTable:
        """This table as of ``timeline`` (one the caller listed, or extended with an instant it wrote)."""
        return self._snapshot(timeline, self.settings)

    def for_statement(self, session: Mapping[str, str] | None = None,
                      statement: Mapping[str, str] | None = None) -> HudiTable:
        """This snapshot with the settings a statement runs with: the table's properties under the
        ``session``'s ``SET`` and the ``statement``'s own options (a ``df.write`` option, a
        procedure's argument)."""
        return self._with_settings(Settings(self.config.props, session, statement))

    def with_options(self, options: Mapping[str, str]) -> HudiTable:
        """This snapshot with its statement's settings under ``options`` (a procedure's arguments)."""
        return self._with_settings(self.settings.over(options))

    def _with_settings(self, settings: Settings) -> HudiTable:
        table = self._snapshot(self._timeline, settings)
        table._full_view = self._full_view
        return table

    def _snapshot(self, timeline: Timeline | None, settings: Settings) -> HudiTable:
        """Another snapshot of the statement: the same config and what it derived from it."""
        table = HudiTable(self.storage, self.config, timeline, settings, self._derived)
        table.opened_for_write = self.opened_for_write
        return table

    def as_of(self, instant_time: str) -> HudiTable:
        """This table as a reader as of ``instant_time`` sees it: the commits up to it, its
        schema then, the file slices they wrote (``Timeline.as_of``)."""
        return self._snapshot(self.timeline.as_of(instant_time), self.settings)

    @property
    def keygen(self) -> KeyGenerator:
        return self._derived.keygen

    @property
    def merge_rule(self) -> MergeRule:
        return self._derived.merge_rule

    @property
    def index(self) -> IndexConfig:
        """The table's index (``hoodie.index.type`` and its options), fixed when it was created."""
        return self._derived.index

    @property
    def has_record_key(self) -> bool:
        return bool(self.config.record_key_fields)

    def has_index(self, partition: str) -> bool:
        """Whether the table has the metadata table index ``partition`` readers may use (its
        properties name it; table versions 8 and 9)."""
        return self.config.version >= 8 and partition in self.config.metadata_partitions

    def keeps_index(self, option: str, partition: str) -> bool:
        """Whether writes keep the index ``partition``: as the statement's settings give ``option``;
        when they say nothing, as the table has it (a table adopted from Hudi keeps its index
        unless told otherwise)."""
        return self.settings.flag(option) if option in self.settings else self.has_index(partition)

    @cached_property
    def schema(self) -> T.StructType:
        """Data columns (no meta columns): from the latest commit's schema, else the create schema."""
        for instant in reversed(self.timeline.completed()):
            meta = read_commit_metadata(self.timeline, instant)
            if meta.schema:
                return without_meta_columns(from_avro(meta.schema))
        if self.config.create_schema:
            return without_meta_columns(from_avro(self.config.create_schema))
        raise FormatError(f"table {self.base_uri} has no schema in hoodie.properties nor in any commit")

    @property
    def columns(self) -> T.StructType:
        """The columns a query sees: the five meta columns first (when stored), then the data columns."""
        return with_meta_columns(self.schema) if self.config.populate_meta_fields else self.schema

    def file_system_view(self, partitions: list[str] | None = None) -> FileSystemView:
        """The file groups of this snapshot (of ``partitions`` only, when given), listed through
        the metadata table when the table has one, else on storage. The whole
        table's view is listed once per snapshot; a statement that read it (a MERGE's target)
        hands its write the partitions it needs from it, without listing storage again."""
        if self._full_view is not None:
            return self._full_view if partitions is None else self._full_view.only(partitions)
        view = FileSystemView.load(self.storage, self.timeline, partitions,
                                   listing_files(self.storage, self.config, self.timeline, partitions))
        if partitions is None:
            self._full_view = view
        return view

    def slice_reader(self, columns: T.StructType) -> SliceReader:
        """What reads this snapshot's file slices as ``columns``: merged by the table's merge rule,
        its committed instants and its record keys (derived from the key columns when the table
        stores no meta fields)."""
        return SliceReader(self.base_uri, to_arrow(columns), self.merge_rule, self.timeline.committed(),
                           None if self.config.populate_meta_fields else self.keygen)

    def average_record_size(self, default: int = 1024) -> int:
        """Bytes per record, estimated from the latest commit that wrote records."""
        for instant in reversed(self.timeline.completed()):
            meta = read_commit_metadata(self.timeline, instant)
            writes, size = meta.total("num_writes"), meta.total("total_write_bytes")
            if writes > 0 and size > 0:
                return max(1, size // writes)
        return default
