"""Unit tests of ``hudiql.table.fsview``: the file groups and slices of a table as of its completed
timeline. Covered: the latest slices of every table Apache Hudi wrote (against the official
reader, PyPI ``hudi``), slices per file group, files of writes that did not complete, file groups
a replacecommit replaced, log files attached to their slice in Hudi's order, the next log version,
a pending compaction's new slice and what readers merge meanwhile, files of archived instants,
layout 2 logs placed by completion time, partition filters, and the missing, truncated or empty
files a completed instant wrote. No Spark: tables are built with hudiql's own writers (file names
from ``layout``, instants through ``Timeline``, metadata from ``CommitMetadata``).
"""

from __future__ import annotations

import shutil

import pytest
from conftest import HUDI_TABLES, unzip
from hudiql.errors import FormatError
from hudiql.io.storage import Storage
from hudiql.config import table_config as C
from hudiql.timeline.commit import CommitMetadata, WriteStat
from hudiql.timeline.compaction_plan import CompactionOperation, encode_plan
from hudiql.table.fsview import FileSystemView, list_data_files
from hudiql.layout import base_file_name, join_partition, log_file_name, parse_data_file_name
from hudiql.timeline.active import COMMIT, COMPACTION, DELTA_COMMIT, REPLACE_COMMIT, Timeline

SAMPLE = HUDI_TABLES / "sample_table"
TRIPS = HUDI_TABLES / "quickstart_trips_table" / "mor" / "avro"
T1, T2, T3, T4, T5 = (f"2024050110000000{i}" for i in range(1, 6))
F1, F2, F3 = (f"{i}{i}{i}{i}{i}{i}{i}{i}-aaaa-4bbb-8ccc-00000000000{i}-0" for i in range(1, 4))  # file ids


class Table:
    """A layout 1 table written file by file: data files under their Hudi names, instants whose
    commit metadata lists what they wrote."""

    def __init__(self, path):
        self.path = path
        self.storage = Storage(str(path))
        C.TableConfig({C.TABLE_NAME: "t", C.TABLE_TYPE: C.MERGE_ON_READ}).save(self.storage)

    def base(self, partition, file_id, instant, size=100) -> str:
        name = base_file_name(file_id, "0-1-0", instant)
        self.storage.write(join_partition(partition, name), b"x" * size)
        return join_partition(partition, name)

    def log(self, partition, file_id, base_instant, version, size=50) -> str:
        name = log_file_name(file_id, base_instant, version, "0-1-0")
        self.storage.write(join_partition(partition, name), b"x" * size)
        return join_partition(partition, name)

    def metadata(self, files=(), replaced=None, compacted=False) -> bytes:
        """Commit metadata listing the data files (paths) a write wrote."""
        meta = CommitMetadata(operation_type="INSERT_OVERWRITE" if replaced else "UPSERT", compacted=compacted,
                              partition_to_replace_file_ids=replaced or {})
        for path in files:
            partition, _, file_name = path.rpartition("/")
            parsed = parse_data_file_name(file_name)
            meta.add(WriteStat(file_id=parsed.file_id, partition_path=partition, path=path,
                               file_size_in_bytes=self.storage.size(path),
                               log_files=[file_name] if parsed.is_log else []))
        return meta.to_json()

    def start(self, action, instant, files=(), replaced=None):
        """The inflight instant of a write of ``files``, and the metadata that completes it."""
        return Timeline.load(self.storage).start(action, instant), self.metadata(files, replaced)

    def commit(self, action, instant, files=(), replaced=None) -> None:
        Timeline.load(self.storage).complete(*self.start(action, instant, files, replaced))

    def plan_compaction(self, instant, *operations: CompactionOperation) -> None:
        Timeline.load(self.storage).request(COMPACTION, instant, encode_plan(list(operations)))

    def run_compaction(self, files=()) -> None:
        """Complete the pending compaction: inflight, then a commit that says it compacted."""
        timeline = Timeline.load(self.storage)
        [plan] = timeline.pending((COMPACTION,))
        timeline.complete(timeline.transition_to_inflight(plan), self.metadata(files, compacted=True))

    def view(self, partitions=None) -> FileSystemView:
        return FileSystemView.load(self.storage, Timeline.load(self.storage), partitions)


def name(path: str) -> str:
    return path.rpartition("/")[2]


def slices(view: FileSystemView, partition=None) -> list[tuple]:
    """(partition, file id, base instant, base file, log files) of every latest slice."""
    return [(s.partition_path, s.file_id, s.base_instant, s.base_file, s.log_files)
            for s in view.latest_slices(partition)]


