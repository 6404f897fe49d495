"""The archived timeline of timeline layout 2 (table versions 8 and 9): Hudi 1.x's LSM timeline, in
the timeline's history folder (``.hoodie/timeline/history``).

- Data files ``<min instant>_<max instant>_<level>.parquet``: one row per archived instant
  (``HoodieLSMTimelineInstant``: ``instantTime``, ``completionTime``, the completed ``action``, the
  completed file's bytes as ``metadata``, the plan's bytes as ``plan``, ``version`` 1), oldest first.
  An archive run writes one file of level 0.
- ``manifest_<N>``: the data files of snapshot N (JSON ``{"files": [{"fileName", "fileLen"}]}``), and
  ``_version_``, the number of the current snapshot. A data file no manifest lists is not part of
  the timeline: a run writes its data file, then the next manifest, then ``_version_``, so that a
  crash anywhere leaves the last snapshot whole.
- Compaction: when ``COMPACTION_BATCH`` files share a level, the oldest of them are rewritten as one
  file of the next level (a new snapshot); then snapshots beyond the last ``RETAINED_MANIFESTS``
  are deleted, and the data files none of the kept ones lists.

Readers take every row of every file the current manifest lists, each instant once.

Example:
    >>> storage = Storage(warehouse + "/orders")
    >>> folder = ".hoodie/timeline/history"
    >>> write(storage, folder, [HistoryRow("001", "002", "commit", b"{}", None), HistoryRow("003", "004", "clean", None, b"")])
    '001_003_0.parquet'
    >>> [(r.instant_time, r.completion_time, r.action) for r in read(storage, folder)]
    [('001', '002', 'commit'), ('003', '004', 'clean')]
    >>> storage.read(f"{folder}/_version_"), latest_manifest(storage, folder)[1][0].file_name
    (b'1', '001_003_0.parquet')
"""

from __future__ import annotations

import io
import json
import re
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq

from hudiql.errors import damaged_file
from hudiql.io.storage import Storage

#: How many files of one level a compaction merges into one of the next (Hudi's
#: ``hoodie.timeline.compaction.batch.size`` default).
COMPACTION_BATCH = 10
#: The snapshots (manifests) kept besides those a run's compactions add, as Hudi keeps them.
RETAINED_MANIFESTS = 3
#: A compaction stops adding files once their sizes reach this many bytes (Hudi's 1 GB).
COMPACTION_MAX_BYTES = 1024 * 1024 * 1000
VERSION_FILE = "_version_"
_DATA_FILE_RE = re.compile(r"^(\d+)_(\d+)_(\d)\.parquet$")
_MANIFEST_RE = re.compile(r"^manifest_(\d+)$")
_INSTANT_SCHEMA = {
    "type": "record", "name": "HoodieLSMTimelineInstant", "namespace": "org.apache.hudi.avro.model",
    "fields": [{"name": "instantTime", "type": ["null", "string"], "default": None},
               {"name": "completionTime", "type": ["null", "string"], "default": None},
               {"name": "action", "type": ["null", "string"], "default": None},
               {"name": "metadata", "type": ["null", "bytes"], "default": None},
               {"name": "plan", "type": ["null", "bytes"], "default": None},
               {"name": "version", "type": "int", "default": 1}],
}
#: The data files' schema, as parquet-avro writes ``HoodieLSMTimelineInstant``.
ARROW_SCHEMA = pa.schema(
    [pa.field("instantTime", pa.string()), pa.field("completionTime", pa.string()), pa.field("action", pa.string()),
     pa.field("metadata", pa.binary()), pa.field("plan", pa.binary()), pa.field("version", pa.int32(), nullable=False)],
    metadata={"parquet.avro.schema": json.dumps(_INSTANT_SCHEMA), "writer.model.name": "avro"},
)


@dataclass(frozen=True)
class HistoryRow:
    """One archived instant: its completed action (a compaction's ``commit``), the completed
    file's bytes (``None`` when it was empty) and its plan's (``None`` when it has none)."""

    instant_time: str
    completion_time: str
    action: str
    metadata: bytes | None
    plan: bytes | None


@dataclass(frozen=True)
class ManifestEntry:
    file_name: str
    file_len: int

    @property
    def level(self) -> int:
        return int(_DATA_FILE_RE.match(self.file_name)[3])


def data_file_name(min_instant: str, max_instant: str, level: int) -> str:
    """>>> data_file_name("001", "009", 0)
    '001_009_0.parquet'
    """
    return f"{min_instant}_{max_instant}_{level}.parquet"


def latest_manifest(storage: Storage, folder: str) -> tuple[int, list[ManifestEntry]]:
    """(version, files) of the current snapshot: ``_version_``'s, else the highest manifest's (a
    crash between the two writes); ``(0, [])`` when nothing was archived."""
    if not storage.is_dir(folder):
        return 0, []
    try:
        version = int((storage.read_if_exists(f"{folder}/{VERSION_FILE}") or b"").decode())
    except ValueError:  # missing, or caught mid-write
        version = max(_manifest_versions(storage, folder), default=0)
    return version, _manifest(storage, folder, version) if version else []


