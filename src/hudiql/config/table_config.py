"""Table config: ``.hoodie/hoodie.properties`` (Java properties text), read and written.

Example:
    >>> config = TableConfig({"hoodie.table.name": "orders", "hoodie.table.recordkey.fields": "id"})
    >>> config.record_key_fields
    ['id']
    >>> TableConfig.parse(config.to_bytes()).name
    'orders'
"""

from __future__ import annotations

import zlib
from datetime import datetime, timezone, tzinfo

from hudiql.errors import FormatError, damaged_file
from hudiql.io.storage import Storage
from hudiql.layout import ARCHIVED_FOLDER, META_FOLDER, PROPERTIES_FILE

COPY_ON_WRITE = "COPY_ON_WRITE"
MERGE_ON_READ = "MERGE_ON_READ"
#: A table type as users write it (any case): Hudi's names and the short ones.
TABLE_TYPE_NAMES = {COPY_ON_WRITE: COPY_ON_WRITE, MERGE_ON_READ: MERGE_ON_READ, "cow": COPY_ON_WRITE, "mor": MERGE_ON_READ}

KEYGEN_PACKAGE = "org.apache.hudi.keygen."
SIMPLE_KEYGEN = KEYGEN_PACKAGE + "SimpleKeyGenerator"
COMPLEX_KEYGEN = KEYGEN_PACKAGE + "ComplexKeyGenerator"
NONPARTITIONED_KEYGEN = KEYGEN_PACKAGE + "NonpartitionedKeyGenerator"
TIMESTAMP_KEYGEN = KEYGEN_PACKAGE + "TimestampBasedKeyGenerator"
CUSTOM_KEYGEN = KEYGEN_PACKAGE + "CustomKeyGenerator"

PAYLOAD_PACKAGE = "org.apache.hudi.common.model."
DEFAULT_PAYLOAD = PAYLOAD_PACKAGE + "DefaultHoodieRecordPayload"
OVERWRITE_WITH_LATEST_PAYLOAD = PAYLOAD_PACKAGE + "OverwriteWithLatestAvroPayload"
EVENT_TIME_PAYLOAD = PAYLOAD_PACKAGE + "EventTimeAvroPayload"

EVENT_TIME_ORDERING = "EVENT_TIME_ORDERING"
COMMIT_TIME_ORDERING = "COMMIT_TIME_ORDERING"

# Keys of hoodie.properties, named once (_V8, _V9: what those table versions add).
TABLE_NAME = "hoodie.table.name"
DATABASE_NAME = "hoodie.database.name"
TABLE_TYPE = "hoodie.table.type"
TABLE_VERSION = "hoodie.table.version"
TIMELINE_LAYOUT_VERSION = "hoodie.timeline.layout.version"
TIMELINE_PATH_V8 = "hoodie.timeline.path"
TIMELINE_HISTORY_PATH_V8 = "hoodie.timeline.history.path"
DEFAULT_TIMELINE_PATH, DEFAULT_HISTORY_PATH = "timeline", "history"
INITIAL_VERSION_V8 = "hoodie.table.initial.version"
MERGE_STRATEGY_ID_V8 = "hoodie.record.merge.strategy.id"
TABLE_FORMAT_V9 = "hoodie.table.format"
RECORD_KEY_FIELDS = "hoodie.table.recordkey.fields"
PRECOMBINE_FIELD = "hoodie.table.precombine.field"
ORDERING_FIELDS_V8 = "hoodie.table.ordering.fields"
PARTITION_FIELDS = "hoodie.table.partition.fields"
KEYGEN_CLASS = "hoodie.table.keygenerator.class"
KEYGEN_TYPE_V8 = "hoodie.table.keygenerator.type"
HIVE_STYLE = "hoodie.datasource.write.hive_style_partitioning"
URL_ENCODE = "hoodie.datasource.write.partitionpath.urlencode"
DROP_PARTITION_COLUMNS = "hoodie.datasource.write.drop.partition.columns"
BASE_FILE_FORMAT = "hoodie.table.base.file.format"
ARCHIVELOG_FOLDER = "hoodie.archivelog.folder"
PAYLOAD_CLASS = "hoodie.compaction.payload.class"
MERGE_MODE = "hoodie.record.merge.mode"
PAYLOAD_ORDERING_FIELD = "hoodie.payload.ordering.field"
TIMELINE_TIMEZONE = "hoodie.table.timeline.timezone"
POPULATE_META_FIELDS = "hoodie.populate.meta.fields"
CREATE_SCHEMA = "hoodie.table.create.schema"
METADATA_PARTITIONS = "hoodie.table.metadata.partitions"
METADATA_PARTITIONS_INFLIGHT = "hoodie.table.metadata.partitions.inflight"
#: Where the definitions of the metadata table's indexes live (relative to the base path; Hudi 1.x).
INDEX_DEFS_PATH = "hoodie.table.index.defs.path"
CHECKSUM = "hoodie.table.checksum"
TIMESTAMP_TYPE = "hoodie.keygen.timebased.timestamp.type"
TIMESTAMP_SCALAR_UNIT = "hoodie.keygen.timebased.timestamp.scalar.time.unit"
TIMESTAMP_OUTPUT_FORMAT = "hoodie.keygen.timebased.output.dateformat"
TIMESTAMP_OUTPUT_TZ = "hoodie.keygen.timebased.output.timezone"