@pytest.fixture
def mor(tmp_path) -> Table:
    return Table(tmp_path / "t")


# ---- tables Apache Hudi wrote ----------------------------------------------------------------

@pytest.mark.parametrize("zipped", sorted(HUDI_TABLES.rglob("*.zip")), ids=lambda p: f"{p.parent.name}-{p.stem}")
def test_latest_slices_of_a_hudi_table_are_the_official_readers(tmp_path, zipped):
    from hudi import HudiTableBuilder

    path = unzip(zipped, tmp_path)
    storage = Storage(str(path))
    ours = [(s.partition_path, s.file_id, s.base_file, s.log_files)
            for s in FileSystemView.load(storage, Timeline.load(storage)).latest_slices()]
    theirs = sorted((s.partition_path, s.file_id, s.base_file_name or None, list(s.log_file_names))
                    for s in HudiTableBuilder.from_base_uri(str(path)).build().get_file_slices())
    assert sorted(ours) == theirs


def test_file_groups_and_slices_of_a_partitioned_hudi_table(tmp_path):
    path = unzip(SAMPLE / "cow" / "v6_simplekeygen_nonhivestyle.zip", tmp_path)
    storage = Storage(str(path))
    view = FileSystemView.load(storage, Timeline.load(storage))
    assert view.partitions() == ["10", "20", "30"]
    [group] = view.file_groups("10")
    assert group.file_id == "97de74b1-2a8e-4bb7-874c-0a74e1f42a77-0"
    # the second commit rewrote the group: a second slice, the latest
    assert {t: s.base_file for t, s in group.slices.items()} == {
        "20240418172802262": "97de74b1-2a8e-4bb7-874c-0a74e1f42a77-0_1-98-142_20240418172802262.parquet",
        "20240418172804498": "97de74b1-2a8e-4bb7-874c-0a74e1f42a77-0_0-119-166_20240418172804498.parquet",
    }
    [latest] = view.latest_slices("10")
    assert latest.base_instant == "20240418172804498"
    assert latest.base_path == "10/97de74b1-2a8e-4bb7-874c-0a74e1f42a77-0_0-119-166_20240418172804498.parquet"
    assert latest.base_file_size == (path / latest.base_path).stat().st_size
    assert [g.file_id for g in view.file_groups()] == [
        "97de74b1-2a8e-4bb7-874c-0a74e1f42a77-0", "76e0556b-390d-4249-b7ad-9059e2bc2cbd-0",
        "6db57019-98ee-480e-8eb1-fb3de48e1c24-0"]


def test_file_groups_an_overwrite_replaced_are_not_live(tmp_path):
    path = unzip(SAMPLE / "cow" / "v6_simplekeygen_nonhivestyle_overwritetable.zip", tmp_path)
    storage = Storage(str(path))
    view = FileSystemView.load(storage, Timeline.load(storage))
    # the partitionToReplaceFileIds of 20240707001303088.replacecommit
    assert view.replaced == {("10", "4f2685a3-614f-49ca-9b2b-e1cb9fb61f27-0"),
                             ("20", "88163884-fef0-4aab-865d-c72327a8a1d5-0"),
                             ("30", "d398fae1-c0e6-4098-8124-f55f7098bdba-0")}
    assert view.partitions() == ["30"]
    assert slices(view) == [("30", "ebcb261d-62d3-4895-90ec-5b3c9622dff4-0", "20240707001303088",
                             "ebcb261d-62d3-4895-90ec-5b3c9622dff4-0_0-111-154_20240707001303088.parquet", [])]
    assert view.read_slices() == view.latest_slices() and len(view.log_targets()) == 1


CHENNAI_LOGS = [".6e1d5cc4-c487-487d-abbe-fe9b30b1c0cc-0_20251220210127080.log.1_0-1072-3078",
                ".6e1d5cc4-c487-487d-abbe-fe9b30b1c0cc-0_20251220210128625.log.1_0-1097-3150"]


