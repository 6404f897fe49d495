"""The archived timeline: instants moved out of the active timeline. On timeline layout 2 (table
versions 8 and 9) it is Hudi 1.x's LSM timeline (``timeline.lsm_timeline``); ``has_archived`` and
``read_archived`` read either layout. The rest of this module is layout 1's (table version 6), in
Hudi log files.

Each archive run writes a new file ``.hoodie/archived/.commits_.archive.<version>_1-0-1`` (never
an append: object stores have none), a Hudi log file of Avro data blocks whose header holds the
schema of Hudi's ``HoodieArchivedMetaEntry``. A block holds at most ``hoodie.commits.archival.batch``
records, one per file of an archived instant (requested, inflight, completed): its time
(``commitTime``), ``actionType``, ``actionState`` and its content converted to Avro, as Hudi's
archiver converts it:

- commit / deltacommit (any state): the JSON commit metadata as ``hoodieCommitMetadata``
  (operation ``COMPACT`` for a compaction's commit);
- replacecommit: ``hoodieReplaceCommitMetadata`` (completed), ``HoodieInflightReplaceMetadata``
  (inflight, when not empty), ``hoodieRequestedReplaceMetadata`` (requested, when not empty);
- compaction requested / inflight: the plan of its requested file as ``hoodieCompactionPlan``;
- clean: ``hoodieCleanerPlan`` (requested / inflight), ``hoodieCleanMetadata`` (completed);
- rollback (completed) and savepoint: their Avro metadata.

Readers take every record of every archive file; an instant archived twice (a run that crashed
before deleting its instants from ``.hoodie/`` and ran again) is read once.

Example:
    >>> from hudiql.timeline.commit import CommitMetadata, WriteStat
    >>> storage = Storage(warehouse + "/orders")
    >>> meta = CommitMetadata(operation_type="INSERT", write_stats=[WriteStat("f-0", "", "f-0_0-1-0_001.parquet", num_writes=3)])
    >>> entries = [archived_entry("001", COMMIT, State.REQUESTED, b""), archived_entry("001", COMMIT, State.COMPLETED, meta.to_json())]
    >>> write_archive(storage, entries, batch=1)
    '.hoodie/archived/.commits_.archive.1_1-0-1'
    >>> [(a.timestamp, a.action, a.state.name) for a in read_archived(storage, TableConfig({}))]
    [('001', 'commit', 'REQUESTED'), ('001', 'commit', 'COMPLETED')]
    >>> read_archived(storage, TableConfig({}))[1].metadata["partitionToWriteStats"][""][0]["numWrites"]
    3
"""

from __future__ import annotations

import io
import json
import re
from dataclasses import dataclass

import fastavro

from hudiql.config.table_config import TableConfig
from hudiql.errors import damaged_file
from hudiql.formats.log_file import (
    AVRO_DATA,
    SCHEMA,
    LogBlock,
    avro_records_content,
    encode_block,
    read_avro_records,
    read_blocks,
)
from hudiql.io.storage import Storage
from hudiql.layout import ARCHIVED_FOLDER
from hudiql.timeline import clean_plan, compaction_plan, lsm_timeline, replace_plan, savepoint
from hudiql.timeline.commit import COMMIT_METADATA_SCHEMA, REPLACE_COMMIT_METADATA_SCHEMA, CommitMetadata
from hudiql.timeline.active import (
    CLEAN,
    COMMIT,
    COMPACTION,
    DELTA_COMMIT,
    LOG_COMPACTION,
    REPLACE_COMMIT,
    ROLLBACK,
    SAVEPOINT,
    State,
    Timeline,
)

ARCHIVE_FOLDER = ARCHIVED_FOLDER
#: The write token of Hudi's archive log writer (its unknown-task token).
ARCHIVE_WRITE_TOKEN = "1-0-1"
_ARCHIVE_FILE_RE = re.compile(r"^\.commits_\.archive\.(?P<version>\d+)(?:_.*)?$")
_NAMESPACE = "org.apache.hudi.avro.model"
_STRING = ["null", "string"]
_LONG = ["null", "long"]
_STATE_ORDER = {State.REQUESTED: 0, State.INFLIGHT: 1, State.COMPLETED: 2}


def _plain(schema: object) -> object:
    """A schema fastavro parsed, as plain Avro JSON (without fastavro's own keys)."""
    if isinstance(schema, dict):
        return {k: _plain(v) for k, v in schema.items() if not k.startswith("__")}
    if isinstance(schema, list):
        return [_plain(v) for v in schema]
    return schema


