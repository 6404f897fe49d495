"""The partition stats index (``index.partition_stats``, the metadata table's ``partition_stats``
partition): read as Hudi 1.1 writes it, kept beside column stats on partitioned tables by every
write, never narrower than a partition's rows (Hudi's readers prune the partitions it has no range
of), and used by queries to skip partitions."""

from __future__ import annotations

from conftest import HUDI_TABLES, VERSIONED_COLUMNS, VERSIONED_QUERY, damage, hudiql_rows, official_rows, unzip, versioned_table
from hudiql.config.table_config import TableConfig
from hudiql.formats import hfile
from hudiql.index import column_stats, partition_stats
from hudiql.io.storage import Storage
from hudiql.metadata.column_stats import decode_range, partition_stats_key
from hudiql.metadata.records import read_datum
from hudiql.sql.statements import TableName
from hudiql.table.table import HudiTable

COLUMN_STATS = "'hoodie.metadata.index.column.stats.enable'='true'"
SAMPLE = HUDI_TABLES / "sample_table" / "cow" / "v9_txns_simple_meta.zip"


def latest_ranges(table: HudiTable) -> dict[str, dict]:
    """Each partition's range per column, widened over the column stats of its latest slices' files."""
    files = {name: s.partition_path for s in table.file_system_view().latest_slices()
             for name in ([s.base_file] if s.base_file else []) + list(s.log_files)}
    by_file = column_stats.file_ranges(table, column_stats.columns(table), sorted(set(files.values())))
    out: dict[str, dict] = {}
    for name, partition in files.items():
        for column, r in by_file[name].items():
            older = out.setdefault(partition, {}).get(column)
            out[partition][column] = older.widened(r) if older else r
    return out


def test_hudis_partition_stats_are_the_ranges_of_its_partitions(tmp_path):
    """Every partition_stats record Hudi 1.1 wrote: type 6, keyed by the hashed column and
    partition; merged over the partition's logs, each range is the one hudiql widens from the
    column stats of the partition's latest files."""
    table_path = unzip(SAMPLE, tmp_path)
    table = HudiTable.load(str(table_path))
    [path] = (table_path / ".hoodie" / "metadata" / "partition_stats").glob("partition-stats-0000-0_*.hfile")
    data = hfile.HFile(path.read_bytes(), str(path))
    schema = data.file_info["schema"].decode()
    for key, value in data.entries():
        assert read_datum(value, schema)["type"] == 6
        r = decode_range(value, schema, column_stats.kinds(table))
        assert key.decode() == partition_stats_key(r.column, r.name) and r.tight
    expected = latest_ranges(table)
    merged = partition_stats.partition_ranges(table, column_stats.columns(table))
    assert {(p, c): (r.min, r.max) for p, rs in merged.items() for c, r in rs.items()} == \
        {(p, c): (r.min, r.max) for p, rs in expected.items() for c, r in rs.items()}
    assert len(merged) == 3 and all(len(rs) == 16 for rs in merged.values())


def assert_partitions_covered(session) -> None:
    """Each partition with rows has a range of every indexed column that holds all its values."""
    table = session.table(TableName(None, "t"))
    ranges = partition_stats.partition_ranges(table, ["id", "name", "ts", "_hoodie_record_key"])
    rows = session.sql("SELECT dt, min(id), max(id), min(name), max(name), min(ts), max(ts), "
                       "min(_hoodie_record_key), max(_hoodie_record_key) FROM t GROUP BY dt").collect()
    for dt, *bounds in rows:
        partition = f"dt={dt}"
        for i, column in enumerate(["id", "name", "ts", "_hoodie_record_key"]):
            r = ranges[partition][column]
            low, high = bounds[2 * i], bounds[2 * i + 1]
            assert low is None or (r.min <= low and r.max >= high), (partition, column, r, low, high)
    assert {f"dt={r[0]}" for r in rows} <= set(ranges)


def test_every_write_keeps_each_partitions_range(session):
    """Inserts, upserts, updates that move values out of a partition's range, deletes, a MERGE
    into a new partition, an overwrite, a dropped partition, compactions and a clean: after each,
    every partition's range holds its rows; a dropped partition has none; Hudi's reader reads the
    rows hudiql does."""
    table_path = versioned_table(session, 9, "mor", COLUMN_STATS, "'hoodie.metadata.compact.max.delta.commits'='3'",
                                 "'hoodie.cleaner.commits.retained'='1'")
    session.sql("INSERT INTO t VALUES (1, 'a', 1, 'd1'), (2, 'b', 5, 'd1'), (3, 'c', 1, 'd2')")
    assert TableConfig.load(Storage(str(table_path))).metadata_partitions == ["column_stats", "files", "partition_stats"]
    assert_partitions_covered(session)
    session.sql("SET hoodie.spark.sql.insert.into.operation=upsert")
    for statement in [
        "INSERT INTO t VALUES (1, 'a2', 7, 'd1'), (4, 'd', 2, 'd2')",
        "UPDATE t SET name = 'zz', ts = 90 WHERE id = 2",
        "DELETE FROM t WHERE id = 3",
        "MERGE INTO t USING (SELECT 5 AS id, 'e' AS name, 50L AS ts, 'd3' AS dt) s ON t.id = s.id "
        "WHEN NOT MATCHED THEN INSERT *",
        "CALL run_compaction(op => 'run', table => 't')",
        "INSERT OVERWRITE t PARTITION (dt = 'd2') SELECT 6, 'f', 60",
        "ALTER TABLE t DROP PARTITION (dt = 'd3')",
        "CALL run_clean(table => 't')",
    ]:
        session.sql(statement)
        assert_partitions_covered(session)
    table = session.table(TableName(None, "t"))
    assert "dt=d3" not in partition_stats.partition_ranges(table, ["id"])
    assert hudiql_rows(session, VERSIONED_QUERY) == official_rows(table_path, VERSIONED_COLUMNS) == [
        (1, "a2", 7, "d1"), (2, "zz", 90, "d1"), (6, "f", 60, "d2")]


