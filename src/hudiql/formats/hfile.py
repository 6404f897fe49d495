"""HFile version 3, HBase's sorted key-value file, as Hudi keeps the metadata table in it: the base
files of every metadata partition and the content of its log blocks (``HFILE_DATA``).

Layout (all integers big-endian):
``data blocks | meta blocks | load-on-open section (root data index, meta index, file info) | trailer``.
Every block has a 33-byte header (8-byte magic, int32 on-disk size without header, int32
uncompressed size without header, int64 offset of the previous block of its type, byte checksum
type, int32 bytes per checksum, int32 on-disk data size with header), its payload (gzip-compressed
when the file's codec is GZ) and an int32 checksum per 16 KiB of header and payload. A data block
holds cells: int32 key length, int32 value length, the key (int16 row length, row, then HBase's
empty family and qualifier, the latest timestamp and the Put type), the value, and a zero MVCC
version. Hudi's key is the row. The root index names each data block's first key, or, in files with
a multi-level index, each index block's; the trailer, the last 4096 bytes, is a protobuf message.

hudiql writes what HBase's writer writes (CRC32 checksums, full cell keys in the index, a single-
level root index), so that HBase's reader (Hudi 0.x), Hudi 1.x's own reader and hudi-rs read it.

Example:
    >>> data = write_hfile([(b"b", b"2"), (b"a", b"1")], compression=GZ, file_info={"schema": b"{}"})
    >>> hfile = HFile(data, "files-0000-0_0-1-0_001.hfile")
    >>> list(hfile.entries()), hfile.get(b"b"), hfile.get(b"c"), hfile.file_info["schema"]
    ([(b'a', b'1'), (b'b', b'2')], b'2', None, b'{}')
    >>> HFile(data[:-10], "f.hfile")
    Traceback (most recent call last):
    hudiql.errors.FormatError: f.hfile is not a readable HFile: not an HFile (no trailer)
"""

from __future__ import annotations

import bisect
import struct
import time
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from hudiql.errors import FormatError

#: The codecs the trailer names (Hadoop's Compression.Algorithm ordinals).
GZ, NONE = 1, 2
CODEC_NAMES = {GZ: "GZ", NONE: "NONE"}

DATA_BLOCK, META_BLOCK, LEAF_INDEX, INTERMEDIATE_INDEX = b"DATABLK*", b"METABLKc", b"IDXLEAF2", b"IDXINTE2"
ROOT_INDEX, FILE_INFO = b"IDXROOT2", b"FILEINF2"
TRAILER_MAGIC = b'TRABLK"$'
TRAILER_SIZE = 4096
HEADER = struct.Struct(">8siiqbii")
BYTES_PER_CHECKSUM = 16384
NULL_CHECKSUM, CRC32_CHECKSUM = 0, 1
#: Version 3.3 (major in the low bytes, minor in the high byte), as HBase 2 writes it.
VERSION = (3 << 24) | 3
#: The comparator Hudi's writers name; HBase's reader (Hudi 0.x) loads it by this name.
COMPARATOR = "org.apache.hudi.io.storage.HoodieHBaseKVComparator"
#: HBase's cell key after the row: empty family, no qualifier, the latest timestamp, type Put.
_KEY_SUFFIX = b"\x00" + struct.pack(">q", 0x7FFFFFFFFFFFFFFF) + b"\x04"
_CELL = struct.Struct(">ii")
_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x00"
#: Uncompressed bytes per data block Hudi's metadata table uses (hoodie.metadata's HFile block size).
DEFAULT_BLOCK_SIZE = 1024 * 1024

LAST_KEY, AVG_KEY_LEN, AVG_VALUE_LEN = "hfile.LASTKEY", "hfile.AVG_KEY_LEN", "hfile.AVG_VALUE_LEN"
CREATE_TIME, MAX_MEMSTORE_TS, KEY_VALUE_VERSION = "hfile.CREATE_TIME_TS", "MAX_MEMSTORE_TS_KEY", "KEY_VALUE_VERSION"


def cell_key(row: bytes) -> bytes:
    """The full HBase cell key of a row, as data cells and index entries hold it."""
    return struct.pack(">h", len(row)) + row + _KEY_SUFFIX


def _row(key: bytes) -> bytes:
    (length,) = struct.unpack_from(">h", key)
    return key[2:2 + length]


