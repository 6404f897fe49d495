"""Cleaning, as Hudi's cleaner cleans: the policies, replaced file groups, what is always kept,
clean instants in Hudi's Avro format, a crashed clean, and the CALL procedures.

Every table here is read after cleaning by hudiql and by the official reader (PyPI ``hudi``).
"""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
from hudiql.errors import OptionError, SqlError
from hudiql.io.storage import Storage
from hudiql.services import clean
from hudiql.timeline.clean_plan import decode_metadata, decode_plan
from hudiql.layout import parse_data_file_name
from hudiql.timeline.savepoint import encode_savepoint
from hudiql.table.table import HudiTable

from conftest import HUDI_TABLES, hudiql_rows, instants, official_rows, unzip


def slices(table: Path) -> dict[str, list[str]]:
    """Per file id, the instant times of its slices on storage (base files and log files)."""
    out: dict[str, set[str]] = {}
    for path in table.rglob("*"):
        parsed = parse_data_file_name(path.name) if path.is_file() else None
        if parsed is not None and ".hoodie" not in path.relative_to(table).parts:
            out.setdefault(parsed.file_id, set()).add(parsed.instant_time)
    return {k: sorted(v) for k, v in out.items()}


def files(table: Path) -> set[str]:
    return {p.name for p in table.rglob("*") if p.is_file()}


def clean_metadata(table: Path) -> list:
    return [decode_metadata((table / ".hoodie" / f"{t}.clean").read_bytes()) for t in instants(table, "clean")]


def deleted_names(table: Path) -> set[str]:
    return {name for meta in clean_metadata(table) for names in meta.deleted.values() for name in names}


def assert_reads(session, table: Path, expected: list[tuple]) -> None:
    assert hudiql_rows(session, "SELECT id, v, dt FROM t") == expected
    assert official_rows(table, ["id", "v", "dt"]) == expected


def test_keep_latest_commits_keeps_the_views_of_the_retained_commits_cow(session, warehouse):
    """retained=2: a file group rewritten by every commit keeps its slices of the last two commits
    and the newest one before them; a clean runs after each commit once there is something to delete."""
    session.sql("CREATE TABLE t (id INT, v INT, dt STRING) USING hudi PARTITIONED BY (dt) "
                "TBLPROPERTIES (primaryKey = 'id', 'hoodie.cleaner.commits.retained' = '2')")
    table = warehouse / "t"
    session.sql("INSERT INTO t VALUES (1, 0, 'a'), (2, 0, 'b')")
    for _ in range(5):
        session.sql("UPDATE t SET v = v + 1 WHERE id = 1")
    commits = instants(table, "commit")
    assert len(commits) == 6
    by_partition = {p.name: slices(p) for p in table.iterdir() if p.name.startswith("dt=")}
    [group_a] = by_partition["dt=a"].values()
    [group_b] = by_partition["dt=b"].values()
    assert group_a == commits[-3:]  # the latest, the one retained (c5) and the newest before it (c4)
    assert group_b == commits[:1]  # never rewritten: its only slice stays
    # The kept slices are whole: each holds the row as its commit left it (a query as of c4 reads v=3).
    kept = sorted((table / "dt=a").glob("*.parquet"), key=lambda p: parse_data_file_name(p.name).instant_time)
    assert [pq.read_table(p).column("v").to_pylist() for p in kept] == [[3], [4], [5]]
    # Cleans after commits 4, 5 and 6 (after commit 3 nothing was old enough: no instant).
    cleans = clean_metadata(table)
    assert [m.earliest_commit_to_retain for m in cleans] == commits[2:5]
    assert [sorted(parse_data_file_name(n).instant_time for n in m.deleted["dt=a"]) for m in cleans] == [[c] for c in commits[:3]]
    assert {m.policy for m in cleans} == {"KEEP_LATEST_COMMITS"}
    requested = decode_plan((table / ".hoodie" / f"{instants(table, 'clean.requested')[0]}.clean.requested").read_bytes())
    assert requested.earliest_commit_to_retain == commits[2] and requested.last_completed_commit == commits[3]
    assert [Path(p).name for p in requested.files["dt=a"]] == cleans[0].deleted["dt=a"]
    assert_reads(session, table, [(1, 5, "a"), (2, 0, "b")])


