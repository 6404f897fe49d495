"""Hudi's own SQL, as Hudi runs it (issue 33): the statements Hudi users write get the rows Hudi
gives, each rule written from Hudi's documented behaviour, on copy-on-write and merge-on-read where
both apply, and the official reader agreeing on what was written.

Where Hudi's rule changed between releases, the table's version decides (6: Hudi 0.14 / 0.15,
8: 1.0, 9: 1.1), as the README's table of such rules lists them.
"""

from __future__ import annotations

import pytest

from conftest import hudiql_rows, official_rows
from hudiql.errors import ColumnError, DataError, HudiqlError, OptionError, SqlError, TableNotFoundError

KINDS = ["cow", "mor"]


def _keyed(session, name: str, kind: str, version: int, ordering: bool = True, partitioned: bool = False) -> None:
    options = ["primaryKey='id'", f"type='{kind}'", f"'hoodie.write.table.version'='{version}'",
               "'hoodie.compact.inline'='false'"] + (["preCombineField='ts'"] if ordering else [])
    session.sql(f"CREATE TABLE {name} (id INT, name STRING, ts INT{', dt STRING' if partitioned else ''}) USING hudi "
                f"{'PARTITIONED BY (dt) ' if partitioned else ''}TBLPROPERTIES ({', '.join(options)})")


# ---- INSERT INTO: the operation Hudi's Spark SQL deduces ----------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
def test_insert_into_a_keyed_table_upserts_up_to_hudi_1_0_and_inserts_from_1_1(session, warehouse, kind):
    """Up to Hudi 1.0 (table versions 6 and 8) INSERT INTO upserts into a table with a record key
    and an ordering field, and inserts into one without; Hudi 1.1 (version 9) always inserts."""
    cases = [("v6", 6, True, [(1, "b", 2)]), ("v6_no_ordering", 6, False, [(1, "a", 1), (1, "b", 2)]),
             ("v9", 9, True, [(1, "a", 1), (1, "b", 2)])]
    for name, version, ordering, expected in cases:
        _keyed(session, name, kind, version, ordering)
        session.sql(f"INSERT INTO {name} VALUES (1, 'a', 1)")
        session.sql(f"INSERT INTO {name} VALUES (1, 'b', 2)")
        assert hudiql_rows(session, f"SELECT id, name, ts FROM {name}") == expected, name
        assert official_rows(warehouse / name, ["id", "name", "ts"]) == expected, name
    # the operation set for the session (or the table) wins over the version's default
    session.sql("SET hoodie.spark.sql.insert.into.operation=upsert")
    session.sql("INSERT INTO v9 VALUES (2, 'c', 1)")
    session.sql("INSERT INTO v9 VALUES (2, 'd', 2)")
    assert hudiql_rows(session, "SELECT id, name FROM v9 WHERE id = 2") == [(2, "d")]


@pytest.mark.parametrize("kind", KINDS)
def test_an_insert_combines_its_own_rows_by_ordering_field_up_to_hudi_1_0(session, warehouse, kind):
    """With the insert operation, Hudi's Spark SQL combines one statement's rows of one key (the
    greatest ordering value) up to 1.0, and keeps them all from 1.1;
    ``hoodie.combine.before.insert`` decides when given."""
    for name, version, expected in (("v6", 6, [(1, "mid", 7)]), ("v9", 9, [(1, "low", 3), (1, "mid", 7), (1, "old", 2)])):
        _keyed(session, name, kind, version)
        session.sql(f"ALTER TABLE {name} SET TBLPROPERTIES ('hoodie.spark.sql.insert.into.operation'='insert')")
        session.sql(f"INSERT INTO {name} VALUES (1, 'old', 2), (1, 'mid', 7), (1, 'low', 3)")
        assert hudiql_rows(session, f"SELECT id, name, ts FROM {name}") == expected, name
        assert official_rows(warehouse / name, ["id", "name", "ts"]) == expected, name
    session.sql("SET hoodie.combine.before.insert=true")
    session.sql("INSERT INTO v9 VALUES (2, 'x', 1), (2, 'y', 5)")
    assert hudiql_rows(session, "SELECT id, name FROM v9 WHERE id = 2") == [(2, "y")]


def test_ctas_keeps_every_row_of_its_query_as_hudi_bulk_inserts_it(session, warehouse):
    query = "SELECT 1 AS id, 'a' AS name, 1 AS ts UNION ALL SELECT 1, 'b', 2"
    session.sql(f"CREATE TABLE c USING hudi TBLPROPERTIES (primaryKey='id', preCombineField='ts') AS {query}")
    assert hudiql_rows(session, "SELECT id, name FROM c") == [(1, "a"), (1, "b")]
    assert official_rows(warehouse / "c", ["id", "name"]) == [(1, "a"), (1, "b")]
    commit = next((warehouse / "c" / ".hoodie").glob("*.commit")).read_text()
    assert '"operationType" : "BULK_INSERT"' in commit or '"operationType":"BULK_INSERT"' in commit.replace(" ", "")
    # an operation the table asks for is the CTAS's too
    session.sql("CREATE TABLE u USING hudi TBLPROPERTIES (primaryKey='id', preCombineField='ts', "
                f"'hoodie.spark.sql.insert.into.operation'='upsert') AS {query}")
    assert hudiql_rows(session, "SELECT id, name FROM u") == [(1, "b")]


