"""Global indexes (GLOBAL_SIMPLE, GLOBAL_BLOOM, and the record index): a key is looked up in every
partition, so an upsert of a key stored in another partition moves it there (delete + insert) or
updates it where it is, as the index's ``*.update.partition.path`` says (Hudi's
``HoodieIndexUtils``); the official reader agrees on every table written.
"""

from __future__ import annotations

import pytest

from conftest import hudiql_rows, official_rows, versioned_table

COLUMNS = ["id", "name", "ts", "dt"]
QUERY = "SELECT id, name, ts, dt FROM t"


def _table(session, kind: str, index: str, *props: str, ordering: bool = True) -> None:
    options = ["primaryKey='id'", f"type='{kind}'", f"'hoodie.index.type'='{index}'", *props]
    if ordering:
        options.append("preCombineField='ts'")
    session.sql(f"CREATE TABLE t (id INT, name STRING, ts INT, dt STRING) USING hudi PARTITIONED BY (dt) "
                f"TBLPROPERTIES ({', '.join(options)})")
    session.sql("SET hoodie.spark.sql.insert.into.operation=upsert")


@pytest.mark.parametrize("kind", ["cow", "mor"])
@pytest.mark.parametrize("index", ["GLOBAL_SIMPLE", "GLOBAL_BLOOM"])
def test_an_upsert_moves_a_key_to_its_new_partition(session, warehouse, kind, index):
    _table(session, kind, index)
    session.sql("INSERT INTO t VALUES (1, 'a', 1, 'd1'), (2, 'b', 1, 'd1'), (3, 'c', 1, 'd2')")
    session.sql("INSERT INTO t VALUES (1, 'a2', 2, 'd2'), (3, 'c2', 2, 'd2'), (4, 'e', 1, 'd3')")
    expected = [(1, "a2", 2, "d2"), (2, "b", 1, "d1"), (3, "c2", 2, "d2"), (4, "e", 1, "d3")]
    assert hudiql_rows(session, QUERY) == expected
    assert official_rows(warehouse / "t", COLUMNS) == expected
    # the key left its old partition: a query of that partition does not see it
    assert hudiql_rows(session, "SELECT id FROM t WHERE dt = 'd1'") == [(2,)]
    # rows of one key in several partitions of one statement combine to one (the greatest ts)
    session.sql("INSERT INTO t VALUES (2, 'x', 5, 'd3'), (2, 'y', 3, 'd1')")
    assert hudiql_rows(session, "SELECT id, name, dt FROM t WHERE id = 2") == [(2, "x", "d3")]


@pytest.mark.parametrize("kind", ["cow", "mor"])
@pytest.mark.parametrize("index", ["GLOBAL_SIMPLE", "GLOBAL_BLOOM"])
def test_an_older_row_does_not_move_a_key(session, warehouse, kind, index):
    """The incoming row is merged with the stored one first: a lower ordering value loses, and the
    stored row stays where it is."""
    _table(session, kind, index)
    session.sql("INSERT INTO t VALUES (1, 'a', 5, 'd1')")
    session.sql("INSERT INTO t VALUES (1, 'old', 2, 'd2')")
    assert hudiql_rows(session, QUERY) == official_rows(warehouse / "t", COLUMNS) == [(1, "a", 5, "d1")]


@pytest.mark.parametrize("kind", ["cow", "mor"])
def test_without_update_partition_path_a_key_is_updated_where_it_is(session, warehouse, kind):
    """``hoodie.simple.index.update.partition.path=false``: the row stays in its partition, taking
    the incoming values (its partition column too, as in Hudi)."""
    _table(session, kind, "GLOBAL_SIMPLE", "'hoodie.simple.index.update.partition.path'='false'")
    session.sql("INSERT INTO t VALUES (1, 'a', 1, 'd1')")
    session.sql("INSERT INTO t VALUES (1, 'a2', 2, 'd2')")
    assert hudiql_rows(session, "SELECT id, name, ts, _hoodie_partition_path FROM t") == [(1, "a2", 2, "dt=d1")]
    assert official_rows(warehouse / "t", ["id", "name", "_hoodie_partition_path"]) == [(1, "a2", "dt=d1")]
    assert not list((warehouse / "t" / "dt=d2").glob("*.parquet"))


@pytest.mark.parametrize("kind", ["cow", "mor"])
def test_a_delete_finds_its_key_in_any_partition(session, warehouse, kind):
    """A ``_hoodie_is_deleted`` row deletes its key where it is stored, whatever its partition."""
    session.sql(f"CREATE TABLE t (id INT, name STRING, ts INT, _hoodie_is_deleted BOOLEAN, dt STRING) USING hudi "
                f"PARTITIONED BY (dt) TBLPROPERTIES (primaryKey='id', preCombineField='ts', type='{kind}', "
                "'hoodie.index.type'='GLOBAL_BLOOM')")
    session.sql("SET hoodie.spark.sql.insert.into.operation=upsert")
    session.sql("INSERT INTO t VALUES (1, 'a', 1, false, 'd1'), (2, 'b', 1, false, 'd1')")
    session.sql("INSERT INTO t VALUES (1, 'a', 2, true, 'd9')")
    assert hudiql_rows(session, "SELECT id, dt FROM t") == official_rows(warehouse / "t", ["id", "dt"]) == [(2, "d1")]