def test_keep_latest_commits_on_merge_on_read_with_compaction(session, warehouse):
    """On a MOR table the slices compaction leaves behind go, with their log files; the latest
    slice (base file and logs) never does."""
    session.sql("CREATE TABLE t (id INT, v INT, dt STRING) USING hudi TBLPROPERTIES (primaryKey = 'id', type = 'mor', "
                "'hoodie.cleaner.commits.retained' = '1', 'hoodie.compact.inline.max.delta.commits' = '2')")
    table = warehouse / "t"
    session.sql("INSERT INTO t VALUES (1, 0, 'a'), (2, 0, 'b')")
    for i in range(1, 7):
        session.sql(f"UPDATE t SET v = {i} WHERE id = 1")
    [group] = slices(table).values()
    compactions = instants(table, "commit")
    assert len(compactions) == 3 and set(group) <= {*compactions, *instants(table, "deltacommit")}
    assert len(group) <= 3 and group[-1] >= compactions[-1]
    deleted = deleted_names(table)
    assert deleted and not deleted & files(table)
    assert any(".log." in name for name in deleted) and any(name.endswith(".parquet") for name in deleted)
    assert_reads(session, table, [(1, 6, "a"), (2, 0, "b")])


def test_keep_latest_file_versions_and_automatic_off(session, warehouse):
    session.sql("CREATE TABLE t (id INT, v INT, dt STRING) USING hudi TBLPROPERTIES (primaryKey = 'id', "
                "'hoodie.cleaner.policy' = 'KEEP_LATEST_FILE_VERSIONS', 'hoodie.cleaner.fileversions.retained' = '2', "
                "'hoodie.clean.automatic' = 'false')")
    table = warehouse / "t"
    session.sql("INSERT INTO t VALUES (1, 0, 'a')")
    for i in range(1, 4):
        session.sql(f"UPDATE t SET v = {i} WHERE id = 1")
    assert [len(v) for v in slices(table).values()] == [4] and instants(table, "clean") == []
    session.sql("ALTER TABLE t UNSET TBLPROPERTIES ('hoodie.clean.automatic')")
    session.sql("UPDATE t SET v = 4 WHERE id = 1")
    commits = instants(table, "commit")
    assert list(slices(table).values()) == [commits[-2:]]
    [meta] = clean_metadata(table)
    assert meta.policy == "KEEP_LATEST_FILE_VERSIONS" and meta.earliest_commit_to_retain == "" and meta.total_files_deleted == 3
    assert_reads(session, table, [(1, 4, "a")])


def test_replaced_file_groups_are_cleaned_once_older_than_the_retained_commits(session, warehouse):
    session.sql("CREATE TABLE t (id INT, v INT, dt STRING) USING hudi PARTITIONED BY (dt) "
                "TBLPROPERTIES (primaryKey = 'id', 'hoodie.cleaner.commits.retained' = '2')")
    table = warehouse / "t"
    session.sql("INSERT INTO t VALUES (1, 0, 'a'), (2, 0, 'b'), (3, 0, 'c')")
    before = {p.name: slices(p) for p in table.iterdir() if p.name.startswith("dt=")}
    session.sql("INSERT OVERWRITE t PARTITION (dt = 'a') SELECT 4, 1")
    session.sql("ALTER TABLE t DROP PARTITION (dt = 'b')")
    assert all(any((table / p).glob(f"{fid}*")) for p, groups in before.items() for fid in groups)
    session.sql("INSERT INTO t VALUES (5, 0, 'c')")  # the overwrite is older than the retained commits now
    assert not any((table / "dt=a").glob(f"{next(iter(before['dt=a']))}*"))
    assert any((table / "dt=b").glob("*.parquet"))
    session.sql("INSERT INTO t VALUES (6, 0, 'c')")
    assert not any((table / "dt=b").glob("*.parquet"))  # the dropped partition's files are gone
    assert hudiql_rows(session, "SHOW PARTITIONS t") == [("dt=a",), ("dt=c",)]
    assert_reads(session, table, [(3, 0, "c"), (4, 1, "a"), (5, 0, "c"), (6, 0, "c")])


