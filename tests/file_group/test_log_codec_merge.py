"""Log content without Spark: the columnar Avro codec against fastavro, and the fold of a file
slice's log blocks onto its base file (``SliceReader``) against a plain item-by-item model.

Everything here writes real bytes: Avro data block content, delete blocks, rollback command
blocks, log files and a parquet base file with the meta columns, in a temporary directory.
"""

from __future__ import annotations

import json
import re
import struct
import subprocess
import sys
import tempfile
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from pyspark.sql import types as T

from hudiql.errors import FormatError
from hudiql.formats import avro as avro_codec
from hudiql.formats import log_file as L
from hudiql.file_group.reader import SliceReader
from hudiql.config.table_config import COMMIT_TIME_ORDERING, EVENT_TIME_ORDERING
from hudiql.record.merge import MergeRule
from hudiql.record.schema import RECORD_KEY, to_arrow, to_avro, with_meta_columns
from hudiql.timeline.active import CommittedInstants

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
# Ranges Python's datetime can hold (0001-01-01 .. 9999-12-31), so rows can go through fastavro.
DAYS = (-719162, 2932896)
MICROS = (-62135596800 * 10**6, 253402300799 * 10**6 + 999999)
MILLIS = (-62135596800 * 10**3, 253402300799 * 10**3 + 999)


def _logical(base: str, logical: str) -> dict:
    return {"type": base, "logicalType": logical}


def _nullable(kind, null_first: bool = True):
    return ["null", kind] if null_first else [kind, "null"]


# name, Avro type, Arrow type, Arrow storage type the values are given in, value strategy
_TEXT = st.one_of(st.just(""), st.text(max_size=6), st.sampled_from(["ü", "日本語", "😀", "a\x00b", "𝄞x"]))
_FLAT = [
    ("k", "string", pa.string(), pa.string(), _TEXT),
    ("nl", _nullable("long"), pa.int64(), pa.int64(), st.integers(INT64_MIN, INT64_MAX)),
    ("ln", _nullable("long", False), pa.int64(), pa.int64(),
     st.one_of(st.sampled_from([INT64_MIN, INT64_MAX, -1, 0, 63, -64, 64]), st.integers(INT64_MIN, INT64_MAX))),
    ("b", "boolean", pa.bool_(), pa.bool_(), st.booleans()),
    ("bn", _nullable("boolean"), pa.bool_(), pa.bool_(), st.booleans()),
    ("i", "int", pa.int32(), pa.int32(), st.integers(INT32_MIN, INT32_MAX)),
    ("in_", _nullable("int", False), pa.int32(), pa.int32(), st.integers(INT32_MIN, INT32_MAX)),
    ("l", "long", pa.int64(), pa.int64(), st.integers(INT64_MIN, INT64_MAX)),
    ("f", _nullable("float"), pa.float32(), pa.float32(), st.floats(width=32, allow_nan=False)),
    ("d", "double", pa.float64(), pa.float64(), st.floats(allow_nan=False)),
    ("dn", _nullable("double", False), pa.float64(), pa.float64(), st.floats(allow_nan=False)),
    ("s", _nullable("string"), pa.string(), pa.string(), _TEXT),
    ("s2", _nullable("string", False), pa.string(), pa.string(), _TEXT),
    ("by", "bytes", pa.binary(), pa.binary(), st.binary(max_size=6)),
    ("byn", _nullable("bytes"), pa.binary(), pa.binary(), st.binary(max_size=6)),
    ("dt", _nullable(_logical("int", "date")), pa.date32(), pa.int32(), st.integers(*DAYS)),
    ("tsu", _nullable(_logical("long", "timestamp-micros")), pa.timestamp("us", tz="UTC"), pa.int64(),
     st.integers(*MICROS)),
    ("tsm", _nullable(_logical("long", "timestamp-millis"), False), pa.timestamp("ms", tz="UTC"), pa.int64(),
     st.integers(*MILLIS)),
    ("ltu", _logical("long", "local-timestamp-micros"), pa.timestamp("us"), pa.int64(), st.integers(*MICROS)),
]
FLAT_SCHEMA = {"type": "record", "name": "flat", "namespace": "hoodie.t",
               "fields": [{"name": n, "type": t} for n, t, _, _, _ in _FLAT]}