# ---- INSERT INTO: which column a value fills ---------------------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
def test_insert_matches_a_query_named_as_the_columns_by_name(session, warehouse, kind):
    """Hudi's INSERT INTO matches the query's columns by name when they are named as the columns
    they fill (dynamic partition columns in any order), by position otherwise."""
    session.sql("CREATE TABLE p (id INT, name STRING, ts INT, dt STRING, ht STRING) USING hudi PARTITIONED BY (dt, ht) "
                f"TBLPROPERTIES (primaryKey='id', preCombineField='ts', type='{kind}')")
    session.sql("INSERT INTO p PARTITION (dt, ht) SELECT 1 AS id, 'a1' AS name, 1000 AS ts, '11' AS ht, '2021-01-05' AS dt")
    session.sql("INSERT INTO p SELECT 2, 'a2', 1000, '2021-01-06', '12'")  # unnamed: by position
    session.sql("INSERT INTO p PARTITION (dt = '2021-01-07') SELECT 'a3' AS name, 3 AS id, '13' AS ht, 1 AS ts")
    expected = [(1, "a1", "2021-01-05", "11"), (2, "a2", "2021-01-06", "12"), (3, "a3", "2021-01-07", "13")]
    assert hudiql_rows(session, "SELECT id, name, dt, ht FROM p") == expected
    assert official_rows(warehouse / "p", ["id", "name", "dt", "ht"]) == expected
    assert sorted(p.name for p in (warehouse / "p").iterdir() if p.name.startswith("dt=")) == [
        "dt=2021-01-05", "dt=2021-01-06", "dt=2021-01-07"]


@pytest.mark.parametrize("kind", KINDS)
def test_added_columns_go_before_the_partition_columns(session, warehouse, kind):
    """ALTER TABLE ADD COLUMNS keeps partition columns last, as Hudi and Spark do: a positional
    INSERT afterwards gives the new column before the partition value."""
    _keyed(session, "t", kind, 6, partitioned=True)
    session.sql("INSERT INTO t VALUES (1, 'a', 1, 'd1')")
    session.sql("ALTER TABLE t ADD COLUMNS (ext STRING)")
    assert [r[0] for r in session.sql("DESCRIBE t").collect()][5:10] == ["id", "name", "ts", "ext", "dt"]
    session.sql("INSERT INTO t VALUES (2, 'b', 1, 'e2', 'd2')")
    session.sql("UPDATE t SET ext = 'e1' WHERE id = 1")
    expected = [(1, "a", "e1", "d1"), (2, "b", "e2", "d2")]
    assert hudiql_rows(session, "SELECT id, name, ext, dt FROM t") == expected
    assert official_rows(warehouse / "t", ["id", "name", "ext", "dt"]) == expected


# ---- MERGE INTO -------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
def test_merge_may_assign_the_key_the_value_on_matched_it_with(session, warehouse, kind):
    _keyed(session, "t", kind, 6)
    session.sql("INSERT INTO t VALUES (1, 'a', 1), (2, 'b', 1)")
    session.sql("MERGE INTO t USING (SELECT 1 AS id, 'z' AS name, 2 AS ts) s ON t.id = s.id "
                "WHEN MATCHED THEN UPDATE SET id = s.id, name = s.name, ts = s.ts")
    session.sql("MERGE INTO t AS x USING (SELECT 2 AS sid, 'y' AS name) s ON x.id = s.sid "
                "WHEN MATCHED THEN UPDATE SET ID = S.SID, name = s.name")
    assert hudiql_rows(session, "SELECT id, name FROM t") == [(1, "z"), (2, "y")]
    assert official_rows(warehouse / "t", ["id", "name"]) == [(1, "z"), (2, "y")]
    with pytest.raises(ColumnError, match="cannot change record key column id"):
        session.sql("MERGE INTO t USING (SELECT 1 AS id) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET id = s.id + 10")