@pytest.mark.parametrize(
    ("completed", "old_slice", "new_slice"),
    [
        ("20251220210129197", CHENNAI_LOGS, []),  # as Hudi wrote it: before the plan (...129235)
        ("20251220210129300", CHENNAI_LOGS[:1], CHENNAI_LOGS[1:]),  # after it: not in the plan
    ],
)
def test_layout_2_logs_go_to_the_slice_their_delta_commit_completed_in(tmp_path, completed, old_slice, new_slice):
    path = unzip(TRIPS / "v8_trips_8i3u1d.zip", tmp_path)
    timeline_folder = path / ".hoodie" / "timeline"
    (timeline_folder / "20251220210128625_20251220210129197.deltacommit").rename(
        timeline_folder / f"20251220210128625_{completed}.deltacommit")
    storage = Storage(str(path))
    view = FileSystemView.load(storage, Timeline.load(storage))
    # the compaction 20251220210129235 began new slices; ...130911 wrote on top of a new base file
    logs = {(g.partition_path, t): s.log_files for g in view.file_groups() for t, s in g.slices.items()}
    assert logs == {
        ("city=chennai", "20251220210108078"): old_slice,
        ("city=chennai", "20251220210129235"): new_slice,
        ("city=san_francisco", "20251220210108078"): [
            ".036ded81-9ed4-479f-bcea-7145dfa0079b-0_20251220210123755.log.1_0-1022-2928"],
        ("city=san_francisco", "20251220210129235"): [],
        ("city=sao_paulo", "20251220210108078"): [
            ".8aa68f7e-afd6-4c94-b86c-8a886552e08d-0_20251220210125441.log.1_0-1047-3000"],
        ("city=sao_paulo", "20251220210129235"): [
            ".8aa68f7e-afd6-4c94-b86c-8a886552e08d-0_20251220210130911.log.1_0-1139-3316"],
    }


# ---- what completed instants wrote ---------------------------------------------------------------

def test_files_of_a_write_that_did_not_complete_are_invisible_until_it_does(mor):
    base = mor.base("p", F1, T1)
    mor.commit(DELTA_COMMIT, T1, [base])
    # a second write, still inflight: a log on F1's slice (named by that slice's instant) and a new group
    log, new = mor.log("p", F1, T1, 1), mor.base("p", F2, T2)
    instant, meta = mor.start(DELTA_COMMIT, T2, [log, new])
    mor.base("p", F3, T3)  # a file no instant on the timeline wrote
    view = mor.view()
    assert slices(view) == [("p", F1, T1, name(base), [])]
    assert [g.file_id for g in view.file_groups()] == [F1]
    assert view.log_targets() == [("p", F1, name(base), T1, 2)]  # the invisible log's version is taken

    Timeline.load(mor.storage).complete(instant, meta)
    assert slices(mor.view()) == [("p", F1, T1, name(base), [name(log)]), ("p", F2, T2, name(new), [])]


def test_a_log_no_completed_delta_commit_lists_is_not_opened(mor):
    """v6 logs are named by their slice's instant, which completed: only the write stats tell."""
    base = mor.base("p", F1, T1)
    mor.commit(DELTA_COMMIT, T1, [base])
    listed = mor.log("p", F1, T1, 1)
    mor.commit(DELTA_COMMIT, T2, [listed])
    mor.log("p", F1, T1, 2)  # left by a write whose instant was rolled back
    assert slices(mor.view()) == [("p", F1, T1, name(base), [name(listed)])]


def test_log_files_are_in_version_order(mor):
    base = mor.base("p", F1, T1)
    mor.commit(DELTA_COMMIT, T1, [base])
    logs = [mor.log("p", F1, T1, v) for v in (10, 2, 1)]  # 10 sorts before 2 as text
    for instant, log in zip((T2, T3, T4), reversed(logs)):
        mor.commit(DELTA_COMMIT, instant, [log])
    [latest] = mor.view().latest_slices()
    assert latest.log_files == [name(p) for p in reversed(logs)]
    assert latest.log_size == 150
    assert mor.view().log_targets() == [("p", F1, name(base), T1, 11)]


def test_replacecommit_replaces_file_groups_only_once_completed(mor):
    old = mor.base("p", F1, T1)
    mor.commit(COMMIT, T1, [old])
    new = mor.base("p", F2, T2)
    meta = mor.metadata([new], replaced={"p": [F1]})
    timeline = Timeline.load(mor.storage)
    # Hudi's inflight replacecommit already names the file groups it replaces
    instant = timeline.transition_to_inflight(timeline.request(REPLACE_COMMIT, T2), meta)
    assert slices(mor.view()) == [("p", F1, T1, name(old), [])]

    Timeline.load(mor.storage).complete(instant, meta)
    view = mor.view()
    assert view.replaced == {("p", F1)}
    assert slices(view) == [("p", F2, T2, name(new), [])]
    assert [g.file_id for g in view.file_groups()] == [F2] and view.partitions() == ["p"]