FLAT_ARROW = pa.schema([(n, a) for n, _, a, _, _ in _FLAT])


def _is_nullable(avro_type) -> bool:
    return isinstance(avro_type, list)


def flat_table(columns: dict[str, list]) -> pa.Table:
    """The Arrow table of raw column values (dates in days, timestamps in their unit)."""
    arrays = [pa.array(columns[n], storage).cast(arrow) for n, _, arrow, storage, _ in _FLAT]
    return pa.Table.from_arrays(arrays, schema=FLAT_ARROW)


def _row_strategy():
    fields = {}
    for name, avro, _, _, values in _FLAT:
        fields[name] = st.one_of(st.none(), values) if _is_nullable(avro) else values
    return st.fixed_dictionaries(fields)


def _block(content: bytes, schema: dict) -> L.LogBlock:
    return L.LogBlock(L.AVRO_DATA, {L.INSTANT_TIME: "20240101000000000", L.SCHEMA: json.dumps(schema)}, content)


def assert_codec_matches_fastavro(table: pa.Table, schema: dict, arrow_schema: pa.Schema) -> None:
    rows = table.to_pylist()
    columnar = L.avro_table_content(table, schema)
    assert columnar == L.avro_records_content(rows, schema)
    block = _block(columnar, schema)
    decoded = L.read_avro_table(block, "mem://block", arrow_schema)
    assert decoded.cast(arrow_schema).equals(table)
    assert L.read_avro_records(block, "mem://block") == rows  # fastavro reads the columnar bytes back
    # asked for some columns, the decoder steps over the others (every type, null or not)
    names = arrow_schema.names
    for wanted in (names[::2], names[1::2], names[-1:]):
        projected = L.read_avro_blocks([(block, "mem://block")], arrow_schema, set(wanted))
        assert projected.column_names == wanted
        assert projected.cast(arrow_schema.empty_table().select(wanted).schema).equals(table.select(wanted))


# ---- a) the columnar codec is byte-identical to fastavro --------------------------------------------

def test_columnar_codec_hand_written_rows():
    assert avro_codec.supports(FLAT_SCHEMA)
    values = {
        "k": ["", "ascii", "ü日本😀", "a\x00b", "𝄞" * 40],
        "nl": [None, INT64_MIN, INT64_MAX, -1, 0],
        "ln": [INT64_MAX, None, INT64_MIN, -64, 64],
        "b": [True, False, True, False, True],
        "bn": [None, True, False, None, True],
        "i": [INT32_MIN, INT32_MAX, -1, 0, 1],
        "in_": [None, INT32_MIN, INT32_MAX, None, -300],
        "l": [INT64_MIN, INT64_MAX, -(2**62), 2**35, -1],
        "f": [None, -0.0, 1.5, float("inf"), -3.25],
        "d": [float("-inf"), 1e308, -2.5e-308, 0.1, -0.0],
        "dn": [None, 2.0, None, -1.0, 1.0],
        "s": [None, "", "😀😀", "\u00e9", None],
        "s2": ["", None, "é" * 70, "😀", "x"],
        "by": [b"", b"\x00\xff", b"abc", b"\x80" * 200, b"z"],
        "byn": [None, b"", b"\xff", None, b"q"],
        "dt": [None, DAYS[0], DAYS[1], -1, 0],
        "tsu": [MICROS[0], None, MICROS[1], -1, 0],
        "tsm": [None, MILLIS[0], MILLIS[1], -1, 1],
        "ltu": [MICROS[0], MICROS[1], -1, 0, 1_700_000_000_123_456],
    }
    assert_codec_matches_fastavro(flat_table(values), FLAT_SCHEMA, FLAT_ARROW)
    # no rows at all
    assert_codec_matches_fastavro(flat_table({n: [] for n in values}), FLAT_SCHEMA, FLAT_ARROW)
    # a column the table lacks is written as nulls (only for nullable fields)
    partial = flat_table(values).drop_columns(["s", "nl"])
    expected = L.avro_records_content([{**r, "s": None, "nl": None} for r in partial.to_pylist()], FLAT_SCHEMA)
    assert L.avro_table_content(partial, FLAT_SCHEMA) == expected