def _nullable(name: str, kind: object) -> dict:
    return {"name": name, "type": ["null", kind], "default": None}


# ---- Hudi's Avro models, as its .avsc files define them ----------------------------------------------
_COMPACTION_METADATA = {"type": "record", "name": "HoodieCompactionMetadata", "fields": [  # deprecated by Hudi
    {"name": "partitionToCompactionWriteStats", "type": ["null", {"type": "map", "values": {"type": "array", "items": {
        "type": "record", "name": "HoodieCompactionWriteStat", "fields": [
            {"name": "partitionPath", "type": _STRING},
            {"name": "totalLogRecords", "type": _LONG},
            {"name": "totalLogFiles", "type": _LONG},
            {"name": "totalUpdatedRecordsCompacted", "type": _LONG},
            {"name": "hoodieWriteStat", "type": ["null", "HoodieWriteStat"]},
        ]}}}]},
]}
_INSTANT_INFO = {"type": "record", "name": "HoodieInstantInfo", "fields": [
    {"name": "commitTime", "type": "string"}, {"name": "action", "type": "string"},
]}
_STRING_ARRAY = {"type": "array", "items": "string"}
ROLLBACK_METADATA_SCHEMA = {"type": "record", "name": "HoodieRollbackMetadata", "namespace": _NAMESPACE, "fields": [
    {"name": "startRollbackTime", "type": "string"},
    {"name": "timeTakenInMillis", "type": "long"},
    {"name": "totalFilesDeleted", "type": "int"},
    {"name": "commitsRollback", "type": _STRING_ARRAY},
    {"name": "partitionMetadata", "type": {"type": "map", "values": {
        "type": "record", "name": "HoodieRollbackPartitionMetadata", "fields": [
            {"name": "partitionPath", "type": "string"},
            {"name": "successDeleteFiles", "type": _STRING_ARRAY},
            {"name": "failedDeleteFiles", "type": _STRING_ARRAY},
            _nullable("rollbackLogFiles", {"type": "map", "values": "long"}),
            _nullable("writtenLogFiles", {"type": "map", "values": "long"}),
        ]}}},
    {"name": "version", "type": ["int", "null"], "default": 1},
    {"name": "instantsRollback", "type": {"type": "array", "items": _INSTANT_INFO}, "default": []},
]}
_INDEX_COMMIT_METADATA = {"type": "record", "name": "HoodieIndexCommitMetadata", "fields": [
    {"name": "version", "type": ["int", "null"], "default": 1},
    _nullable("operationType", "string"),
    _nullable("indexPartitionInfos", {"type": "array", "items": {
        "type": "record", "name": "HoodieIndexPartitionInfo", "fields": [
            {"name": "version", "type": ["int", "null"], "default": 1},
            _nullable("metadataPartitionPath", "string"),
            _nullable("indexUptoInstant", "HoodieInstantInfo"),
        ]}}),
]}

#: Hudi's ``HoodieArchivedMetaEntry``, its fields in the order of its .avsc, each named type defined
#: where it first occurs (as the schema Hudi's writer puts in the block header).
ARCHIVED_META_ENTRY_SCHEMA = {"type": "record", "name": "HoodieArchivedMetaEntry", "namespace": _NAMESPACE, "fields": [
    _nullable("hoodieCommitMetadata", COMMIT_METADATA_SCHEMA),
    _nullable("hoodieCleanMetadata", _plain(clean_plan.METADATA_SCHEMA)),
    _nullable("hoodieCompactionMetadata", _COMPACTION_METADATA),
    _nullable("hoodieRollbackMetadata", ROLLBACK_METADATA_SCHEMA),
    _nullable("hoodieSavePointMetadata", _plain(savepoint.SAVEPOINT_SCHEMA)),
    _nullable("commitTime", "string"),
    _nullable("actionType", "string"),
    {"name": "version", "type": ["int", "null"], "default": 1},
    _nullable("hoodieCompactionPlan", _plain(compaction_plan.PLAN_SCHEMA)),
    _nullable("hoodieCleanerPlan", _plain(clean_plan.PLAN_SCHEMA)),
    _nullable("actionState", "string"),
    _nullable("hoodieReplaceCommitMetadata", REPLACE_COMMIT_METADATA_SCHEMA),
    _nullable("hoodieRequestedReplaceMetadata", _plain(replace_plan.REQUESTED_REPLACE_SCHEMA)),
    _nullable("HoodieInflightReplaceMetadata", "HoodieCommitMetadata"),
    _nullable("hoodieIndexCommitMetadata", _INDEX_COMMIT_METADATA),
    _nullable("stateTransitionTime", "string"),
]}
_ENTRY_JSON = json.dumps(ARCHIVED_META_ENTRY_SCHEMA)

