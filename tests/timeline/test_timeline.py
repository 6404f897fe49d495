"""Unit tests of ``hudiql.timeline.active``: instant times (format, parsing, the next and a new one),
the layout 1 file names of every action and state, loading a timeline (furthest state per instant,
order, files that are not instants, layout 2 tables), completed and pending instants by action,
which instants committed (``CommittedInstants``, archived instants included), and the timelines
Apache Hudi wrote (checked against the official reader, PyPI ``hudi``). No Spark.
"""

from __future__ import annotations

import shutil
from datetime import datetime, timedelta, timezone

import pytest
from conftest import HUDI_TABLES, timeline, unzip
from hudiql.io.storage import Storage
from hudiql.config import table_config as C
from hudiql.timeline.active import (
    CLEAN,
    COMMIT,
    COMPACTION,
    DELTA_COMMIT,
    LOG_COMPACTION,
    REPLACE_COMMIT,
    ROLLBACK,
    SAVEPOINT,
    Instant,
    State,
    Timeline,
    format_instant_time,
    parse_instant_time,
)

SAMPLE = HUDI_TABLES / "sample_table"
TRIPS = HUDI_TABLES / "quickstart_trips_table" / "mor" / "avro"
T1, T2, T3, T4, T5 = (f"2024050110000000{i}" for i in range(1, 6))
UTC = timezone.utc


@pytest.fixture
def table(tmp_path):
    """An empty layout 1 table (a ``hoodie.properties`` written by hudiql), and its storage."""
    storage = Storage(str(tmp_path / "t"))
    C.TableConfig({C.TABLE_NAME: "t", C.TABLE_TYPE: C.MERGE_ON_READ}).save(storage)
    return tmp_path / "t", storage


def states(timeline_: Timeline) -> list[tuple[str, str, State]]:
    return [(i.timestamp, i.action, i.state) for i in timeline_.instants]


def archive(table_path, *times: str) -> None:
    """What Hudi's archiver does to the active timeline: the instants' files leave ``.hoodie/``."""
    hoodie = table_path / ".hoodie"
    (hoodie / "archived").mkdir(exist_ok=True)
    for t in times:
        for p in hoodie.glob(f"{t}.*"):
            shutil.move(p, hoodie / "archived" / p.name)


# ---- instant times ----------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("when", "expected"),
    [
        (datetime(2024, 5, 1, 10, 0, 0, 123456, tzinfo=UTC), "20240501100000123"),  # milliseconds, truncated
        (datetime(2024, 5, 1, 12, 0, 0, 999999, tzinfo=timezone(timedelta(hours=2))), "20240501100000999"),
        (datetime(2024, 12, 31, 23, 59, 59, 1000, tzinfo=timezone(timedelta(hours=-5))), "20250101045959001"),
    ],
)
def test_instant_time_is_utc_to_the_millisecond(when, expected):
    assert format_instant_time(when) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("20240501100000123", datetime(2024, 5, 1, 10, 0, 0, 123000, tzinfo=UTC)),
        ("20240501100000", datetime(2024, 5, 1, 10, 0, 0, tzinfo=UTC)),  # seconds, as Hudi before 0.10 wrote
    ],
)
def test_parse_instant_time(text, expected):
    assert parse_instant_time(text) == expected


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("20240501100000123", "20240501100000124"),
        ("20241231235959999", "20250101000000000"),
        ("20240228235959999", "20240229000000000"),  # a leap year
    ],
)
def test_next_instant_time_is_one_millisecond_later(before, after):
    assert Timeline.next_instant_time(before) == after


def test_new_instant_time_on_an_empty_timeline_is_now(table):
    _, storage = table
    start = datetime.now(UTC).strftime("%Y%m%d%H%M%S")
    new = Timeline.load(storage).new_instant_time()
    end = datetime.now(UTC).strftime("%Y%m%d%H%M%S") + "999"
    assert len(new) == 17 and start + "000" <= new <= end


def test_new_instant_time_is_later_than_every_instant_pending_ones_too(table):
    _, storage = table
    Timeline.load(storage).request(COMMIT, "29991231235959998")  # a clock ahead of ours
    assert Timeline.load(storage).new_instant_time() == "29991231235959999"


# ---- layout 1 files of each action ------------------------------------------------------------