@settings(max_examples=150, deadline=None)
@given(rows=st.lists(_row_strategy(), max_size=12), chunks=st.integers(1, 3))
def test_columnar_codec_random_rows(rows, chunks):
    table = flat_table({n: [r[n] for r in rows] for n, *_ in _FLAT})
    if rows and chunks > 1:  # several chunks and a sliced (offset) piece
        cut = len(rows) // chunks
        table = pa.concat_tables([table.slice(0, cut), table.slice(cut)])
    assert_codec_matches_fastavro(table, FLAT_SCHEMA, FLAT_ARROW)


def test_columnar_encode_refuses_nulls_in_a_non_null_field():
    schema = {"type": "record", "name": "r", "fields": [{"name": "l", "type": "long"}]}
    with pytest.raises(FormatError, match="'l'"):
        avro_codec.encode(pa.table({"l": pa.array([1, None], pa.int64())}), schema)


# ---- b) unsupported schemas fall back to fastavro ----------------------------------------------------

_DECIMAL = {"type": "fixed", "name": "dec", "size": 8, "logicalType": "decimal", "precision": 10, "scale": 2}
UNSUPPORTED = {
    "decimal": (["null", _DECIMAL], pa.decimal128(10, 2), [Decimal("12.34"), None, Decimal("-0.01")]),
    "record": (["null", {"type": "record", "name": "inner", "fields": [{"name": "x", "type": ["null", "int"]},
                                                                         {"name": "y", "type": "string"}]}],
               pa.struct([("x", pa.int32()), ("y", pa.string())]), [{"x": 1, "y": "é"}, None, {"x": None, "y": ""}]),
    "array": ({"type": "array", "items": ["null", "long"]}, pa.list_(pa.int64()), [[1, None, INT64_MIN], [], [7]]),
    "map": (["null", {"type": "map", "values": ["null", "string"]}], pa.map_(pa.string(), pa.string()),
            [[("a", "x"), ("b", None)], None, []]),
    "union3": (["null", "long", "string"], pa.int64(), [5, None, -9]),
}


@pytest.mark.parametrize("kind", sorted(UNSUPPORTED))
def test_unsupported_schemas_fall_back_to_fastavro(kind):
    avro_type, arrow_type, values = UNSUPPORTED[kind]
    schema = {"type": "record", "name": "r", "namespace": "hoodie.t",
              "fields": [{"name": "id", "type": "long"}, {"name": "v", "type": avro_type}]}
    arrow_schema = pa.schema([("id", pa.int64()), ("v", arrow_type)])
    table = pa.table({"id": pa.array(range(len(values)), pa.int64()), "v": pa.array(values, arrow_type)})
    assert not avro_codec.supports(schema)
    assert avro_codec.encode(table, schema) is None
    content = L.avro_table_content(table, schema)  # through fastavro
    assert content == L.avro_records_content(L.avro_values(table), schema)
    starts, ends = avro_codec.record_bounds(content, 8, len(values), "p")
    assert avro_codec.decode(content, starts, ends, schema, "p") is None
    decoded = L.read_avro_table(_block(content, schema), "p", arrow_schema)
    assert decoded.cast(arrow_schema).to_pylist() == table.to_pylist()


# ---- c) corrupt content is a FormatError naming the file ----------------------------------------------

SMALL = {"type": "record", "name": "r", "fields": [
    {"name": "id", "type": "long"}, {"name": "name", "type": ["null", "string"]}, {"name": "ts", "type": ["null", "long"]}]}
SMALL_ARROW = pa.schema([("id", pa.int64()), ("name", pa.string()), ("ts", pa.int64())])
SMALL_ROWS = [{"id": 1, "name": "a", "ts": 5}, {"id": 2, "name": None, "ts": None}, {"id": 3, "name": "ccc", "ts": 7}]
PATH = "dt=1/.f1_001.log.1_0-1-0"


def _read(content: bytes, schema: dict = SMALL) -> pa.Table:
    return L.read_avro_table(_block(content, schema), PATH, SMALL_ARROW)


@pytest.mark.parametrize("cut", [1, 3, 6, 20])
def test_truncated_block_content(cut):
    content = L.avro_records_content(SMALL_ROWS, SMALL)
    assert _read(content).to_pylist() == SMALL_ROWS
    with pytest.raises(FormatError, match=PATH.replace(".", r"\.")):
        _read(content[:-cut])


