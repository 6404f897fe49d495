"""File and path naming of the Hudi format: the one place that decides every name on storage.

Example:
    >>> name = base_file_name("d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0", "0-13-60", "20240101000000000")
    >>> name
    'd0304c53-6fd2-4b7a-a9d6-5ff632f79224-0_0-13-60_20240101000000000.parquet'
    >>> parse_data_file_name(name).file_id
    'd0304c53-6fd2-4b7a-a9d6-5ff632f79224-0'
    >>> log = log_file_name("f-0", "20240101000000000", 2, "1-5-9")   # version 2 of the slice's logs
    >>> log, parse_data_file_name(log).is_log
    ('.f-0_20240101000000000.log.2_1-5-9', True)
    >>> bucket_of_file_id(bucket_file_id(3))
    3
"""

from __future__ import annotations

import posixpath
import re
import uuid
from dataclasses import dataclass

META_FOLDER = ".hoodie"
ARCHIVED_FOLDER = f"{META_FOLDER}/archived"  # timeline layout 1's archived timeline (hoodie.archivelog.folder)
PROPERTIES_FILE = f"{META_FOLDER}/hoodie.properties"
TEMP_FOLDER = f"{META_FOLDER}/.temp"
HEARTBEAT_FOLDER = f"{META_FOLDER}/.heartbeat"
LOCK_FILE = f"{META_FOLDER}/lock"
#: The metadata table (a Hudi table of its own) that Hudi writers keep since 0.11.
METADATA_TABLE_FOLDER = f"{META_FOLDER}/metadata"
PARTITION_METADATA_FILE = ".hoodie_partition_metadata"
DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"
BASE_FILE_EXTENSION = ".parquet"
#: The base files of the metadata table.
HFILE_EXTENSION = ".hfile"

_BASE_FILE_RE = re.compile(r"^(?P<file_id>[^_]+)_(?P<token>[^_]+)_(?P<instant>\d+)\.(?:parquet|hfile)$")
_LOG_FILE_RE = re.compile(
    r"^\.(?P<file_id>[^_]+)_(?P<instant>\d+)\.log\.(?P<version>\d+)(?:_(?P<token>[\d-]+))?$"
)


def new_file_id() -> str:
    """A new file group id: ``<uuid4>-0`` (no ``_``, which separates the name's fields)."""
    return f"{uuid.uuid4()}-0"


def bucket_file_id(bucket: int, fixed: bool = False, generation: int = 0) -> str:
    """A new file group id for a bucket of the bucket index: the uuid's first 8 characters are
    the bucket number, as in the file ids of Hudi's bucket index. ``fixed``: the id every writer
    gives the bucket, as Hudi names it under non-blocking concurrency control, where concurrent
    writers may start the bucket's file group together and must meet in it; ``generation``
    counts the bucket's earlier fixed file groups in the partition that were replaced (dropped
    or truncated), whose id a new group cannot take again.

    >>> bucket_file_id(3, fixed=True), bucket_file_id(3, fixed=True, generation=1)
    ('00000003-0000-0000-0000-000000000000-0', '00000003-0000-0000-0000-000000000000-1')
    """
    suffix = "-0000-0000-0000-000000000000" if fixed else str(uuid.uuid4())[8:]
    return f"{bucket:08d}{suffix}-{generation if fixed else 0}"


def bucket_of_file_id(file_id: str) -> int | None:
    """The bucket a bucket-index file group holds, or ``None`` for other file ids."""
    head = file_id[:8]
    return int(head) if len(file_id) > 8 and head.isdigit() else None


def write_token(task_partition_id: int, stage_id: int, attempt_id: int) -> str:
    return f"{task_partition_id}-{stage_id}-{attempt_id}"


def log_write_token(task_partition_id: int, instant_time: str, attempt_id: int) -> str:
    """The write token of a data log file, the write's instant time in place of the stage id: on
    timeline layout 1 a log file is named by its slice's base instant and next version, which two
    concurrent writers of one file group both pick, and their tasks' stage ids may match too (each
    SparkContext numbers its stages from 0): a shared name would let the losing writer's abort
    delete the winner's committed log file. Readers take the token as text.

    >>> log_write_token(4, "20260101000000000", 0)
    '4-20260101000000000-0'
    """
    return f"{task_partition_id}-{instant_time}-{attempt_id}"


def base_file_name(file_id: str, token: str, instant_time: str, extension: str = BASE_FILE_EXTENSION) -> str:
    return f"{file_id}_{token}_{instant_time}{extension}"


def log_file_name(file_id: str, base_instant_time: str, version: int, token: str) -> str:
    return f".{file_id}_{base_instant_time}.log.{version}_{token}"


@dataclass(frozen=True)
class DataFileName:
    """The parsed name of a base or log file."""

    file_id: str
    instant_time: str  # the base file's instant; for a log file, the base instant of its slice
    token: str | None
    log_version: int | None = None

    @property
    def is_log(self) -> bool:
        return self.log_version is not None


def parse_data_file_name(name: str) -> DataFileName | None:
    """Parse a base or log file name; ``None`` for any other file."""
    m = _BASE_FILE_RE.match(name)
    if m:
        return DataFileName(m["file_id"], m["instant"], m["token"])
    m = _LOG_FILE_RE.match(name)
    if m:
        return DataFileName(m["file_id"], m["instant"], m["token"], int(m["version"]))
    return None


def partition_of(path: str) -> str:
    """The partition path of a data file's path relative to the table root ('' at the root)."""
    partition = posixpath.dirname(path)
    return "" if partition == "." else partition


def join_partition(partition_path: str, name: str) -> str:
    """A data file's path relative to the table root."""
    return posixpath.join(partition_path, name) if partition_path else name


def partition_metadata(commit_time: str, partition_path: str) -> bytes:
    depth = 0 if not partition_path else len(partition_path.split("/"))
    return f"#partition metadata\ncommitTime={commit_time}\npartitionDepth={depth}\n".encode()


def marker_folder(instant_time: str) -> str:
    """Where the markers of ``instant_time``'s write live (removed when it completes or rolls back)."""
    return f"{TEMP_FOLDER}/{instant_time}"


def marker_path(instant_time: str, partition_path: str, file_name: str, io_type: str) -> str:
    """Marker of a file a write creates, so that a rollback can find and remove it."""
    return posixpath.join(marker_folder(instant_time), join_partition(partition_path, f"{file_name}.marker.{io_type}"))