def test_cleaning_a_table_apache_hudi_wrote_by_hours_and_by_file_versions(session, tmp_path):
    """Hudi's sample table (commits of 2024, then INSERT OVERWRITE TABLE): a commit of today is
    the earliest of the last hour, so the replaced file groups go and the current one keeps its
    slice from before today's commit; then one file version each."""
    table = unzip(HUDI_TABLES / "sample_table" / "cow" / "v6_simplekeygen_nonhivestyle_overwritetable.zip", tmp_path)
    session.sql(f"CREATE TABLE t USING hudi LOCATION '{table}'")
    session.sql("SET hoodie.clean.automatic = false")
    session.sql("UPDATE t SET name = 'Dee' WHERE id = 4")
    [today] = [t for t in instants(table, "commit") if not t.startswith("2024")]
    assert hudiql_rows(session, "CALL run_clean(table => 't')") == []  # 4 commits, 10 retained: nothing to do
    [row] = session.sql("CALL run_clean(table => 't', clean_policy => 'KEEP_LATEST_BY_HOURS', hours_retained => 1)").collect()
    assert row.earliest_commit_to_retain == today and row.total_files_deleted == 4 and row.version == 2
    # The replaced file groups went; the live one keeps its slice from before today's commit.
    kept = sorted(str(p.relative_to(table)) for p in table.rglob("*.parquet"))
    # (a file's name holds the Spark task that wrote it, so the paths sort in no fixed order)
    assert sorted((k[:11], k.endswith(f"_{today}.parquet")) for k in kept) == [("30/ebcb261d", False), ("30/ebcb261d", True)]
    assert hudiql_rows(session, "CALL run_clean(table => 't', clean_policy => 'KEEP_LATEST_FILE_VERSIONS')") == []
    session.sql("UPDATE t SET name = 'Di' WHERE id = 4")  # a clean is due again (hoodie.clean.max.commits=1)
    session.sql("CALL run_clean(table => 't', options => 'hoodie.cleaner.policy=KEEP_LATEST_FILE_VERSIONS,"
                "hoodie.cleaner.fileversions.retained=1')")
    [latest] = instants(table, "commit")[-1:]
    assert [p.name.endswith(f"_{latest}.parquet") for p in table.rglob("*.parquet")] == [True]
    expected = [(4, "Di", False)]
    assert hudiql_rows(session, "SELECT id, name, isActive FROM t") == expected
    assert official_rows(table, ["id", "name", "isActive"]) == expected
    shows = session.sql("CALL show_cleans(table => 't')").collect()
    assert [r.total_files_deleted for r in shows] == [2, 4] and shows[0].action == "clean"
    assert shows[0].clean_time > shows[1].clean_time and shows[0].state_transition_time is not None


def test_savepointed_files_are_kept(session, warehouse):
    session.sql("CREATE TABLE t (id INT, v INT, dt STRING) USING hudi TBLPROPERTIES (primaryKey = 'id', "
                "'hoodie.cleaner.policy' = 'KEEP_LATEST_FILE_VERSIONS', 'hoodie.cleaner.fileversions.retained' = '1')")
    table = warehouse / "t"
    session.sql("INSERT INTO t VALUES (1, 0, 'a')")
    [first] = instants(table, "commit")
    [base] = [p.name for p in table.glob("*.parquet")]
    # Hudi's savepoint of the first commit: <commit time>.savepoint naming its base files.
    (table / ".hoodie" / f"{first}.savepoint.inflight").write_bytes(b"")
    (table / ".hoodie" / f"{first}.savepoint").write_bytes(encode_savepoint("admin", 0, "keep", {"": [base]}))
    for i in range(1, 4):
        session.sql(f"UPDATE t SET v = {i} WHERE id = 1")
    commits = instants(table, "commit")
    assert list(slices(table).values()) == [[first, commits[-1]]]  # the savepointed slice and the latest
    assert_reads(session, table, [(1, 3, "a")])


