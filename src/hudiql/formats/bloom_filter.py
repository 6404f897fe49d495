"""Hudi's bloom filter of record keys, as its writers put it in every base file's footer (and in
the metadata table's ``bloom_filters`` partition), so that a key lookup (the ``BLOOM`` index)
opens only the files that may hold a key.

The filter is Hadoop's, as Hudi keeps its bytes: each key's UTF-8 bytes hashed ``num_hashes`` times
by MurmurHash 2 (each hash seeded with the one before), each hash modulo the vector size setting one
bit. ``DYNAMIC_V0`` (Hudi's default) is a list of such vectors: ``num_entries`` keys fill one, then a
new one is added, until ``max_entries`` is reached; from then on keys go round the vectors.
Serialized (Java ``DataOutput``, big-endian): version -1, hash count, hash type, vector size; for
the dynamic filter then the keys per vector, the keys in the last one, the vector count and each
vector (its header again, then its bits, little-endian within each byte); Base64 in the footer.

Hashing is vectorized with numpy over keys of equal length: a file's keys are hashed in one pass
per hash function, not one Python call per key.

Example:
    >>> f = BloomFilter.new(num_entries=100, error_rate=0.001)
    >>> f.add(["id:1", "id:2", "kéy"])
    >>> f.contains(["id:2", "kéy", "id:3"]).tolist()
    [True, True, False]
    >>> back = BloomFilter.decode(f.encode(), DYNAMIC_V0)
    >>> back.contains(["id:1"]).tolist(), back.encode() == f.encode()
    ([True], True)
"""

from __future__ import annotations

import base64
import math
import struct
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

#: Footer keys of a base file, as Hudi names them.
FOOTER_BLOOM_FILTER = "org.apache.hudi.bloomfilter"
FOOTER_TYPE_CODE = "hoodie_bloom_filter_type_code"
FOOTER_MIN_KEY = "hoodie_min_record_key"
FOOTER_MAX_KEY = "hoodie_max_record_key"
#: Filter types (``hoodie.bloom.index.filter.type``).
SIMPLE, DYNAMIC_V0 = "SIMPLE", "DYNAMIC_V0"
#: Hudi's defaults: ``hoodie.index.bloom.num_entries``, ``hoodie.index.bloom.fpp``,
#: ``hoodie.bloom.index.filter.dynamic.max.entries``.
NUM_ENTRIES, ERROR_RATE, MAX_ENTRIES = 60000, 0.000000001, 100000

_VERSION = -1
_MURMUR = 1  # Hadoop's ``Hash.MURMUR_HASH``, the only hash type Hudi writes
_M = np.uint32(0x5BD1E995)


class _KeyWords:
    """Keys of one length (rows of bytes) as Hadoop's ``MurmurHash.hash(key, seed)`` reads them: whole little-endian 32-bit words, each mixed
    as the hash mixes it (which needs no seed, so it is done once for every hash of the chain),
    then the tail bytes, sign-extended as Java reads them."""

    def __init__(self, data: np.ndarray) -> None:
        self.length = data.shape[1]
        whole = self.length >> 2
        self.mixed = None
        if whole:
            k = np.ascontiguousarray(data[:, : whole * 4]).view("<u4") * _M
            k ^= k >> np.uint32(24)
            k *= _M
            self.mixed = np.ascontiguousarray(k.T)  # a row per word: each hash step reads one
        left = self.length & 3
        self.tail = None
        if left:
            signed = data[:, self.length - left:].view(np.int8).astype(np.int32)
            tail = np.zeros(len(data), dtype=np.uint32)
            for j, shift in zip(range(left), (16, 8, 0)[3 - left:]):
                tail ^= (signed[:, j] << shift).view(np.uint32)
            self.tail = tail

    def hashes(self, seeds: np.ndarray) -> np.ndarray:
        """Each key's hash with its seed (the hash before it in the chain), as signed 32-bit ints."""
        h = seeds.view(np.uint32) ^ np.uint32(self.length)
        if self.mixed is not None:
            for k in self.mixed:
                h *= _M
                h ^= k
        if self.tail is not None:
            h ^= self.tail
            h *= _M
        h ^= h >> np.uint32(13)
        h *= _M
        h ^= h >> np.uint32(15)
        return h.view(np.int32)