#: The entry field that holds an action's content (Hudi's archived timeline reads it by action).
METADATA_FIELDS = {
    COMMIT: "hoodieCommitMetadata", DELTA_COMMIT: "hoodieCommitMetadata", CLEAN: "hoodieCleanMetadata",
    ROLLBACK: "hoodieRollbackMetadata", SAVEPOINT: "hoodieSavePointMetadata", COMPACTION: "hoodieCompactionPlan",
    LOG_COMPACTION: "hoodieCompactionPlan", REPLACE_COMMIT: "hoodieReplaceCommitMetadata",
}
_FIELD_OF = {f["name"]: f for f in ARCHIVED_META_ENTRY_SCHEMA["fields"]}
_PARSED_ROLLBACK = fastavro.parse_schema(ROLLBACK_METADATA_SCHEMA)


def _named_types(schema: object, out: dict[str, dict]) -> dict[str, dict]:
    """Every record the schema defines, by short and full name."""
    if isinstance(schema, list):
        for branch in schema:
            _named_types(branch, out)
    elif isinstance(schema, dict):
        if schema.get("type") == "record":
            out[schema["name"]] = out[schema["name"].rsplit(".", 1)[-1]] = schema
            for f in schema["fields"]:
                _named_types(f["type"], out)
        for key in ("items", "values"):
            if key in schema:
                _named_types(schema[key], out)
    return out


_NAMED = _named_types(ARCHIVED_META_ENTRY_SCHEMA, {})
_PRIMITIVE = {"string": str, "long": int, "int": int, "double": float, "float": float, "boolean": bool}


def _conform(schema: object, value: object) -> object:
    """A JSON value shaped as ``schema`` wants it: record fields the JSON lacks take their default,
    keys the schema lacks are dropped (as Hudi's archiver converts its JSON commit metadata)."""
    if value is None:
        return None
    if isinstance(schema, list):
        return _conform(next(b for b in schema if b != "null"), value)
    if isinstance(schema, str):
        return _conform(_NAMED[schema], value) if schema in _NAMED else _PRIMITIVE[schema](value)
    kind = schema["type"]
    if kind == "record":
        if not isinstance(value, dict):
            return None
        return {f["name"]: _conform(f["type"], value.get(f["name"], f.get("default"))) for f in schema["fields"]}
    if kind == "map":
        return {str(k): _conform(schema["values"], v) for k, v in value.items()}
    if kind == "array":
        return [_conform(schema["items"], v) for v in value]
    return _conform(kind, value)


def _commit_record(schema: dict, content: bytes) -> dict:
    """Layout 1 JSON commit metadata as Hudi's Avro model (empty content: empty metadata)."""
    doc = json.loads(content.decode() or "{}")
    if doc.get("compacted"):
        doc["operationType"] = "COMPACT"
    return _conform(schema, doc)


def _avro_record(content: bytes, field: str) -> dict | None:
    """Avro instant content read into the schema of the entry's ``field``; empty content: ``None``."""
    if not content:
        return None
    reader_schema = {"hoodieRollbackMetadata": _PARSED_ROLLBACK, "hoodieCleanMetadata": clean_plan.METADATA_SCHEMA,
                     "hoodieCleanerPlan": clean_plan.PLAN_SCHEMA, "hoodieSavePointMetadata": savepoint.SAVEPOINT_SCHEMA,
                     "hoodieCompactionPlan": compaction_plan.PLAN_SCHEMA,
                     "hoodieRequestedReplaceMetadata": replace_plan.REQUESTED_REPLACE_SCHEMA}[field]
    return next(iter(fastavro.reader(io.BytesIO(content), reader_schema=reader_schema)), None)