@pytest.mark.parametrize("case", ["short", "long", "bad-branch", "long-string", "last-short", "negative-length"])
def test_records_that_do_not_match_the_schema(case):
    if case == "short":  # the header says (id, name, ts) but every record is only (id, ts)
        other = {"type": "record", "name": "r", "fields": [{"name": "id", "type": "long"}, {"name": "ts", "type": ["null", "long"]}]}
        content = L.avro_records_content([{"id": i, "ts": 300 + i} for i in range(3)], other)
    elif case == "long":  # records carry one more field than the header's schema
        wider = {"type": "record", "name": "r", "fields": SMALL["fields"] + [{"name": "x", "type": "long"}]}
        content = L.avro_records_content([{**r, "x": 99} for r in SMALL_ROWS], wider)
    elif case == "bad-branch":  # a union branch index 3 where the union has two branches
        raw = bytearray(L.avro_records_content(SMALL_ROWS, SMALL))
        raw[8 + 4 + 1] = 6  # first record: id=1 is one byte, then the name's branch (zig-zag 3)
        content = bytes(raw)
    elif case == "long-string":  # a string length past the record (and the block)
        content = _one_record(bytes([2, 2]) + _varint(1000) + b"abc" + bytes([0]))
    elif case == "negative-length":  # the second record's length prefix is negative
        raw = bytearray(L.avro_records_content(SMALL_ROWS, SMALL))
        second = 8 + 4 + int.from_bytes(raw[8:12], "big")
        raw[second:second + 4] = (-3).to_bytes(4, "big", signed=True)
        content = bytes(raw)
    else:  # the last record (8 bytes) says 6 and stops in the middle of its last field
        full = L.avro_records_content(SMALL_ROWS, SMALL)
        assert full[-12:-8] == (8).to_bytes(4, "big")
        content = full[:-12] + (6).to_bytes(4, "big") + full[-8:-2]
    with pytest.raises(FormatError, match=PATH.replace(".", r"\.")):
        _read(content)


def _varint(value: int) -> bytes:
    zz = (value << 1) ^ (value >> 63)
    out = bytearray()
    while True:
        out.append((zz & 0x7F) | (0x80 if zz > 0x7F else 0))
        zz >>= 7
        if not zz:
            return bytes(out)


def _one_record(record: bytes) -> bytes:
    return struct.pack(">ii", L.BLOCK_CONTENT_VERSION, 1) + len(record).to_bytes(4, "big") + record


_HUGE_LENGTH = """
import json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (3 << 30, resource.getrlimit(resource.RLIMIT_AS)[1]))
import pyarrow as pa
from hudiql.errors import FormatError
from hudiql.formats import log_file as L
schema, record = json.loads(sys.argv[1]), bytes.fromhex(sys.argv[2])
content = (3).to_bytes(4, "big") + (1).to_bytes(4, "big") + len(record).to_bytes(4, "big") + record
block = L.LogBlock(L.AVRO_DATA, {L.SCHEMA: json.dumps(schema)}, content)
try:
    L.read_avro_table(block, "dt=1/.f1_001.log.1_0-1-0", pa.schema([("id", pa.int64()), ("name", pa.string()), ("ts", pa.int64())]))
except FormatError as e:
    print("FormatError:", e)
"""