def _manifest(storage: Storage, folder: str, version: int) -> list[ManifestEntry]:
    """The data files snapshot ``version`` lists."""
    path = f"{folder}/manifest_{version}"
    try:
        doc = json.loads(storage.read(path).decode() or "{}")
        return [ManifestEntry(f["fileName"], int(f["fileLen"])) for f in doc.get("files", [])]
    except (ValueError, KeyError, TypeError) as exc:
        raise damaged_file(path, f"is not an LSM timeline manifest ({exc})") from None


def _manifest_versions(storage: Storage, folder: str) -> list[int]:
    return [int(m[1]) for info in storage.list(folder) if (m := _MANIFEST_RE.match(info.name))]


def _commit_snapshot(storage: Storage, folder: str, version: int, files: list[ManifestEntry]) -> int:
    """Write snapshot ``version + 1`` listing ``files``, then point ``_version_`` at it."""
    new = version + 1
    doc = {"files": [{"fileName": f.file_name, "fileLen": f.file_len} for f in files]}
    storage.write_atomic(f"{folder}/manifest_{new}", json.dumps(doc, indent=2).encode())
    storage.write_atomic(f"{folder}/{VERSION_FILE}", str(new).encode())
    return new


def _encode(rows: list[dict], compression: str) -> bytes:
    out = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows, schema=ARROW_SCHEMA), out, compression=compression, store_schema=False)
    return out.getvalue()


def write(storage: Storage, folder: str, rows: list[HistoryRow], compression: str = "gzip") -> str:
    """Archive ``rows`` as a new file of level 0 in a new snapshot; its name. A file the current
    snapshot lists already (a run that crashed after its manifest) is not written again."""
    rows = sorted(rows, key=lambda r: r.instant_time)
    name = data_file_name(rows[0].instant_time, rows[-1].instant_time, 0)
    version, files = latest_manifest(storage, folder)
    if any(f.file_name == name for f in files):
        return name
    data = _encode([{"instantTime": r.instant_time, "completionTime": r.completion_time, "action": r.action,
                     "metadata": r.metadata, "plan": r.plan, "version": 1} for r in rows], compression)
    storage.write_atomic(f"{folder}/{name}", data)
    _commit_snapshot(storage, folder, version, [*files, ManifestEntry(name, len(data))])
    return name


def compact_and_clean(storage: Storage, folder: str, compression: str = "gzip") -> None:
    """Merge full levels into the next one, then delete the snapshots beyond those kept and the
    data files no kept snapshot lists."""
    version, files = latest_manifest(storage, folder)
    compactions, level = 0, 0
    while True:
        at_level = sorted((f for f in files if f.level == level), key=lambda f: f.file_name)
        if len(at_level) < COMPACTION_BATCH:
            break
        chosen, size = [], 0
        for f in at_level[:COMPACTION_BATCH]:
            if chosen and size + f.file_len > COMPACTION_MAX_BYTES:
                break
            chosen.append(f)
            size += f.file_len
        if len(chosen) < 2:
            break
        tables = [pq.read_table(io.BytesIO(storage.read(f"{folder}/{f.file_name}"))) for f in chosen]
        first, last = _DATA_FILE_RE.match(chosen[0].file_name), _DATA_FILE_RE.match(chosen[-1].file_name)
        name = data_file_name(first[1], last[2], level + 1)
        data = _encode(pa.concat_tables(tables).cast(ARROW_SCHEMA).to_pylist(), compression)
        storage.write_atomic(f"{folder}/{name}", data)
        files = [f for f in files if f not in chosen] + [ManifestEntry(name, len(data))]
        version = _commit_snapshot(storage, folder, version, files)
        compactions, level = compactions + 1, level + 1
    _clean(storage, folder, RETAINED_MANIFESTS + compactions)


def _clean(storage: Storage, folder: str, keep: int) -> None:
    versions = sorted(_manifest_versions(storage, folder))
    if len(versions) <= keep:
        return
    for version in versions[:-keep]:
        storage.delete(f"{folder}/manifest_{version}")
    listed = {f.file_name for version in versions[-keep:] for f in _manifest(storage, folder, version)}
    for info in storage.list(folder):
        if info.name.endswith(".parquet") and info.name not in listed:
            storage.delete(f"{folder}/{info.name}")


def read(storage: Storage, folder: str) -> list[HistoryRow]:
    """Every archived instant of the current snapshot, oldest first, each once."""
    seen: dict[str, HistoryRow] = {}
    for entry in latest_manifest(storage, folder)[1]:
        path = f"{folder}/{entry.file_name}"
        try:
            table = pq.read_table(io.BytesIO(storage.read(path)))
            records = table.select(["instantTime", "completionTime", "action", "metadata", "plan"]).to_pylist()
        except (pa.ArrowException, KeyError) as exc:
            raise damaged_file(path, f"is not an LSM timeline file ({exc})") from None
        for r in records:
            if r["instantTime"] not in seen:
                seen[r["instantTime"]] = HistoryRow(r["instantTime"], r["completionTime"], r["action"],
                                                    r["metadata"], r["plan"])
    return [seen[t] for t in sorted(seen)]
