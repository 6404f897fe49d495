"""The metadata table: ``.hoodie/metadata/``, a merge-on-read Hudi table inside the data table, in
which Hudi writers (since 0.11, by default) keep every partition's file listing (the ``files``
partition) and the indexes; and ``hoodie.table.metadata.partitions`` in ``hoodie.properties``,
which tells readers which of its partitions they may use. Readers of table versions 8 and 9
(Hudi 1.x, the official native reader) list the table through it.

hudiql keeps the ``files`` partition of version 8 and 9 tables unless ``hoodie.metadata.enable``
is false (Hudi's writers' default): each instant that changes files (commit, delta commit, replace commit, compaction,
clean, rollback, restore) first writes a metadata delta commit at the same instant time, whose log
block (an HFile, ``formats.hfile``) holds the partitions and files it added and deleted
(``metadata.records``), and only then completes; a crash between the two leaves a metadata delta
commit of a data instant that never completed, which readers ignore and the data instant's
rollback removes. Every ``hoodie.metadata.compact.max.delta.commits`` delta commits, the
partition's log blocks are compacted into a new base HFile, and the slices before the previous
one are deleted. The table gets a metadata table, built from a listing of its storage, at its
first write. Partitions a write does not keep would go stale: a table that has them gets its
metadata table rebuilt without them, as a Hudi writer that disables them does; so does one whose
records are encoded otherwise than hudiql encodes them (``open_for_write``). Hudi 1.1's tables are
appended to: every file hudiql adds names the table's own record schema text (``record_schema``).

With ``hoodie.metadata.enable=false``, or on a version 6 table, a write removes the metadata table
as Hudi's own writer does with that option: the property first (readers then list storage), the
folder second.

Example:
    >>> storage = Storage(warehouse + "/orders")
    >>> config = TableConfig({"hoodie.table.name": "orders", "hoodie.table.version": "8"})
    >>> config.save(storage)
    >>> storage.write("dt=1/f-0_0-1-0_20240101000000000.parquet", b"rows")
    >>> timeline = Timeline.load(storage, config)
    >>> _ = timeline.complete(timeline.start("commit", "20240101000000000"), b"")
    >>> mdt = MetadataTable.create(storage, config, Timeline.load(storage, config))
    >>> config.metadata_partitions, mdt.listing(Timeline.load(storage, config))
    (['files'], {'dt=1': {'f-0_0-1-0_20240101000000000.parquet': 4}})
"""

from __future__ import annotations

import posixpath
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from hudiql.config import registry
from hudiql.config import table_config as C
from hudiql.config.table_config import METADATA_PARTITIONS, METADATA_PARTITIONS_INFLIGHT, TableConfig
from hudiql.errors import FormatError, HudiqlError, warn
from hudiql.formats import hfile
from hudiql.formats import log_file as L
from hudiql.io.cache import ProcessCache
from hudiql.io.storage import FileInfo, Storage
from hudiql.layout import (
    HFILE_EXTENSION,
    METADATA_TABLE_FOLDER,
    PARTITION_METADATA_FILE,
    PROPERTIES_FILE,
    base_file_name,
    join_partition,
    log_file_name,
    parse_data_file_name,
    partition_metadata,
    write_token,
)
from hudiql.metadata.records import (
    FILE_LIST,
    FILES_FILE_ID,
    FILES_PARTITION,
    SCHEMA_JSON,
    FilesRecord,
    decode_value,
    encode_value,
    encodes_as_ours,
    index_file_number,
    partition_of_key,
)
from hudiql.table.fsview import completion_times, list_data_files, log_slice
from hudiql.timeline.active import CLEAN, COMPACTION, DELTA_COMMIT, Instant, State, Timeline
from hudiql.timeline.clean_plan import CleanerPlan, CleanMetadata
from hudiql.timeline.clean_plan import decode_plan as decode_clean_plan
from hudiql.timeline.clean_plan import encode_metadata as encode_clean_metadata
from hudiql.timeline.clean_plan import encode_plan as encode_clean_plan
from hudiql.timeline.commit import CommitMetadata, WriteStat
from hudiql.timeline.compaction_plan import CompactionOperation, encode_plan

#: The instant a version 8 or 9 metadata table is built at (Hudi 1.x's initialization time).
INIT_INSTANT = "00000000000000000"
#: What Hudi 1.x's initialization instants of metadata partitions begin with (...000, ...001, ...).
_INIT_PREFIX = INIT_INSTANT[:14]
#: The properties of a metadata table, as Hudi 1.x writes them (beside the name and version).
_MDT_PROPERTIES = {
    C.TABLE_TYPE: C.MERGE_ON_READ,
    C.RECORD_KEY_FIELDS: "key",
    C.KEYGEN_TYPE_V8: "HOODIE_TABLE_METADATA",
    C.PAYLOAD_CLASS: "org.apache.hudi.metadata.HoodieMetadataPayload",
    C.MERGE_MODE: "CUSTOM",
    C.MERGE_STRATEGY_ID_V8: "00000000-0000-0000-0000-000000000000",
    C.POPULATE_META_FIELDS: "false",
    C.BASE_FILE_FORMAT: "HFILE",
    C.ARCHIVELOG_FOLDER: C.DEFAULT_HISTORY_PATH,
    C.TIMELINE_LAYOUT_VERSION: "2",
    C.TIMELINE_PATH_V8: C.DEFAULT_TIMELINE_PATH,
    C.TIMELINE_HISTORY_PATH_V8: C.DEFAULT_HISTORY_PATH,
    C.DROP_PARTITION_COLUMNS: "false",
}
_TOKEN = write_token(0, 0, 0)