def _escape(text: str, is_key: bool) -> str:
    out = []
    for i, ch in enumerate(text):
        if ch == "\\":
            out.append("\\\\")
        elif ch in ":=#!" or (ch == " " and (is_key or i == 0)):
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) > 0x7E or ord(ch) < 0x20:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "".join(out)


def _unescape(text: str) -> str:
    out = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "u" and i + 5 < len(text):
                out.append(chr(int(text[i + 2 : i + 6], 16)))
                i += 6
                continue
            out.append({"n": "\n", "r": "\r", "t": "\t", "f": "\f"}.get(nxt, nxt))
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _split_key_value(line: str) -> tuple[str, str]:
    i = 0
    while i < len(line):
        if line[i] == "\\":
            i += 2
            continue
        if line[i] in "=: ":
            key = line[:i]
            rest = line[i:].lstrip(" ")
            if rest[:1] in ("=", ":"):
                rest = rest[1:].lstrip(" ")
            return _unescape(key), _unescape(rest)
        i += 1
    return _unescape(line), ""


def parse_properties(text: str) -> dict[str, str]:
    """Parse Java properties text (comments, escapes and line continuations)."""
    props: dict[str, str] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].lstrip()
        i += 1
        if not line or line[0] in "#!":
            continue
        while line.endswith("\\") and not line.endswith("\\\\") and i < len(lines):
            line = line[:-1] + lines[i].lstrip()
            i += 1
        key, value = _split_key_value(line)
        props[key] = value
    return props


def format_properties(props: dict[str, str]) -> str:
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    lines = [f"#Properties saved on {stamp}"]
    lines += [f"{_escape(k, True)}={_escape(v, False)}" for k, v in sorted(props.items())]
    return "\n".join(lines) + "\n"


def table_checksum(database: str, table: str) -> str:
    """CRC32 of ``<database>.<table>``, as Hudi validates it."""
    return str(zlib.crc32(f"{database}.{table}".encode()))


def _fields(value: str | None) -> list[str]:
    return [f.strip() for f in (value or "").split(",") if f.strip()]


def damaged_properties(storage: Storage, problem: str) -> FormatError:
    """The error for a missing or damaged ``hoodie.properties``, naming the backup Hudi keeps."""
    backup = PROPERTIES_FILE + ".backup"
    hint = f"; Hudi keeps a copy in {backup}" if storage.exists(backup) else ""
    return damaged_file(f"{PROPERTIES_FILE} of table {storage.base_uri}", f"is {problem}{hint}")