@dataclass
class _Vector:
    """One bit vector (Hadoop's ``BloomFilter``)."""

    size: int
    bits: np.ndarray = field(default=None)  # bool per bit

    def __post_init__(self) -> None:
        if self.bits is None:
            self.bits = np.zeros(self.size, dtype=bool)

    def encode(self, num_hashes: int) -> bytes:
        return _header(num_hashes, self.size) + np.packbits(self.bits, bitorder="little").tobytes()


def _header(num_hashes: int, size: int) -> bytes:
    return struct.pack(">iibi", _VERSION, num_hashes, _MURMUR, size)


@dataclass
class BloomFilter:
    """A bloom filter of record keys: ``SIMPLE`` (one vector) or ``DYNAMIC_V0`` (vectors of
    ``num_entries`` keys each, up to ``max_entries``)."""

    type_code: str
    size: int
    num_hashes: int
    num_entries: int
    max_entries: int
    vectors: list[_Vector]
    #: Keys added to the last vector (``DYNAMIC_V0``: it goes on counting once keys go round).
    in_last: int = 0

    @classmethod
    def new(cls, num_entries: int = NUM_ENTRIES, error_rate: float = ERROR_RATE, max_entries: int = MAX_ENTRIES,
            type_code: str = DYNAMIC_V0) -> BloomFilter:
        """An empty filter sized as Hudi sizes it for ``num_entries`` keys at ``error_rate``."""
        size = int(math.ceil(num_entries * (-math.log(error_rate) / (math.log(2) ** 2))))
        num_hashes = int(math.ceil(math.log(2) * size / num_entries))
        return cls(type_code, size, num_hashes, num_entries, max_entries, [_Vector(size)])

    def positions(self, keys: pa.Array | pa.ChunkedArray) -> np.ndarray:
        """The bit each hash of each (non-empty) key sets: (num_hashes, len(keys)) ints. Keys are
        hashed in groups of one length, straight from the array's buffers."""
        keys = pc.cast(keys, pa.large_binary())
        keys = keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys
        out = np.zeros((self.num_hashes, len(keys)), dtype=np.uint32)
        if not len(keys):
            return out
        offsets = np.frombuffer(keys.buffers()[1], dtype=np.int64)[keys.offset:keys.offset + len(keys) + 1]
        data = np.frombuffer(keys.buffers()[2] or b"", dtype=np.uint8)
        starts, lengths = offsets[:-1], np.diff(offsets)
        size = np.uint32(self.size)
        distinct = np.unique(lengths)
        for length in distinct:
            rows = np.nonzero(lengths == length)[0] if len(distinct) > 1 else slice(None)
            words = _KeyWords(data[starts[rows][:, None] + np.arange(length)])
            seeds = np.zeros(len(starts[rows]), dtype=np.int32)
            found = out if len(distinct) == 1 else np.empty((self.num_hashes, len(rows)), dtype=np.uint32)
            for j in range(self.num_hashes):
                seeds = words.hashes(seeds)
                # Java's Math.abs(hash % size): |hash| (2^31 included) fits an unsigned int
                unsigned = seeds.view(np.uint32)
                magnitude = np.negative(unsigned, where=seeds < 0, out=unsigned.copy())
                np.remainder(magnitude, size, out=found[j])
            if found is not out:
                out[:, rows] = found
        return out

    def add(self, keys: Iterable[str] | pa.Array | pa.ChunkedArray) -> None:
        """Add record keys, in the order the file holds them (the dynamic filter's vectors fill in order)."""
        keys = _keys(keys)
        if not len(keys):
            return
        targets = self._targets(len(keys))
        bits = self.positions(keys)
        if len(self.vectors) == 1:
            self.vectors[0].bits[bits] = True
            return
        for index, vector in enumerate(self.vectors):
            vector.bits[bits[:, targets == index]] = True

    def _targets(self, count: int) -> np.ndarray:
        """The vector each of ``count`` new keys goes to, adding vectors as Hudi's filter does:
        the last one fills to ``num_entries``, then a new one is added while fewer than
        ``max_entries`` keys fit; then keys go round the vectors, from the first (twice)."""
        if self.type_code == SIMPLE:
            return np.zeros(count, dtype=np.int64)
        out, remaining = [], count
        while remaining:
            if self.in_last >= self.num_entries and len(self.vectors) * self.num_entries < self.max_entries:
                self.vectors.append(_Vector(self.size))
                self.in_last = 0
            if self.in_last < self.num_entries:
                take = min(remaining, self.num_entries - self.in_last)
                out.append(np.full(take, len(self.vectors) - 1, dtype=np.int64))
            else:
                take = remaining
                over = self.in_last - self.num_entries + np.arange(take, dtype=np.int64)
                out.append(np.where(over == 0, 0, (over - 1) % len(self.vectors)))
            self.in_last += take
            remaining -= take
        return np.concatenate(out)

    def contains(self, keys: Iterable[str] | pa.Array | pa.ChunkedArray) -> np.ndarray:
        """Per key, whether it may have been added (never False for one that was; True for a null
        or empty key, which no filter holds)."""
        keys = keys if isinstance(keys, (pa.Array, pa.ChunkedArray)) else pa.array(list(keys), pa.string())
        keys = keys.fill_null("")
        bits = self.positions(keys)
        found = pc.equal(pc.binary_length(keys), 0).to_numpy(zero_copy_only=False).copy()
        for vector in self.vectors:
            found |= vector.bits[bits].all(axis=0)
        return found

    def encode(self) -> str:
        """The footer's text: the serialized filter, Base64."""
        if self.type_code == SIMPLE:
            raw = self.vectors[0].encode(self.num_hashes)
        else:
            raw = _header(self.num_hashes, self.size) + struct.pack(">iii", self.num_entries, self.in_last, len(self.vectors))
            raw += b"".join(v.encode(self.num_hashes) for v in self.vectors)
        return base64.b64encode(raw).decode()

    @classmethod
    def decode(cls, text: str | bytes, type_code: str) -> BloomFilter:
        """A filter from a footer's (or a ``bloom_filters`` record's) text."""
        raw = base64.b64decode(text)
        version, num_hashes, hash_type, size = struct.unpack_from(">iibi", raw)
        if version != _VERSION or hash_type != _MURMUR:
            raise ValueError(f"a bloom filter of version {version}, hash type {hash_type}: hudiql reads version -1, murmur")
        offset, count, in_last, num_entries = 13, 1, 0, NUM_ENTRIES
        if type_code != SIMPLE:
            num_entries, in_last, count = struct.unpack_from(">iii", raw, offset)
            offset += 12
        vectors = []
        nbytes = (size + 7) // 8
        for _ in range(count):
            if type_code != SIMPLE:
                offset += 13  # each vector repeats the header
            packed = np.frombuffer(raw, dtype=np.uint8, count=nbytes, offset=offset)
            vectors.append(_Vector(size, np.unpackbits(packed, bitorder="little")[:size].astype(bool)))
            offset += nbytes
        # max_entries is not serialized: a read filter only answers lookups
        return cls(type_code, size, num_hashes, num_entries, MAX_ENTRIES, vectors, in_last)