@pytest.mark.parametrize(
    ("action", "pending_files", "completed_file"),
    [
        (COMMIT, {"commit.requested", "inflight"}, "commit"),
        (DELTA_COMMIT, {"deltacommit.requested", "deltacommit.inflight"}, "deltacommit"),
        (REPLACE_COMMIT, {"replacecommit.requested", "replacecommit.inflight"}, "replacecommit"),
        (COMPACTION, {"compaction.requested", "compaction.inflight"}, "commit"),
        (LOG_COMPACTION, {"logcompaction.requested", "logcompaction.inflight"}, "deltacommit"),
        (CLEAN, {"clean.requested", "clean.inflight"}, "clean"),
        (ROLLBACK, {"rollback.requested", "rollback.inflight"}, "rollback"),
    ],
)
def test_an_instant_moves_through_its_layout_1_files(table, action, pending_files, completed_file):
    path, storage = table
    instant = Timeline.load(storage).start(action, T1, b"plan")
    assert set(timeline(path)) == {f"{T1}.{s}" for s in pending_files}
    assert states(Timeline.load(storage)) == [(T1, action, State.INFLIGHT)]
    assert (path / ".hoodie" / f"{T1}.{action}.requested").read_bytes() == b"plan"

    done = Timeline.load(storage).complete(instant, b'{"k": 1}')
    assert set(timeline(path)) == {f"{T1}.{s}" for s in pending_files | {completed_file}}
    assert done.is_completed and done.file_name == f".hoodie/{T1}.{completed_file}"
    loaded = Timeline.load(storage)
    # a completed compaction is a commit file, but stays a compaction on the timeline
    assert states(loaded) == [(T1, action, State.COMPLETED)]
    assert loaded.read(loaded.instants[0]) == b'{"k": 1}'
    assert loaded.read_requested(loaded.instants[0]) == b"plan"


@pytest.mark.parametrize(("keep_requested", "left"), [(False, []), (True, [f"{T1}.deltacommit.requested"])])
def test_remove_pending_deletes_the_instant_of_a_write_that_did_not_complete(table, keep_requested, left):
    path, storage = table
    instant = Timeline.load(storage).start(DELTA_COMMIT, T1)
    Timeline.load(storage).remove_pending(instant, keep_requested=keep_requested)
    assert timeline(path) == left
    expected = [(T1, DELTA_COMMIT, State.REQUESTED)] if left else []
    assert states(Timeline.load(storage)) == expected


# ---- loading --------------------------------------------------------------------------------

def test_instants_are_ordered_by_time_whatever_order_they_were_written_in(table):
    _, storage = table
    for t in (T3, T1, T2):
        tl = Timeline.load(storage)
        tl.complete(tl.start(COMMIT, t), b"{}")
    assert [i.timestamp for i in Timeline.load(storage).instants] == [T1, T2, T3]
    assert Instant(T1, COMMIT, State.COMPLETED) < Instant(T2, CLEAN, State.REQUESTED)


@pytest.mark.parametrize(
    "name",
    [
        f"{T2}.commit.crc",  # a checksum file beside an instant
        f"{T2}.commit.requested.inflight",
        f".{T2}.commit.0a1b2c.tmp",  # the temporary file of an atomic write
        "2024050110000.commit",  # 13 digits: no instant time
        f"{T2}_{T3}.commit.inflight",  # only a completed instant carries a completion time
        "lock",
        "hoodie.properties.backup",
    ],
)
def test_files_that_are_not_instants_are_ignored(table, name):
    path, storage = table
    tl = Timeline.load(storage)
    tl.complete(tl.start(COMMIT, T1), b"{}")
    (path / ".hoodie" / name).write_bytes(b"")
    (path / ".hoodie" / f"{T3}.commit").mkdir()  # a folder, whatever its name
    assert states(Timeline.load(storage)) == [(T1, COMMIT, State.COMPLETED)]


def test_completed_and_pending_instants_by_action(table):
    _, storage = table
    tl = Timeline.load(storage)
    for action, t in [(COMMIT, "20240501000000001"), (DELTA_COMMIT, "20240501000000002"),
                      (COMPACTION, "20240501000000003"), (LOG_COMPACTION, "20240501000000004"),
                      (REPLACE_COMMIT, "20240501000000005"), (CLEAN, "20240501000000006")]:
        tl.complete(tl.start(action, t), b"{}")
    tl.start(COMMIT, "20240501000000007")
    tl.request(COMPACTION, "20240501000000008")
    tl = Timeline.load(storage)

    def times(instants):
        return [i.timestamp[-1] for i in instants]

    assert times(tl.completed()) == ["1", "2", "3", "4", "5"]  # writes: not the clean
    assert times(tl.completed((COMMIT,))) == ["1", "3"]  # a completed compaction is a commit
    assert times(tl.completed((DELTA_COMMIT,))) == ["2", "4"]  # a completed log compaction a delta commit
    assert times(tl.completed((CLEAN,))) == ["6"]
    assert [(i.timestamp[-1], i.state) for i in tl.pending()] == [("7", State.INFLIGHT), ("8", State.REQUESTED)]
    assert times(tl.pending((COMPACTION,))) == ["8"]