def table_type(name: str) -> str | None:
    """Hudi's name of the table type ``name`` spells (any case), or ``None``.

    >>> table_type("mor"), table_type("Copy_On_Write"), table_type("mow")
    ('MERGE_ON_READ', 'COPY_ON_WRITE', None)
    """
    return {k.lower(): v for k, v in TABLE_TYPE_NAMES.items()}.get(name.strip().lower())


def default_payload(merge_mode: str) -> str:
    """The payload class Hudi's Spark SQL writes for a merge mode."""
    return OVERWRITE_WITH_LATEST_PAYLOAD if merge_mode == COMMIT_TIME_ORDERING else DEFAULT_PAYLOAD


def inferred_merge_mode(payload_class: str, has_ordering_field: bool) -> str:
    """The merge mode readers infer from the payload class on table version 6."""
    if payload_class == OVERWRITE_WITH_LATEST_PAYLOAD or not has_ordering_field:
        return COMMIT_TIME_ORDERING
    return EVENT_TIME_ORDERING


#: Key generators by the type name table versions 8 and 9 store (``hoodie.table.keygenerator.type``).
KEYGEN_TYPES = {"SIMPLE": SIMPLE_KEYGEN, "COMPLEX": COMPLEX_KEYGEN, "NON_PARTITION": NONPARTITIONED_KEYGEN,
                "TIMESTAMP": TIMESTAMP_KEYGEN, "CUSTOM": CUSTOM_KEYGEN}
#: Hudi's merge strategy ids (``HoodieRecordMerger``) of the two merge modes hudiql runs (table version 8).
MERGE_STRATEGY_IDS = {EVENT_TIME_ORDERING: "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5",
                      COMMIT_TIME_ORDERING: "ce9acb64-bde0-424c-9b91-f6ebba25356d"}


def versioned_properties(props: dict[str, str], version: int) -> dict[str, str]:
    """The ``hoodie.properties`` of a new table of ``version`` (6, 8 or 9) from the ones it has as a
    version 6 table, as Hudi 1.0 (8) and 1.1 (9) write them: from 8 on, the timeline's folders
    (layout 2), the key generator by type and the merge strategy by id; from 9 on, the ordering
    fields and the table format, without payload class and strategy id.

    >>> v6 = {TABLE_VERSION: "6", TIMELINE_LAYOUT_VERSION: "1", KEYGEN_CLASS: SIMPLE_KEYGEN,
    ...       PRECOMBINE_FIELD: "ts", PAYLOAD_CLASS: "x.DefaultHoodieRecordPayload", MERGE_MODE: EVENT_TIME_ORDERING}
    >>> v9 = versioned_properties(v6, 9)
    >>> v9[TABLE_VERSION], v9[KEYGEN_TYPE_V8], v9[ORDERING_FIELDS_V8], PAYLOAD_CLASS in v9
    ('9', 'SIMPLE', 'ts', False)
    """
    if version == 6:
        return dict(props)
    out = {k: v for k, v in props.items() if k != KEYGEN_CLASS}
    out.update({
        TABLE_VERSION: str(version), INITIAL_VERSION_V8: str(version), TIMELINE_LAYOUT_VERSION: "2",
        TIMELINE_PATH_V8: DEFAULT_TIMELINE_PATH, TIMELINE_HISTORY_PATH_V8: DEFAULT_HISTORY_PATH,
        KEYGEN_TYPE_V8: next(t for t, c in KEYGEN_TYPES.items() if c == props[KEYGEN_CLASS]),
    })
    if version == 8:
        out[MERGE_STRATEGY_ID_V8] = MERGE_STRATEGY_IDS[props[MERGE_MODE]]
        return out
    for key in (PAYLOAD_CLASS, PAYLOAD_ORDERING_FIELD):
        out.pop(key, None)
    if PRECOMBINE_FIELD in out:
        out[ORDERING_FIELDS_V8] = out.pop(PRECOMBINE_FIELD)
    out[TABLE_FORMAT_V9] = "native"
    return out