def test_a_pending_compaction_opens_a_new_slice_that_readers_merge_with_the_one_before(mor):
    base = mor.base("p", F1, T1)
    mor.commit(DELTA_COMMIT, T1, [base])
    log1 = mor.log("p", F1, T1, 1)
    mor.commit(DELTA_COMMIT, T2, [log1])
    other = mor.base("p", F2, T3)
    mor.commit(DELTA_COMMIT, T3, [other])  # a file group the plan leaves alone
    mor.plan_compaction(T4, CompactionOperation("p", F1, T1, name(base), (name(log1),)))
    view = mor.view()
    assert slices(view)[0] == ("p", F1, T4, None, [])  # where the next write goes
    merged = view.read_slices()[0]  # what readers see meanwhile
    assert (merged.base_instant, merged.base_file, merged.log_files) == (T1, name(base), [name(log1)])

    log2 = mor.log("p", F1, T4, 1)  # a write after the plan goes to the new slice
    mor.commit(DELTA_COMMIT, T5, [log2])

    view = mor.view()
    assert view.pending_compactions == {T4}
    assert slices(view) == [("p", F1, T4, None, [name(log2)]), ("p", F2, T3, name(other), [])]
    merged, alone = view.read_slices()
    assert (merged.base_instant, merged.base_file, merged.log_files) == (T1, name(base), [name(log1), name(log2)])
    assert merged.base_file_size == 100 and merged.log_size == 100
    assert alone == view.latest_slices()[1]
    assert view.log_targets()[0] == ("p", F1, None, T4, 2)

    # the compaction completes: its base file starts the slice
    compacted = mor.base("p", F1, T4)
    mor.run_compaction([compacted])
    view = mor.view()
    assert view.pending_compactions == set()
    assert slices(view)[0] == ("p", F1, T4, name(compacted), [name(log2)])
    assert view.read_slices() == view.latest_slices()


def test_files_of_archived_instants_stay_visible(mor):
    base1 = mor.base("p", F1, T1)
    mor.commit(DELTA_COMMIT, T1, [base1])
    log = mor.log("p", F1, T1, 1)
    mor.commit(DELTA_COMMIT, T2, [log])
    base2 = mor.base("p", F2, T3)
    mor.commit(DELTA_COMMIT, T3, [base2])
    mor.base("p", F3, T4)  # newer than the active timeline's start and on no timeline: not committed
    hoodie = mor.path / ".hoodie"
    (hoodie / "archived").mkdir()
    for p in [*hoodie.glob(f"{T1}.*"), *hoodie.glob(f"{T2}.*")]:
        shutil.move(p, hoodie / "archived" / p.name)
    # no delta commit on the timeline lists the log any more: its slice is older than the timeline
    assert slices(mor.view()) == [("p", F1, T1, name(base1), [name(log)]), ("p", F2, T3, name(base2), [])]


def test_partition_filters(mor):
    a, b = mor.base("a", F1, T1), mor.base("b/c", F2, T1)
    mor.commit(COMMIT, T1, [a, b])
    view = mor.view()
    assert view.partitions() == ["a", "b/c"]
    assert [g.file_id for g in view.file_groups("b/c")] == [F2]
    assert slices(view, "a") == [("a", F1, T1, name(a), [])]
    assert slices(view.only(["b/c"])) == slices(mor.view(["b/c"])) == [("b/c", F2, T1, name(b), [])]
    assert view.only(["x"]).partitions() == []


# ---- damage: a file a completed instant wrote is missing or cut --------------------------------

def _missing_base(table, base, log):
    table.storage.delete(base)


def _truncated_base(table, base, log):
    table.storage.write(base, b"x" * 10)


def _missing_log(table, base, log):
    table.storage.delete(log)