def archived_entry(timestamp: str, action: str, state: State, content: bytes, plan: bytes = b"",
                   transition_time: str | None = None) -> dict:
    """The ``HoodieArchivedMetaEntry`` record of one file of an instant: ``content`` is the file's,
    ``plan`` the requested file's (what a pending compaction or clean archives). ``action`` is the
    file's own: a completed compaction is a ``commit``."""
    entry: dict = {f: None for f in _FIELD_OF}
    entry.update(commitTime=timestamp, actionType=action, actionState=state.name, version=1,
                 stateTransitionTime=transition_time)
    completed = state is State.COMPLETED
    if action in (COMMIT, DELTA_COMMIT):
        entry["hoodieCommitMetadata"] = _commit_record(COMMIT_METADATA_SCHEMA, content)
    elif action == REPLACE_COMMIT:
        if completed:
            entry["hoodieReplaceCommitMetadata"] = _commit_record(REPLACE_COMMIT_METADATA_SCHEMA, content)
        elif content and state is State.INFLIGHT:
            entry["HoodieInflightReplaceMetadata"] = _commit_record(COMMIT_METADATA_SCHEMA, content)
        elif content:
            entry["hoodieRequestedReplaceMetadata"] = _avro_record(content, "hoodieRequestedReplaceMetadata")
    elif action in (COMPACTION, LOG_COMPACTION):
        entry["hoodieCompactionPlan"] = _avro_record(plan or content, "hoodieCompactionPlan")
    elif action == CLEAN:
        entry["hoodieCleanMetadata" if completed else "hoodieCleanerPlan"] = _avro_record(
            content if completed else plan or content, "hoodieCleanMetadata" if completed else "hoodieCleanerPlan")
    elif action == ROLLBACK and completed:
        entry["hoodieRollbackMetadata"] = _avro_record(content, "hoodieRollbackMetadata")
    elif action == SAVEPOINT:
        entry["hoodieSavePointMetadata"] = _avro_record(content, "hoodieSavePointMetadata")
    return entry


# ---- archive files ---------------------------------------------------------------------------------

def archive_file_name(version: int) -> str:
    """``.commits_.archive.<version>_1-0-1``: a log file of file id ``commits`` and an empty base instant."""
    return f".commits_.archive.{version}_{ARCHIVE_WRITE_TOKEN}"


def archive_files(storage: Storage) -> list[tuple[int, str]]:
    """(version, path) of every archive file, oldest version first."""
    if not storage.is_dir(ARCHIVE_FOLDER):
        return []
    found = []
    for info in storage.list(ARCHIVE_FOLDER):
        m = None if info.is_dir else _ARCHIVE_FILE_RE.match(info.name)
        if m:
            found.append((int(m["version"]), info.path))
    return sorted(found)


def write_archive(storage: Storage, entries: list[dict], batch: int) -> str:
    """Write ``entries`` to a new archive file, in blocks of at most ``batch`` records, at once;
    returns its path."""
    files = archive_files(storage)
    path = f"{ARCHIVE_FOLDER}/{archive_file_name(files[-1][0] + 1 if files else 1)}"
    blocks = [
        encode_block(LogBlock(AVRO_DATA, {SCHEMA: _ENTRY_JSON},
                              avro_records_content(entries[i:i + batch], ARCHIVED_META_ENTRY_SCHEMA)))
        for i in range(0, len(entries), batch)
    ]
    storage.write_atomic(path, b"".join(blocks))
    return path


@dataclass(frozen=True)
class ArchivedInstant:
    """One archived file of an instant, as an archive file records it."""

    timestamp: str
    action: str
    state: State
    metadata: dict | None  # the content: the entry field of its action (None when the file was empty)
    transition_time: str | None = None
    entry: dict | None = None  # the whole HoodieArchivedMetaEntry record


def has_archived(storage: Storage, config: TableConfig) -> bool:
    """Whether the table's archived timeline holds any instant."""
    if config.timeline_layout_version >= 2:
        return bool(lsm_timeline.latest_manifest(storage, config.archive_folder)[1])
    return bool(archive_files(storage))


def read_archived(storage: Storage, config: TableConfig) -> list[ArchivedInstant]:
    """Every archived instant file of the table, by time then state; each once. (Layout 2 archives
    completed instants only: their completion time is their ``transition_time``.)"""
    if config.timeline_layout_version >= 2:
        return [ArchivedInstant(row.instant_time, row.action, State.COMPLETED, _instant_content(row.metadata),
                                row.completion_time)
                for row in lsm_timeline.read(storage, config.archive_folder)]
    return _read_archive_files(storage)


def _instant_content(content: bytes | None) -> dict | None:
    """An instant file's content as a record: Avro (layout 2), else JSON (an instant an upgrade
    from layout 1 moved)."""
    if not content:
        return None
    if content.startswith(b"Obj\x01"):
        return next(iter(fastavro.reader(io.BytesIO(content))), None)
    return json.loads(content.decode())


# ---- between the two layouts (an upgrade to version 8, a downgrade to 6) ------------------------------