@pytest.mark.parametrize("kind", KINDS)
def test_merge_star_ignores_source_columns_the_table_lacks(session, warehouse, kind):
    _keyed(session, "t", kind, 6)
    session.sql("INSERT INTO t VALUES (1, 'a', 1)")
    session.sql("MERGE INTO t USING (SELECT 1 AS id, 'b' AS name, 2 AS ts, 'x' AS extra UNION ALL "
                "SELECT 2, 'c', 1, 'y') s ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
    assert [r[0] for r in session.sql("DESCRIBE t").collect()][5:] == ["id", "name", "ts"]
    assert hudiql_rows(session, "SELECT id, name, ts FROM t") == [(1, "b", 2), (2, "c", 1)]
    assert official_rows(warehouse / "t", ["id", "name", "ts"]) == [(1, "b", 2), (2, "c", 1)]


@pytest.mark.parametrize("kind", KINDS)
def test_an_insert_only_merge_without_ordering_field_keeps_source_rows_that_share_a_key(session, warehouse, kind):
    _keyed(session, "t", kind, 6, ordering=False)
    session.sql("INSERT INTO t VALUES (9, 'x', 0)")
    counts = session.sql("MERGE INTO t USING (SELECT 1 AS id, 'a1' AS name, 1 AS ts UNION ALL SELECT 1, 'a2', 2 "
                         "UNION ALL SELECT 9, 'q', 3) s ON t.id = s.id WHEN NOT MATCHED THEN INSERT *").first()
    assert counts.num_inserted_rows == 2
    expected = [(1, "a1"), (1, "a2"), (9, "x")]
    assert hudiql_rows(session, "SELECT id, name FROM t") == expected
    assert official_rows(warehouse / "t", ["id", "name"]) == expected


# ---- DDL, SHOW and table-valued functions -----------------------------------------------------------

def test_show_partitions_as_hudi_shows_them(session):
    session.sql("CREATE TABLE p (id INT, dt STRING) USING hudi PARTITIONED BY (dt) TBLPROPERTIES (primaryKey='id')")
    session.sql("INSERT INTO p VALUES (1, '2021'), (2, NULL)")
    assert hudiql_rows(session, "SHOW PARTITIONS p") == [("dt=2021",), ("dt=__HIVE_DEFAULT_PARTITION__",)]
    session.sql("CREATE TABLE n (id INT) USING hudi TBLPROPERTIES (primaryKey='id')")
    session.sql("INSERT INTO n VALUES (1)")
    assert hudiql_rows(session, "SHOW PARTITIONS n") == []


def test_create_table_like_a_table_without_partitions(session, warehouse):
    session.sql("CREATE TABLE n (id INT, name STRING) USING hudi TBLPROPERTIES (primaryKey='id')")
    session.sql("CREATE TABLE n2 LIKE n")
    session.sql("INSERT INTO n2 VALUES (1, 'a')")
    assert hudiql_rows(session, "SELECT id, name FROM n2") == [(1, "a")]
    assert "NonpartitionedKeyGenerator" in (warehouse / "n2" / ".hoodie" / "hoodie.properties").read_text()


def test_a_bare_null_column_in_ctas_is_one_line_naming_it(session, warehouse):
    with pytest.raises(ColumnError) as info:
        session.sql("CREATE TABLE c USING hudi TBLPROPERTIES (primaryKey='id') AS SELECT NULL AS id, 'a' AS name")
    assert str(info.value) == "column id has no type (a bare NULL): write CAST(NULL AS <type>) AS id"
    assert not (warehouse / "c").exists()


def test_read_optimized_reads_by_hudi_query_and_by_a_registered_name(session, warehouse):
    _keyed(session, "m", "mor", 6)
    session.sql("INSERT INTO m VALUES (1, 'a1', 1)")
    session.sql("INSERT INTO m VALUES (1, 'a2', 2)")  # a log file over the base file
    assert hudiql_rows(session, "SELECT id, name FROM hudi_query('m', 'read_optimized')") == [(1, "a1")]
    assert hudiql_rows(session, "SELECT id, name FROM hudi_query('m', 'snapshot')") == [(1, "a2")]
    with pytest.raises(SqlError, match="hudi_query: query type 'incremental' is not supported"):
        session.sql("SELECT * FROM hudi_query('m', 'incremental')")
    location = warehouse / "m"
    session.sql(f"CREATE TABLE m_base USING hudi LOCATION '{location}' TBLPROPERTIES ('hoodie.query.as.ro.table'='true')")
    session.sql(f"CREATE TABLE m_snap USING hudi LOCATION '{location}' TBLPROPERTIES (primaryKey='id', type='mor')")
    assert hudiql_rows(session, "SELECT id, name FROM m_base") == [(1, "a1")]
    assert hudiql_rows(session, "SELECT id, name FROM m_snap") == [(1, "a2")]
    assert official_rows(location, ["id", "name"], read_optimized=True) == [(1, "a1")]
    refusals = [
        (f"CREATE TABLE x USING hudi LOCATION '{location}' TBLPROPERTIES (primaryKey='name')",
         "primaryKey=name does not match the table at this LOCATION (id); leave it out or give the table's"),
        (f"CREATE TABLE x USING hudi LOCATION '{location}' TBLPROPERTIES ('hoodie.index.type'='BLOOM')",
         "option hoodie.index.type cannot be set when CREATE TABLE ... LOCATION adopts a table (it keeps its own "
         "properties); remove it, then ALTER TABLE ... SET TBLPROPERTIES if it may change"),
        ("CREATE TABLE x (id INT) USING hudi TBLPROPERTIES ('hoodie.query.as.ro.table'='true')",
         "hoodie.query.as.ro.table names a read-optimized view of an existing merge-on-read table: give the LOCATION "
         "of one (there is no Hudi table at it)"),
    ]
    for sql, message in refusals:
        with pytest.raises(Exception) as info:
            session.sql(sql)
        assert str(info.value) == message
    assert hudiql_rows(session, "SHOW TABLES") == [("default", "m", False), ("default", "m_base", False),
                                                   ("default", "m_snap", False)]


@pytest.mark.parametrize("kind", KINDS)
def test_drop_partition_with_a_wildcard(session, warehouse, kind):
    session.sql("CREATE TABLE p (id INT, dt STRING, hh STRING) USING hudi PARTITIONED BY (dt, hh) "
                f"TBLPROPERTIES (primaryKey='id', type='{kind}')")
    session.sql("INSERT INTO p VALUES (1, '2023-08-01', '01'), (2, '2023-08-02', '02'), (3, '2023-09-01', '01')")
    assert session.sql("ALTER TABLE p DROP PARTITION (dt = '2023-08-*', hh = '*')").first()[0] == "dropped 2 partition(s) of p"
    assert hudiql_rows(session, "SELECT id FROM p") == [(3,)]
    assert official_rows(warehouse / "p", ["id"]) == [(3,)]
    with pytest.raises(TableNotFoundError, match=r"no partition of table p matches \(dt='2024-\*', hh='\*'\)"):
        session.sql("ALTER TABLE p DROP PARTITION (dt = '2024-*', hh = '*')")
    session.sql("ALTER TABLE p DROP IF EXISTS PARTITION (dt = '2024-*', hh = '*')")
    assert hudiql_rows(session, "SHOW PARTITIONS p") == [("dt=2023-09-01/hh=01",)]


@pytest.mark.parametrize("kind", KINDS)
def test_column_comments_are_kept_and_changed(session, warehouse, kind):
    """Comments of CREATE TABLE and ADD COLUMNS, and CHANGE COLUMN c c <its type> COMMENT '...'
    (a comment-only change, as Hudi takes it), kept in the table's schema as Avro ``doc``, which
    every reader skips."""
    session.sql("CREATE TABLE c (id INT COMMENT 'the key', name STRING, dt STRING COMMENT 'day') USING hudi "
                f"PARTITIONED BY (dt) TBLPROPERTIES (primaryKey='id', type='{kind}')")
    session.sql("INSERT INTO c VALUES (1, 'a', 'd')")
    session.sql("ALTER TABLE c CHANGE COLUMN name name STRING COMMENT 'who'")
    session.sql("ALTER TABLE c CHANGE COLUMN id id INT COMMENT 'the id'")  # a key column: its type is unchanged
    session.sql("ALTER TABLE c ADD COLUMNS (e STRING COMMENT 'extra')")
    described = [tuple(r) for r in session.sql("DESCRIBE c").collect()][5:9]
    assert described == [("id", "int", "the id"), ("name", "string", "who"), ("e", "string", "extra"), ("dt", "string", "day")]
    session.sql("INSERT INTO c VALUES (2, 'b', 'x', 'd')")
    assert hudiql_rows(session, "SELECT id, name, e FROM c") == [(1, "a", None), (2, "b", "x")]
    assert official_rows(warehouse / "c", ["id", "name", "e"]) == [(1, "a", None), (2, "b", "x")]
    with pytest.raises(ColumnError, match="column id is a record key, partition or ordering field; its type cannot change"):
        session.sql("ALTER TABLE c CHANGE COLUMN id id BIGINT COMMENT 'wider'")


def test_compaction_statements_as_hudi_writes_them(session, warehouse):
    """``SCHEDULE | RUN COMPACTION ON t | '<path>' [AT instant]`` and ``SHOW COMPACTION ON t [LIMIT n]``,
    the statements Hudi has beside its procedures."""
    _keyed(session, "m", "mor", 6)
    session.sql("INSERT INTO m VALUES (1, 'a1', 1)")
    session.sql("INSERT INTO m VALUES (1, 'a2', 2)")
    [(planned, operations, state)] = [tuple(r) for r in session.sql("SCHEDULE COMPACTION ON m").collect()]
    assert (operations, state) == (1, "REQUESTED")
    assert [tuple(r) for r in session.sql(f"SHOW COMPACTION ON '{warehouse / 'm'}'").collect()] == [(planned, 1, "REQUESTED")]
    with pytest.raises(Exception, match="has no pending compaction at 1234"):
        session.sql("RUN COMPACTION ON m AT 1234")
    with pytest.raises(SqlError, match="SCHEDULE COMPACTION picks its own instant time"):
        session.sql("SCHEDULE COMPACTION ON m AT 1234")
    assert [tuple(r) for r in session.sql(f"RUN COMPACTION ON m AT {planned}").collect()] == [(planned, 1, "COMPLETED")]
    assert official_rows(warehouse / "m", ["id", "name"], read_optimized=True) == [(1, "a2")]
    session.sql("INSERT INTO m VALUES (1, 'a3', 3)")
    [(second, _, state)] = [tuple(r) for r in session.sql("RUN COMPACTION ON m").collect()]  # schedules and runs
    assert state == "COMPLETED" and second > planned
    assert [r[0] for r in session.sql("SHOW COMPACTION ON m LIMIT 1").collect()] == [second]  # newest first
    assert hudiql_rows(session, "SELECT id, name FROM hudi_query('m', 'read_optimized')") == [(1, "a3")]


# ---- nested record key and ordering fields ------------------------------------------------------------

_NESTED = "nestedcol STRUCT<a1: STRING, a2: STRUCT<b1: STRING, b2: STRUCT<c1: STRING, c2: INT>>>"


def _nested(key: str, c2: int) -> str:
    return f"named_struct('a1', '{key}', 'a2', named_struct('b1', 'b', 'b2', named_struct('c1', 'c', 'c2', {c2})))"


@pytest.mark.parametrize("kind", KINDS)
def test_a_nested_record_key_and_ordering_field(session, warehouse, kind):
    """``primaryKey = 'nestedcol.a1'``, ``preCombineField = 'nestedcol.a2.b2.c2'``: fields of a
    STRUCT column key and order the records, as Hudi's key generators read them (the bare value of a
    one-field key); two rows of one key in one upsert keep the greater ordering value."""
    session.sql(f"CREATE TABLE t (id INT, name STRING, {_NESTED}) USING hudi TBLPROPERTIES (primaryKey='nestedcol.a1', "
                f"preCombineField='nestedcol.a2.b2.c2', type='{kind}', 'hoodie.compact.inline'='false', "
                "'hoodie.spark.sql.insert.into.operation'='upsert')")
    session.sql(f"INSERT INTO t SELECT 1, 'name_1', {_nested('a', 999)} UNION ALL SELECT 2, 'name_2', {_nested('a', 333)}")
    query = "SELECT _hoodie_record_key, id, name, nestedcol.a2.b2.c2 FROM t"
    assert hudiql_rows(session, query) == [("a", 1, "name_1", 999)]
    session.sql(f"INSERT INTO t SELECT 3, 'older', {_nested('a', 5)}")  # loses to the stored ordering value
    session.sql(f"INSERT INTO t SELECT 4, 'newer', {_nested('a', 1000)} UNION ALL SELECT 5, 'b', {_nested('b', 1)}")
    assert hudiql_rows(session, query) == [("a", 4, "newer", 1000), ("b", 5, "b", 1)]
    assert official_rows(warehouse / "t", ["_hoodie_record_key", "id", "name"]) == [("a", 4, "newer"), ("b", 5, "b")]
    session.sql("UPDATE t SET name = 'upd' WHERE nestedcol.a1 = 'a'")
    session.sql(f"MERGE INTO t USING (SELECT 9 AS id, 'merged' AS name, {_nested('b', 7)} AS nestedcol UNION ALL "
                f"SELECT 10, 'new', {_nested('c', 1)}) s ON t.nestedcol.a1 = s.nestedcol.a1 "
                "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
    session.sql("DELETE FROM t WHERE nestedcol.a1 = 'c'")
    expected = [("a", 4, "upd"), ("b", 9, "merged")]
    assert hudiql_rows(session, "SELECT _hoodie_record_key, id, name FROM t") == expected
    assert official_rows(warehouse / "t", ["_hoodie_record_key", "id", "name"]) == expected
    # assigning the STRUCT column may keep the key field, not change it
    session.sql(f"UPDATE t SET nestedcol = {_nested('a', 2000)} WHERE id = 4")
    with pytest.raises(ColumnError, match="the update changes record key field nestedcol.a1 of the row with record key "
                                          "a \\(to zz\\); keep the field's value"):
        session.sql(f"UPDATE t SET nestedcol = {_nested('zz', 1)} WHERE id = 4")
    assert hudiql_rows(session, "SELECT _hoodie_record_key, nestedcol.a2.b2.c2 FROM t WHERE id = 4") == [("a", 2000)]


def test_nested_key_fields_in_a_complex_key_and_bad_nested_fields(session, warehouse):
    """Several key fields name each field in full (``nestedcol.a1:a``); a field a STRUCT lacks, a
    nested partition field and a nested key on a table without meta fields are refused by name."""
    session.sql(f"CREATE TABLE c (id INT, {_NESTED}) USING hudi TBLPROPERTIES (primaryKey='id,nestedcol.a1')")
    session.sql(f"INSERT INTO c SELECT 1, {_nested('a', 1)}")
    assert hudiql_rows(session, "SELECT _hoodie_record_key FROM c") == [("id:1,nestedcol.a1:a",)]
    assert official_rows(warehouse / "c", ["_hoodie_record_key"]) == [("id:1,nestedcol.a1:a",)]
    refusals = [
        ("primaryKey='nestedcol.zz'", "record key field 'nestedcol.zz' is not a field of STRUCT column nestedcol"),
        ("primaryKey='nestedcol.a2'", "record key column 'nestedcol.a2' is a struct<b1:string"),
        ("primaryKey='id', 'hoodie.datasource.write.partitionpath.field'='nestedcol.a1'",
         "partition column 'nestedcol.a1' is a field of STRUCT column nestedcol: partition by a column of the table"),
        ("primaryKey='nestedcol.a1', 'hoodie.populate.meta.fields'='false'",
         "record key field nestedcol.a1 is a field of a STRUCT column; a table without meta fields keys its records by columns"),
    ]
    for options, message in refusals:
        with pytest.raises((ColumnError, OptionError), match=message.replace("(", "\\(")):
            session.sql(f"CREATE TABLE n (id INT, {_NESTED}) USING hudi TBLPROPERTIES ({options})")
        assert not (warehouse / "n").exists()


# ---- dropping and renaming columns (hoodie.schema.on.read.enable) -----------------------------------------

@pytest.mark.parametrize("kind", KINDS)
def test_drop_and_rename_columns_with_schema_on_read(session, warehouse, kind):
    """As Hudi's schema-on-read DDL: with ``hoodie.schema.on.read.enable=true`` a column can be
    renamed (its values kept) and dropped (a column added again under its name starts empty); key,
    partition and ordering columns cannot. Every row keeps its commit time, and the official reader
    reads the new columns."""
    session.sql(f"CREATE TABLE t (id INT, name STRING, price DOUBLE, ts BIGINT, dt STRING) USING hudi PARTITIONED BY (dt) "
                f"TBLPROPERTIES (primaryKey='id', preCombineField='ts', type='{kind}', 'hoodie.compact.inline'='false')")
    session.sql("INSERT INTO t VALUES (1, 'jack', 0.9, 1000, 'a'), (2, 'jill', 1.9, 1000, 'b')")
    session.sql("UPDATE t SET price = 2.5 WHERE id = 1")  # on merge-on-read, a log the rewrite merges
    before = dict(hudiql_rows(session, "SELECT id, _hoodie_commit_time FROM t"))
    with pytest.raises(SqlError, match="DROP COLUMN needs SET hoodie.schema.on.read.enable=true, as in Hudi"):
        session.sql("ALTER TABLE t DROP COLUMN price")
    session.sql("SET hoodie.schema.on.read.enable=true")
    session.sql("ALTER TABLE t RENAME COLUMN price TO newprice")
    assert hudiql_rows(session, "SELECT id, name, newprice FROM t") == [(1, "jack", 2.5), (2, "jill", 1.9)]
    assert official_rows(warehouse / "t", ["id", "name", "newprice"]) == [(1, "jack", 2.5), (2, "jill", 1.9)]
    assert dict(hudiql_rows(session, "SELECT id, _hoodie_commit_time FROM t")) == before
    session.sql("ALTER TABLE t DROP COLUMN newprice")
    assert [c for c in session.sql("SELECT * FROM t").columns if not c.startswith("_hoodie")] == ["id", "name", "ts", "dt"]
    session.sql("ALTER TABLE t ADD COLUMNS (newprice DOUBLE)")
    session.sql("INSERT INTO t VALUES (3, 'x', 1100, 7.5, 'a')")
    expected = [(1, "jack", None, "a"), (2, "jill", None, "b"), (3, "x", 7.5, "a")]
    assert hudiql_rows(session, "SELECT id, name, newprice, dt FROM t") == expected
    assert official_rows(warehouse / "t", ["id", "name", "newprice", "dt"]) == expected
    for statement, message in (("ALTER TABLE t DROP COLUMN ts", "column ts is a record key, partition or ordering field"),
                               ("ALTER TABLE t RENAME COLUMN name TO ts", "column ts already exists"),
                               ("ALTER TABLE t DROP COLUMN nope", "column 'nope' is not in the table")):
        with pytest.raises(ColumnError, match=message):
            session.sql(statement)


def test_a_dropped_column_name_reused_by_a_rename(session, warehouse):
    """Hudi's "alter column multiple times": drop col1, rename col2 to col1; the old col2 values are
    col1's now, and a new row fills it."""
    session.sql("SET hoodie.schema.on.read.enable=true")
    session.sql("CREATE TABLE t (id INT, col1 STRING, col2 STRING, ts BIGINT) USING hudi "
                "TBLPROPERTIES (primaryKey='id', preCombineField='ts')")
    session.sql("INSERT INTO t VALUES (1, 'aaa', 'bbb', 1000)")
    session.sql("ALTER TABLE t DROP COLUMN col1")
    session.sql("ALTER TABLE t RENAME COLUMN col2 TO col1")
    session.sql("INSERT INTO t VALUES (2, 'aaa', 1000)")
    assert hudiql_rows(session, "SELECT id, col1, ts FROM t") == [(1, "bbb", 1000), (2, "aaa", 1000)]
    assert official_rows(warehouse / "t", ["id", "col1", "ts"]) == [(1, "bbb", 1000), (2, "aaa", 1000)]
    session.sql("CREATE TABLE e (id INT, a STRING) USING hudi TBLPROPERTIES (primaryKey='id')")
    session.sql("ALTER TABLE e RENAME COLUMN a TO b")  # no file yet: the schema alone changes
    session.sql("INSERT INTO e VALUES (1, 'x')")
    assert hudiql_rows(session, "SELECT id, b FROM e") == [(1, "x")]


def test_drop_and_rename_columns_keep_indexes_right_and_refuse_what_they_cannot(session, warehouse):
    """A renamed column keeps its column stats (a filter on it still finds the rewritten rows); a
    table without meta fields is rewritten too; a STRUCT column holding a key field, a field of a
    STRUCT column and a listed column-stats column are refused; DROP COLUMN IF EXISTS skips a name."""
    session.sql("SET hoodie.schema.on.read.enable=true")
    session.sql("CREATE TABLE s (id INT, b INT, ts BIGINT, dt STRING) USING hudi PARTITIONED BY (dt) TBLPROPERTIES "
                "(primaryKey='id', preCombineField='ts', 'hoodie.write.table.version'='9', "
                "'hoodie.metadata.index.column.stats.enable'='true')")
    session.sql("INSERT INTO s VALUES (1, 5, 1, 'p'), (2, 6, 1, 'p')")
    session.sql("ALTER TABLE s RENAME COLUMN b TO c")
    session.sql("INSERT INTO s VALUES (3, 15, 1, 'p')")
    assert hudiql_rows(session, "SELECT id FROM s WHERE c = 5") == [(1,)]
    session.sql("ALTER TABLE s DROP COLUMN IF EXISTS nope")
    session.sql("CREATE TABLE v (id INT, name STRING, extra STRING) USING hudi TBLPROPERTIES (primaryKey='id', "
                "'hoodie.populate.meta.fields'='false')")
    session.sql("INSERT INTO v VALUES (1, 'a', 'x')")
    session.sql("ALTER TABLE v DROP COLUMN extra")
    assert hudiql_rows(session, "SELECT id, name FROM v") == [(1, "a")]
    assert "extra" not in session.sql("SELECT * FROM v").columns
    assert official_rows(warehouse / "v", ["id", "name"]) == [(1, "a")]
    session.sql(f"CREATE TABLE n (id INT, {_NESTED}) USING hudi TBLPROPERTIES (primaryKey='nestedcol.a1')")
    session.sql("CREATE TABLE l (id INT, b INT) USING hudi TBLPROPERTIES (primaryKey='id', "
                "'hoodie.write.table.version'='9', 'hoodie.metadata.index.column.stats.enable'='true', "
                "'hoodie.metadata.index.column.stats.column.list'='b')")
    session.sql("INSERT INTO l VALUES (1, 1)")
    for statement, error, message in (
            ("ALTER TABLE n DROP COLUMN nestedcol", ColumnError, "column nestedcol is a record key, partition or ordering"),
            ("ALTER TABLE n DROP COLUMN nestedcol.a2", SqlError, "nestedcol.a2 is a field of a STRUCT column"),
            ("ALTER TABLE l RENAME COLUMN b TO c", HudiqlError, "column b is in hoodie.metadata.index.column.stats.column.list")):
        with pytest.raises(error, match=message):
            session.sql(statement)
    assert hudiql_rows(session, "SELECT id, b FROM l") == [(1, 1)]


# ---- tables without a record key ----------------------------------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
def test_update_delete_and_merge_on_a_table_without_a_record_key(session, warehouse, kind):
    """Hudi 0.14+ runs UPDATE, DELETE and MERGE on a table without a record key: a stored row is
    known by its generated key, which it keeps; MERGE matches by its whole ON condition."""
    session.sql(f"CREATE TABLE k (id INT, name STRING, dt STRING) USING hudi PARTITIONED BY (dt) "
                f"TBLPROPERTIES (type='{kind}', 'hoodie.compact.inline'='false')")
    session.sql("INSERT INTO k VALUES (1, 'a', 'x'), (2, 'b', 'x'), (3, 'c', 'y')")
    keys = dict(hudiql_rows(session, "SELECT id, _hoodie_record_key FROM k"))
    session.sql("UPDATE k SET name = 'bb' WHERE id = 2")
    session.sql("DELETE FROM k WHERE id = 3")
    counts = session.sql("MERGE INTO k USING (SELECT 1 AS id, 'aa' AS name, 'x' AS dt UNION ALL SELECT 5, 'e', 'y') s "
                         "ON k.id = s.id AND k.name = 'a' WHEN MATCHED THEN UPDATE SET name = s.name "
                         "WHEN NOT MATCHED THEN INSERT *").first()
    assert (counts.num_updated_rows, counts.num_inserted_rows) == (1, 1)
    expected = [(1, "aa", "x"), (2, "bb", "x"), (5, "e", "y")]
    assert hudiql_rows(session, "SELECT id, name, dt FROM k") == expected
    assert official_rows(warehouse / "k", ["id", "name", "dt"]) == expected
    stored = dict(hudiql_rows(session, "SELECT id, _hoodie_record_key FROM k"))
    assert (stored[1], stored[2]) == (keys[1], keys[2]) and stored[5] not in keys.values()
    with pytest.raises(Exception, match="several source rows match one stored row of table k"):
        session.sql("MERGE INTO k USING (SELECT 1 AS id UNION ALL SELECT 1) s ON k.id = s.id "
                    "WHEN MATCHED THEN UPDATE SET name = 'dup'")


@pytest.mark.parametrize("kind", KINDS)
def test_insert_dup_policy(session, warehouse, kind):
    """``hoodie.datasource.insert.dup.policy`` on an insert: none keeps a row whose key the table
    holds (in its partition), drop leaves it out, fail refuses the statement with Hudi's words."""
    _keyed(session, "t", kind, 6, ordering=False, partitioned=True)
    session.sql("INSERT INTO t VALUES (1, 'a', 1, 'x'), (2, 'b', 1, 'x')")
    session.sql("SET hoodie.datasource.insert.dup.policy=drop")
    counts = session.sql("INSERT INTO t VALUES (1, 'a2', 2, 'x'), (3, 'c', 1, 'x'), (1, 'elsewhere', 1, 'y')").first()
    assert counts.num_inserted_rows == 2
    session.sql("SET hoodie.datasource.insert.dup.policy=fail")
    before = sorted(p.name for p in (warehouse / "t" / ".hoodie").iterdir())
    with pytest.raises(DataError) as info:
        session.sql("INSERT INTO t VALUES (4, 'd', 1, 'x'), (2, 'b2', 2, 'x')")
    assert str(info.value).startswith("Duplicate key found for insert statement, key is: 2 ")
    assert sorted(p.name for p in (warehouse / "t" / ".hoodie").iterdir()) == before
    session.sql("SET hoodie.datasource.insert.dup.policy=none")
    session.sql("INSERT INTO t VALUES (3, 'c2', 2, 'x')")
    expected = [(1, "a", "x"), (1, "elsewhere", "y"), (2, "b", "x"), (3, "c", "x"), (3, "c2", "x")]
    assert hudiql_rows(session, "SELECT id, name, dt FROM t") == expected
    assert official_rows(warehouse / "t", ["id", "name", "dt"]) == expected


@pytest.mark.parametrize("kind", KINDS)
def test_merge_allow_duplicate_on_inserts(session, spark, warehouse, kind):
    """``hoodie.merge.allow.duplicate.on.inserts=false``: an insert's rows placed in an existing small
    file group merge with its rows by key (Hudi 0.14's merge handle; of one key's incoming rows the later
    wins); a Spark SQL INSERT allows duplicates all the same, as Hudi's writer sets it for an insert
    whose dup policy is set (not fail). true, the default, keeps them."""
    _keyed(session, "t", kind, 6, ordering=False)
    session.sql("INSERT INTO t VALUES (1, 'a', 1), (2, 'b', 1)")
    session.sql("SET hoodie.merge.allow.duplicate.on.inserts=false")
    session.sql("INSERT INTO t VALUES (1, 'sql', 2)")  # SQL INSERT: policy none, so duplicates are kept
    assert hudiql_rows(session, "SELECT id, name FROM t WHERE id = 1") == [(1, "a"), (1, "sql")]
    # a data source insert, and a MERGE that only inserts, merge into the stored rows by key
    rows = spark.createDataFrame([(2, "ds", 5), (4, "d", 1)], "id INT, name STRING, ts INT")
    rows.write.format("hudi").option("hoodie.datasource.write.operation", "insert") \
        .option("hoodie.merge.allow.duplicate.on.inserts", "false").mode("append").save(str(warehouse / "t"))
    session.sql("MERGE INTO t USING (SELECT 5 AS id, 'x' AS name, 1 AS ts UNION ALL SELECT 5, 'y', 1) s "
                "ON t.id = s.id WHEN NOT MATCHED THEN INSERT *")
    assert [r[0] for r in hudiql_rows(session, "SELECT id, name FROM t")] == [1, 1, 2, 4, 5]
    assert hudiql_rows(session, "SELECT id, name FROM t WHERE id < 5") == [(1, "a"), (1, "sql"), (2, "ds"), (4, "d")]
    assert len(official_rows(warehouse / "t", ["id", "name"])) == 5
    # true, the default: a data source insert keeps both rows of a key
    session.sql("SET hoodie.merge.allow.duplicate.on.inserts=true")
    rows.write.format("hudi").option("hoodie.datasource.write.operation", "insert").mode("append").save(str(warehouse / "t"))
    assert hudiql_rows(session, "SELECT id, name FROM t WHERE id = 2") == [(2, "ds"), (2, "ds")]


@pytest.mark.parametrize("kind", KINDS)
def test_merge_matches_a_keyed_table_by_its_record_key(session, warehouse, kind, capsys):
    """As Hudi: ON's conditions on other columns do not decide matching (a warning says so), and an
    ON without the key column matches by the source column named as the key."""
    _keyed(session, "t", kind, 6)
    session.sql("INSERT INTO t VALUES (1, 'a1', 1), (2, 'a2', 1), (3, 'a3', 1)")
    merge = "MERGE INTO t USING (SELECT {id} AS id, '{name}' AS name, 2 AS ts) s ON {on} " \
            "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    session.sql(merge.format(id=3, name="a3x", on="t.id = s.id AND t.name = s.name"))  # names differ: still matched
    assert "ON's t.name = s.name does not decide matching" in capsys.readouterr().err
    session.sql(merge.format(id=2, name="a2", on="t.name = s.name"))  # no key in ON: the source's id
    expected = [(1, "a1", 1), (2, "a2", 2), (3, "a3x", 2)]
    assert hudiql_rows(session, "SELECT id, name, ts FROM t") == expected
    assert official_rows(warehouse / "t", ["id", "name", "ts"]) == expected
    with pytest.raises(SqlError, match=r"the MERGE ON condition must match every record key column of t \(id\)"):
        session.sql("MERGE INTO t USING (SELECT 'a1' AS nm) s ON t.name = s.nm WHEN MATCHED THEN DELETE")


def test_merge_on_takes_equalities_only(session):
    """As Hudi refuses it: an ON condition that is not an equality of a target column (it would not
    decide matching, and a DELETE clause would then delete rows the condition excludes)."""
    _keyed(session, "t", "cow", 6)
    session.sql("INSERT INTO t VALUES (1, 'a', 1)")
    with pytest.raises(SqlError, match=r"ON takes equalities of target columns with source expressions; move "):
        session.sql("MERGE INTO t USING (SELECT 1 AS id, 'D' AS op) s ON t.id = s.id AND s.op <> 'D' "
                    "WHEN MATCHED THEN DELETE")
    session.sql("MERGE INTO t USING (SELECT 1 AS id, 'b' AS name) s ON t.`id` = s.`id` WHEN MATCHED THEN "
                "UPDATE SET id = s.id, name = s.name")
    assert hudiql_rows(session, "SELECT id, name FROM t") == [(1, "b")]