def has_metadata_table(storage: Storage, config: TableConfig) -> bool:
    """Whether the table has a metadata table, or what is left of one: partitions named in its
    properties (built or being built), or the folder."""
    return bool(config.get(METADATA_PARTITIONS) or config.get(METADATA_PARTITIONS_INFLIGHT)) or storage.is_dir(
        METADATA_TABLE_FOLDER
    )


def remove_metadata_table(storage: Storage) -> TableConfig:
    """Remove the table's metadata table, crash-safe: its partitions are cleared from
    ``hoodie.properties`` (both keys left empty, as Hudi leaves them), then its folder is deleted.
    The caller holds the table lock; returns the table's config as it now is."""
    config = TableConfig.load(storage)  # as it is under the lock, not as the statement loaded it
    if config.get(METADATA_PARTITIONS) or config.get(METADATA_PARTITIONS_INFLIGHT):
        config = TableConfig({**config.props, METADATA_PARTITIONS: "", METADATA_PARTITIONS_INFLIGHT: ""})
        config.save(storage)
    storage.delete_dir(METADATA_TABLE_FOLDER)
    for cache in (_LOADED, _MERGED):  # what this process read of it is gone with it
        cache.pop(MetadataTable.storage_of(storage).base_uri)
    return config


@dataclass
class FileChanges:
    """What one data-table instant changed on storage: files added (name -> size) and deleted, by
    partition, and partitions dropped."""

    added: dict[str, dict[str, int]] = field(default_factory=dict)
    deleted: dict[str, set[str]] = field(default_factory=dict)
    dropped_partitions: set[str] = field(default_factory=set)
    #: The value ranges the write's tasks computed of the files they wrote: (partition, file name)
    #: -> ``metadata.column_stats.encode_ranges`` text (for the column stats index).
    ranges: dict[tuple[str, str], str] = field(default_factory=dict)
    #: The bloom filters of the base files the write's tasks wrote: (partition, file name) ->
    #: (type code, footer text) (for the bloom_filters index).
    filters: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)

    @classmethod
    def of_commit(cls, metadata: CommitMetadata) -> FileChanges:
        """The files a commit, delta commit, replace commit or compaction wrote (a replaced file
        group's files stay listed until a clean deletes them, as Hudi keeps them)."""
        changes = cls()
        for stat in metadata.write_stats:
            name = posixpath.basename(stat.path)
            sizes = changes.added.setdefault(stat.partition_path, {})
            sizes[name] = max(sizes.get(name, 0), stat.file_size_in_bytes)
            if stat.column_stats:
                changes.ranges[(stat.partition_path, name)] = stat.column_stats
            if stat.bloom_filter:
                changes.filters[(stat.partition_path, name)] = (stat.bloom_filter_type, stat.bloom_filter)
        if metadata.operation_type == "DELETE_PARTITION":
            changes.dropped_partitions = set(metadata.partition_to_replace_file_ids)
        return changes

    @classmethod
    def of_deleted(cls, deleted: dict[str, list[str]]) -> FileChanges:
        """The files a clean or rollback deleted (names or paths, by partition)."""
        return cls(deleted={p: {posixpath.basename(n) for n in names} for p, names in deleted.items() if names})

    def records(self) -> list[FilesRecord]:
        partitions = sorted(set(self.added) | set(self.deleted))
        records = [FilesRecord.for_partition(p, self.added.get(p, {}), self.deleted.get(p, ())) for p in partitions]
        if self.added or self.dropped_partitions:
            records.append(FilesRecord.partition_list(sorted(self.added), sorted(self.dropped_partitions)))
        return records


def _hfile(records: list[FilesRecord], file_name: str, schema: str) -> bytes:
    """A base HFile of the ``files`` partition, its file info naming record ``schema`` (text)."""
    entries = [(r.key.encode(), encode_value(r, file_name)) for r in records]
    info = {"schema": schema.encode()}
    if entries:  # as Hudi's HFile writer describes a base file
        keys = sorted(k for k, _ in entries)
        info.update(minRecordKey=keys[0], maxRecordKey=keys[-1])
    return hfile.write_hfile(entries, file_info=info)