# -- the small encodings HFile borrows: protobuf varints and Hadoop's variable-length longs --

def _varint(value: int) -> bytes:
    out = bytearray()
    value &= (1 << 64) - 1
    while True:
        bits = value & 0x7F
        value >>= 7
        if value:
            out.append(bits | 0x80)
        else:
            out.append(bits)
            return bytes(out)


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7


def _vlong(value: int) -> bytes:
    """Hadoop's WritableUtils.writeVLong."""
    if -112 <= value <= 127:
        return struct.pack(">b", value)
    length = -112
    if value < 0:
        value = ~value
        length = -120
    size = (value.bit_length() + 7) // 8
    return struct.pack(">b", length - size) + value.to_bytes(size, "big")


def _read_vlong(data: bytes, pos: int) -> tuple[int, int]:
    (first,) = struct.unpack_from(">b", data, pos)
    if first >= -112:
        return first, pos + 1
    negative = first < -120
    size = (-119 - first) if negative else (-111 - first)
    value = int.from_bytes(data[pos + 1:pos + size], "big")
    return (~value if negative else value), pos + size


def _proto_fields(data: bytes) -> Iterator[tuple[int, int | bytes]]:
    """The (field number, value) pairs of a protobuf message: varints and length-delimited bytes."""
    pos = 0
    while pos < len(data):
        tag, pos = _read_varint(data, pos)
        number, wire_type = tag >> 3, tag & 7
        if wire_type == 0:
            value, pos = _read_varint(data, pos)
        elif wire_type == 2:
            length, pos = _read_varint(data, pos)
            value, pos = data[pos:pos + length], pos + length
        else:
            raise ValueError(f"unexpected protobuf wire type {wire_type}")
        yield number, value


def _proto_varint(number: int, value: int) -> bytes:
    return _varint(number << 3) + _varint(value)


def _proto_bytes(number: int, value: bytes) -> bytes:
    return _varint((number << 3) | 2) + _varint(len(value)) + value


# -- the trailer --

class RangedFile:
    """A file read by byte ranges as an HFile reader asks for them, not whole: its tail (the
    trailer, and the index and file info just before it) in one read, then one read per data block
    a lookup needs.

    ``file`` has ``read_at(length, offset)`` (a ``pyarrow`` random-access file)."""

    #: Bytes read from the end at the first access: the trailer and, in the files Hudi and hudiql
    #: write for the metadata table, the root index, meta index and file info before it.
    TAIL = 64 * 1024

    def __init__(self, file, size: int) -> None:
        self._file = file
        self._size = size
        self._tail_start = max(size - self.TAIL, 0)
        self._tail: bytes | None = None

    def __len__(self) -> int:
        return self._size

    def __getitem__(self, part: slice) -> bytes:
        start, stop, _ = part.indices(self._size)
        if stop <= start:
            return b""
        if start >= self._tail_start:
            if self._tail is None:
                self._tail = self._file.read_at(self._size - self._tail_start, self._tail_start)
            return self._tail[start - self._tail_start:stop - self._tail_start]
        return self._file.read_at(stop - start, start)


@dataclass(frozen=True)
class Trailer:
    file_info_offset: int
    load_on_open_offset: int
    data_index_count: int
    meta_index_count: int
    entry_count: int
    index_levels: int
    codec: int

    _FIELDS = {1: "file_info_offset", 2: "load_on_open_offset", 5: "data_index_count", 6: "meta_index_count",
               7: "entry_count", 8: "index_levels", 12: "codec"}

    @classmethod
    def parse(cls, data: bytes | RangedFile) -> Trailer:
        tail = data[-TRAILER_SIZE:] if len(data) >= TRAILER_SIZE else b""
        if tail[:8] != TRAILER_MAGIC:
            raise ValueError("not an HFile (no trailer)")
        tail = tail[8:]
        (version,) = struct.unpack(">i", tail[-4:])
        if version & 0xFFFFFF != 3:
            raise ValueError(f"HFile version {version & 0xFFFFFF}, only version 3 is read")
        length, pos = _read_varint(tail, 0)
        values = {"data_index_count": 0, "meta_index_count": 0, "entry_count": 0, "index_levels": 1, "codec": NONE}
        for number, value in _proto_fields(tail[pos:pos + length]):
            if number in cls._FIELDS:
                values[cls._FIELDS[number]] = value
        if values["codec"] not in CODEC_NAMES:
            raise ValueError(f"compression codec {values['codec']} (hudiql reads GZ and NONE)")
        return cls(**values)