def test_a_layout_2_timeline_is_written_in_layout_2(tmp_path):
    """A real v8 table's timeline: a new instant goes to .hoodie/timeline, completed with its completion time."""
    path = unzip(SAMPLE / "cow" / "v8_nonpartitioned.zip", tmp_path)
    tl = Timeline.load(Storage(str(path)))
    assert tl.layout_version == 2 and tl.folder == ".hoodie/timeline"
    instant = tl.start(COMMIT, tl.new_instant_time())
    assert {f"{instant.timestamp}.commit.requested", f"{instant.timestamp}.inflight"} <= {
        p.name for p in (path / ".hoodie" / "timeline").iterdir()}
    done = tl.complete(instant, b"")
    assert done.file_name == f".hoodie/timeline/{instant.timestamp}_{done.completion_time}.commit"
    assert done.completion_time > instant.timestamp
    assert [i.completion_time for i in Timeline.load(Storage(str(path))).completed()][-1] == done.completion_time
    assert not [p for p in (path / ".hoodie").iterdir() if p.name.startswith(instant.timestamp)]


def test_new_instant_time_is_later_than_every_completion(tmp_path):
    """A new instant never ties with the completion time of an earlier one (a metadata table's
    compaction planned in the millisecond its last delta commit completed would take that delta
    commit's log into its new slice, merged twice)."""
    path = unzip(SAMPLE / "cow" / "v8_nonpartitioned.zip", tmp_path)
    tl = Timeline.load(Storage(str(path)))
    instant = tl.start(COMMIT, tl.new_instant_time())
    tl.storage.write_atomic(f".hoodie/timeline/{instant.timestamp}_29991231235959998.commit", b"")  # a clock ahead
    assert Timeline.load(Storage(str(path))).new_instant_time() == "29991231235959999"


# ---- which instants committed ----------------------------------------------------------------

def test_committed_instants_are_the_completed_ones_and_those_archived_before_them(table):
    path, storage = table
    tl = Timeline.load(storage)
    tl.start(COMMIT, T1)  # a write that never completed, older than the active timeline's first
    for t in (T2, T3, T4):
        tl.complete(tl.start(DELTA_COMMIT, t), b"{}")
    tl.start(DELTA_COMMIT, T5)
    archive(path, T2)
    committed = Timeline.load(storage).committed()
    assert committed.start == T3
    assert "20240501000000000" in committed and committed.archived("20240501000000000")  # archived
    assert T2 in committed  # its instant was archived
    assert T1 not in committed  # pending, although older than the timeline's start
    assert T3 in committed and T4 in committed and not committed.archived(T3)
    assert T5 not in committed  # inflight
    assert "20240501100000009" not in committed  # no such instant
    assert None not in committed and 20240501100000003 not in committed


def test_nothing_committed_on_a_timeline_without_a_completed_write(table):
    _, storage = table
    tl = Timeline.load(storage)
    tl.complete(tl.start(CLEAN, T1), b"{}")
    tl.start(COMMIT, T2)
    committed = Timeline.load(storage).committed()
    assert committed.start is None
    assert all(t not in committed for t in ("20000101000000000", T1, T2))


def test_the_active_timeline_starts_at_its_first_commit_that_is_not_savepointed(table):
    """Archiving keeps savepointed commits, so they may sit before a hole of archived instants."""
    _, storage = table
    instants = [Instant(T1, COMMIT, State.COMPLETED), Instant(T1, SAVEPOINT, State.COMPLETED),
                Instant(T3, COMMIT, State.COMPLETED)]  # T2 was archived
    committed = Timeline(storage, instants, 1).committed()
    assert committed.start == T3
    assert T1 in committed and T2 in committed and T3 in committed


def test_a_savepointed_commit_stays_committed_and_is_not_the_start_of_the_timeline(table):
    path, storage = table
    tl = Timeline.load(storage)
    for t in (T1, T2, T3, T4):
        tl.complete(tl.start(COMMIT, t), b"{}")
    for t in (T1, T3):  # Hudi's savepoint: <commit time>.savepoint.inflight, then <commit time>.savepoint
        tl.complete(tl.transition_to_inflight(Instant(t, SAVEPOINT, State.REQUESTED)), b"")
    archive(path, T2)  # archiving keeps savepointed commits: a hole in the active timeline
    tl = Timeline.load(storage)
    assert [i.timestamp for i in tl.completed()] == [T1, T3, T4]
    committed = tl.committed()
    assert committed.start == T4  # the first commit that is not savepointed
    assert T2 in committed  # archived after the savepointed T1