@dataclass(frozen=True)
class MetadataSlice:
    """The latest file slice of one file group of a metadata table partition: its base HFile and
    its logs, in order."""

    partition: str
    file_id: str
    base_instant: str
    base_file: str
    log_files: tuple[str, ...]
    #: The completed instant file that wrote the base file: names it uniquely (a rebuilt metadata
    #: table's base file has the same name as the one before).
    written_by: str

    def path(self, name: str) -> str:
        return join_partition(self.partition, name)

    @contextmanager
    def base(self, storage: Storage) -> Iterator[hfile.HFile | None]:
        """The slice's base HFile, read by ranges while open (None for a group without one)."""
        with self.ranged_base(storage) as ranged:
            yield hfile.HFile(ranged, storage.uri(self.path(self.base_file))) if ranged is not None else None

    @contextmanager
    def ranged_base(self, storage: Storage) -> Iterator[hfile.RangedFile | None]:
        """The slice's base HFile as a ``RangedFile`` (None for a group without one). A base file
        never changes: the ranges this process read of it are kept (``_KeptRanges``), and the file
        is opened only for a range not read yet."""
        if not self.base_file:
            yield None
            return
        path = self.path(self.base_file)
        kept = _KeptRanges(storage, path, f"{self.written_by} {storage.uri(path)}")
        try:
            yield hfile.RangedFile(kept, kept.size())
        finally:
            kept.close()

    def read_logs(self, storage: Storage) -> list[tuple[str, bytes]]:
        """(URI, content) of each log, in order, each read once per process: a log of a version 8+
        metadata table is written whole by one delta commit, named by its instant, and never changes
        (a rebuilt table's slices are told apart by ``written_by``; a log of a group without a base
        file is named by a delta commit of the table it belongs to)."""
        uris = [(name, storage.uri(self.path(name))) for name in self.log_files]
        return [(uri, _LOGS.fetch(f"{self.written_by} {uri}", lambda name=name: storage.read(self.path(name))))
                for name, uri in uris]

    def readable(self, valid: Callable[[str], bool]) -> MetadataSlice:
        """This slice without the logs of data instants that did not complete (``valid_instants``)."""
        logs = tuple(n for n in self.log_files if valid(parse_data_file_name(n).instant_time))
        return MetadataSlice(self.partition, self.file_id, self.base_instant, self.base_file, logs, self.written_by)


class _KeptRanges:
    """The file under a ``RangedFile`` of one base HFile: the byte ranges (and the size) this
    process read of it are kept, keyed by ``key`` (the instant file that wrote it, and its URI)."""

    def __init__(self, storage: Storage, path: str, key: str) -> None:
        self._storage, self._path, self._key = storage, path, key
        self._file = None

    def size(self) -> int:
        return _BASE_SIZES.fetch(self._key, lambda: self._open().size())

    def read_at(self, length: int, offset: int) -> bytes:
        return _BASE_RANGES.fetch(f"{self._key} {offset} {length}", lambda: self._open().read_at(length, offset))

    def _open(self):
        if self._file is None:
            self._file = self._storage.open_input_file(self._path)
        return self._file

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


def _log_order(name: str) -> tuple[str, int]:
    parsed = parse_data_file_name(name)
    return parsed.instant_time, parsed.log_version or 0


def _merge_hfile(merged: dict[str, FilesRecord], content: bytes, path: str, schema: str | None) -> None:
    """Merge the records of an HFile (a base file, or a log block's content) over ``merged``."""
    data = hfile.HFile(content, path)
    writer_schema = schema or data.file_info["schema"].decode()
    _merge_records(merged, (decode_value(key.decode(), value, writer_schema) for key, value in data.entries()))


def _merge_records(merged: dict[str, FilesRecord], records: Iterable[FilesRecord]) -> None:
    for record in records:
        older = merged.get(record.key)
        merged[record.key] = older.merged(record) if older else record


def data_state(data_config: TableConfig, data_timeline: Timeline) -> tuple:
    """The data table's completed instants and the metadata partitions its properties name: a
    metadata table changes for readers only with them (a delta commit counts once its data instant
    completed; compaction and clean run after one completed; an index is built, and the table
    removed or built, with the properties changed), so a view of it listed when the data table was
    in this state is current while the data table still is."""
    return (data_config.get(METADATA_PARTITIONS), data_config.get(METADATA_PARTITIONS_INFLIGHT),
            tuple((i.timestamp, i.action, i.completion_time) for i in data_timeline.instants if i.is_completed))


@dataclass(frozen=True)
class _Loaded:
    config: TableConfig
    timeline: Timeline
    #: The ``data_state`` the timeline is known current for (None: as of a write under the lock).
    current_for: tuple | None


#: What this process read of metadata tables, by their URI (the tables it used last): the config
#: and timeline (``_LOADED``), the merged records of the latest slice (``_MERGED``).
_LOADED: ProcessCache[_Loaded] = ProcessCache(max_entries=16)
#: Log files of metadata tables this process read (``MetadataSlice.read_logs``), and the sizes and
#: byte ranges of their base files (``_KeptRanges``).
_LOGS: ProcessCache[bytes] = ProcessCache(max_entries=4096, max_bytes=64 << 20)
_BASE_SIZES: ProcessCache[int] = ProcessCache(max_entries=4096)
_BASE_RANGES: ProcessCache[bytes] = ProcessCache(max_entries=4096, max_bytes=64 << 20)
#: The (partition, file name) pairs each completed metadata instant wrote, by its file's URI.
_WRITTEN: ProcessCache[tuple[tuple[str, str], ...]] = ProcessCache(4096)
_MERGED: ProcessCache[tuple[str | None, tuple[tuple[str, bool], ...], dict[str, FilesRecord]]] = ProcessCache(16)