def test_a_crashed_clean_leaves_the_table_readable_and_the_next_clean_finishes_it(session, warehouse):
    session.sql("CREATE TABLE t (id INT, v INT, dt STRING) USING hudi TBLPROPERTIES (primaryKey = 'id', "
                "'hoodie.cleaner.policy' = 'KEEP_LATEST_FILE_VERSIONS', 'hoodie.cleaner.fileversions.retained' = '1', "
                "'hoodie.clean.automatic' = 'false')")
    table = warehouse / "t"
    session.sql("INSERT INTO t VALUES (1, 0, 'a'), (2, 0, 'b')")
    for i in range(1, 4):
        session.sql(f"UPDATE t SET v = {i}")
    hudi_table = HudiTable.load(str(table))
    requested = clean.schedule(hudi_table)
    # The cleaner died after deleting one of the planned files.
    plan = decode_plan((table / ".hoodie" / f"{requested.timestamp}.clean.requested").read_bytes())
    [planned] = plan.files.values()
    assert len(planned) == 3
    (table / ".hoodie" / f"{requested.timestamp}.clean.inflight").write_bytes(b"")
    Storage(str(table)).delete(Path(planned[0]).name)
    assert_reads(session, table, [(1, 3, "a"), (2, 3, "b")])
    session.sql("INSERT INTO t VALUES (3, 0, 'c')")  # no automatic clean, but a run finishes the pending one
    assert instants(table, "clean") == []
    session.sql("CALL run_clean(table => 't', schedule_in_line => false)")
    [meta] = clean_metadata(table)
    assert sorted(meta.deleted[""]) == sorted(Path(p).name for p in planned)
    assert not {Path(p).name for p in planned} & files(table)
    assert_reads(session, table, [(1, 3, "a"), (2, 3, "b"), (3, 0, "c")])


def test_procedure_arguments_and_retention_settings_are_checked(session, warehouse):
    session.sql("CREATE TABLE t (id INT, v INT, dt STRING) USING hudi TBLPROPERTIES (primaryKey = 'id')")
    with pytest.raises(SqlError, match="CALL run_clean takes no argument 'retain'; its arguments are table, skip_locking"):
        session.sql("CALL run_clean(table => 't', retain => 1)")
    with pytest.raises(SqlError, match="CALL run_clean: retain_commits => many is not a whole number"):
        session.sql("CALL run_clean(table => 't', retain_commits => 'many')")
    with pytest.raises(SqlError, match="skip_locking => true is not supported"):
        session.sql("CALL run_clean(table => 't', skip_locking => true)")
    with pytest.raises(OptionError, match="hoodie.keep.min.commits=20 must be greater than hoodie.cleaner.commits.retained=30"):
        session.sql("CALL run_clean(table => 't', retain_commits => 30)")
    with pytest.raises(OptionError, match="hoodie.keep.max.commits=30 must be greater than hoodie.keep.min.commits=40"):
        session.sql("ALTER TABLE t SET TBLPROPERTIES ('hoodie.keep.min.commits' = '40')")
    session.sql("ALTER TABLE t SET TBLPROPERTIES ('hoodie.keep.max.commits' = '50', 'hoodie.keep.min.commits' = '40', "
                "'hoodie.cleaner.commits.retained' = '30')")
    session.sql("SET hoodie.keep.min.commits = 25")  # the session's setting and the table's contradict: no write starts
    with pytest.raises(OptionError, match="hoodie.keep.min.commits=25 must be greater than hoodie.cleaner.commits.retained=30"):
        session.sql("INSERT INTO t VALUES (1, 0, 'a')")
    assert instants(warehouse / "t", "commit.requested") == []