# ---- timelines Apache Hudi wrote ----------------------------------------------------------------

@pytest.mark.parametrize(
    ("zipped", "expected"),
    [
        (SAMPLE / "cow" / "v6_simplekeygen_nonhivestyle_overwritetable.zip", [
            ("20240707001301554", COMMIT, State.COMPLETED, ".hoodie/20240707001301554.commit", None),
            ("20240707001302376", COMMIT, State.COMPLETED, ".hoodie/20240707001302376.commit", None),
            ("20240707001303088", REPLACE_COMMIT, State.COMPLETED, ".hoodie/20240707001303088.replacecommit", None),
        ]),
        (SAMPLE / "mor" / "parquet" / "v6_nonpartitioned_rollback.zip", [
            ("20250126040823628", DELTA_COMMIT, State.COMPLETED, ".hoodie/20250126040823628.deltacommit", None),
            ("20250126040936578", ROLLBACK, State.COMPLETED, ".hoodie/20250126040936578.rollback", None),
            ("20250126060846931", DELTA_COMMIT, State.COMPLETED, ".hoodie/20250126060846931.deltacommit", None),
        ]),
        (TRIPS / "v8_trips_8i3u1d.zip", [  # layout 2: completed files are named <requested>_<completed>.<action>
            (f"20251220210{r}", action, State.COMPLETED, f".hoodie/timeline/20251220210{r}_20251220210{c}.{f}",
             f"20251220210{c}")
            for r, c, action, f in [
                ("108078", "109593", DELTA_COMMIT, "deltacommit"), ("117766", "118628", "indexing", "indexing"),
                ("123755", "124336", DELTA_COMMIT, "deltacommit"), ("125441", "126002", DELTA_COMMIT, "deltacommit"),
                ("127080", "127601", DELTA_COMMIT, "deltacommit"), ("128625", "129197", DELTA_COMMIT, "deltacommit"),
                ("129235", "129883", COMPACTION, "commit"), ("130911", "131755", DELTA_COMMIT, "deltacommit"),
            ]
        ]),
        (SAMPLE / "cow" / "v6_empty.zip", []),
    ],
    ids=lambda v: getattr(v, "stem", None),
)
def test_timeline_of_a_table_hudi_wrote(tmp_path, zipped, expected):
    path = unzip(zipped, tmp_path)
    tl = Timeline.load(Storage(str(path)))
    assert [(i.timestamp, i.action, i.state, i.file_name, i.completion_time) for i in tl.instants] == expected
    for instant in tl.instants:
        assert tl.read(instant) == (path / instant.file_name).read_bytes()
    for instant in tl.completed((REPLACE_COMMIT, COMPACTION)):  # their plans are in the requested file
        requested = path / tl.folder / f"{instant.timestamp}.{instant.action}.requested"
        assert tl.read_requested(instant) == requested.read_bytes()


@pytest.mark.parametrize("zipped", sorted(HUDI_TABLES.rglob("*.zip")), ids=lambda p: f"{p.parent.name}-{p.stem}")
def test_completed_writes_by_action_agree_with_the_official_reader(tmp_path, zipped):
    from hudi import HudiTableBuilder

    path = unzip(zipped, tmp_path)
    official = HudiTableBuilder.from_base_uri(str(path)).build().get_timeline()
    ours = Timeline.load(Storage(str(path)))
    for action, theirs in [(COMMIT, official.get_completed_commits()),
                           (DELTA_COMMIT, official.get_completed_deltacommits()),
                           (REPLACE_COMMIT, official.get_completed_replacecommits())]:
        assert [i.timestamp for i in ours.completed((action,))] == [i.timestamp for i in theirs]


def test_a_write_is_not_committed_until_its_completed_file_exists(tmp_path):
    path = unzip(SAMPLE / "cow" / "v6_nonpartitioned.zip", tmp_path)
    (path / ".hoodie" / "20240418173551906.commit").unlink()  # the second commit, as if it crashed
    tl = Timeline.load(Storage(str(path)))
    assert states(tl) == [("20240418173550988", COMMIT, State.COMPLETED),
                          ("20240418173551906", COMMIT, State.INFLIGHT)]  # from its ``<t>.inflight`` file
    assert [i.timestamp for i in tl.pending()] == ["20240418173551906"]
    assert "20240418173551906" not in tl.committed() and "20240418173550988" in tl.committed()