class MetadataTable:
    """The metadata table of one data table, as listed once: its config, timeline and the file
    slice of its ``files`` partition."""

    def __init__(self, data_storage: Storage, storage: Storage, config: TableConfig, timeline: Timeline,
                 listed: bool = True) -> None:
        self.data_storage = data_storage
        self.storage = storage
        self.config = config
        self.timeline = timeline
        #: Whether the timeline was listed for this view (not a view this process kept).
        self.listed = listed

    @staticmethod
    def storage_of(data_storage: Storage) -> Storage:
        return Storage(data_storage.uri(METADATA_TABLE_FOLDER))

    @classmethod
    def load(cls, data_storage: Storage, data_config: TableConfig | None = None,
             data_timeline: Timeline | None = None) -> MetadataTable:
        """The table's metadata table: its timeline listed, unless this process knows it current
        for the data table as ``data_config`` and ``data_timeline`` show it (``data_state``; a
        writer under the lock passes neither); its properties read once per process (hudiql never
        changes them, a rebuild writes the same)."""
        storage = cls.storage_of(data_storage)
        loaded = _LOADED.get(storage.base_uri)
        state = data_state(data_config, data_timeline) if data_config and data_timeline else None
        if loaded is not None and state is not None and loaded.current_for == state:
            return cls(data_storage, storage, loaded.config, loaded.timeline, listed=False)
        config = loaded.config if loaded is not None else TableConfig.load(storage)
        loaded = _Loaded(config, Timeline.load(storage, config), state)
        _LOADED.put(storage.base_uri, loaded)
        return cls(data_storage, storage, loaded.config, loaded.timeline)

    @classmethod
    def known(cls, data_storage: Storage) -> MetadataTable | None:
        """The table's metadata table as this process last listed or wrote it, without a request;
        None when it has not."""
        storage = cls.storage_of(data_storage)
        loaded = _LOADED.get(storage.base_uri)
        return cls(data_storage, storage, loaded.config, loaded.timeline) if loaded else None

    def _advance(self, instant: Instant) -> None:
        """This table's timeline with ``instant`` (one it just wrote), as the process knows it."""
        self.timeline = self.timeline.with_instant(instant)
        _LOADED.put(self.storage.base_uri, _Loaded(self.config, self.timeline, None))

    def note_current_for(self, data_config: TableConfig, data_timeline: Timeline) -> None:
        """Note that this view, listed and written under the table lock, is current for the data
        table as ``data_config`` and ``data_timeline`` show it (the lock's, with the instant just
        completed): the next statement that finds the data table so lists no metadata timeline."""
        _LOADED.put(self.storage.base_uri, _Loaded(self.config, self.timeline, data_state(data_config, data_timeline)))

    @classmethod
    def changed(cls, data_storage: Storage) -> None:
        """This process changed the table's timeline other than by an instant of a data write
        (archived it): the next view lists it again."""
        uri = cls.storage_of(data_storage).base_uri
        loaded = _LOADED.get(uri)
        if loaded is not None:
            _LOADED.put(uri, _Loaded(loaded.config, loaded.timeline, None))

    @classmethod
    def create(cls, data_storage: Storage, data_config: TableConfig, data_timeline: Timeline) -> MetadataTable:
        """Build the metadata table from a listing of the data table's storage (the files of
        completed instants), then name its ``files`` partition in the data table's properties
        (``data_config`` is updated in place). The caller holds the table lock."""
        storage = cls.storage_of(data_storage)
        storage.delete_dir()  # what a crashed build left
        props = {**_MDT_PROPERTIES, C.TABLE_NAME: f"{data_config.name}_metadata",
                 C.TABLE_VERSION: str(data_config.version), C.INITIAL_VERSION_V8: str(data_config.version)}
        if data_config.get(C.TIMELINE_TIMEZONE):
            props[C.TIMELINE_TIMEZONE] = data_config.get(C.TIMELINE_TIMEZONE)
        config = TableConfig(props)
        storage.makedirs(config.archive_folder)
        config.save(storage)
        timeline = Timeline.load(storage, config)
        instant = timeline.start(DELTA_COMMIT, INIT_INSTANT)
        valid = valid_instants(data_timeline)
        changes = FileChanges()
        for info in list_data_files(data_storage, None):
            parsed = parse_data_file_name(info.name)
            if parsed is not None and valid(parsed.instant_time):
                changes.added.setdefault(posixpath.dirname(info.path), {})[info.name] = info.size
        records = changes.records() or [FilesRecord.partition_list([])]
        storage.write(join_partition(FILES_PARTITION, PARTITION_METADATA_FILE),
                      partition_metadata(INIT_INSTANT, FILES_PARTITION))
        base = base_file_name(FILES_FILE_ID, _TOKEN, INIT_INSTANT, HFILE_EXTENSION)
        content = _hfile(records, base, SCHEMA_JSON)
        storage.write(join_partition(FILES_PARTITION, base), content)
        # Hudi opens each file group's log with an empty delete block at initialization.
        log = log_file_name(FILES_FILE_ID, INIT_INSTANT, 1, _TOKEN)
        storage.write(join_partition(FILES_PARTITION, log), L.encode_block(
            L.LogBlock(L.DELETE, {L.INSTANT_TIME: INIT_INSTANT}, L.delete_content([], None))))
        stat = WriteStat(FILES_FILE_ID, FILES_PARTITION, join_partition(FILES_PARTITION, base), num_writes=len(records),
                         num_inserts=len(records), total_write_bytes=len(content), file_size_in_bytes=len(content))
        metadata = CommitMetadata(operation_type="BULK_INSERT_PREPPED", schema=SCHEMA_JSON, write_stats=[stat])
        timeline.complete(instant, metadata.encode(2))
        data_config.props.update({METADATA_PARTITIONS: FILES_PARTITION, METADATA_PARTITIONS_INFLIGHT: ""})
        data_config.save(data_storage)
        built = cls(data_storage, storage, config, Timeline.load(storage, config))
        _LOADED.put(storage.base_uri, _Loaded(config, built.timeline, None))
        return built

    # ---- reading ----------------------------------------------------------------------------------

    def latest_slices(self, partition: str) -> dict[str, MetadataSlice]:
        """The latest slice of each file group of ``partition``, from the timeline alone (no
        listing): a group's newest base HFile (of a build or a compaction), and the logs of the
        delta commits that completed after it began, as Hudi 1.x slices by completion time. Each
        completed instant is read once per process: it never changes."""
        bases: dict[str, tuple[Instant, str]] = {}
        logs: list[tuple[Instant, str, str]] = []
        for instant in self.timeline.completed((DELTA_COMMIT, COMPACTION)):  # in instant order: newest base wins
            for written_partition, name in self._written(instant):
                if written_partition == partition:
                    parsed = parse_data_file_name(name)
                    if parsed.is_log:
                        logs.append((instant, name, parsed.file_id))
                    else:
                        bases[parsed.file_id] = (instant, name)
        slices = {}
        for file_id, (source, base) in sorted(bases.items()):
            own = [name for instant, name, log_group in logs
                   if log_group == file_id and (instant.completion_time or instant.timestamp) >= source.timestamp]
            slices[file_id] = MetadataSlice(partition, file_id, source.timestamp, base,
                                            tuple(sorted(own, key=_log_order)), source.file_name)
        # A group Hudi built empty has no base file, only logs (its first one unlisted on the timeline).
        for file_id in sorted({g for _, _, g in logs} - set(bases)):
            own = tuple(sorted((name for _, name, g in logs if g == file_id), key=_log_order))
            slices[file_id] = MetadataSlice(partition, file_id, INIT_INSTANT, "", own, "")
        return dict(sorted(slices.items()))

    def record_schema(self) -> str:
        """The text of the record schema this table's files name (its ``files`` partition's base
        HFile says), which every file hudiql adds to it names too: readers such as the official one
        expect one schema text across a partition's files (Hudi 1.1's writers add Java string
        properties to hudiql's). Read once per base file."""
        files_slice = self.files_slice()

        def stored() -> str:
            with files_slice.base(self.storage) as base:
                text = base.file_info.get("schema") if base is not None else None
            return text.decode() if text is not None else SCHEMA_JSON

        return _RECORD_SCHEMAS.fetch(
            f"{files_slice.written_by} {self.storage.uri(files_slice.path(files_slice.base_file))}", stored)

    def appendable(self) -> bool:
        """Whether hudiql can add records to this table: they are encoded in its record schema as
        hudiql encodes them (Hudi 1.0's schema lacks fields: such a table is rebuilt instead)."""
        return encodes_as_ours(self.record_schema())

    def index_slices(self, partition: str) -> dict[str, MetadataSlice]:
        """The latest slice of every file group of index ``partition``: the timeline's
        (``latest_slices``), and an empty slice of each group a listing finds that no instant
        names, when Hudi may have built such groups (it initializes an index with an empty log
        file per group, on no instant: its initialization instants are on the timeline, or a
        group has no base file, or the groups' numbers have a gap)."""
        slices = self.latest_slices(partition)
        numbers = sorted(index_file_number(f) for f in slices)
        hudi_built = (numbers != list(range(len(numbers))) or any(not s.base_file for s in slices.values())
                      or any(i.timestamp.startswith(_INIT_PREFIX) and i.timestamp != INIT_INSTANT
                             for i in self.timeline.instants))
        if hudi_built:
            for file_id in self.listed_file_groups(partition) - set(slices):
                slices[file_id] = MetadataSlice(partition, file_id, INIT_INSTANT, "", (), "")
        return dict(sorted(slices.items()))

    def listed_file_groups(self, partition: str) -> set[str]:
        """The file ids of ``partition``'s files on storage: a listing, for the groups Hudi built
        empty (their only file, a log, is not on the timeline)."""
        found = (parse_data_file_name(info.name) for info in self.storage.list(partition))
        return {parsed.file_id for parsed in found if parsed is not None}

    def files_slice(self) -> MetadataSlice:
        """The latest slice of the ``files`` partition."""
        found = self.latest_slices(FILES_PARTITION).get(FILES_FILE_ID)
        if found is None:
            raise FormatError(f"the metadata table {self.storage.base_uri} has no base file on its timeline")
        return found

    def _written(self, instant: Instant) -> tuple[tuple[str, str], ...]:
        """(partition, file name) of each file a completed instant of this table wrote."""
        uri = self.storage.uri(instant.file_name)

        def written() -> tuple[tuple[str, str], ...]:
            meta = CommitMetadata.decode(self.timeline.read(instant), uri)
            return tuple((s.partition_path, posixpath.basename(s.path)) for s in meta.write_stats
                         if parse_data_file_name(posixpath.basename(s.path)) is not None)

        return _WRITTEN.fetch(uri, written)

    def records(self, data_timeline: Timeline, files_slice: MetadataSlice | None = None) -> dict[str, FilesRecord]:
        """Every record of the ``files`` partition (of ``files_slice``, its latest slice), merged:
        the base HFile, then the log blocks of the delta commits whose data instant completed (and
        the metadata table's own). What this process merged before, of the same slice, is merged
        on rather than read again."""
        valid = valid_instants(data_timeline)
        files_slice = files_slice or self.files_slice()
        logs = tuple((name, valid(parse_data_file_name(name).instant_time)) for name in files_slice.log_files)
        base, done, merged = _MERGED.get(self.storage.base_uri) or (None, (), {})
        if base != files_slice.written_by or logs[:len(done)] != done:
            done, merged = (), {}
            path = join_partition(FILES_PARTITION, files_slice.base_file)
            _merge_hfile(merged, self.storage.read(path), self.storage.uri(path), None)
        merged = dict(merged)
        for name, is_valid in logs[len(done):]:
            path = join_partition(FILES_PARTITION, name)
            for block in L.read_blocks(self.storage.read(path), self.storage.uri(path), (L.HFILE_DATA,)):
                # A block's own instant decides (a log of a data instant that never completed is skipped).
                if is_valid and block.block_type == L.HFILE_DATA and valid(block.instant_time or ""):
                    _merge_hfile(merged, block.content, self.storage.uri(path), block.header.get(L.SCHEMA))
        _MERGED.put(self.storage.base_uri, (files_slice.written_by, logs, merged))
        return merged

    def listing(self, data_timeline: Timeline, partitions: list[str] | None = None) -> dict[str, dict[str, int]]:
        """The data table's files (name -> size) by partition, as the ``files`` partition lists them."""
        out = {}
        for key, record in self.records(data_timeline).items():
            if record.type == FILE_LIST and (partitions is None or partition_of_key(key) in partitions):
                out[partition_of_key(key)] = record.live_files()
        return dict(sorted(out.items()))

    # ---- writing ----------------------------------------------------------------------------------

    def commit(self, instant_time: str, changes: FileChanges, index_stats: Iterable[WriteStat] = (),
               index_entries: dict[str, dict[str, list[tuple[bytes, bytes]]]] | None = None) -> None:
        """Write the metadata delta commit of data instant ``instant_time``: one log file whose
        HFile block holds ``changes``, the index logs the write's tasks wrote (``index_stats``), and
        one log file per file group of ``index_entries`` (partition -> file id -> HFile entries,
        index records the driver writes)."""
        records = changes.records()
        instant = self.timeline.start(DELTA_COMMIT, instant_time)
        stats = [self._log(FILES_PARTITION, FILES_FILE_ID, instant_time, [(r.key.encode(), encode_value(r)) for r in records])]
        for partition, groups in sorted((index_entries or {}).items()):
            stats += [self._log(partition, file_id, instant_time, entries) for file_id, entries in sorted(groups.items())]
        metadata = CommitMetadata(operation_type="UPSERT_PREPPED", schema=self.record_schema(),
                                  write_stats=[*stats, *index_stats])
        self._advance(self.timeline.complete(instant, metadata.encode(2)))
        cached = _MERGED.get(self.storage.base_uri)
        if cached is not None:  # what this process merged goes on with what it wrote (the next read checks the order)
            written_by, logs, merged = cached
            merged = dict(merged)
            _merge_records(merged, records)
            name = posixpath.basename(stats[0].path)
            _MERGED.put(self.storage.base_uri, (written_by, (*logs, (name, True)), merged))

    def _log(self, partition: str, file_id: str, instant_time: str, entries: list[tuple[bytes, bytes]]) -> WriteStat:
        """Write the log file of one file group at a delta commit: an HFile block of ``entries``."""
        name = log_file_name(file_id, instant_time, 1, _TOKEN)
        path = join_partition(partition, name)
        schema = self.record_schema()
        data = L.encode_block(L.LogBlock(L.HFILE_DATA, {L.INSTANT_TIME: instant_time, L.SCHEMA: schema},
                                         hfile.write_hfile(entries, file_info={"schema": schema.encode()})))
        self.storage.write(path, data)
        return WriteStat(file_id, partition, path, prev_commit=instant_time, num_writes=len(entries),
                         num_update_writes=len(entries), total_write_bytes=len(data), file_size_in_bytes=len(data),
                         log_files=[name], log_version=1, total_log_blocks=1)

    def add_partition(self, partition: str, instant_time: str, stats: list[WriteStat],
                      props: dict[str, str] | None = None) -> TableConfig:
        """Complete the build of ``partition`` (its base files, written as ``stats`` say, at
        ``instant_time``), then name it in the data table's properties (with ``props``); returns
        the data table's config as it now is. The caller holds the table lock."""
        self.storage.write(join_partition(partition, PARTITION_METADATA_FILE), partition_metadata(instant_time, partition))
        instant = self.timeline.start(DELTA_COMMIT, instant_time)
        metadata = CommitMetadata(operation_type="BULK_INSERT_PREPPED", schema=self.record_schema(), write_stats=stats)
        self._advance(self.timeline.complete(instant, metadata.encode(2)))
        data_config = TableConfig.load(self.data_storage)  # as it is under the lock
        data_config.props[METADATA_PARTITIONS] = ",".join(sorted({*data_config.metadata_partitions, partition}))
        data_config.props.update(props or {})
        data_config.save(self.data_storage)
        return data_config

    def forget(self, instant_time: str) -> None:
        """Remove the metadata delta commit of a data instant that never completed (being rolled
        back): its completed file first, so that it stops being read, then its logs, then the rest."""
        self.timeline.delete_completed(instant_time)
        for folder in self.storage.list():
            if folder.is_dir and not folder.name.startswith("."):
                for info in self.storage.list(folder.name):
                    parsed = parse_data_file_name(info.name)
                    if parsed is not None and parsed.is_log and parsed.instant_time == instant_time:
                        self.storage.delete(info.path)
        for instant in self.timeline.instants:
            if instant.timestamp == instant_time:  # as listed: completed, or still pending
                self.timeline.remove_pending(instant)

    def _since(self, files_slice: MetadataSlice) -> list[Instant]:
        """The delta commits completed since ``files_slice`` began (the build's included)."""
        return [i for i in self.timeline.completed((DELTA_COMMIT,)) if i.completion_time >= files_slice.base_instant]

    def compaction_due(self, max_delta_commits: int) -> bool:
        """Whether ``max_delta_commits`` delta commits completed since the last compaction, as
        Hudi's trigger counts them (the build's counts)."""
        return len(self._since(self.files_slice())) >= max_delta_commits

    def compact(self, data_timeline: Timeline, partitions: list[str],
                compact_groups: Callable[[str, list[MetadataSlice]], list[WriteStat]] | None = None) -> bool:
        """Compact every file group of ``partitions`` (the data table's properties name them) into
        a new base HFile, unless a delta commit of the ``files`` slice belongs to a data instant
        that did not complete (a crash left it, its rollback removes it); then clean the slices
        before the previous one. ``files`` is compacted here; the other partitions' groups (the
        indexes) by ``compact_groups(compaction instant, slices)``, which returns their write stats.
        The caller holds the table lock; returns whether it compacted."""
        file_slice = self.files_slice()
        valid = valid_instants(data_timeline)
        others = [s for p in partitions if p != FILES_PARTITION for s in self.latest_slices(p).values()]
        if not all(valid(i.timestamp) or self._is_build(i) for i in self._since(file_slice)):
            return False
        if others and compact_groups is None:
            return False
        records = sorted(self.records(data_timeline, file_slice).values(), key=lambda r: r.key)
        compaction_time = self.timeline.new_instant_time()
        plan = encode_plan([CompactionOperation(s.partition, s.file_id, s.base_instant, s.base_file, s.log_files)
                            for s in (file_slice, *others)])
        instant = self.timeline.start(COMPACTION, compaction_time, plan)
        base = base_file_name(FILES_FILE_ID, _TOKEN, compaction_time, HFILE_EXTENSION)
        content = _hfile(records, base, self.record_schema())
        path = join_partition(FILES_PARTITION, base)
        self.storage.write(path, content)
        stats = [WriteStat(FILES_FILE_ID, FILES_PARTITION, path, prev_commit=file_slice.base_instant,
                           num_writes=len(records), total_write_bytes=len(content), file_size_in_bytes=len(content),
                           total_log_files=len(file_slice.log_files))]
        if others:
            stats += compact_groups(compaction_time, others)
        metadata = CommitMetadata(operation_type="COMPACT", schema=self.record_schema(), write_stats=stats, compacted=True)
        self._advance(self.timeline.complete(instant, metadata.encode(2)))
        self._clean(partitions)
        return True

    def _clean(self, partitions: list[str]) -> None:
        """Clean ``partitions`` by a clean instant of the metadata table's own, as Hudi's metadata
        table cleaner does: in each file group, the files of the slices before the previous one go
        (readers that listed the table before the latest compaction still find theirs)."""
        completion = completion_times(self.timeline)
        doomed: dict[str, list[str]] = {}
        for partition in partitions:
            groups: dict[str, list[tuple[FileInfo, object]]] = {}
            for info in self.storage.list(partition):
                parsed = parse_data_file_name(info.name)
                if parsed is not None:
                    groups.setdefault(parsed.file_id, []).append((info, parsed))
            for files in groups.values():
                bases = sorted(p.instant_time for _, p in files if not p.is_log)
                if len(bases) <= 2:
                    continue
                names = [info.name for info, p in files if (
                    log_slice(bases, p.instant_time, completion.get(p.instant_time, p.instant_time)) if p.is_log
                    else p.instant_time) < bases[-2]]
                if names:
                    doomed.setdefault(partition, []).extend(self.storage.uri(join_partition(partition, n)) for n in names)
        if not doomed:
            return
        latest = self.timeline.completed((DELTA_COMMIT, COMPACTION))[-1].timestamp
        plan = CleanerPlan(registry.KEEP_LATEST_FILE_VERSIONS, None, latest, doomed)
        self._run_clean(self.timeline.request(CLEAN, self.timeline.new_instant_time(), encode_clean_plan(plan)))

    def _run_clean(self, instant: Instant) -> None:
        """Delete what a planned clean names and complete it (again, after a crash)."""
        started = time.monotonic()
        plan = decode_clean_plan(self.timeline.read_requested(instant))
        if instant.state is State.REQUESTED:
            instant = self.timeline.transition_to_inflight(instant)
        deleted = {}
        for partition, paths in plan.files.items():
            deleted[partition] = [posixpath.basename(path) for path in paths]
            for name in deleted[partition]:
                self.storage.delete(join_partition(partition, name))
        metadata = CleanMetadata(instant.timestamp, int((time.monotonic() - started) * 1000), "",
                                 plan.last_completed_commit, plan.policy, deleted)
        self._advance(self.timeline.complete(instant, encode_clean_metadata(metadata)))

    def finish_pending_services(self) -> None:
        """What a crash left pending: a compaction's base files and instant go (the slices before
        it still hold every record); a clean runs again."""
        for instant in self.timeline.pending((COMPACTION,)):
            for folder in self.storage.list():
                if folder.is_dir and not folder.name.startswith("."):
                    for info in self.storage.list(folder.name):
                        parsed = parse_data_file_name(info.name)
                        if parsed is not None and not parsed.is_log and parsed.instant_time == instant.timestamp:
                            self.storage.delete(info.path)
            self.timeline.remove_pending(instant)
        for instant in self.timeline.pending((CLEAN,)):
            self._run_clean(instant)
        self.timeline = Timeline.load(self.storage, self.config)

    def _is_build(self, instant: Instant) -> bool:
        """Whether a completed delta commit built a partition (wrote base files)."""
        return any(not parse_data_file_name(name).is_log for _, name in self._written(instant))

    def archive_bound(self) -> str | None:
        """The instant before which the timeline may be archived: the latest compaction that began
        after every partition's build completed (every file group's base is then its own or
        newer); None when there is none."""
        built = [i.completion_time or i.timestamp for i in self.timeline.completed((DELTA_COMMIT,)) if self._is_build(i)]
        after = max(built, default="")
        compactions = [i for i in self.timeline.completed((COMPACTION,)) if i.timestamp > after]
        return compactions[-1].timestamp if compactions else None


