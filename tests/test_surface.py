"""The surface a user meets: every statement form and option the README lists either has its
documented effect (checked) or is refused with one exact message, and a refusal changes nothing.

Refusals run against one populated warehouse (a partitioned COW table ``t`` and a MOR table
``m``); after each, every file of the warehouse is as it was. Effects run on a fresh warehouse.
"""

from __future__ import annotations

import hashlib
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import hudiql
from hudiql.errors import ColumnError, DataError, OptionError, SqlError, TableExistsError, TableNotFoundError
from hudiql.sql.parser import parse

from conftest import official_rows

T_DDL = (
    "CREATE TABLE t (id INT, v STRING, ts BIGINT, day STRING) USING hudi PARTITIONED BY (day) "
    "TBLPROPERTIES (primaryKey='id', preCombineField='ts')"
)
M_DDL = "CREATE TABLE m (id INT, v STRING) USING hudi TBLPROPERTIES (primaryKey='id', type='mor')"
NAME_RULE = "use letters, digits and '_' (a name is not a path: use LOCATION '...' to place a table)"


def files_of(root: Path) -> dict[str, str]:
    """Every file below ``root`` with a digest of its bytes."""
    return {str(p.relative_to(root)): hashlib.sha1(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def populated(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("surface")
    session = hudiql.connect(warehouse=str(root / "wh"), spark=spark)
    session.sql(T_DDL)
    session.sql("INSERT INTO t VALUES (1, 'a', 1, 'd1'), (2, 'b', 1, 'd2')")
    session.sql(M_DDL)
    session.sql("INSERT INTO m VALUES (1, 'a')")
    (root / "other_wh" / "o").mkdir(parents=True)
    (root / "other_wh" / "o" / "keep.txt").write_text("outside the warehouse")
    return session, root


# ---- refusals: (statement, error class, exact message) ---------------------------------------------

REFUSED = [
    # syntax, in words, with the statement's place
    ("SELEC * FROM t", SqlError, "statement 1 (line 1, column 1): 'SELEC' does not start a statement; did you mean SELECT?"),
    ("SELECT 1;\n  SELECT * FROM t WHERE", SqlError,
     "statement 2 (line 2, column 19): syntax error near 'WHERE': the statement ends too early"),
    ("SELECT * FROM\n t\n WHERE id = (1", SqlError, "statement 1 (line 3, column 14): syntax error near '1': expected )"),
    ("SELECT id, FROM t", SqlError, "statement 1 (line 1, column 10): a comma before 'FROM': remove the trailing comma"),
    ("SELECT 'abc", SqlError, "statement 1 (line 1, column 8): a quote or comment is never closed"),
    # time travel: an instant, never a version number
    ("SELECT * FROM t TIMESTAMP AS OF current_timestamp()", SqlError,
     "statement 1 (line 1, column 1): 't TIMESTAMP AS OF CURRENT_TIMESTAMP()': TIMESTAMP AS OF takes a quoted instant "
     "('yyyyMMddHHmmss[SSS]') or time ('yyyy-MM-dd[ HH:mm:ss[.SSS]]')"),
    ("SELECT * FROM t VERSION AS OF 1", SqlError,
     "statement 1 (line 1, column 1): 't VERSION AS OF 1': a Hudi table has no version numbers; read it as of an "
     "instant: t TIMESTAMP AS OF '<instant>' (CALL show_commits(table => 't') lists them)"),
    # statements hudiql does not run
    ("DESCRIBE DATABASE default", SqlError,
     "statement 1 (line 1, column 1): DESCRIBE takes a table or view: DESCRIBE [EXTENDED] t (databases: SHOW DATABASES)"),
    ("RESET", SqlError, "statement 1 (line 1, column 1): RESET is not supported; SET k=v again with the value you want"),
    ("TRUNCATE TABLE t PARTITION (dt)", SqlError,
     "statement 1 (line 1, column 1): 'dt' is not a partition spec; write PARTITION (col = 'value', ...)"),
    ("ALTER TABLE t DROP PARTITION (dt='d1') PURGE", SqlError,
     "statement 1 (line 1, column 1): DROP PARTITION ... PURGE is not supported: a dropped partition's files stay "
     "until the table is cleaned; drop it without PURGE"),
    ("ALTER TABLE t DROP COLUMN v", SqlError,
     "DROP COLUMN needs SET hoodie.schema.on.read.enable=true, as in Hudi; hudiql then rewrites every file group of "
     "the table with the new columns"),
    ("SHOW FUNCTIONS", SqlError,
     "statement 1 (line 1, column 1): SHOW supports TABLES, DATABASES, COLUMNS IN t, TBLPROPERTIES t, PARTITIONS t, "
     "INDEXES FROM t, COMPACTION ON t and CREATE TABLE t"),
    ("EXPLAIN INSERT INTO t VALUES (3, 'c', 1, 'd1')", SqlError,
     "statement 1 (line 1, column 1): EXPLAIN shows the plan of a query; write EXPLAIN SELECT ..."),
    ("UPDATE t WHERE id = 1", SqlError, "statement 1 (line 1, column 1): UPDATE needs SET: UPDATE t SET column = value [WHERE ...]"),
    ("CREATE OR REPLACE TABLE t (id INT) USING hudi", SqlError,
     "statement 1 (line 1, column 1): CREATE OR REPLACE TABLE is not supported yet; DROP TABLE then CREATE TABLE"),
    # names are identifiers, never paths
    ("DROP TABLE `../other_wh/o`", SqlError, f"statement 1 (line 1, column 1): table name '../other_wh/o' is not valid; {NAME_RULE}"),
    ("INSERT INTO `../other_wh/o` VALUES (1)", SqlError,
     f"statement 1 (line 1, column 1): table name '../other_wh/o' is not valid; {NAME_RULE}"),
    ("SELECT * FROM `a/b`", SqlError, f"table name 'a/b' is not valid; {NAME_RULE}"),
    ("SELECT * FROM parquet.`/no/such/folder`", SqlError, "[PATH_NOT_FOUND] Path does not exist: file:/no/such/folder"),
    ("CREATE TABLE `x``y` (id INT) USING hudi", SqlError, f"statement 1 (line 1, column 1): table name 'x`y' is not valid; {NAME_RULE}"),
    ("CREATE TABLE " + "n" * 200 + " (id INT) USING hudi", SqlError,
     "statement 1 (line 1, column 1): table name 'nnnnnnnnnnnnnnnnnnnn...' is 200 characters long; use at most 128"),
    ("CREATE SCHEMA `..`", SqlError, f"statement 1 (line 1, column 1): database name '..' is not valid; {NAME_RULE}"),
    # bad table definitions
    ("CREATE TABLE n (v STRING, V INT) USING hudi", ColumnError,
     "statement 1 (line 1, column 1): column 'V' is defined twice (as 'v' and 'V'); column names ignore case"),
    ("CREATE TABLE n () USING hudi", SqlError,
     "statement 1 (line 1, column 1): CREATE TABLE needs at least one column, e.g. CREATE TABLE t (id BIGINT, ...)"),
    ("CREATE TABLE n (_hoodie_x INT) USING hudi", ColumnError,
     "statement 1 (line 1, column 1): column '_hoodie_x': names starting with _hoodie_ are Hudi's meta columns; rename it"),
    ("CREATE TABLE n (d DECIMAL(50)) USING hudi", SqlError,
     "statement 1 (line 1, column 1): DECIMAL(50): DECIMAL(precision, scale) needs 1 <= precision <= 38 and 0 <= scale <= precision"),
    ("CREATE TABLE n (m MAP<INT>) USING hudi", SqlError,
     "statement 1 (line 1, column 1): column type MAP<INT> is not complete; write ARRAY<type> or MAP<key type, value type>"),
    ("CREATE TABLE n (id INT, v STRING,) USING hudi", SqlError,
     "statement 1 (line 1, column 33): a comma before ')': remove the trailing comma"),
    ("CREATE TABLE n (id INT) USING hudi COMMENT 'x'", SqlError,
     "statement 1 (line 1, column 1): unsupported table clause: COMMENT 'x'; options are given as TBLPROPERTIES ('key' = 'value')"),
    ("CREATE TABLE n (id INT) USING hudi PARTITIONED BY (id, id)", ColumnError,
     "PARTITIONED BY (id, id) names a column twice; name each once"),
    ("CREATE TABLE n (id INT) USING hudi LOCATION ''", SqlError,
     "statement 1 (line 1, column 1): LOCATION '' is empty; give a folder, e.g. LOCATION '/data/orders'"),
    ("CREATE TABLE t LIKE nope", TableNotFoundError, "table default.nope does not exist; see SHOW TABLES"),
    ("CREATE TABLE n (m MAP<STRING, INT>, v INT) USING hudi TBLPROPERTIES (primaryKey='m')", ColumnError,
     "record key column 'm' is a map<string,int>; use a column of a simple type"),
    # options: honoured, or refused with the reason (the registry: hudiql.config.registry)
    ("CREATE TABLE n (id INT) USING hudi TBLPROPERTIES (primaryKey='id', 'hoodie.write.table.version'='7')", OptionError,
     "hoodie.write.table.version=7 is not valid; use 6, 8 or 9"),
    ("CREATE TABLE n (id INT) USING hudi TBLPROPERTIES (primaryKey='id', 'hoodie.table.cdc.enabled'='true')", OptionError,
     "hoodie.table.cdc.enabled=true is not supported: hudiql does not write change data capture (CDC) logs; "
     "remove the option or set it to false"),
    ("CREATE TABLE n (id INT) USING hudi TBLPROPERTIES (primaryKey='id', 'hoodie.cleaner.commits.retained'='20')", OptionError,
     "hoodie.keep.min.commits=20 must be greater than hoodie.cleaner.commits.retained=20: raise hoodie.keep.min.commits "
     "(and hoodie.keep.max.commits above it) or lower hoodie.cleaner.commits.retained"),
    ("CREATE TABLE n (id INT) USING hudi TBLPROPERTIES (primaryKey='id', 'hoodie.cleaner.policy'='KEEP_ALL')", OptionError,
     "hoodie.cleaner.policy=KEEP_ALL is not valid; use KEEP_LATEST_COMMITS, KEEP_LATEST_FILE_VERSIONS or KEEP_LATEST_BY_HOURS"),
    ("CREATE TABLE n (id INT) USING hudi TBLPROPERTIES (primaryKey='id', 'hoodie.index.type'='HBASE')", OptionError,
     "hoodie.index.type=HBASE is not valid; use SIMPLE, BUCKET, RECORD_INDEX, BLOOM, GLOBAL_SIMPLE or GLOBAL_BLOOM"),
    ("CREATE TABLE n (id INT) USING hudi TBLPROPERTIES (primaryKey='id', 'hoodie.parquet.max.file.size'='big')", OptionError,
     "hoodie.parquet.max.file.size=big is not valid; give a whole number of bytes, at least 1 (default 125829120)"),
    ("CREATE TABLE n (id INT) USING hudi TBLPROPERTIES (primaryKey='id', 'hoodie.datasource.write.precombine.feild'='id')",
     OptionError, "unknown table option 'hoodie.datasource.write.precombine.feild'; "
     "did you mean 'hoodie.datasource.write.precombine.field'?"),
    ("SET hoodie.spark.sql.insert.into.operation=insert_overwrite_table", OptionError,
     "hoodie.spark.sql.insert.into.operation=insert_overwrite_table is not supported: "
     "write INSERT OVERWRITE to replace rows; INSERT INTO takes insert, upsert or bulk_insert"),
    ("SET hoodie.datasource.query.type=cdc", OptionError,
     "hoodie.datasource.query.type=cdc is not supported: hudiql writes no change data capture logs; use incremental "
     "(the latest state of the rows changed, with hoodie.datasource.read.include.deletes=true for deleted ones)"),
    # DML input
    ("INSERT INTO t (id, v, ts) VALUES (1, 'b', 2)", ColumnError,
     "the INSERT column list (id, v, ts) leaves out partition column day: every row needs its partition value; "
     "list day in it or give PARTITION (day = <value>)"),
    # options that cannot change
    ("ALTER TABLE t SET TBLPROPERTIES ('hoodie.table.recordkey.fields'='v')", OptionError,
     "table option 'hoodie.table.recordkey.fields' cannot change after the table is created; "
     "create a new table (CREATE TABLE ... LIKE or AS SELECT) with the value you want"),
    ("ALTER TABLE t UNSET TBLPROPERTIES ('hoodie.nope')", OptionError,
     "table t has no option 'hoodie.nope'; use UNSET TBLPROPERTIES IF EXISTS"),
    # procedures and tables that do not fit
    ("CALL run_compaction(table => 't')", SqlError,
     "CALL run_compaction: table t is copy-on-write; only merge-on-read tables are compacted"),
    ("DROP VIEW t", SqlError, "default.t is a table; use DROP TABLE"),
    ("DROP VIEW nope", TableNotFoundError, "view nope does not exist; use DROP VIEW IF EXISTS"),
    ("SELECT nope FROM t", SqlError,
     "[UNRESOLVED_COLUMN.WITHOUT_SUGGESTION] A column, variable, or function parameter with name `nope` cannot be resolved"),
    # bad input that once surfaced as a Python or Spark traceback (issue 33)
    ("INSERT INTO t VALUES ('abc', 'x', 1, 'd1')", DataError,
     "column id: [CAST_INVALID_INPUT] The value 'abc' of the type \"STRING\" cannot be cast to \"INT\" because it is malformed. "
     "Correct the value as per the syntax, or change its target type. Use `try_cast` to tolerate malformed input and "
     "return NULL instead"),
    (f"INSERT INTO t VALUES (5, 'x', 1, '{'p' * 300}')", DataError,
     "a partition value makes a folder name longer than the file system allows ('day=pppppppppppppppppppppppppppppppppppp...', "
     "304 characters): shorten the value, or partition by another column"),
    ("SELECT " + "(" * 3000 + "1" + ")" * 3000, SqlError,
     "statement 1 (line 1, column 1): it nests its expressions too deeply to parse; split it (a CTE or a view per part)"),
    ("CREATE TABLE accents (id INT, `prix_é` INT) USING hudi TBLPROPERTIES (primaryKey='id')", ColumnError,
     "statement 1 (line 1, column 1): column 'prix_é' is not a name Hudi's Avro schema can hold: use ASCII letters, "
     "digits and '_', not starting with a digit (e.g. prix_e)"),
    ("CREATE TABLE nk (a STRUCT<b: INT>, v STRING) USING hudi TBLPROPERTIES (primaryKey='a.c')", ColumnError,
     "record key field 'a.c' is not a field of STRUCT column a"),
    ("CREATE TABLE n USING hudi TBLPROPERTIES (primaryKey='id') AS SELECT NULL AS id, 'a' AS v", ColumnError,
     "column id has no type (a bare NULL): write CAST(NULL AS <type>) AS id"),
]


@pytest.mark.parametrize(("sql", "error", "message"), REFUSED, ids=[r[0][:40] for r in REFUSED])
def test_a_refusal_is_one_exact_line_and_changes_nothing(populated, sql, error, message):
    session, root = populated
    before = files_of(root)
    with pytest.raises(error) as info:
        session.sql(sql)
    assert str(info.value) == message
    assert files_of(root) == before


def test_parse_errors_need_no_spark():
    """The parser runs before any Spark session: it names the statement and place in words."""
    with pytest.raises(SqlError, match=r"^statement 3 \(line 4, column 3\): 'SELEC'"):
        parse("SET a=1;\nSELECT 1;\n\n  SELEC 2")
    statements = parse("-- a comment\nSELECT 1;  SELECT 2")
    assert [(s.number, s.line, s.column) for s in statements] == [(1, 2, 1), (2, 2, 12)]


# ---- effects ---------------------------------------------------------------------------------------


def rows(session, sql: str) -> list[tuple]:
    return sorted(tuple(r) for r in session.sql(sql).collect())


def test_create_table_like_copies_schema_keys_partitioning_and_options(session, warehouse):
    session.sql(T_DDL.replace("preCombineField='ts')", "preCombineField='ts', type='mor', 'hoodie.index.type'='BUCKET')"))
    session.sql("CREATE TABLE t2 LIKE t TBLPROPERTIES ('hoodie.bucket.index.num.buckets'='4')")
    source = dict(rows(session, "SHOW TBLPROPERTIES t"))
    copy = dict(rows(session, "SHOW TBLPROPERTIES t2"))
    for key in ("hoodie.table.recordkey.fields", "hoodie.table.partition.fields", "hoodie.table.precombine.field",
                "hoodie.table.type", "hoodie.table.keygenerator.class", "hoodie.compaction.payload.class",
                "hoodie.index.type"):
        assert copy[key] == source[key], key
    assert copy["hoodie.table.name"] == "t2" and copy["hoodie.bucket.index.num.buckets"] == "4"
    assert rows(session, "SHOW COLUMNS IN t2") == rows(session, "SHOW COLUMNS IN t")
    assert rows(session, "SELECT * FROM t2") == []
    session.sql("INSERT INTO t2 VALUES (1, 'a', 5, 'd1'), (1, 'old', 4, 'd1')")
    assert rows(session, "SELECT id, v, day FROM t2") == [(1, "a", "d1")]
    assert official_rows(warehouse / "t2", ["id", "v"]) == [(1, "a")]


def test_alter_table_set_and_unset_tblproperties(session, warehouse):
    session.sql(T_DDL)
    session.sql("ALTER TABLE t SET TBLPROPERTIES ('hoodie.parquet.max.file.size'='1048576')")
    assert rows(session, "SHOW TBLPROPERTIES t ('hoodie.parquet.max.file.size')") == [("hoodie.parquet.max.file.size", "1048576")]
    assert "hoodie.parquet.max.file.size=1048576" in (warehouse / "t" / ".hoodie" / "hoodie.properties").read_text()
    session.sql("ALTER TABLE t UNSET TBLPROPERTIES ('hoodie.parquet.max.file.size')")
    assert rows(session, "SHOW TBLPROPERTIES t ('hoodie.parquet.max.file.size')") == [
        ("hoodie.parquet.max.file.size", "Table default.t does not have property: hoodie.parquet.max.file.size")]
    session.sql("ALTER TABLE t UNSET TBLPROPERTIES IF EXISTS ('hoodie.parquet.max.file.size')")
    session.sql("INSERT INTO t VALUES (1, 'a', 1, 'd1')")
    assert official_rows(warehouse / "t", ["id", "v"]) == [(1, "a")]


def test_databases_schemas_columns_and_partitions(session):
    session.sql("CREATE SCHEMA sales")
    session.sql("CREATE DATABASE IF NOT EXISTS sales")
    assert rows(session, "SHOW DATABASES") == [("default",), ("sales",)]
    assert rows(session, "SHOW SCHEMAS LIKE 'sal*'") == [("sales",)]
    session.sql("USE sales")
    session.sql(T_DDL)
    session.sql("INSERT INTO t VALUES (1, 'a', 1, 'd1'), (2, 'b', 1, 'd2')")
    assert [r[0] for r in session.sql("SHOW COLUMNS IN t").collect()][-4:] == ["id", "v", "ts", "day"]
    assert rows(session, "SHOW PARTITIONS sales.t") == [("day=d1",), ("day=d2",)]
    assert rows(session, "SHOW TABLES IN sales") == [("sales", "t", False)]


def test_explain_shows_the_plan_hudiql_runs(session):
    session.sql(T_DDL)
    session.sql("INSERT INTO t VALUES (1, 'a', 1, 'd1'), (2, 'b', 1, 'd2')")
    plan = session.sql("EXPLAIN SELECT count(*) FROM t WHERE day = 'd1'").first().plan
    assert "== Physical Plan ==" in plan and "InMemoryFileIndex(1 paths)" in plan  # one partition of two is read
    assert "== Analyzed Logical Plan ==" in session.sql("EXPLAIN EXTENDED SELECT * FROM t").first().plan


def test_views_read_their_tables_as_they_are_and_persistent_ones_survive_a_restart(session, spark, warehouse):
    session.sql(T_DDL)
    session.sql("INSERT INTO t VALUES (1, 'a', 1, 'd1'), (2, 'b', 1, 'd2')")
    session.sql("CREATE VIEW big AS SELECT id, v FROM t WHERE id > 1")
    session.sql("CREATE TEMPORARY VIEW tv AS SELECT count(*) AS n FROM big")
    assert rows(session, "SELECT * FROM tv") == [(1,)]
    session.sql("INSERT INTO t VALUES (3, 'c', 1, 'd1')")
    assert rows(session, "SELECT * FROM big") == [(2, "b"), (3, "c")]
    assert rows(session, "SELECT * FROM tv") == [(2,)]
    assert rows(session, "SHOW TABLES") == [("", "tv", True), ("default", "big", False), ("default", "t", False)]
    assert rows(session, "DESCRIBE big") == [("id", "int", None), ("v", "string", None)]
    with pytest.raises(TableExistsError, match="^view big already exists; use CREATE OR REPLACE VIEW$"):
        session.sql("CREATE VIEW big AS SELECT 1")
    session.sql("CREATE OR REPLACE VIEW big AS SELECT id FROM t WHERE id = 1")
    with pytest.raises(SqlError, match="^big is a view; this statement needs a table$"):
        session.sql("INSERT INTO big VALUES (9)")

    restarted = hudiql.connect(warehouse=str(warehouse), spark=spark)
    assert rows(restarted, "SELECT * FROM big") == [(1,)]
    with pytest.raises(TableNotFoundError):
        restarted.sql("SELECT * FROM tv")  # temporary: this session only
    restarted.sql("DROP VIEW big")
    with pytest.raises(TableNotFoundError):
        session.sql("SELECT * FROM big")


# ---- the README's examples run as written ----------------------------------------------------------

README = Path(__file__).resolve().parents[1] / "README.md"
README_WAREHOUSE = "/tmp/hudiql-wh"


def readme_blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README.read_text(encoding="utf-8"), re.S)


def test_the_readme_examples_run_as_written(spark, tmp_path, capsys):
    """The Python example, then the shell one on the table it made; only the warehouse moves to a
    fresh folder (connect() joins the running SparkSession, as getOrCreate does)."""
    warehouse = str(tmp_path / "wh")
    (example,) = [b for b in readme_blocks("python") if "hudiql.connect" in b]
    assert README_WAREHOUSE in example
    exec(compile(example.replace(README_WAREHOUSE, warehouse), "README.md", "exec"), {})
    shown = capsys.readouterr().out
    assert "num_inserted_rows" in shown and "29.5" in shown

    (commands,) = [b for b in readme_blocks("bash") if f"--warehouse {README_WAREHOUSE} -e" in b]
    command = next(line for line in commands.splitlines() if " -e " in line)
    args = shlex.split(command.replace(README_WAREHOUSE, warehouse))
    done = subprocess.run([str(Path(sys.executable).with_name("hudiql")), *args[1:]], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "2"


# ---- names: views, CTEs, databases and session settings --------------------------------------------


def test_a_view_keeps_its_own_names(session, spark):
    """A view's CTEs and unqualified names are its own (its database, not the current one), and a
    Spark temporary view of the same name shadows it, as in Spark."""
    session.sql("CREATE TABLE t (id INT, v STRING) USING hudi TBLPROPERTIES (primaryKey='id')")
    session.sql("INSERT INTO t VALUES (1, 'table')")
    session.sql("CREATE VIEW w AS WITH t AS (SELECT 1 AS id, 'cte' AS v) SELECT * FROM t")
    assert rows(session, "SELECT w.v, t.v FROM w JOIN t ON w.id = t.id") == [("cte", "table")]
    session.sql("CREATE VIEW v AS SELECT id, v FROM t")
    assert rows(session, "WITH t AS (SELECT 9 AS id, 'outer' AS v) SELECT * FROM v") == [(1, "table")]
    assert rows(session, "SELECT x.b FROM v AS x(a, b)") == [("table",)]  # column aliases are kept

    session.sql("CREATE DATABASE db1")
    session.sql("USE db1")
    session.sql("CREATE TABLE t (id INT, v STRING) USING hudi TBLPROPERTIES (primaryKey='id')")
    session.sql("INSERT INTO t VALUES (1, 'db1')")
    session.sql("CREATE VIEW dv AS SELECT v FROM t")
    session.sql("USE default")
    assert rows(session, "SELECT * FROM db1.dv") == [("db1",)]

    spark.createDataFrame([(7, "spark")], "id int, v string").createOrReplaceTempView("v")
    try:
        assert rows(session, "SELECT * FROM v") == [(7, "spark")]
    finally:
        spark.catalog.dropTempView("v")
    assert rows(session, "SELECT * FROM v") == [(1, "table")]


def test_views_that_cannot_last_are_refused(session):
    session.sql("CREATE TABLE t (id INT) USING hudi TBLPROPERTIES (primaryKey='id')")
    session.sql("CREATE VIEW v AS SELECT * FROM t")
    with pytest.raises(SqlError, match="^view default.v refers to itself; CREATE OR REPLACE it without the loop$"):
        session.sql("CREATE OR REPLACE VIEW v AS SELECT * FROM v")
    assert rows(session, "SELECT count(*) FROM v") == [(0,)]  # the old definition stands
    session.sql("CREATE TEMPORARY VIEW tv AS SELECT 1 AS x")
    with pytest.raises(SqlError, match="^view default.pv cannot read temporary view tv; a view in the warehouse outlives the session$"):
        session.sql("CREATE VIEW pv AS SELECT * FROM tv")
    assert rows(session, "SHOW TABLES") == [("", "tv", True), ("default", "t", False), ("default", "v", False)]


def test_set_takes_only_options_something_reads(session):
    session.sql(T_DDL)
    with pytest.raises(OptionError, match="^unknown session option 'hudiql.cli.print.headr'; did you mean 'hudiql.cli.print.header'\\?$"):
        session.sql("SET hudiql.cli.print.headr=true")
    with pytest.raises(OptionError, match="^unknown session option 'primaryKey'"):
        session.sql("SET primaryKey=v")
    # A session setting beats the table's property, whichever spelling each uses.
    session.sql("ALTER TABLE t SET TBLPROPERTIES ('hoodie.spark.sql.insert.into.operation'='upsert')")
    session.sql("INSERT INTO t VALUES (1, 'a', 1, 'd1')")
    session.sql("SET hoodie.datasource.write.operation=insert")
    session.sql("INSERT INTO t VALUES (1, 'again', 2, 'd1')")
    assert rows(session, "SELECT id, v FROM t") == [(1, "a"), (1, "again")]


def test_spark_sql_forms_hudiql_rewrites(session):
    session.sql(T_DDL)
    session.sql("WITH c AS (SELECT 1 AS id, 'a' AS v, 1 AS ts, 'd1' AS day) INSERT INTO t SELECT * FROM c")
    session.sql("WITH s AS (SELECT 1 AS id, 'b' AS v, 2 AS ts, 'd1' AS day) "
                "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE SET *")
    assert rows(session, "TABLE t")[0][-4:] == (1, "b", 2, "d1")
    assert rows(session, "VALUES (1), (2)") == [(1,), (2,)]
    session.sql("CREATE TABLE c USING hudi TBLPROPERTIES (primaryKey='id') AS SELECT * FROM t")  # meta columns left out
    assert [r[0] for r in session.sql("SHOW COLUMNS IN c").collect()][5:] == ["id", "v", "ts", "day"]
    with pytest.raises(ColumnError, match="^column 'ID' is defined twice"):
        session.sql("CREATE TABLE c2 USING hudi AS SELECT 1 AS id, 2 AS ID")