@pytest.mark.parametrize("length", [2**31 - 1, 2**40])
def test_a_huge_string_length_is_a_format_error_not_an_allocation(length):
    """A corrupt length prefix must be checked against the record before anything is allocated.
    Run in a child process under a 3 GiB address-space limit, so a regression fails with a
    MemoryError instead of exhausting the machine's memory."""
    record = bytes([2, 2]) + _varint(length) + b"abc" + bytes([0])
    done = subprocess.run([sys.executable, "-c", _HUGE_LENGTH, json.dumps(SMALL), record.hex()],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("FormatError:") and PATH in done.stdout


def test_truncated_content_with_a_fallback_schema_is_a_format_error():
    """The fastavro path (a schema the columnar codec does not cover) reports truncation the same way."""
    content = L.avro_records_content([{**r, "a": [1, 2]} for r in SMALL_ROWS], FALLBACK)
    with pytest.raises(FormatError, match=PATH.replace(".", r"\.")):
        L.read_avro_table(_block(content[:-3], FALLBACK), PATH, FALLBACK_ARROW)



def test_mismatched_bytes_with_a_fallback_schema_are_a_format_error():
    # bytes of another schema: the header's schema expects an array that is not there
    other = L.avro_records_content(SMALL_ROWS, SMALL)
    with pytest.raises(FormatError, match=PATH.replace(".", r"\.")):
        L.read_avro_table(_block(other, FALLBACK), PATH, FALLBACK_ARROW)


FALLBACK = {"type": "record", "name": "r", "fields": SMALL["fields"] + [{"name": "a", "type": {"type": "array", "items": "long"}}]}
FALLBACK_ARROW = SMALL_ARROW.append(pa.field("a", pa.list_(pa.int64())))


# ---- SliceReader: the fold of a slice's log blocks against an item-by-item model ---------------------

KEYS = ["k1", "k2", "k3", "k4"]
PARTITION = "p"
FILE_ID = "f0000000-aaaa-bbbb-cccc-000000000000-0"
BASE_INSTANT = "00000000000000001"
DATA = T.StructType([T.StructField("id", T.StringType()), T.StructField("name", T.StringType()),
                     T.StructField("ts", T.LongType())])
TABLE_SCHEMA = with_meta_columns(DATA)
AVRO = to_avro(TABLE_SCHEMA, "t")
ARROW = to_arrow(TABLE_SCHEMA)
WRAPPER = L.wrapper_for(next(f["type"] for f in AVRO["fields"] if f["name"] == "ts"))
RULES = {"event": MergeRule(EVENT_TIME_ORDERING, "ts"), "commit": MergeRule(COMMIT_TIME_ORDERING, None)}

_data_block = st.fixed_dictionaries({
    "kind": st.just("data"),
    "rows": st.lists(st.tuples(st.sampled_from(KEYS), st.sampled_from([None, 0, 1, 2, 3])), min_size=1, max_size=3),
    "encoding": st.sampled_from(["columnar", "records", "parquet"]),
})
_delete_block = st.fixed_dictionaries({
    "kind": st.just("delete"),
    "rows": st.lists(st.tuples(st.sampled_from(KEYS), st.sampled_from([None, 0, 1, 2, 3])), min_size=1, max_size=3),
})
_block_spec = st.one_of(_data_block, _delete_block).flatmap(lambda b: st.fixed_dictionaries({
    **{k: st.just(v) for k, v in b.items()},
    "status": st.sampled_from(["ok", "ok", "ok", "pending", "rolled"]),
    "same_instant": st.booleans(),  # shares the previous block's instant (a commit with a data and a delete block)
    "rollback_at_end": st.booleans(),  # the rollback command block comes right after, or at the end of the last file
    "new_file": st.booleans(),
}))


def _meta(keys: list[str], instant: str) -> dict[str, pa.Array]:
    n = len(keys)
    return {"_hoodie_commit_time": [instant] * n, "_hoodie_commit_seqno": [f"{instant}_0_{i}" for i in range(n)],
            "_hoodie_record_key": keys, "_hoodie_partition_path": [PARTITION] * n, "_hoodie_file_name": [FILE_ID] * n}


def _rows_table(rows: list[tuple], names: list[str], instant: str) -> pa.Table:
    keys = [k for k, _ in rows]
    columns = {**_meta(keys, instant), "id": keys, "name": names, "ts": [ts for _, ts in rows]}
    return pa.table(columns, schema=ARROW)


def write_slice(
    root: Path, base: list[tuple], specs: list[dict], archived: int = 0
) -> tuple[str | None, list[str], CommittedInstants, list[tuple]]:
    """Real files for a slice: the base file, then the log files holding ``specs`` in order.

    Returns (base file name, log file names, the committed instants, the valid log items in log
    order: ("data", key, ts, name) or ("delete", key, ordering)). The first ``archived`` completed
    instants are left off the timeline, as Hudi's archiver moves them: never the last one, and
    never one after a pending instant."""
    part = root / PARTITION
    part.mkdir(parents=True)
    base_file = None
    if base:
        base_file = f"{FILE_ID}_0-1-0_{BASE_INSTANT}.parquet"
        pq.write_table(_rows_table(base, [f"base-{k}" for k, _ in base], BASE_INSTANT), part / base_file)
    completed = {BASE_INSTANT}
    pending: set[str] = set()
    files: list[list[L.LogBlock]] = [[]]
    tail: list[L.LogBlock] = []
    valid: list[tuple] = []
    counter, status = 100, None
    for i, spec in enumerate(specs):
        if not (spec["same_instant"] and i):
            counter += 1
            status = spec["status"]
            if status != "pending":
                completed.add(f"{counter:017d}")
            else:
                pending.add(f"{counter:017d}")
        instant = f"{counter:017d}"
        if spec["new_file"] and files[-1]:
            files.append([])
        if spec["kind"] == "data":
            names = [f"b{i}r{j}" for j in range(len(spec["rows"]))]
            table = _rows_table(spec["rows"], names, instant)
            header = {L.INSTANT_TIME: instant, L.SCHEMA: json.dumps(AVRO)}
            if spec["encoding"] == "parquet":
                buf = pa.BufferOutputStream()
                pq.write_table(table, buf)
                block = L.LogBlock(L.PARQUET_DATA, header, buf.getvalue().to_pybytes())
            elif spec["encoding"] == "columnar":
                block = L.LogBlock(L.AVRO_DATA, header, L.avro_table_content(table, AVRO))
            else:
                block = L.LogBlock(L.AVRO_DATA, header, L.avro_records_content(table.to_pylist(), AVRO))
            items = [("data", k, ts, name) for (k, ts), name in zip(spec["rows"], names)]
        else:
            deletes = [L.DeleteRecord(k, PARTITION, ts) for k, ts in spec["rows"]]
            block = L.LogBlock(L.DELETE, {L.INSTANT_TIME: instant}, L.delete_content(deletes, WRAPPER))
            items = [("delete", k, ts) for k, ts in spec["rows"]]
        files[-1].append(block)
        if status == "ok":
            valid.extend(items)
        if status == "rolled":
            rollback_instant = f"{counter:011d}999999"  # after the target, before the next instant
            completed.add(rollback_instant)
            rollback = L.rollback_block(rollback_instant, instant)
            (tail if spec["rollback_at_end"] else files[-1]).append(rollback)
            status = "rolled-done"  # later blocks sharing the instant are rolled back by the same block
    files[-1].extend(tail)
    log_files = []
    for version, blocks in enumerate(files, start=1):
        name = f".{FILE_ID}_{BASE_INSTANT}.log.{version}_0-1-0"
        (part / name).write_bytes(b"".join(L.encode_block(b) for b in blocks))
        log_files.append(name)
    order = sorted(completed)
    gone = {t for t in order[:min(archived, len(order) - 1)] if not pending or t < min(pending)}
    active = [t for t in order if t not in gone]
    return base_file, log_files, CommittedInstants(frozenset(active), frozenset(pending), active[0]), valid


def _natural(ordering) -> bool:
    return ordering is None or ordering == 0


def model_fold(base: list[tuple], items: list[tuple], event_time: bool) -> dict[str, tuple]:
    """The documented fold, one log item at a time. State per key: ("rec", ts, name, from_base),
    ("del", ordering), or absent."""
    state: dict[str, tuple] = {k: ("rec", ts, f"base-{k}", True) for k, ts in base}
    for item in items:
        key, current = item[1], state.get(item[1])
        if item[0] == "data":
            _, _, ts, name = item
            if current is None or not event_time:
                wins = True
            elif current[0] == "del":
                wins = _natural(current[1]) or (ts is not None and ts >= current[1])
            else:
                wins = current[1] is None or (ts is not None and ts >= current[1])
            if wins:
                state[key] = ("rec", ts, name, False)
        else:
            _, _, ordering = item
            if current is None or current[0] == "del":
                continue  # nothing to delete
            if not event_time or _natural(ordering) or current[1] is None or ordering >= current[1]:
                state[key] = ("del", ordering)
    return state


def _triples(table: pa.Table) -> list[tuple]:
    rows = table.select([RECORD_KEY, "id", "name", "ts"]).to_pylist()
    assert all(r[RECORD_KEY] == r["id"] for r in rows)
    return sorted((r["id"], r["name"], r["ts"]) for r in rows)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    base=st.lists(st.tuples(st.sampled_from(KEYS), st.sampled_from([None, 1, 2, 3])), unique_by=lambda r: r[0], max_size=4),
    specs=st.lists(_block_spec, min_size=1, max_size=8),
    archived=st.integers(0, 3),
)
def test_slice_merger_matches_item_by_item_fold(base, specs, archived):
    """The merge equals the item-by-item model, also when the timeline's first instants were
    archived (they still count as committed)."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        base_file, log_files, completed, valid = write_slice(root, base, specs, archived)
        note(f"valid items: {valid}")
        base_positions = {k: i for i, (k, _) in enumerate(base)}
        for mode, rule in RULES.items():
            state = model_fold(base, valid, rule.is_event_time)
            expected = sorted((k, s[2], s[1]) for k, s in state.items() if s[0] == "rec")
            expected_replaced = sorted(
                i for k, i in base_positions.items() if not (state[k][0] == "rec" and state[k][3])
            )
            merger = SliceReader(str(root), ARROW, rule, completed)
            merged = merger.merge(PARTITION, base_file, log_files)
            assert _triples(merged) == expected, mode
            assert merged.schema == ARROW

            stored = merger.read_base(PARTITION, base_file)
            outcome = merger.outcome(PARTITION, stored, log_files)
            replaced = outcome.replaced.to_pylist()
            assert sorted(replaced) == expected_replaced, mode
            assert len(set(replaced)) == len(replaced)
            kept = stored.take(pa.array([i for i in range(stored.num_rows) if i not in set(replaced)], pa.int64()))
            assert _triples(pa.concat_tables([kept, outcome.records.cast(ARROW)])) == expected, mode

            # the snapshot path: the merged rows as Spark's mapInArrow gets them, all columns or some
            descriptor = pa.RecordBatch.from_pylist(
                [{"partition_path": PARTITION, "base_file": base_file, "log_files": log_files}],
                schema=pa.schema([("partition_path", pa.string()), ("base_file", pa.string()),
                                  ("log_files", pa.list_(pa.string()))]),
            )
            out = pa.Table.from_batches(list(merger.udf(ARROW.names)([descriptor])), schema=ARROW)
            assert _triples(out) == expected, mode
            some = ["name", "id"]  # neither the key nor the ordering field; schema order wins
            batches = list(merger.udf(some)([descriptor]))
            assert all(b.schema.names == ["id", "name"] for b in batches), mode
            projected = pa.Table.from_batches(batches, schema=pa.schema([ARROW.field("id"), ARROW.field("name")]))
            assert sorted((r["id"], r["name"]) for r in projected.to_pylist()) == [(i, n) for i, n, _ in expected], mode


def test_slice_merger_hand_written_sequence(tmp_path):
    """One sequence spelled out: deletes with natural, lower and higher ordering values, a key
    with no stored record, a pending block and a rolled-back block."""
    base = [("k1", 2), ("k2", None), ("k3", 3)]
    specs = [
        {"kind": "delete", "rows": [("k1", 1), ("k4", 3)], "status": "ok"},  # lower: k1 stays; k4 absent: nothing
        {"kind": "data", "rows": [("k4", 1), ("k3", 2)], "status": "ok", "encoding": "columnar"},  # k4 new; k3 older
        {"kind": "delete", "rows": [("k3", 0), ("k2", 5)], "status": "ok"},  # natural delete; k2 stored null
        {"kind": "data", "rows": [("k3", 1), ("k2", 4)], "status": "ok", "encoding": "records"},  # after natural: wins; 4 < 5
        {"kind": "data", "rows": [("k1", 9)], "status": "pending", "encoding": "columnar"},  # ignored
        {"kind": "delete", "rows": [("k1", None)], "status": "rolled"},  # ignored
        {"kind": "data", "rows": [("k2", 5)], "status": "ok", "encoding": "parquet"},  # 5 >= 5 after the delete: wins
    ]
    specs = [{"same_instant": False, "rollback_at_end": True, "new_file": i % 2 == 0, **s} for i, s in enumerate(specs)]
    base_file, log_files, completed, valid = write_slice(tmp_path, base, specs)
    assert len(log_files) == 4
    merged = SliceReader(str(tmp_path), ARROW, RULES["event"], completed).merge(PARTITION, base_file, log_files)
    assert _triples(merged) == [("k1", "base-k1", 2), ("k2", "b6r0", 5), ("k3", "b3r0", 1), ("k4", "b1r0", 1)]
    merged = SliceReader(str(tmp_path), ARROW, RULES["commit"], completed).merge(PARTITION, base_file, log_files)
    # commit time: every delete of a live record applies (k1 goes), every record wins
    assert _triples(merged) == [("k2", "b6r0", 5), ("k3", "b3r0", 1), ("k4", "b1r0", 1)]


def test_slice_merger_closed_form_ties_and_nulls(tmp_path):
    """Keys without deletes (the vectorized path): ties go to the later write, a null ordering
    value ranks lowest, and a stored null loses to anything."""
    base = [("k1", 2), ("k2", None), ("k3", 3)]
    specs = [
        {"kind": "data", "rows": [("k1", 2), ("k2", None), ("k3", None), ("k4", None)], "encoding": "columnar"},
        {"kind": "data", "rows": [("k4", None), ("k3", 2)], "encoding": "records"},
    ]
    specs = [{"status": "ok", "same_instant": False, "rollback_at_end": False, "new_file": False, **s} for s in specs]
    base_file, log_files, completed, _ = write_slice(tmp_path, base, specs)
    event = SliceReader(str(tmp_path), ARROW, RULES["event"], completed)
    assert _triples(event.merge(PARTITION, base_file, log_files)) == [
        ("k1", "b0r0", 2), ("k2", "b0r1", None), ("k3", "base-k3", 3), ("k4", "b1r0", None)]
    assert sorted(event.outcome(PARTITION, event.read_base(PARTITION, base_file), log_files).replaced.to_pylist()) == [0, 1]
    commit = SliceReader(str(tmp_path), ARROW, RULES["commit"], completed)
    assert _triples(commit.merge(PARTITION, base_file, log_files)) == [
        ("k1", "b0r0", 2), ("k2", "b0r1", None), ("k3", "b1r1", 2), ("k4", "b1r0", None)]


def _cut_block(instant: str, rows: list[tuple], keep: int) -> bytes:
    """An Avro data block of ``rows`` at ``instant``, cut after ``keep`` bytes (negative: from its end)."""
    header = {L.INSTANT_TIME: instant, L.SCHEMA: json.dumps(AVRO)}
    table = _rows_table(rows, [f"cut{i}" for i in range(len(rows))], instant)
    return L.encode_block(L.LogBlock(L.AVRO_DATA, header, L.avro_table_content(table, AVRO)))[:keep]


@pytest.mark.parametrize("rolled_back", [False, True])
@pytest.mark.parametrize("keep", [-10, 300], ids=["cut-in-content", "cut-in-schema"])
def test_a_block_cut_at_the_end_of_a_log_is_skipped_only_when_its_write_failed(tmp_path, keep, rolled_back):
    """The timeline's first instants were archived, so the cut block's instant counts as committed
    by its age; it is a failed write's only when a rollback command block names it. Otherwise the
    cut is damage, and an error names the file, even when only the schema after the instant is cut."""
    specs = [{"kind": "data", "rows": [("k1", 5)], "status": "ok", "encoding": "columnar",
              "same_instant": False, "rollback_at_end": False, "new_file": False}]
    base_file, log_files, _, _ = write_slice(tmp_path, [("k1", 1), ("k2", 1)], specs)
    cut_instant, rollback_instant, active = "00000000000000200", "00000000000000201", "00000000000000300"
    part = tmp_path / PARTITION
    cut_log = f".{FILE_ID}_{BASE_INSTANT}.log.2_0-1-0"
    (part / cut_log).write_bytes(_cut_block(cut_instant, [("k2", 9)], keep))
    log_files.append(cut_log)
    if rolled_back:  # Hudi 0.x rolls back a failed append with a command block in the next log version
        rollback_log = f".{FILE_ID}_{BASE_INSTANT}.log.3_0-1-0"
        (part / rollback_log).write_bytes(L.encode_block(L.rollback_block(rollback_instant, cut_instant)))
        log_files.append(rollback_log)
    committed = CommittedInstants(frozenset({active}), frozenset(), active)
    assert cut_instant in committed
    merger = SliceReader(str(tmp_path), ARROW, RULES["event"], committed)
    if rolled_back:
        assert _triples(merger.merge(PARTITION, base_file, log_files)) == [("k1", "b0r0", 5), ("k2", "base-k2", 1)]
    else:
        with pytest.raises(FormatError, match=re.escape(cut_log)):
            merger.merge(PARTITION, base_file, log_files)