def remove_partition(data_storage: Storage, partition: str) -> TableConfig:
    """Remove one partition of the table's metadata table (an index it no longer keeps), crash-
    safe: first from ``hoodie.properties`` (readers stop using it), then its folder. The caller
    holds the table lock; returns the table's config as it now is."""
    config = TableConfig.load(data_storage)
    if partition in config.metadata_partitions:
        kept = [p for p in config.metadata_partitions if p != partition]
        config = TableConfig({**config.props, METADATA_PARTITIONS: ",".join(kept)})
        config.save(data_storage)
    MetadataTable.storage_of(data_storage).delete_dir(partition)
    return config


def valid_instants(data_timeline: Timeline) -> Callable[[str], bool]:
    """Which instants' metadata records readers use: those of completed data instants (any
    action), of instants archived from the data timeline, and the metadata table's own
    (initialization)."""
    completed = {i.timestamp for i in data_timeline.instants if i.is_completed}
    committed = data_timeline.committed()
    return lambda t: t in completed or t.startswith(_INIT_PREFIX) or committed.archived(t)


def listing_files(storage: Storage, config: TableConfig, timeline: Timeline,
                  partitions: list[str] | None) -> list[FileInfo] | None:
    """The data files of the table at ``storage`` (of ``partitions``) as its metadata table lists
    them, or None when the table has none to list through (readers then list storage). A damaged
    metadata table is a one-line warning naming the file, and a storage listing."""
    if FILES_PARTITION not in config.metadata_partitions or config.version < 8:
        return None
    mdt = MetadataTable.load(storage, config, timeline)
    try:
        try:
            listing = mdt.listing(timeline, partitions)
        except (HudiqlError, OSError):
            if mdt.listed:
                raise
            # The view this process kept is of a table rebuilt since (by another process, the data
            # table unchanged): listed again, once.
            listing = MetadataTable.load(storage).listing(timeline, partitions)
    except (HudiqlError, OSError) as exc:
        warn(f"{exc}; listing storage instead. {rebuild_hint(config.name)}")
        return None
    return [FileInfo(join_partition(p, name), size, False)
            for p, files in listing.items() for name, size in files.items()]