#: What a table of version 8 or 9 stores that a version 6 table does not.
_V8_V9_KEYS = (TIMELINE_PATH_V8, TIMELINE_HISTORY_PATH_V8, INITIAL_VERSION_V8, KEYGEN_TYPE_V8, MERGE_STRATEGY_ID_V8,
               ORDERING_FIELDS_V8, TABLE_FORMAT_V9)


def properties_for_version(config: TableConfig, version: int) -> dict[str, str]:
    """The ``hoodie.properties`` of ``config``'s table moved to ``version`` (an upgrade or a
    downgrade): its version 6 properties (the key generator by class, the ordering field as the
    preCombine field, the payload class and merge mode as it reads them), then ``version``'s
    (``versioned_properties``); a version 8 or 9 table remembers the version it began as."""
    v6 = {k: v for k, v in config.props.items() if k not in _V8_V9_KEYS}
    v6.update({TABLE_VERSION: "6", TIMELINE_LAYOUT_VERSION: "1", KEYGEN_CLASS: config.keygen_class,
               PAYLOAD_CLASS: config.payload_class, MERGE_MODE: config.merge_mode})
    if config.ordering_field:
        v6[PRECOMBINE_FIELD] = config.ordering_field
    out = versioned_properties(v6, version)
    if version != 6:
        out[INITIAL_VERSION_V8] = config.get(INITIAL_VERSION_V8) or str(config.version)
    return out