def _keys(keys: Iterable[str] | pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    keys = keys if isinstance(keys, (pa.Array, pa.ChunkedArray)) else pa.array(list(keys), pa.string())
    keys = keys.drop_null()
    return keys.filter(pc.greater(pc.binary_length(keys), 0))  # Hadoop refuses empty keys; Hudi writes none


@dataclass(frozen=True)
class FilterSpec:
    """The bloom filter a base file's footer holds: its type and sizing (picklable, for write tasks).

    ``fitted``: a file's filter is sized for the keys it holds (at most ``num_entries``), not
    always for ``num_entries``: a file never gains keys, so its false positive rate is the same, and
    a file of a few keys gets a footer of bytes rather than Hudi's 430 KB. Hudi's readers take the
    size from the filter itself; a file of ``num_entries`` keys or more gets Hudi's bytes exactly."""

    type_code: str = DYNAMIC_V0
    num_entries: int = NUM_ENTRIES
    error_rate: float = ERROR_RATE
    max_entries: int = MAX_ENTRIES
    fitted: bool = True

    def new(self, keys: int | None = None) -> BloomFilter:
        """An empty filter for a file of ``keys`` keys."""
        entries = self.num_entries if keys is None or not self.fitted else max(1, min(keys, self.num_entries))
        return BloomFilter.new(entries, self.error_rate, self.max_entries, self.type_code)


class KeyFooter:
    """The footer entries of one base file being written, from its record keys batch by batch in
    file order: a bloom filter (unless ``spec`` is None) and the smallest and largest key."""

    def __init__(self, spec: FilterSpec | None) -> None:
        self.spec = spec
        self.keys: list[pa.Array | pa.ChunkedArray] = []
        self.low: str | None = None
        self.high: str | None = None

    def add(self, keys: pa.Array | pa.ChunkedArray) -> KeyFooter:
        if self.spec is not None:
            self.keys.append(keys)
        bounds = pc.min_max(keys)
        if bounds["min"].is_valid:
            low, high = bounds["min"].as_py(), bounds["max"].as_py()
            self.low = low if self.low is None else min(self.low, low)
            self.high = high if self.high is None else max(self.high, high)
        return self

    def entries(self) -> dict[bytes, bytes]:
        out = {}
        if self.spec is not None:
            keys = pa.chunked_array([c for k in self.keys for c in _chunks(k)], pa.string()).drop_null()
            bloom = self.spec.new(len(keys))
            bloom.add(keys)
            out[FOOTER_BLOOM_FILTER.encode()] = bloom.encode().encode()
            out[FOOTER_TYPE_CODE.encode()] = self.spec.type_code.encode()
        if self.low is not None:
            out[FOOTER_MIN_KEY.encode()], out[FOOTER_MAX_KEY.encode()] = self.low.encode(), self.high.encode()
        return out


def _chunks(keys: pa.Array | pa.ChunkedArray) -> list[pa.Array]:
    keys = keys.cast(pa.string())
    return keys.chunks if isinstance(keys, pa.ChunkedArray) else [keys]


def write_with_footer(sink: pa.NativeFile, rows: pa.Table, keys: pa.Array | pa.ChunkedArray,
                      spec: FilterSpec | None, compression: str) -> dict[bytes, bytes]:
    """Write ``rows`` as a parquet file to ``sink``, its footer holding the entries of their record
    ``keys`` (returned). (Added to the footer, not to the Arrow schema's metadata, which Arrow would
    store a second time, Base64, in the footer's ``ARROW:schema``.)"""
    entries = KeyFooter(spec).add(keys).entries()
    with pq.ParquetWriter(sink, rows.schema, compression=compression) as writer:
        writer.write_table(rows)
        writer.add_key_value_metadata(entries)
    return entries


def footer_filter(footer: dict[bytes, bytes]) -> dict[str, str]:
    """The bloom filter a footer holds, as a write stat carries it (``bloom_filter_type``,
    ``bloom_filter``); empty when it holds none."""
    text = footer.get(FOOTER_BLOOM_FILTER.encode())
    if text is None:
        return {}
    return {"bloom_filter_type": footer.get(FOOTER_TYPE_CODE.encode(), SIMPLE.encode()).decode(),
            "bloom_filter": text.decode()}