def _truncated_log(table, base, log):
    table.storage.write(log, b"x")


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (_missing_base, rf"p/{F1}_0-1-0_{T1}.parquet is missing \(\.hoodie/{T1}\.deltacommit wrote it\)"),
        (_truncated_base, rf"p/{F1}_0-1-0_{T1}.parquet is truncated: 10 bytes, \.hoodie/{T1}\.deltacommit wrote 100"),
        (_missing_log, rf"p/\.{F1}_{T1}\.log\.1_0-1-0 is missing \(\.hoodie/{T2}\.deltacommit wrote it\)"),
        (_truncated_log, rf"p/\.{F1}_{T1}\.log\.1_0-1-0 is truncated: 1 bytes, \.hoodie/{T2}\.deltacommit wrote 50"),
    ],
    ids=lambda v: v.__name__.lstrip("_") if callable(v) else None,
)
def test_a_damaged_file_of_a_live_slice_is_an_error_naming_it(mor, damage, message):
    base = mor.base("p", F1, T1)
    mor.commit(DELTA_COMMIT, T1, [base])
    log = mor.log("p", F1, T1, 1)
    mor.commit(DELTA_COMMIT, T2, [log])
    mor.view()  # whole, it loads
    damage(mor, base, log)
    with pytest.raises(FormatError, match=message + "; the table needs it"):
        mor.view()


def test_a_log_named_as_a_committed_one_but_for_its_token_is_not_damage(mor):
    """On layout 1 two writers of one file group both name their log by the slice and its next
    version; only the write token (which carries the instant) tells them apart. The other
    writer's file, still being written or left by a crash, is not the committed one."""
    base = mor.base("p", F1, T1)
    mor.commit(DELTA_COMMIT, T1, [base])
    log = mor.log("p", F1, T1, 1)  # 50 bytes
    mor.commit(DELTA_COMMIT, T2, [log])
    growing = join_partition("p", log_file_name(F1, T1, 1, f"0-{T3}-0"))
    mor.storage.write(growing, b"x" * 5)
    mor.start(DELTA_COMMIT, T3, [growing])
    assert slices(mor.view()) == [("p", F1, T1, name(base), [name(log)])]
    # whichever of the two a listing names last (storage lists in no set order)
    timeline = Timeline.load(mor.storage)
    files = list_data_files(mor.storage, None)
    for listing in (sorted(files, key=lambda f: f.path), sorted(files, key=lambda f: f.path, reverse=True)):
        view = FileSystemView.load(mor.storage, timeline, None, listing)
        assert slices(view) == [("p", F1, T1, name(base), [name(log)])]


def test_an_empty_base_file_is_an_error(mor):
    base = mor.base("p", F1, T1, size=0)  # its writer recorded no size
    mor.commit(COMMIT, T1, [base])
    with pytest.raises(FormatError, match=rf"p/{F1}_0-1-0_{T1}.parquet is empty"):
        mor.view()


def test_a_missing_base_file_of_a_completed_compaction_is_an_error(mor):
    base = mor.base("p", F1, T1)
    mor.commit(DELTA_COMMIT, T1, [base])
    mor.plan_compaction(T2, CompactionOperation("p", F1, T1, name(base), ()))
    mor.run_compaction()  # whose base file is then lost
    with pytest.raises(FormatError, match=rf"base file of file group {F1} in partition 'p' is missing "
                                          rf"\(compaction \.hoodie/{T2}\.commit wrote it\)"):
        mor.view()


def test_files_of_older_slices_may_be_cleaned(mor):
    first, other = mor.base("p", F1, T1), mor.base("p", F2, T1)
    mor.commit(COMMIT, T1, [first, other])
    second = mor.base("p", F1, T2)
    mor.commit(COMMIT, T2, [second])
    mor.storage.delete(first)  # what Hudi's cleaner does
    view = mor.view()
    assert slices(view) == [("p", F1, T2, name(second), []), ("p", F2, T1, name(other), [])]
    assert list(view.file_groups()[0].slices) == [T2]


def test_loading_reads_only_the_commits_since_the_oldest_latest_base_file(mor, monkeypatch):
    """Older history adds nothing to what readers see, nor to the cost of loading the table."""
    for t in (T1, T2, T3):
        mor.commit(COMMIT, t, [mor.base("p", F1, t)])
    mor.commit(COMMIT, T4, [mor.base("p", F2, T4)])
    read = []
    real_read = Timeline.read
    monkeypatch.setattr(Timeline, "read",
                        lambda self, instant: read.append(instant.timestamp) or real_read(self, instant))
    assert [s.base_instant for s in mor.view().latest_slices()] == [T3, T4]
    assert read == [T3, T4]


def test_damage_outside_the_listed_partitions_is_not_checked(mor):
    a, b = mor.base("a", F1, T1), mor.base("b", F2, T1)
    mor.commit(COMMIT, T1, [a, b])
    mor.storage.delete(b)
    assert slices(mor.view(["a"])) == [("a", F1, T1, name(a), [])]
    with pytest.raises(FormatError, match=f"b/{F2}_0-1-0_{T1}.parquet is missing"):
        mor.view()