class TableConfig:
    """Typed view over the properties of one table."""

    def __init__(self, props: dict[str, str]) -> None:
        self.props = dict(props)

    @classmethod
    def parse(cls, data: bytes) -> TableConfig:
        return cls(parse_properties(data.decode("utf-8", errors="replace")))

    @classmethod
    def load(cls, storage: Storage) -> TableConfig:
        """The table's config; a ``hoodie.properties`` that is empty or corrupt is an error (a
        config read from it would read the table wrong: another type, no partitions, ...)."""
        return cls._checked(storage, storage.read(PROPERTIES_FILE))

    @classmethod
    def load_if_exists(cls, storage: Storage) -> TableConfig | None:
        """The table's config (one read), or None when there is no ``hoodie.properties``."""
        content = storage.read_if_exists(PROPERTIES_FILE)
        return None if content is None else cls._checked(storage, content)

    @classmethod
    def _checked(cls, storage: Storage, content: bytes) -> TableConfig:
        config = cls.parse(content)
        problem = config.damage()
        if problem:
            raise damaged_properties(storage, problem)
        return config

    def damage(self) -> str | None:
        """What makes these properties unusable, as Hudi validates them: no table name, an unknown
        table type or version, or a checksum that does not match the name."""
        if not self.props:
            return "empty"
        if not self.props.get(TABLE_NAME):
            return f"corrupt (no {TABLE_NAME})"
        if self.table_type not in (COPY_ON_WRITE, MERGE_ON_READ):
            return f"corrupt ({TABLE_TYPE}={self.props.get(TABLE_TYPE)!r})"
        if not self.props.get(TABLE_VERSION, "6").isdigit():
            return f"corrupt ({TABLE_VERSION}={self.props.get(TABLE_VERSION)!r})"
        checksum = self.props.get(CHECKSUM)
        if checksum is not None and checksum != table_checksum(self.props.get(DATABASE_NAME, ""), self.name):
            return f"corrupt ({CHECKSUM} does not match the table name)"
        return None

    def to_bytes(self) -> bytes:
        props = dict(self.props)
        props[CHECKSUM] = table_checksum(props.get(DATABASE_NAME, ""), props.get(TABLE_NAME, ""))
        return format_properties(props).encode()

    def save(self, storage: Storage) -> None:
        storage.write_atomic(PROPERTIES_FILE, self.to_bytes())

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.props.get(key, default)

    # ---- typed accessors ---------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.props.get(TABLE_NAME, "")

    @property
    def database(self) -> str:
        return self.props.get(DATABASE_NAME, "default")

    @property
    def table_type(self) -> str:
        return self.props.get(TABLE_TYPE, COPY_ON_WRITE).upper()

    @property
    def version(self) -> int:
        return int(self.props.get(TABLE_VERSION, "6"))

    @property
    def timeline_layout_version(self) -> int:
        """1: instants in ``.hoodie/`` (v6); 2: in ``.hoodie/<timeline path>/`` (v8), the default from v8 on."""
        explicit = self.props.get(TIMELINE_LAYOUT_VERSION)
        return int(explicit) if explicit else (2 if self.version >= 8 else 1)

    @property
    def timeline_zone(self) -> tzinfo:
        """The time zone of the table's instant times: UTC, or (Hudi's default, LOCAL) the machine's."""
        if self.props.get(TIMELINE_TIMEZONE, "LOCAL").upper() == "UTC":
            return timezone.utc
        return datetime.now().astimezone().tzinfo or timezone.utc

    @property
    def timeline_path(self) -> str:
        """The folder of a layout 2 timeline, relative to ``.hoodie``."""
        return self.props.get(TIMELINE_PATH_V8) or DEFAULT_TIMELINE_PATH

    @property
    def timeline_folder(self) -> str:
        """Where the instants are: ``.hoodie`` (layout 1), ``.hoodie/<timeline path>`` (layout 2)."""
        return f"{META_FOLDER}/{self.timeline_path}" if self.timeline_layout_version >= 2 else META_FOLDER

    @property
    def archive_folder(self) -> str:
        """Where archived instants go: ``.hoodie/archived`` (layout 1), the timeline's history (layout 2)."""
        if self.timeline_layout_version >= 2:
            return f"{self.timeline_folder}/{self.props.get(TIMELINE_HISTORY_PATH_V8) or DEFAULT_HISTORY_PATH}"
        return ARCHIVED_FOLDER

    @property
    def record_key_fields(self) -> list[str]:
        return _fields(self.props.get(RECORD_KEY_FIELDS))

    @property
    def partition_fields(self) -> list[str]:
        # v8 may write "field:type" pairs (custom key generator); the field is before the colon.
        return [f.split(":")[0] for f in _fields(self.props.get(PARTITION_FIELDS))]

    @property
    def ordering_field(self) -> str | None:
        fields = _fields(self.props.get(PRECOMBINE_FIELD) or self.props.get(ORDERING_FIELDS_V8))
        return fields[0] if fields else None

    @property
    def keygen_class(self) -> str:
        explicit = self.props.get(KEYGEN_CLASS)
        if explicit:
            return explicit
        kind = self.props.get(KEYGEN_TYPE_V8, "").upper()
        if kind in KEYGEN_TYPES:
            return KEYGEN_TYPES[kind]
        return SIMPLE_KEYGEN if self.partition_fields else NONPARTITIONED_KEYGEN

    @property
    def hive_style(self) -> bool:
        return self.props.get(HIVE_STYLE, "false").lower() == "true"

    @property
    def url_encode(self) -> bool:
        return self.props.get(URL_ENCODE, "false").lower() == "true"

    @property
    def payload_class(self) -> str:
        return self.props.get(PAYLOAD_CLASS) or default_payload(EVENT_TIME_ORDERING if self.ordering_field else COMMIT_TIME_ORDERING)

    @property
    def merge_mode(self) -> str:
        """Event time or commit time ordering, as readers infer it on v6 from the payload class."""
        explicit = self.props.get(MERGE_MODE)
        if explicit in (EVENT_TIME_ORDERING, COMMIT_TIME_ORDERING):
            return explicit
        return inferred_merge_mode(self.payload_class, bool(self.ordering_field))

    @property
    def populate_meta_fields(self) -> bool:
        return self.props.get(POPULATE_META_FIELDS, "true").lower() == "true"

    @property
    def metadata_partitions(self) -> list[str]:
        """The metadata table's partitions that readers may use (``files``: the file listings)."""
        return _fields(self.props.get(METADATA_PARTITIONS))

    @property
    def create_schema(self) -> str | None:
        return self.props.get(CREATE_SCHEMA)

    @property
    def is_mor(self) -> bool:
        return self.table_type == MERGE_ON_READ