def test_apache_hudi_run_clean_sequences(session, warehouse):
    """The statements of Apache Hudi's TestCleanProcedure, with the results it expects (its
    ``show_fsview_all`` counts are the base files on storage here)."""
    def base_files(name: str) -> int:
        return len(list((warehouse / name).glob("*.parquet")))

    def clean(name: str, args: str = "") -> list[int]:
        return [r.total_files_deleted for r in session.sql(f"CALL run_clean(table => '{name}'{args})").collect()]

    session.sql("SET hoodie.clean.automatic = false")
    session.sql("SET hoodie.parquet.max.file.size = 10000")
    session.sql("CREATE TABLE h0 (id INT, name STRING, price DOUBLE, ts BIGINT) USING hudi "
                "TBLPROPERTIES (primaryKey = 'id', type = 'cow', orderingFields = 'ts')")
    session.sql("INSERT INTO h0 VALUES (1, 'a1', 10, 1000)")
    for price in (11, 12, 13):
        session.sql(f"UPDATE h0 SET price = {price} WHERE id = 1")
    assert clean("h0", ", retain_commits => 1") == [2] and base_files("h0") == 2
    assert hudiql_rows(session, "SELECT id, name, price, ts FROM h0") == [(1, "a1", 13.0, 1000)]
    assert clean("h0", ", retain_commits => 1") == []
    session.sql("UPDATE h0 SET price = 14 WHERE id = 1")
    assert clean("h0", ", clean_policy => 'KEEP_LATEST_FILE_VERSIONS', file_versions_retained => 3") == []
    assert base_files("h0") == 3
    assert clean("h0", ", clean_policy => 'KEEP_LATEST_FILE_VERSIONS', file_versions_retained => 1") == [2]
    assert base_files("h0") == 1
    assert hudiql_rows(session, "SELECT id, name, price, ts FROM h0") == [(1, "a1", 14.0, 1000)]
    session.sql("UPDATE h0 SET price = 15 WHERE id = 1")
    versions_1 = ", clean_policy => 'KEEP_LATEST_FILE_VERSIONS', file_versions_retained => 1"
    assert clean("h0", ", trigger_max_commits => 2" + versions_1) == [] and base_files("h0") == 2  # 1 commit since
    assert clean("h0", ", trigger_max_commits => 1" + versions_1) == [1] and base_files("h0") == 1
    assert official_rows(warehouse / "h0", ["id", "name", "price", "ts"]) == [(1, "a1", 15.0, 1000)]

    session.sql("SET hoodie.parquet.max.file.size = 125829120")
    # Hudi 1.x spells the options hoodie.clean.*: as table properties, and in options => '...'.
    session.sql("CREATE TABLE h1 (id INT, name STRING, price DOUBLE, ts BIGINT) USING hudi TBLPROPERTIES (primaryKey = 'id', "
                "type = 'cow', orderingFields = 'ts', hoodie.clean.policy = 'KEEP_LATEST_COMMITS', hoodie.clean.commits.retained = '2')")
    session.sql("CREATE TABLE h2 (id INT, name STRING, price DOUBLE, ts BIGINT) USING hudi "
                "TBLPROPERTIES (primaryKey = 'id', type = 'cow', orderingFields = 'ts')")
    for name in ("h1", "h2"):
        for i in range(1, 5):
            session.sql(f"INSERT INTO {name} VALUES ({i}, 'a{i}', 10, {1000 + i})")
    assert clean("h1") == [1] and base_files("h1") == 3
    assert clean("h2", ", options => 'hoodie.clean.policy=KEEP_LATEST_COMMITS, hoodie.clean.commits.retained=2'") == [1]
    assert base_files("h2") == 3
