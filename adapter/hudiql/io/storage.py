"""Storage access through ``pyarrow.fs``, so a table may live on a local disk, S3, GCS or HDFS.

A ``Storage`` is built from a table's base URI and addresses files by paths relative to it.
It is cheap and picklable (it holds only the URI), so Spark tasks build their own.

Example:
    >>> storage = Storage(warehouse + "/orders")
    >>> storage.write_atomic("dt=1/notes.txt", b"hello")       # folders are created as needed
    >>> storage.read("dt=1/notes.txt"), [f.path for f in storage.list("dt=1")]
    (b'hello', ['dt=1/notes.txt'])
    >>> storage.uri("dt=1/notes.txt")
    'file://.../warehouse/orders/dt=1/notes.txt'
    >>> storage.create_exclusive("lock", b"me"), storage.create_exclusive("lock", b"you")
    (True, False)
    >>> storage.read("missing.txt")
    Traceback (most recent call last):
    hudiql.errors.FormatError: missing file file://.../warehouse/orders/missing.txt
"""

from __future__ import annotations

import os
import posixpath
import uuid
from dataclasses import dataclass
from functools import cached_property

import pyarrow.fs as pafs

from hudiql.errors import FormatError


@dataclass(frozen=True)
class FileInfo:
    """One entry of a directory listing; ``path`` is relative to the storage root."""

    path: str
    size: int
    is_dir: bool

    @property
    def name(self) -> str:
        return posixpath.basename(self.path)


def _normalize_uri(uri: str) -> str:
    if "://" in uri:
        return uri.rstrip("/")
    return posixpath.abspath(uri)


class Storage:
    """Files below one base URI."""

    def __init__(self, base_uri: str) -> None:
        self.base_uri = _normalize_uri(base_uri)

    def __reduce__(self):  # pickled into Spark tasks as its URI only
        return (Storage, (self.base_uri,))

    @cached_property
    def _fs_and_root(self) -> tuple[pafs.FileSystem, str]:
        return pafs.FileSystem.from_uri(self.base_uri)

    @property
    def fs(self) -> pafs.FileSystem:
        return self._fs_and_root[0]

    def full_path(self, rel: str = "") -> str:
        """The filesystem path of ``rel`` (as the pyarrow filesystem names it)."""
        root = self._fs_and_root[1]
        return posixpath.join(root, rel) if rel else root

    def uri(self, rel: str = "") -> str:
        """A URI that Spark and other readers understand."""
        if "://" in self.base_uri:
            return f"{self.base_uri}/{rel}" if rel else self.base_uri
        path = self.full_path(rel)
        return "file://" + path

    def exists(self, rel: str = "") -> bool:
        return self.fs.get_file_info(self.full_path(rel)).type != pafs.FileType.NotFound

    def is_dir(self, rel: str = "") -> bool:
        return self.fs.get_file_info(self.full_path(rel)).type == pafs.FileType.Directory

    def size(self, rel: str) -> int:
        return self.fs.get_file_info(self.full_path(rel)).size

    def list(self, rel: str = "", recursive: bool = False) -> list[FileInfo]:
        """Entries below ``rel``; an absent directory lists as empty."""
        selector = pafs.FileSelector(self.full_path(rel), allow_not_found=True, recursive=recursive)
        root = self.full_path()
        out = []
        for info in self.fs.get_file_info(selector):
            out.append(
                FileInfo(
                    path=posixpath.relpath(info.path, root),
                    size=info.size or 0,
                    is_dir=info.type == pafs.FileType.Directory,
                )
            )
        return out

    def read(self, rel: str) -> bytes:
        try:
            with self.fs.open_input_stream(self.full_path(rel)) as f:
                return f.read()
        except FileNotFoundError as e:
            raise FormatError(f"missing file {self.uri(rel)}") from e

    def open_input_file(self, rel: str):
        """A random-access file, for parquet readers."""
        return self.fs.open_input_file(self.full_path(rel))

    def open_output_stream(self, rel: str):
        self.makedirs(posixpath.dirname(rel))
        return self.fs.open_output_stream(self.full_path(rel))

    def write(self, rel: str, data: bytes) -> None:
        with self.open_output_stream(rel) as f:
            f.write(data)

    def write_atomic(self, rel: str, data: bytes) -> None:
        """Write so that readers see either no file or the whole file.

        Object stores make a single PUT visible at once; on file systems we write a hidden
        temporary file beside the target and rename it.
        """
        if self.fs.type_name in ("s3", "gcs"):
            self.write(rel, data)
            return
        tmp = posixpath.join(posixpath.dirname(rel), f".{posixpath.basename(rel)}.{uuid.uuid4().hex}.tmp")
        self.write(tmp, data)
        self.fs.move(self.full_path(tmp), self.full_path(rel))

    @property
    def can_create_exclusive(self) -> bool:
        """Whether ``create_exclusive`` works here: a local file system's atomic create-if-absent."""
        return self.fs.type_name == "local"

    def create_exclusive(self, rel: str, data: bytes) -> bool:
        """Create ``rel`` holding ``data`` unless it exists; ``False`` when it does.

        Of two processes racing for one name exactly one creates it, and readers see the whole
        content or no file: the content is written to a temporary file that is then hard-linked
        to the name, which fails if the name exists. Only local file systems offer this here
        (``can_create_exclusive``).
        """
        if not self.can_create_exclusive:
            raise FormatError(f"{self.base_uri}: this storage cannot create a file only if it is absent")
        tmp = posixpath.join(posixpath.dirname(rel), f".{posixpath.basename(rel)}.{uuid.uuid4().hex}.tmp")
        self.write(tmp, data)
        try:
            os.link(self.full_path(tmp), self.full_path(rel))
            return True
        except FileExistsError:
            return False
        finally:
            os.unlink(self.full_path(tmp))

    def modified_time(self, rel: str) -> float | None:
        """When ``rel`` was last written, in seconds since the epoch; ``None`` if it does not exist."""
        info = self.fs.get_file_info(self.full_path(rel))
        if info.type == pafs.FileType.NotFound:
            return None
        return info.mtime.timestamp()

    def makedirs(self, rel: str) -> None:
        if rel not in ("", "."):
            self.fs.create_dir(self.full_path(rel), recursive=True)
        else:
            self.fs.create_dir(self.full_path(), recursive=True)

    def delete(self, rel: str) -> None:
        """Delete a file if it exists."""
        try:
            self.fs.delete_file(self.full_path(rel))
        except FileNotFoundError:
            pass

    def delete_dir(self, rel: str = "") -> None:
        """Delete a directory and everything below it, if it exists."""
        try:
            self.fs.delete_dir(self.full_path(rel))
        except FileNotFoundError:
            pass