def rebuild_hint(table_name: str) -> str:
    """What rebuilds a damaged metadata table, by Hudi's procedures."""
    return (f"Rebuild the metadata table: CALL delete_metadata_table(table => '{table_name}'), then "
            f"CALL create_metadata_table(table => '{table_name}')")


#: Base HFile of a ``files`` partition (the instant file that wrote it, and its URI) -> the record
#: schema text it names.
_RECORD_SCHEMAS: ProcessCache[str] = ProcessCache(64)


def open_for_write(data_storage: Storage, kept: Iterable[str]) -> tuple[MetadataTable, TableConfig]:
    """The table's metadata table as it is under the lock, and the table's config as read under
    it (another writer may have built or removed the metadata table since the statement began):
    built when it has none, or has partitions other than ``kept`` (indexes the write does not keep:
    it is rebuilt with ``files`` alone, as a Hudi writer that disables them leaves it), or records
    encoded otherwise than hudiql encodes them (``appendable``);
    what a crash left pending of its own services finished."""
    config = TableConfig.load(data_storage)
    partitions = config.metadata_partitions
    if FILES_PARTITION in partitions and set(partitions) <= set(kept) and (
            MetadataTable.known(data_storage) or MetadataTable.storage_of(data_storage).exists(PROPERTIES_FILE)):
        mdt = MetadataTable.load(data_storage)
        if mdt.timeline.instants and mdt.appendable():  # no instants: its folder is gone
            if mdt.timeline.pending((COMPACTION, CLEAN)):
                mdt.finish_pending_services()
            return mdt, config
    if config.get(METADATA_PARTITIONS):
        config = remove_metadata_table(data_storage)
    return MetadataTable.create(data_storage, config, Timeline.load(data_storage, config)), config


def forget_instant(data_storage: Storage, instant_time: str) -> None:
    """Remove the metadata delta commit of data instant ``instant_time``, which is rolled back
    before it completed (a crash between the two commits left it)."""
    if MetadataTable.storage_of(data_storage).exists(PROPERTIES_FILE):
        MetadataTable.load(data_storage).forget(instant_time)