@pytest.mark.parametrize("kind", ["cow", "mor"])
def test_merge_and_update_follow_the_global_index(session, warehouse, kind):
    """MERGE ON the key and partition (a source key stored in another partition is found there) and
    UPDATE of the partition column: moved by default, kept in place with update.partition.path=false."""
    _table(session, kind, "GLOBAL_SIMPLE")
    session.sql("INSERT INTO t VALUES (1, 'a', 1, 'd1'), (2, 'b', 1, 'd1')")
    session.sql("MERGE INTO t USING (SELECT 1 AS id, 'm' AS name, 3 AS ts, 'd2' AS dt) s "
                "ON t.id = s.id AND t.dt = s.dt WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
    expected = [(1, "m", 3, "d2"), (2, "b", 1, "d1")]
    assert hudiql_rows(session, QUERY) == official_rows(warehouse / "t", COLUMNS) == expected
    session.sql("SET hoodie.simple.index.update.partition.path=false")
    session.sql("UPDATE t SET dt = 'd3', ts = 4 WHERE id = 2")
    assert hudiql_rows(session, "SELECT id, ts, dt, _hoodie_partition_path FROM t WHERE id = 2") == [(2, 4, "d3", "dt=d1")]
    assert official_rows(warehouse / "t", COLUMNS) == [(1, "m", 3, "d2"), (2, "b", 4, "d3")]


def test_a_key_stored_twice_is_kept_once(session, warehouse):
    """Inserts look nothing up (as in Hudi), so a key may be stored in two partitions; an upsert of
    it keeps the copy in its own partition and deletes the other."""
    _table(session, "cow", "GLOBAL_SIMPLE")
    session.sql("SET hoodie.spark.sql.insert.into.operation=insert")
    session.sql("INSERT INTO t VALUES (1, 'a', 1, 'd1')")
    session.sql("INSERT INTO t VALUES (1, 'b', 1, 'd2')")
    assert len(hudiql_rows(session, QUERY)) == 2
    session.sql("SET hoodie.spark.sql.insert.into.operation=upsert")
    session.sql("INSERT INTO t VALUES (1, 'c', 2, 'd2')")
    assert hudiql_rows(session, QUERY) == official_rows(warehouse / "t", COLUMNS) == [(1, "c", 2, "d2")]


@pytest.mark.parametrize("moves", [False, True])
def test_the_record_index_moves_keys_as_asked(session, moves):
    """The record index is global: by default (``hoodie.record.index.update.partition.path=false``)
    an upsert updates a key where it is stored; with true it moves it."""
    table = versioned_table(session, 9, "cow", "'hoodie.index.type'='RECORD_INDEX'",
                            f"'hoodie.record.index.update.partition.path'='{str(moves).lower()}'")
    session.sql("INSERT INTO t VALUES (1, 'a', 1, 'd1')")
    session.sql("SET hoodie.spark.sql.insert.into.operation=upsert")
    session.sql("INSERT INTO t VALUES (1, 'moved', 2, 'd2')")
    where = "dt=d2" if moves else "dt=d1"
    assert hudiql_rows(session, "SELECT id, name, _hoodie_partition_path FROM t") == [(1, "moved", where)]
    assert official_rows(table, ["id", "name", "_hoodie_partition_path"]) == [(1, "moved", where)]
    # the index follows the key: a later update finds it at once
    session.sql("INSERT INTO t VALUES (1, 'again', 3, 'd2')")
    assert hudiql_rows(session, "SELECT name, _hoodie_partition_path FROM t") == [("again", where)]


def test_a_table_without_meta_fields_and_the_data_source_follow_the_global_index(session, spark, warehouse):
    """GLOBAL_SIMPLE on a table without meta fields derives the stored keys; a data source delete
    and the drop dup policy find a key in any partition."""
    _table(session, "cow", "GLOBAL_SIMPLE", "'hoodie.populate.meta.fields'='false'")
    session.sql("INSERT INTO t VALUES (1, 'a', 1, 'd1'), (2, 'b', 1, 'd1'), (3, 'c', 1, 'd1')")
    session.sql("INSERT INTO t VALUES (1, 'a2', 2, 'd2')")
    assert hudiql_rows(session, QUERY) == official_rows(warehouse / "t", COLUMNS) == [
        (1, "a2", 2, "d2"), (2, "b", 1, "d1"), (3, "c", 1, "d1")]
    spark.createDataFrame([(2, "x", 9, "d9")], "id INT, name STRING, ts INT, dt STRING").write.format("hudi") \
        .option("hoodie.datasource.write.operation", "delete").mode("append").save(str(warehouse / "t"))
    session.sql("SET hoodie.spark.sql.insert.into.operation=insert")
    session.sql("SET hoodie.datasource.insert.dup.policy=drop")
    session.sql("INSERT INTO t VALUES (3, 'dup', 5, 'd7'), (4, 'd', 1, 'd7')")
    assert hudiql_rows(session, QUERY) == official_rows(warehouse / "t", COLUMNS) == [
        (1, "a2", 2, "d2"), (3, "c", 1, "d1"), (4, "d", 1, "d7")]