# -- blocks --

def _gzip(payload: bytes) -> bytes:
    deflate = zlib.compressobj(6, zlib.DEFLATED, -15)
    body = deflate.compress(payload) + deflate.flush()
    return _GZIP_HEADER + body + struct.pack("<II", zlib.crc32(payload), len(payload) & 0xFFFFFFFF)


def _block(magic: bytes, payload: bytes, codec: int, previous: int) -> bytes:
    """A block as written: header, payload (compressed) and a CRC32 per 16 KiB of both."""
    stored = _gzip(payload) if codec == GZ else payload
    chunks = -(-(HEADER.size + len(stored)) // BYTES_PER_CHECKSUM)
    header = HEADER.pack(magic, len(stored) + 4 * chunks, len(payload), previous, CRC32_CHECKSUM,
                         BYTES_PER_CHECKSUM, HEADER.size + len(stored))
    body = header + stored
    checksums = b"".join(struct.pack(">I", zlib.crc32(body[i:i + BYTES_PER_CHECKSUM]))
                         for i in range(0, len(body), BYTES_PER_CHECKSUM))
    return body + checksums


def _read_block(data: bytes | RangedFile, offset: int, codec: int, expected: tuple[bytes, ...],
                known_size: int = 0) -> tuple[bytes, int]:
    """The payload of the block at ``offset`` (decompressed) and the offset of the next block;
    ``known_size``: its size with header, as an index entry gives it (one read of a ranged file)."""
    head = data[offset:offset + max(known_size, HEADER.size)]
    magic, size, uncompressed, _, checksum, per_checksum, data_size = HEADER.unpack(head[:HEADER.size])
    if magic not in expected:
        raise ValueError(f"expected a {' or '.join(m.decode() for m in expected)} block at byte {offset}, "
                         f"found {magic!r}")
    end = offset + HEADER.size + size
    if end > len(data) - TRAILER_SIZE or data_size > HEADER.size + size:
        raise ValueError(f"the block at byte {offset} runs past the end of the data")
    block = head if len(head) == end - offset else data[offset:end]
    stored = block[HEADER.size:data_size]
    if checksum == CRC32_CHECKSUM:
        body = block[:data_size]
        sums = block[data_size:]
        for n, i in enumerate(range(0, len(body), per_checksum)):
            if sums[4 * n:4 * n + 4] != struct.pack(">I", zlib.crc32(body[i:i + per_checksum])):
                raise ValueError(f"the block at byte {offset} fails its checksum")
    payload = zlib.decompress(stored, 47) if codec == GZ else stored
    if len(payload) != uncompressed:
        raise ValueError(f"the block at byte {offset} has {len(payload)} bytes, its header says {uncompressed}")
    return payload, end


@dataclass(frozen=True)
class _IndexEntry:
    first_row: bytes
    offset: int
    size: int


def _root_index(payload: bytes, count: int, cell_keys: bool) -> list[_IndexEntry]:
    """A root index block: per entry int64 offset, int32 size, a variable-length key length and
    the key (a cell key in the data index, the block's name in the meta index)."""
    entries, pos = [], 0
    for _ in range(count):
        offset, size = struct.unpack_from(">qi", payload, pos)
        length, pos = _read_vlong(payload, pos + 12)
        key = payload[pos:pos + length]
        entries.append(_IndexEntry(_row(key) if cell_keys else key, offset, size))
        pos += length
    return entries


def _non_root_index(payload: bytes) -> list[_IndexEntry]:
    """An intermediate or leaf index block: int32 count, int32 offsets of each entry (relative to
    the entries), then per entry int64 offset, int32 size and the key."""
    (count,) = struct.unpack_from(">i", payload)
    relative = struct.unpack_from(f">{count + 1}i", payload, 4)
    base = 4 * (count + 2)
    entries = []
    for i in range(count):
        start, end = base + relative[i], base + relative[i + 1]
        offset, size = struct.unpack_from(">qi", payload, start)
        entries.append(_IndexEntry(_row(payload[start + 12:end]), offset, size))
    return entries


def _damaged(path: str, problem: Exception) -> FormatError:
    return FormatError(f"{path} is not a readable HFile: {problem}")


class HFile:
    """An HFile read from its bytes: ``entries()`` in key order, ``get(key)``, ``with_prefix``,
    ``file_info`` and ``meta_block(name)``. A damaged file is one ``FormatError`` naming it."""

    def __init__(self, data: bytes | RangedFile, path: str) -> None:
        self.path = path
        self._data = data
        self._block: tuple[int, dict[bytes, bytes]] = (-1, {})  # the data block last looked into
        try:
            self._open()
        except (ValueError, struct.error, zlib.error, IndexError) as exc:
            raise _damaged(path, exc) from None

    def _open(self) -> None:
        data = self._data
        trailer = self.trailer = Trailer.parse(data)
        codec = trailer.codec
        root, pos = _read_block(data, trailer.load_on_open_offset, codec, (ROOT_INDEX,))
        index = _root_index(root, trailer.data_index_count, cell_keys=True)
        for _ in range(trailer.index_levels - 1):
            index = [e for block in index
                     for e in _non_root_index(_read_block(data, block.offset, codec,
                                                          (INTERMEDIATE_INDEX, LEAF_INDEX))[0])]
        self._index = index
        self._first_rows = [e.first_row for e in index]
        meta, _ = _read_block(data, pos, codec, (ROOT_INDEX,))
        self._meta_index = {e.first_row: e for e in _root_index(meta, trailer.meta_index_count, cell_keys=False)}
        info, _ = _read_block(data, trailer.file_info_offset, codec, (FILE_INFO,))
        if info[:4] != b"PBUF":
            raise ValueError("the file info block is not a protobuf message")
        length, pos = _read_varint(info, 4)
        self.file_info: dict[str, bytes] = {}
        for _, pair in _proto_fields(info[pos:pos + length]):
            fields = dict(_proto_fields(pair))
            self.file_info[fields.get(1, b"").decode()] = fields.get(2, b"")

    def __len__(self) -> int:
        return self.trailer.entry_count

    def _cells(self, block: _IndexEntry) -> Iterator[tuple[bytes, bytes]]:
        payload, _ = _read_block(self._data, block.offset, self.trailer.codec, (DATA_BLOCK,), block.size)
        pos, end = 0, len(payload)
        while pos < end:
            key_length, value_length = _CELL.unpack_from(payload, pos)
            key_start = pos + _CELL.size
            value_start = key_start + key_length
            yield _row(payload[key_start:value_start]), payload[value_start:value_start + value_length]
            _, pos = _read_vlong(payload, value_start + value_length)  # the cell's MVCC version

    def _guarded(self, cells: Iterator[tuple[bytes, bytes]]) -> Iterator[tuple[bytes, bytes]]:
        try:
            yield from cells
        except (ValueError, struct.error, zlib.error, IndexError) as exc:
            raise _damaged(self.path, exc) from None

    def entries(self, start: bytes = b"") -> Iterator[tuple[bytes, bytes]]:
        """Every (key, value) in key order, from the first key not below ``start``."""
        first = max(bisect.bisect_right(self._first_rows, start) - 1, 0)
        return self._guarded((k, v) for block in self._index[first:] for k, v in self._cells(block) if k >= start)

    def with_prefix(self, prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
        """The entries whose key starts with ``prefix``, in key order."""
        for key, value in self.entries(prefix):
            if not key.startswith(prefix):
                return
            yield key, value

    def get(self, key: bytes) -> bytes | None:
        """The value of ``key`` (the first one, if a key repeats), or None."""
        for found, value in self.entries(key):
            return value if found == key else None
        return None

    def get_many(self, keys: Iterable[bytes]) -> Iterator[tuple[bytes, bytes]]:
        """The (key, value) of each of ``keys`` that the file holds (the first value of a repeated
        key): each data block is read once for the keys it may hold."""
        for key in keys:
            at = bisect.bisect_right(self._first_rows, key) - 1
            if at < 0:
                continue
            if self._block[0] != at:
                cells: dict[bytes, bytes] = {}
                for k, v in self._guarded(self._cells(self._index[at])):
                    cells.setdefault(k, v)
                self._block = (at, cells)
            value = self._block[1].get(key)
            if value is not None:
                yield key, value

    def meta_block(self, name: str) -> bytes | None:
        """The content of the named meta block (Hudi's ``bloomFilter``), or None."""
        entry = self._meta_index.get(name.encode())
        if entry is None:
            return None
        try:
            return _read_block(self._data, entry.offset, self.trailer.codec, (META_BLOCK,))[0]
        except (ValueError, struct.error, zlib.error) as exc:
            raise _damaged(self.path, exc) from None


def write_hfile(
    entries: Iterable[tuple[bytes, bytes]],
    *,
    compression: int = GZ,
    block_size: int = DEFAULT_BLOCK_SIZE,
    file_info: dict[str, bytes] | None = None,
    meta_blocks: dict[str, bytes] | None = None,
) -> bytes:
    """The bytes of an HFile of ``entries`` (sorted here by key), with ``file_info`` beside the
    HBase keys every HFile has, and ``meta_blocks`` (name -> content)."""
    rows = sorted(entries, key=lambda kv: kv[0])
    out = bytearray()
    index: list[tuple[bytes, int, int]] = []
    previous = {DATA_BLOCK: -1, META_BLOCK: -1, ROOT_INDEX: -1, FILE_INFO: -1}
    uncompressed_total = 0

    def append(magic: bytes, payload: bytes) -> int:
        nonlocal uncompressed_total
        offset = len(out)
        out.extend(_block(magic, payload, compression, previous[magic]))
        previous[magic] = offset
        uncompressed_total += HEADER.size + len(payload)
        return offset

    block, first_key = bytearray(), b""
    key_bytes = value_bytes = 0
    for row, value in rows:
        key = cell_key(row)
        if not block:
            first_key = key
        block += _CELL.pack(len(key), len(value)) + key + value + b"\x00"
        key_bytes, value_bytes = key_bytes + len(key), value_bytes + len(value)
        if len(block) >= block_size:
            offset = append(DATA_BLOCK, bytes(block))
            index.append((first_key, offset, len(out) - offset))
            block = bytearray()
    if block:
        offset = append(DATA_BLOCK, bytes(block))
        index.append((first_key, offset, len(out) - offset))
    first_data_offset, last_data_offset = (0, index[-1][1]) if index else (-1, -1)

    meta_index = []
    for name, content in sorted((meta_blocks or {}).items()):
        offset = append(META_BLOCK, content)
        meta_index.append((name.encode(), offset, len(out) - offset))

    load_on_open = len(out)
    root = b"".join(struct.pack(">qi", o, s) + _vlong(len(k)) + k for k, o, s in index)
    append(ROOT_INDEX, root)
    append(ROOT_INDEX, b"".join(struct.pack(">qi", o, s) + _vlong(len(k)) + k for k, o, s in meta_index))
    count = len(rows)
    info = {
        AVG_KEY_LEN: struct.pack(">i", key_bytes // count if count else 0),
        AVG_VALUE_LEN: struct.pack(">i", value_bytes // count if count else 0),
        CREATE_TIME: struct.pack(">q", int(time.time() * 1000)),
        KEY_VALUE_VERSION: struct.pack(">i", 1),
        MAX_MEMSTORE_TS: struct.pack(">q", 0),
        **({LAST_KEY: cell_key(rows[-1][0])} if rows else {}),
        **(file_info or {}),
    }
    pairs = b"".join(_proto_bytes(1, _proto_bytes(1, k.encode()) + _proto_bytes(2, v)) for k, v in sorted(info.items()))
    file_info_offset = append(FILE_INFO, b"PBUF" + _varint(len(pairs)) + pairs)

    trailer = b"".join([
        _proto_varint(1, file_info_offset), _proto_varint(2, load_on_open),
        _proto_varint(3, HEADER.size + len(root)), _proto_varint(4, uncompressed_total),
        _proto_varint(5, len(index)), _proto_varint(6, len(meta_index)), _proto_varint(7, count),
        _proto_varint(8, 1), _proto_varint(9, first_data_offset), _proto_varint(10, last_data_offset),
        _proto_bytes(11, COMPARATOR.encode()), _proto_varint(12, compression),
    ])
    tail = TRAILER_MAGIC + _varint(len(trailer)) + trailer
    out.extend(tail + bytes(TRAILER_SIZE - 4 - len(tail)) + struct.pack(">i", VERSION))
    return bytes(out)