def _avro_file(schema: object, record: dict | None) -> bytes | None:
    """``record`` as the content of an instant file of layout 2: an Avro container of one record."""
    if record is None:
        return None
    out = io.BytesIO()
    fastavro.writer(out, schema, [record])
    return out.getvalue()


def as_history_rows(storage: Storage) -> list[lsm_timeline.HistoryRow]:
    """The completed instants of layout 1's archive files as rows of the LSM timeline, with their
    content in layout 2's Avro and the plans Hudi 1.x keeps (a compaction's, a clean's, a
    replacecommit's request): what an upgrade to version 8 archives."""
    schemas = {"hoodieCommitMetadata": COMMIT_METADATA_SCHEMA, "hoodieReplaceCommitMetadata": REPLACE_COMMIT_METADATA_SCHEMA,
               "hoodieCleanMetadata": clean_plan.METADATA_SCHEMA, "hoodieRollbackMetadata": _PARSED_ROLLBACK,
               "hoodieSavePointMetadata": savepoint.SAVEPOINT_SCHEMA, "hoodieCompactionPlan": compaction_plan.PLAN_SCHEMA,
               "hoodieCleanerPlan": clean_plan.PLAN_SCHEMA, "hoodieRequestedReplaceMetadata": replace_plan.REQUESTED_REPLACE_SCHEMA}
    plans: dict[str, bytes | None] = {}
    completed: list[ArchivedInstant] = []
    for archived in _read_archive_files(storage):
        if archived.state is State.COMPLETED and archived.action != SAVEPOINT:  # as Hudi 1.x, which never archives one
            completed.append(archived)
        elif archived.state is State.REQUESTED and archived.action in (COMPACTION, LOG_COMPACTION, CLEAN, REPLACE_COMMIT):
            field = {CLEAN: "hoodieCleanerPlan", REPLACE_COMMIT: "hoodieRequestedReplaceMetadata"}.get(
                archived.action, "hoodieCompactionPlan")
            plans[archived.timestamp] = _avro_file(schemas[field], archived.entry.get(field))
    rows = []
    for archived in completed:
        field = METADATA_FIELDS[archived.action]
        # completed after its own time, as layout 2 requires: the file's transition time, when later
        completion = max(archived.transition_time or "", Timeline.next_instant_time(archived.timestamp))
        rows.append(lsm_timeline.HistoryRow(archived.timestamp, completion,
                                            archived.action, _avro_file(schemas[field], archived.metadata),
                                            plans.get(archived.timestamp)))
    return rows


def as_archive_entries(rows: list[lsm_timeline.HistoryRow]) -> list[dict]:
    """The LSM timeline's rows as layout 1's archive records (commit metadata back in JSON): what a
    downgrade to version 6 archives. A commit with a plan was a compaction: its request is
    archived with it, as is a clean's."""
    entries = []
    for row in rows:
        content = row.metadata or b""
        if row.action in (COMMIT, DELTA_COMMIT, REPLACE_COMMIT) and content:
            content = CommitMetadata.decode(content, f"archived {row.action} {row.instant_time}").encode(1)
        if row.plan and row.action in (COMMIT, CLEAN):
            pending = COMPACTION if row.action == COMMIT else CLEAN
            entries.append(archived_entry(row.instant_time, pending, State.REQUESTED, row.plan, row.plan))
        entries.append(archived_entry(row.instant_time, row.action, State.COMPLETED, content, b"", row.completion_time))
    return entries


def _read_archive_files(storage: Storage) -> list[ArchivedInstant]:
    seen: dict[tuple[str, str, State], ArchivedInstant] = {}
    for _, path in archive_files(storage):
        for block in read_blocks(storage.read(path), path):
            if block.block_type != AVRO_DATA:
                continue
            for record in read_avro_records(block, path):
                try:
                    state = State[record["actionState"]] if record.get("actionState") else State.COMPLETED
                    key = (record["commitTime"], record["actionType"], state)
                except KeyError as exc:
                    raise damaged_file(path, f"holds an archived instant without {exc}") from None
                field = METADATA_FIELDS.get(key[1])
                if key[1] == REPLACE_COMMIT and state is not State.COMPLETED:
                    field = "HoodieInflightReplaceMetadata" if state is State.INFLIGHT else "hoodieRequestedReplaceMetadata"
                elif key[1] == CLEAN and state is not State.COMPLETED:
                    field = "hoodieCleanerPlan"
                seen[key] = ArchivedInstant(*key, record.get(field) if field else None,
                                            record.get("stateTransitionTime"), record)
    return sorted(seen.values(), key=lambda a: (a.timestamp, _STATE_ORDER[a.state]))
