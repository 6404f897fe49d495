"""HFile (``formats.hfile``): HBase-written files read (provenance: data/hfile/PROVENANCE.md), and
files hudiql writes read back, through every index shape and codec."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hudiql.errors import FormatError
from hudiql.formats.hfile import GZ, NONE, HFile, RangedFile, write_hfile

HFILES = Path(__file__).resolve().parents[1] / "data" / "hfile"
LONG_PREFIX = "hudi-key-" + "a" * 100 + "-"


def hbase(name: str) -> HFile:
    path = HFILES / f"hudi_1_0_hbase_{name}.hfile"
    return HFile(path.read_bytes(), path.name)


def key(i: int, prefix: str = "hudi-key-", suffix: str = "") -> bytes:
    return f"{prefix}{i:09d}{suffix}".encode()


def value(i: int) -> bytes:
    return f"hudi-value-{i:09d}".encode()


@pytest.mark.parametrize("name, count, prefix, suffix", [
    ("2_4_9_16KB_NONE_5000", 5000, "hudi-key-", ""),
    ("2_4_9_16KB_GZ_20000", 20000, "hudi-key-", ""),
    ("2_4_13_16KB_GZ_20000_fake_first_key", 20000, "hudi-key-", "-abcdefghij"),
    ("2_4_13_1KB_GZ_10000_large_keys_deep_index", 10000, LONG_PREFIX, ""),
])
def test_hbase_written_files_read_in_order_and_by_key(name, count, prefix, suffix):
    hfile = hbase(name)
    assert len(hfile) == count
    assert list(hfile.entries()) == [(key(i, prefix, suffix), value(i)) for i in range(count)]
    for i in (0, 1, count // 3, count - 2, count - 1):
        assert hfile.get(key(i, prefix, suffix)) == value(i)
    assert hfile.get(key(count, prefix, suffix)) is None          # after the last key
    assert hfile.get(b"a") is None                                # before the first
    assert hfile.get(key(17, prefix, suffix)[:-1]) is None        # between two keys
    assert [k for k, _ in hfile.with_prefix(f"{prefix}00000012".encode())] == [
        key(i, prefix, suffix) for i in range(120, 130)]


def test_hbase_written_file_with_repeated_keys():
    hfile = hbase("2_4_9_16KB_GZ_200_20_non_unique")
    assert len(hfile) == 4200
    assert hfile.get(key(5)) == value(5)                           # the first of the key's cells
    assert [v for _, v in hfile.with_prefix(key(5))] == [value(5)] + [f"{value(5).decode()}_{j}".encode()
                                                                       for j in range(20)]


def test_hbase_written_file_without_entries_keeps_its_file_info_and_bloom_filter():
    hfile = hbase("2_4_9_no_entry")
    assert len(hfile) == 0 and list(hfile.entries()) == [] and hfile.get(b"x") is None
    assert hfile.file_info["bloomFilterTypeCode"] == b"DYNAMIC_V0"
    assert hfile.file_info["schema"].startswith(b'{"type":"record"')
    assert hfile.meta_block("bloomFilter")[:8] == b"/////wAA"
    assert hfile.meta_block("none") is None


@pytest.mark.parametrize("compression", [GZ, NONE])
def test_written_files_read_back_across_blocks(compression):
    entries = [(key(i), value(i) * (i % 7)) for i in range(3000)]
    data = write_hfile(reversed(entries), compression=compression, block_size=4096,
                       file_info={"schema": b"{}"}, meta_blocks={"bloomFilter": b"bits"})
    hfile = HFile(data, "w.hfile")
    assert hfile.trailer.data_index_count > 10 and hfile.trailer.codec == compression
    assert list(hfile.entries()) == entries
    assert all(hfile.get(k) == v for k, v in entries[::97])
    assert hfile.get(key(3000)) is None
    assert hfile.file_info["schema"] == b"{}" and hfile.file_info["hfile.LASTKEY"][2:20] == key(2999)
    assert hfile.meta_block("bloomFilter") == b"bits"


def test_an_empty_written_file_reads_as_empty():
    hfile = HFile(write_hfile([]), "empty.hfile")
    assert len(hfile) == 0 and list(hfile.entries()) == [] and hfile.get(b"") is None


@settings(max_examples=40, deadline=None)
@given(st.dictionaries(st.binary(min_size=1, max_size=40), st.binary(max_size=300), max_size=200),
       st.sampled_from([GZ, NONE]), st.integers(min_value=64, max_value=2048),
       st.lists(st.binary(max_size=41), max_size=10))
def test_lookups_agree_with_a_dictionary(table, compression, block_size, probes):
    hfile = HFile(write_hfile(table.items(), compression=compression, block_size=block_size), "p.hfile")
    assert list(hfile.entries()) == sorted(table.items())
    for probe in list(table)[:10] + probes:
        assert hfile.get(probe) == table.get(probe)
        assert [k for k, _ in hfile.with_prefix(probe)] == sorted(k for k in table if k.startswith(probe))


def test_a_damaged_file_is_one_format_error_naming_it():
    data = write_hfile([(key(i), value(i)) for i in range(100)], compression=NONE)
    with pytest.raises(FormatError, match="^cut.hfile .*no trailer"):
        HFile(data[:-100], "cut.hfile")
    flipped = bytearray(data)
    flipped[60] ^= 0xFF                                            # inside the first data block
    hfile = HFile(bytes(flipped), "flipped.hfile")                 # the index is intact ...
    with pytest.raises(FormatError, match="^flipped.hfile .*fails its checksum"):
        list(hfile.entries())                                      # ... the block is not


def test_a_ranged_file_reads_the_tail_once_and_one_block_per_lookup():
    """A lookup in an HFile read by ranges: one read of the tail (trailer, index, file info), then
    the one data block that may hold the key."""
    data = write_hfile([(f"k{i:06d}".encode(), b"v" * 50) for i in range(50_000)], block_size=64 * 1024)

    class Counted:
        reads: list[tuple[int, int]] = []

        def read_at(self, length: int, offset: int) -> bytes:
            self.reads.append((offset, length))
            return data[offset:offset + length]

    file = Counted()
    ranged = HFile(RangedFile(file, len(data)), "ranged.hfile")
    assert len(file.reads) == 1
    assert dict(ranged.get_many([b"k012345", b"k012346", b"nope"])) == {b"k012345": b"v" * 50, b"k012346": b"v" * 50}
    assert len(file.reads) == 2 and file.reads[1][1] < 64 * 1024