def test_a_query_skips_partitions_by_their_ranges(session, monkeypatch):
    """A filter on a non-partition column reads the column stats of the partitions whose ranges
    may match only, and none of the others' files; with the option false, a write removes the
    index; a non-partitioned table keeps none."""
    table_path = versioned_table(session, 9, "cow", COLUMN_STATS, "'hoodie.parquet.small.file.limit'='0'")
    session.sql("INSERT INTO t VALUES (1, 'a', 1, 'd1'), (2, 'b', 2, 'd1')")
    session.sql("INSERT INTO t VALUES (3, 'c', 10, 'd2'), (4, 'd', 12, 'd2')")
    session.sql("INSERT INTO t VALUES (5, 'e', 20, 'd3')")
    damaged = next((table_path / "dt=d2").glob("*.parquet"))
    content = damaged.read_bytes()
    damage(damaged)
    asked = []
    file_ranges = column_stats.file_ranges
    monkeypatch.setattr(column_stats, "file_ranges",
                        lambda table, columns, partitions: asked.append(list(partitions)) or file_ranges(table, columns, partitions))
    assert hudiql_rows(session, "SELECT id FROM t WHERE ts >= 15 OR name = 'a' ORDER BY id") == [(1,), (5,)]
    assert asked == [["dt=d1", "dt=d3"]]
    assert hudiql_rows(session, "SELECT id FROM t WHERE ts > 100") == []
    assert asked == [["dt=d1", "dt=d3"]]  # every partition pruned: no column stats read
    damaged.write_bytes(content)
    session.sql("ALTER TABLE t SET TBLPROPERTIES ('hoodie.metadata.index.partition.stats.enable'='false')")
    session.sql("INSERT INTO t VALUES (7, 'g', 1, 'd1')")
    assert TableConfig.load(Storage(str(table_path))).metadata_partitions == ["column_stats", "files"]

    session.sql("CREATE TABLE n (id INT, ts BIGINT) USING hudi TBLPROPERTIES (primaryKey='id', "
                f"'hoodie.write.table.version'='9', {COLUMN_STATS})")
    session.sql("INSERT INTO n VALUES (1, 1)")
    n_path = session.table(TableName(None, "n")).base_uri.removeprefix("file://")
    assert TableConfig.load(Storage(n_path)).metadata_partitions == ["column_stats", "files"]


def test_a_hudi_table_keeps_its_indexes_and_their_ranges(session, tmp_path):
    """A Hudi 1.1 table with every index, written: its metadata table (whose files name Hudi's
    schema text, which readers expect in every file of a partition: hudiql's name it too) is
    appended to, every index kept; the written partition's range holds the new row, and a query
    that the new row alone matches reads one partition; Hudi's reader reads the rows."""
    table_path = unzip(SAMPLE, tmp_path)
    session.sql(f"CREATE TABLE t USING hudi LOCATION '{table_path}'")
    session.sql("INSERT INTO t SELECT 'TXN-100', 'ACC-Z', 1700900000100L, TIMESTAMP '2024-02-01 10:00:00', "
                "DATE '2024-02-01', 10.00, 'USD', 'debit', 'Corner Shop', false, 0.00, '{}', 'us'")
    assert TableConfig.load(Storage(str(table_path))).metadata_partitions == ["column_stats", "files", "partition_stats", "record_index", "secondary_index_merchant_idx", "secondary_index_txn_date_idx"]
    table = session.table(TableName(None, "t"))
    us = partition_stats.partition_ranges(table, ["txn_date"])["region=us"]["txn_date"]
    assert us.max == 19754  # 2024-02-01, as epoch days
    assert ("TXN-100",) in official_rows(table_path, ["txn_id"])
    for region in ("eu", "apac"):
        damage(next((table_path / f"region={region}").glob("*.parquet")))
    assert hudiql_rows(session, "SELECT txn_id FROM t WHERE txn_date >= DATE '2024-02-01'") == [("TXN-100",)]
