"""The LSM timeline of timeline layout 2 (``timeline.lsm_timeline``): snapshots by manifest, a data file
read only once a manifest lists it, compaction of a full level into the next, and the cleaning of
snapshots and files no kept snapshot lists."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
from hudiql.errors import FormatError
from hudiql.io.storage import Storage
from hudiql.timeline import lsm_timeline as lsm
from hudiql.timeline.lsm_timeline import HistoryRow

FOLDER = ".hoodie/timeline/history"


def batch(n: int) -> list[HistoryRow]:
    """Two commits of archive run ``n``, with times that sort by run."""
    return [HistoryRow(f"2024010100{n:02d}00{i}00", f"2024010100{n:02d}00{i}50", "commit", f"meta {n}.{i}".encode(), None)
            for i in range(2)]


def test_ten_runs_compact_into_one_file_of_the_next_level(tmp_path):
    storage = Storage(str(tmp_path))
    names = [lsm.write(storage, FOLDER, batch(n)) for n in range(10)]
    assert [n.endswith("_0.parquet") for n in names] == [True] * 10
    lsm.compact_and_clean(storage, FOLDER)
    version, files = lsm.latest_manifest(storage, FOLDER)
    merged = f"{batch(0)[0].instant_time}_{batch(9)[1].instant_time}_1.parquet"
    assert version == 11 and [f.file_name for f in files] == [merged]
    assert [r.metadata for r in lsm.read(storage, FOLDER)] == [r.metadata for n in range(10) for r in batch(n)]
    history = tmp_path / FOLDER
    # Snapshots 8 to 11 are kept (three and the compaction's); the files they list stay, the others go.
    assert sorted(p.name for p in history.glob("manifest_*")) == ["manifest_10", "manifest_11", "manifest_8", "manifest_9"]
    kept = {f["fileName"] for v in (8, 9, 10, 11) for f in json.loads((history / f"manifest_{v}").read_text())["files"]}
    assert {p.name for p in history.glob("*.parquet")} == kept == {merged, *names}
    for n in range(10, 13):  # three more runs: no kept snapshot lists the merged files any more
        lsm.write(storage, FOLDER, batch(n))
        lsm.compact_and_clean(storage, FOLDER)
    assert sorted(p.name for p in history.glob("manifest_*")) == ["manifest_12", "manifest_13", "manifest_14"]
    assert {p.name for p in history.glob("*.parquet")} == {merged, *(f.file_name for f in lsm.latest_manifest(storage, FOLDER)[1])}
    assert len(lsm.read(storage, FOLDER)) == 26
    assert pq.read_schema(history / merged).field("version").nullable is False


def test_a_file_no_manifest_lists_is_not_read_and_a_lost_version_file_falls_back(tmp_path):
    storage = Storage(str(tmp_path))
    lsm.write(storage, FOLDER, batch(0))
    history = tmp_path / FOLDER
    (history / "9_9_0.parquet").write_bytes((history / lsm.data_file_name(batch(0)[0].instant_time,
                                                                          batch(0)[1].instant_time, 0)).read_bytes())
    assert [r.instant_time for r in lsm.read(storage, FOLDER)] == [r.instant_time for r in batch(0)]
    lsm.write(storage, FOLDER, batch(1))
    (history / "_version_").unlink()  # a crash between the manifest and the version file
    assert lsm.latest_manifest(storage, FOLDER)[0] == 2
    assert len(lsm.read(storage, FOLDER)) == 4
    assert lsm.write(storage, FOLDER, batch(1)) == lsm.data_file_name(batch(1)[0].instant_time, batch(1)[1].instant_time, 0)
    assert lsm.latest_manifest(storage, FOLDER)[0] == 2  # archived already: no new snapshot


def test_a_damaged_manifest_or_data_file_is_one_error_naming_it(tmp_path):
    storage = Storage(str(tmp_path))
    name = lsm.write(storage, FOLDER, batch(0))
    history = tmp_path / FOLDER
    (history / name).write_bytes(b"PAR1 cut short")
    with pytest.raises(FormatError, match=f"{name} is not an LSM timeline file"):
        lsm.read(storage, FOLDER)
    (history / "manifest_1").write_text("{not json")
    with pytest.raises(FormatError, match="manifest_1 is not an LSM timeline manifest"):
        lsm.read(storage, FOLDER)
