"""Storage access through ``pyarrow.fs``, so a table may live on a local disk, S3, GCS or HDFS.

A ``Storage`` is built from a table's base URI and addresses files by paths relative to it.
It is cheap and picklable (it holds only the URI), so Spark tasks build their own.

S3 (``s3://bucket/path``) is reached with the options of the process (``configure``): the
standard AWS variables (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``,
``AWS_ENDPOINT_URL_S3`` / ``AWS_ENDPOINT_URL``, ``AWS_REGION`` / ``AWS_DEFAULT_REGION``) and the
``region`` / ``endpoint_url`` of the profile in ``~/.aws/config`` (``AWS_PROFILE``,
``AWS_CONFIG_FILE``), under the storage options a session gives (the same names in lower case,
as delta-rs and the official Hudi reader name them). The resolved options travel to Spark's
Python workers in one environment variable (``OPTIONS_VARIABLE``); credentials a worker's own
machine provides (``~/.aws/credentials``, an instance role) are found there by the AWS SDK.

``create_exclusive`` (create a file only if it is absent) is what the table lock
(``transaction.lock``) and the claim of an instant time (``transaction.heartbeat``) stand on, so it decides
whether several processes may write one table. Local file systems give it by a hard link. On S3
it is a conditional put (``PutObject`` with ``If-None-Match: *``, which S3 offers since 2024):
S3 refuses it with 412 when the object exists, and a single PUT shows its object whole or not
at all, so of two writers racing for a name exactly one creates it and no reader sees part of
it. pyarrow's S3 file system cannot send that header, so this one request goes through
botocore (an optional dependency, ``hudiql[s3]``), with the same options, region and endpoint
as pyarrow (``S3_OPTIONS`` maps both). Without botocore, or on other stores, there is no
create-if-absent (``create_exclusive_unavailable`` says why), and a table there has one writer.

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

import configparser
import functools
import json
import os
import posixpath
import re
import uuid
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlsplit

import pyarrow.fs as pafs

from hudiql.errors import FormatError, OptionError, StorageError, closest

#: The environment variable carrying the resolved storage options (JSON) to Spark's Python workers.
OPTIONS_VARIABLE = "HUDIQL_STORAGE_OPTIONS"

#: The storage options: each is the AWS environment variable of its name in upper case, and
#: becomes these arguments of ``pyarrow.fs.S3FileSystem`` and of botocore's S3 client (the
#: conditional put of ``create_exclusive``), so that both reach S3 alike.
S3_OPTIONS = {
    "aws_access_key_id": ("access_key", "aws_access_key_id"),
    "aws_secret_access_key": ("secret_key", "aws_secret_access_key"),
    "aws_session_token": ("session_token", "aws_session_token"),
    "aws_region": ("region", "region_name"),
    "aws_endpoint_url": ("endpoint_override", "endpoint_url"),
}
ENDPOINT = "aws_endpoint_url"
REGION = "aws_region"

#: Environment variables read besides ``<OPTION>`` itself, before it (the service-specific
#: endpoint wins, as in the AWS SDKs) or after it.
_ENV_BEFORE = {ENDPOINT: ["AWS_ENDPOINT_URL_S3"]}
_ENV_AFTER = {REGION: ["AWS_DEFAULT_REGION"]}
#: What ``~/.aws/config`` may give (pyarrow's AWS SDK reads its credentials, not these).
_CONFIG_FILE_KEYS = {ENDPOINT: "endpoint_url", REGION: "region"}

#: Schemes Spark's own parquet reader opens in this installation (no hadoop-aws, no cloud
#: connectors): every other storage is read through pyarrow.fs in Spark tasks.
SPARK_SCHEMES = ("file", "hdfs")


def resolve_options(given: Mapping[str, str] | None = None) -> dict[str, str]:
    """The storage options of a session: ``given`` over the AWS variables and config file.

    Example:
        >>> resolve_options({"aws_endpoint_url": "http://127.0.0.1:9000"})[ENDPOINT]
        'http://127.0.0.1:9000'
    """
    return {**_config_file_options(), **_environment_options(), **checked_options(given or {})}


def checked_options(given: Mapping[str, object]) -> dict[str, str]:
    """``given`` storage options by their names in lower case; an unknown name is an error.

    Example:
        >>> checked_options({"AWS_REGION": "eu-west-1"})
        {'aws_region': 'eu-west-1'}
        >>> checked_options({"aws_acces_key_id": "k"})
        Traceback (most recent call last):
        hudiql.errors.OptionError: unknown storage option 'aws_acces_key_id'; did you mean 'aws_access_key_id'?
    """
    out = {}
    for key, value in given.items():
        name = str(key).lower()
        if name not in S3_OPTIONS:
            guess = closest(name, list(S3_OPTIONS))
            raise OptionError(f"unknown storage option '{key}'" + (f"; did you mean '{guess}'?" if guess
                                                                    else f"; valid: {', '.join(S3_OPTIONS)}"))
        if value is not None:
            out[name] = str(value)
    return out


def _environment_options() -> dict[str, str]:
    out = {}
    for name in S3_OPTIONS:
        for variable in [*_ENV_BEFORE.get(name, []), name.upper(), *_ENV_AFTER.get(name, [])]:
            if os.environ.get(variable):
                out[name] = os.environ[variable]
                break
    return out


def _config_file_options() -> dict[str, str]:
    path = Path(os.environ.get("AWS_CONFIG_FILE") or Path.home() / ".aws" / "config")
    if not path.is_file():
        return {}
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(path)
    profile = os.environ.get("AWS_PROFILE") or "default"
    section = profile if profile == "default" else f"profile {profile}"
    if not parser.has_section(section):
        return {}
    return {name: parser.get(section, key) for name, key in _CONFIG_FILE_KEYS.items() if parser.has_option(section, key)}


def configure(options: Mapping[str, str], task_environment: MutableMapping[str, str]) -> None:
    """Use ``options`` (``resolve_options``) for storage in this process and in the Spark tasks
    that get ``task_environment`` (a SparkContext's ``environment``). The last call wins."""
    shipped = json.dumps(dict(sorted(options.items())))
    os.environ[OPTIONS_VARIABLE] = shipped
    if task_environment.get(OPTIONS_VARIABLE) != shipped:  # a change starts new Python workers
        task_environment[OPTIONS_VARIABLE] = shipped


def _current_options() -> dict[str, str]:
    """The options ``configure`` set for this process (shipped to Spark workers), else the
    AWS variables and config file."""
    shipped = os.environ.get(OPTIONS_VARIABLE)
    return json.loads(shipped) if shipped else resolve_options()


@functools.lru_cache(maxsize=16)
def _s3_filesystem(options: tuple[tuple[str, str], ...], bucket: str) -> pafs.S3FileSystem:
    """One S3 client per options and bucket in a process: building one sets up an AWS SDK client."""
    given = dict(options)
    arguments = {S3_OPTIONS[k][0]: v for k, v in given.items()}
    if REGION not in given and ENDPOINT not in given:
        arguments["region"] = pafs.resolve_s3_region(bucket)  # as FileSystem.from_uri does for AWS
    return pafs.S3FileSystem(**arguments)


def _botocore_missing() -> str | None:
    """What to install for S3's conditional put, or ``None`` when botocore is there."""
    try:
        import botocore.session  # noqa: F401
    except ImportError:
        return "S3's conditional put needs botocore: pip install 'hudiql[s3]' (or botocore)"
    return None


@functools.lru_cache(maxsize=16)
def _s3_client(options: tuple[tuple[str, str], ...], region: str):
    """One botocore S3 client per options in a process (building one loads the service model),
    reaching S3 as ``_s3_filesystem`` does: its region, and path-style addressing at a given
    endpoint (pyarrow's default there)."""
    import botocore.config
    import botocore.session

    given = dict(options)
    arguments = {S3_OPTIONS[k][1]: v for k, v in given.items()}
    arguments["region_name"] = region
    addressing = "path" if ENDPOINT in given else "virtual"
    # Checksums only where S3 requires them (as before botocore 1.36): several S3-compatible
    # stores refuse the CRC32 headers botocore now adds to every PutObject.
    config = botocore.config.Config(s3={"addressing_style": addressing}, request_checksum_calculation="when_required",
                                    response_checksum_validation="when_required")
    return botocore.session.get_session().create_client("s3", config=config, **arguments)


def _unlink_if_holds(path: str, content: bytes) -> bool:
    """``Storage.delete_if_holds`` on a local file system."""
    import fcntl

    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # released when fd is closed
        read = b"".join(iter(lambda: os.read(fd, 1 << 16), b""))
        if read != content:
            return False
        try:
            named = os.stat(path)
        except FileNotFoundError:
            return False
        opened = os.fstat(fd)
        if (named.st_dev, named.st_ino) != (opened.st_dev, opened.st_ino):
            return False  # deleted and created anew by another process since it was opened
        os.unlink(path)
        return True
    finally:
        os.close(fd)


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
        if "?" in uri:
            raise OptionError(
                f"'{uri}': give S3 settings as storage options (connect(storage_options=...), storage_options "
                "in profiles.yml) or AWS_* variables, not in the URI; write the location without '?...'"
            )
        return uri.rstrip("/")
    return posixpath.abspath(uri)


_Result = TypeVar("_Result")


def _reaching(method: Callable[..., _Result]) -> Callable[..., _Result]:
    """``method`` with a failure to reach remote storage (credentials, endpoint, network) raised
    as one ``StorageError`` naming the path and the endpoint; a missing file stays a
    ``FileNotFoundError``, and local file systems keep their own errors."""

    @functools.wraps(method)
    def reach(self: Storage, *args, **kwargs) -> _Result:
        try:
            return method(self, *args, **kwargs)
        except FileNotFoundError:
            raise
        except OSError as exc:
            if self.fs.type_name == "local":
                raise
            raise self._unreachable(args[0] if args and isinstance(args[0], str) else "", exc) from None

    return reach


class Storage:
    """Files below one base URI."""

    def __init__(self, base_uri: str) -> None:
        self.base_uri = _normalize_uri(base_uri)

    def __reduce__(self):  # pickled into Spark tasks as its URI only
        return (Storage, (self.base_uri,))

    @cached_property
    def _fs_and_root(self) -> tuple[pafs.FileSystem, str]:
        parts = urlsplit(self.base_uri)
        if parts.scheme != "s3":
            return pafs.FileSystem.from_uri(self.base_uri)
        try:
            return _s3_filesystem(self._s3_options, parts.netloc), parts.netloc + parts.path
        except OSError as exc:  # resolving the bucket's region reaches AWS
            raise self._unreachable("", exc) from None

    @cached_property
    def _s3_options(self) -> tuple[tuple[str, str], ...]:
        """The options this storage reaches S3 with, read once: its pyarrow and botocore clients agree."""
        return tuple(sorted(_current_options().items()))

    @property
    def spark_can_read(self) -> bool:
        """Whether Spark's own parquet reader opens files here (else they are read in tasks through pyarrow.fs)."""
        return "://" not in self.base_uri or urlsplit(self.base_uri).scheme in SPARK_SCHEMES

    def _unreachable(self, rel: str, exc: Exception) -> StorageError:
        """``exc`` (pyarrow's ``OSError`` or a botocore error) as the one line a user acts on."""
        if urlsplit(self.base_uri).scheme != "s3":
            return StorageError(f"cannot reach {self.uri(rel)} ({str(exc).splitlines()[0]})")
        endpoint = dict(self._s3_options).get(ENDPOINT, "the AWS default endpoint")
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        aws = (re.search(r"AWS Error (\w+) during (\w+) operation(?:.*?Details: ([^;]+))?", detail)  # pyarrow
               or re.search(r"An error occurred \((\w+)\) when calling the (\w+) operation(?:[^:]*: (.+))?", detail))
        reason = f"{aws[1]} on {aws[2]}" + (f": {aws[3].strip()}" if aws[3] else "") if aws else detail
        return StorageError(
            f"cannot reach {self.uri(rel)} at S3 endpoint {endpoint} ({reason}); check the credentials and the "
            "endpoint (AWS_* variables, ~/.aws/config, or storage_options)"
        )

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

    @_reaching
    def exists(self, rel: str = "") -> bool:
        return self.fs.get_file_info(self.full_path(rel)).type != pafs.FileType.NotFound

    @_reaching
    def is_dir(self, rel: str = "") -> bool:
        return self.fs.get_file_info(self.full_path(rel)).type == pafs.FileType.Directory

    @_reaching
    def size(self, rel: str) -> int:
        return self.fs.get_file_info(self.full_path(rel)).size

    @_reaching
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
        content = self.read_if_exists(rel)
        if content is None:
            raise FormatError(f"missing file {self.uri(rel)}")
        return content

    @_reaching
    def read_if_exists(self, rel: str) -> bytes | None:
        """The content of ``rel``, or ``None`` when it does not exist."""
        try:
            with self.fs.open_input_stream(self.full_path(rel)) as f:
                return f.read()
        except FileNotFoundError:
            return None
        except OSError:
            # An object store opens a file with a HEAD and reads it with a GET: a file deleted
            # between the two (a lock its holder released) fails the read, and is gone.
            if not self.exists(rel):
                return None
            raise

    @_reaching
    def open_input_file(self, rel: str):
        """A random-access file, for parquet readers."""
        return self.fs.open_input_file(self.full_path(rel))

    @_reaching
    def open_output_stream(self, rel: str):
        if self.fs.type_name == "local":  # an object store has no folders to create
            self.makedirs(posixpath.dirname(rel))
        return self.fs.open_output_stream(self.full_path(rel))

    @_reaching
    def write(self, rel: str, data: bytes) -> None:
        with self.open_output_stream(rel) as f:
            f.write(data)

    @_reaching
    def copy(self, source: str, target: str) -> None:
        """Copy a file (on an object store, without moving its bytes through this process)."""
        self.fs.copy_file(self.full_path(source), self.full_path(target))

    @_reaching
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
    def create_exclusive_unavailable(self) -> str | None:
        """Why ``create_exclusive`` does not work here (what to install), or ``None`` when it does:
        on local file systems and, with botocore, on S3."""
        if self.fs.type_name == "local":
            return None
        if self.fs.type_name == "s3":
            return _botocore_missing()
        return f"{self.fs.type_name} storage has no create-if-absent here"

    @property
    def can_create_exclusive(self) -> bool:
        """Whether ``create_exclusive`` works here, so that several processes may write a table."""
        return self.create_exclusive_unavailable is None

    def create_exclusive(self, rel: str, data: bytes) -> bool:
        """Create ``rel`` holding ``data`` unless it exists; ``False`` when it does.

        Of two processes racing for one name exactly one creates it, and readers see the whole
        content or no file. On S3: one conditional put. On a local file system: the content is
        written to a temporary file that is then hard-linked to the name, which fails if the
        name exists.
        """
        unavailable = self.create_exclusive_unavailable
        if unavailable is not None:
            raise StorageError(f"{self.base_uri}: cannot create a file only if it is absent ({unavailable})")
        if self.fs.type_name == "s3":
            return self._put_if_absent(rel, data)
        tmp = posixpath.join(posixpath.dirname(rel), f".{posixpath.basename(rel)}.{uuid.uuid4().hex}.tmp")
        self.write(tmp, data)
        try:
            os.link(self.full_path(tmp), self.full_path(rel))
            return True
        except FileExistsError:
            return False
        finally:
            os.unlink(self.full_path(tmp))

    def _put_if_absent(self, rel: str, data: bytes) -> bool:
        from botocore.exceptions import BotoCoreError, ClientError

        bucket, _, key = self.full_path(rel).partition("/")
        try:
            _s3_client(self._s3_options, self.fs.region).put_object(Bucket=bucket, Key=key, Body=data, IfNoneMatch="*")
            return True
        except ClientError as exc:
            # 412: the object exists; 409: a concurrent put or delete of the same key came first.
            response = exc.response
            if (response.get("ResponseMetadata", {}).get("HTTPStatusCode") == 412
                    or response.get("Error", {}).get("Code") == "ConditionalRequestConflict"):
                return False
            raise self._unreachable(rel, exc) from None
        except BotoCoreError as exc:  # no credentials, endpoint unreachable
            raise self._unreachable(rel, exc) from None

    def delete_if_holds(self, rel: str, content: bytes) -> bool:
        """Delete ``rel`` only if it holds ``content``; whether it was deleted (``False``: it holds
        something else, or is gone). A file another process replaced since it was read stays, where
        every process deletes the name this way: on S3 the delete is conditional on the object read
        (``If-Match`` its ETag); on a local file system deleters take turns on the file read (an
        exclusive ``flock``) and delete the name only while it still names that file. Elsewhere a
        read, then a delete."""
        if self.fs.type_name == "s3" and self.can_create_exclusive:  # botocore is there
            return self._delete_if_unchanged(rel, content)
        if self.fs.type_name == "local":
            return _unlink_if_holds(self.full_path(rel), content)
        if self.read_if_exists(rel) != content:
            return False
        self.delete(rel)
        return True

    def _delete_if_unchanged(self, rel: str, content: bytes) -> bool:
        from botocore.exceptions import BotoCoreError, ClientError

        bucket, _, key = self.full_path(rel).partition("/")
        client = _s3_client(self._s3_options, self.fs.region)
        try:
            read = client.get_object(Bucket=bucket, Key=key)
            if read["Body"].read() != content:
                return False
            client.delete_object(Bucket=bucket, Key=key, IfMatch=read["ETag"])
            return True
        except ClientError as exc:
            # 404: gone; 412: replaced since the read; 409: a concurrent put or delete came first.
            if exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") in (404, 409, 412):
                return False
            raise self._unreachable(rel, exc) from None
        except BotoCoreError as exc:  # no credentials, endpoint unreachable
            raise self._unreachable(rel, exc) from None

    @_reaching
    def modified_time(self, rel: str) -> float | None:
        """When ``rel`` was last written, in seconds since the epoch; ``None`` if it does not exist."""
        info = self.fs.get_file_info(self.full_path(rel))
        if info.type == pafs.FileType.NotFound:
            return None
        return info.mtime.timestamp()

    @_reaching
    def makedirs(self, rel: str) -> None:
        if rel not in ("", "."):
            self.fs.create_dir(self.full_path(rel), recursive=True)
        else:
            self.fs.create_dir(self.full_path(), recursive=True)

    @_reaching
    def delete(self, rel: str) -> None:
        """Delete a file if it exists."""
        try:
            self.fs.delete_file(self.full_path(rel))
        except FileNotFoundError:
            pass

    @_reaching
    def delete_dir(self, rel: str = "") -> None:
        """Delete a directory and everything below it, if it exists."""
        try:
            self.fs.delete_dir(self.full_path(rel))
        except FileNotFoundError:
            pass
