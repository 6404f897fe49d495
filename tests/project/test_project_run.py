"""The project layer on the shared SparkSession: materializations, atomic replacement, failing
closed, skips and artifacts. Each test runs a few commands in-process (``invoke``)."""

from __future__ import annotations

import datetime
import hashlib
import io
import json
import shutil

import hudiql
import pytest
from hudiql.catalog import Catalog
from hudiql.io.storage import Storage
from hudiql.project.cli.flags import Flags
from hudiql.project.console import Console
from hudiql.project.task.debug import DebugTask
from hudiql.sql.statements import TableName
from hudiql.transaction.write_transaction import WriteTransaction
from test_project_helpers import run, run_results, write_project

from conftest import official_rows


@pytest.fixture(autouse=True)
def no_user_profiles(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("HUDIQL_PROFILES_DIR", raising=False)


def rows(spark, root, sql: str) -> list[tuple]:
    session = hudiql.connect(warehouse=str(root / "warehouse"), spark=spark)
    return sorted(tuple(r) for r in session.sql(sql).collect())


def location(root, name: str) -> str:
    return Catalog(str(root / "warehouse")).location("default", name)


def test_table_model_is_rebuilt_in_place(spark, tmp_path, monkeypatch):
    model = "{{ config(materialized='table', unique_key='id') }} SELECT 1 AS id, 'v{{ var(\"version\") }}' AS v"
    # `SELECT *` of a Hudi table returns its meta columns, which the model's table does not store:
    # the rebuild must not take them for a changed schema.
    copy = "{{ config(materialized='table') }} SELECT * FROM {{ ref('t') }}"
    root = write_project(tmp_path / "p", {"models/t.sql": model, "models/t_copy.sql": copy}, "name: p\n")
    code, out = run(root, "run", spark, vars={"version": 1})
    assert code == 0, out
    first = location(root, "t")
    assert Storage(first).full_path() == str(root / "warehouse" / "t")

    seen_before_commit = []
    real_commit = WriteTransaction.commit

    def observing_commit(self, metadata, rule, index_writes=None):
        # The new rows are written, and readers of `t` still get the old ones.
        seen_before_commit.append((rows(spark, root, "SELECT v FROM t"), metadata.operation_type))
        return real_commit(self, metadata, rule, index_writes)

    monkeypatch.setattr(WriteTransaction, "commit", observing_commit)
    code, out = run(root, "run", spark, vars={"version": 2})
    monkeypatch.undo()
    assert code == 0, out
    assert seen_before_commit[0] == ([("v1",)], "INSERT_OVERWRITE_TABLE")
    assert rows(spark, root, "SELECT v FROM t") == rows(spark, root, "SELECT v FROM t_copy") == [("v2",)]
    assert location(root, "t") == first  # the table keeps its path: a reader of the path sees the new rows
    assert official_rows(root / "warehouse" / "t", ["id", "v"]) == [(1, "v2")]
    assert "INSERT OVERWRITE TABLE default.t (`id`, `v`)" in (root / "target/run/p/models/t.sql").read_text()
    assert not (root / "warehouse" / ".hudiql_builds").exists()

    # A rebuild that fails leaves the table as it was.
    (root / "models/t.sql").write_text("{{ config(materialized='table', unique_key='id') }} SELECT 1 AS id, CAST(raise_error('boom') AS STRING) AS v")
    code, out = run(root, "run", spark)
    assert code == 1 and "boom" in out
    assert rows(spark, root, "SELECT v FROM t") == [("v2",)]

    # A model whose columns changed is refused by name; --full-refresh drops and recreates the table.
    (root / "models/t.sql").write_text(model.replace("AS v", "AS v, 2 AS w"))
    code, out = run(root, "run", spark, vars={"version": 3})
    assert code == 1 and "the columns of default.t changed (new: w); a rebuild in place keeps the table's columns" in out
    assert rows(spark, root, "SELECT v FROM t") == [("v2",)]
    code, out = run(root, "run", spark, vars={"version": 3}, full_refresh=True)
    assert code == 0, out
    assert rows(spark, root, "SELECT v, w FROM t") == [("v3", 2)]
    assert location(root, "t") == first


INCREMENTAL = """
{{ config(materialized='incremental', unique_key=var('key', ['k1', 'k2']), precombine_field='ts',
          partition_by='day', table_type='mor') }}
SELECT * FROM VALUES
{% if var('batch') == 1 %}
  (1, 'a', 'first', 10, DATE'2024-05-01'), (1, 'b', 'first', 10, DATE'2024-05-01'), (2, 'a', 'first', 10, DATE'2024-05-02')
{% else %}
  (1, 'a', 'second', 20, DATE'2024-05-01'), (2, 'a', 'late', 5, DATE'2024-05-02'), (3, 'a', 'new', 20, DATE'2024-05-03')
{% endif %}
AS src(k1, k2, v, ts, day)
{% if is_incremental() %}WHERE ts > 0 -- incremental{% endif %}
"""


def test_incremental_merge_on_composite_key_then_full_refresh(spark, tmp_path):
    root = write_project(tmp_path / "p", {"models/inc.sql": INCREMENTAL}, "name: p\n")
    code, out = run(root, "run", spark, vars={"batch": 1})
    assert code == 0, out
    assert "CREATE TABLE default.inc USING hudi" in (root / "target/run/p/models/inc.sql").read_text()
    assert "primaryKey = 'k1,k2'" in (root / "target/run/p/models/inc.sql").read_text()

    code, out = run(root, "run", spark, vars={"batch": 2})
    assert code == 0, out
    merge = (root / "target/run/p/models/inc.sql").read_text()
    assert "MERGE INTO default.inc AS DBT_INTERNAL_DEST" in merge
    assert "ON DBT_INTERNAL_DEST.`k1` = DBT_INTERNAL_SOURCE.`k1`\nAND DBT_INTERNAL_DEST.`k2` = DBT_INTERNAL_SOURCE.`k2`" in merge
    assert "[" not in merge  # a composite key is never rendered as a Python list
    assert "-- incremental" in (root / "target/compiled/p/models/inc.sql").read_text()
    response = run_results(root)["model.p.inc"]["adapter_response"]
    assert (response["num_updated_rows"], response["num_inserted_rows"], response["num_skipped_older_rows"]) == (1, 1, 1)
    assert rows(spark, root, "SELECT k1, k2, v FROM inc") == [(1, "a", "second"), (1, "b", "first"), (2, "a", "first"), (3, "a", "new")]

    code, out = run(root, "run", spark, vars={"batch": 2, "key": "k1"})
    assert code == 1 and "has unique_key ['k1', 'k2'] but the model says ['k1']; run with --full-refresh" in out

    code, out = run(root, "run", spark, vars={"batch": 2}, full_refresh=True)
    assert code == 0, out
    assert "INSERT OVERWRITE TABLE default.inc" in (root / "target/run/p/models/inc.sql").read_text()
    assert "-- incremental" not in (root / "target/compiled/p/models/inc.sql").read_text()
    assert rows(spark, root, "SELECT k1, k2, v FROM inc") == [(1, "a", "second"), (2, "a", "late"), (3, "a", "new")]


def test_append_and_insert_overwrite(spark, tmp_path):
    values = "{% if var('batch') == 1 %}(1, 'd1'), (2, 'd2'){% else %}(3, 'd2'), (4, 'd3'){% endif %}"
    root = write_project(tmp_path / "p", {
        "models/app.sql": f"{{{{ config(materialized='incremental') }}}} SELECT * FROM VALUES {values} AS s(id, day)",
        "models/ovw.sql": f"{{{{ config(materialized='incremental', incremental_strategy='insert_overwrite', partition_by='day') }}}} SELECT * FROM VALUES {values} AS s(id, day)",
    }, "name: p\n")
    assert run(root, "run", spark, vars={"batch": 1})[0] == 0
    code, out = run(root, "run", spark, vars={"batch": 2})
    assert code == 0, out
    assert rows(spark, root, "SELECT id, day FROM app") == [(1, "d1"), (2, "d2"), (3, "d2"), (4, "d3")]
    assert "hoodie.spark.sql.insert.into.operation=insert" in (root / "target/run/p/models/app.sql").read_text()
    # d2 is replaced by the new rows of d2, d1 is kept, d3 is new
    assert rows(spark, root, "SELECT id, day FROM ovw") == [(1, "d1"), (3, "d2"), (4, "d3")]


def test_on_schema_change(spark, tmp_path):
    body = "SELECT 1 AS id, 'x' AS a{% if var('wide') %}, 'y' AS b{% endif %}"
    modes = (("fails", "fail"), ("appends", "append_new_columns"), ("ignores", "ignore"), ("syncs", "sync_all_columns"))
    root = write_project(tmp_path / "p", {
        f"models/{name}.sql": f"{{{{ config(materialized='incremental', unique_key='id', on_schema_change='{mode}') }}}} {body}"
        for name, mode in modes
    }, "name: p\n")
    assert run(root, "run", spark, vars={"wide": False})[0] == 0
    code, out = run(root, "run", spark, vars={"wide": True})
    assert code == 1
    assert "the columns of default.fails changed (new: b; gone: none) and on_schema_change is 'fail'" in out
    assert rows(spark, root, "SELECT id, a, b FROM appends") == [(1, "x", "y")]
    assert rows(spark, root, "SELECT id, a, b FROM syncs") == [(1, "x", "y")]
    assert rows(spark, root, "SELECT id, a FROM ignores") == [(1, "x")]
    ignores = hudiql.connect(warehouse=str(root / "warehouse"), spark=spark).table(TableName(None, "ignores"))
    assert ignores.schema.fieldNames() == ["id", "a"]
    # a column the model no longer returns: sync_all_columns cannot drop it and says so, the others
    # keep it (NULL for new rows)
    code, out = run(root, "run", spark, vars={"wide": False})
    assert code == 1
    assert "hudiql cannot drop columns of default.syncs (b); run with --full-refresh to rebuild it" in out
    assert rows(spark, root, "SELECT id, a, b FROM appends") == [(1, "x", "y")]


BUILD_PROJECT = {
    "seeds/people.csv": "id,name,joined,score\n1,ann,2024-01-02,1.5\n2,bo,2024-02-03,\n",
    "seeds/people.yml": "seeds:\n  - name: people\n    config: {column_types: {score: 'decimal(4,1)'}}\n",
    "models/stg_people.sql": "SELECT id, upper(name) AS name, score FROM {{ ref('people') }}",
    "models/eph.sql": "{{ config(materialized='ephemeral') }} SELECT id, name FROM {{ ref('stg_people') }}",
    "models/good.sql": "{{ config(materialized='table') }} SELECT * FROM {{ ref('eph') }}",
    "models/bad.sql": "{{ config(materialized='table') }} SELECT * FROM no_such_table",
    "models/after_bad.sql": "{{ config(materialized='table') }} SELECT * FROM {{ ref('bad') }}",
    "models/schema.yml": """
        models:
          - name: stg_people
            columns:
              - name: id
                tests: [not_null]
          - name: good
            columns:
              - name: id
                tests: [unique, positive]
              - name: name
                tests:
                  - accepted_values: {values: [ANN], config: {severity: warn}}
    """,
    # dbt's generic test block, in dbt's folder for them (no singular test)
    "tests/generic/positive.sql": "{% test positive(model, column_name) %}SELECT * FROM {{ model }} WHERE {{ column_name }} <= 0{% endtest %}",
}


def test_build_skips_what_depends_on_a_failure(spark, tmp_path):
    root = write_project(tmp_path / "p", BUILD_PROJECT, "name: p\n")
    code, out = run(root, "build", spark, threads=2)
    assert code == 1
    lines = out.splitlines()
    assert any("START seed file default.people " in line and line.endswith("[RUN]") for line in lines)
    assert any("OK loaded seed file default.people " in line and "[INSERT 2 in " in line for line in lines)
    assert any("OK created sql view model default.stg_people " in line for line in lines)
    assert any("OK created sql table model default.good " in line and "[OK in " in line for line in lines)
    assert any("ERROR creating sql table model default.bad " in line and "[ERROR in " in line for line in lines)
    assert any("SKIP relation default.after_bad " in line and line.endswith("[SKIP]") for line in lines)
    assert any("WARN 1 accepted_values_good_name__ANN " in line and "[WARN 1 in " in line for line in lines)
    assert any("PASS positive_good_id " in line for line in lines)
    assert "Concurrency: 2 threads (target='dev')" in out
    assert "Runtime Error in model bad (models/bad.sql)" in out and "no_such_table" in out
    assert "Done. PASS=6 WARN=1 ERROR=1 SKIP=1 TOTAL=9" in out
    assert rows(spark, root, "SELECT id, name FROM good") == [(1, "ANN"), (2, "BO")]
    people = hudiql.connect(warehouse=str(root / "warehouse"), spark=spark).table(TableName(None, "people"))
    schema = {f.name: f.dataType.simpleString() for f in people.schema.fields}
    assert schema == {"id": "bigint", "name": "string", "joined": "date", "score": "decimal(4,1)"}

    results = run_results(root)
    assert {u: r["status"] for u, r in results.items() if not u.startswith("test.")} == {
        "seed.p.people": "success", "model.p.stg_people": "success", "model.p.good": "success",
        "model.p.bad": "error", "model.p.after_bad": "skipped",
    }
    warn = next(r for u, r in results.items() if "accepted_values" in u)
    assert (warn["status"], warn["failures"], warn["message"]) == ("warn", 1, "Got 1 result, configured to warn if != 0")
    assert results["seed.p.people"]["adapter_response"]["rows_affected"] == 2
    assert results["model.p.good"]["compiled_code"].startswith("WITH __dbt__cte__eph AS (")
    manifest = json.loads((root / "target/manifest.json").read_text())
    assert manifest["parent_map"]["model.p.after_bad"] == ["model.p.bad"]
    assert manifest["nodes"]["model.p.eph"]["config"]["materialized"] == "ephemeral"

    # Views are recorded in the warehouse: later commands and new sessions read them without
    # creating them again.
    session = hudiql.connect(warehouse=str(root / "warehouse"), spark=spark)
    assert ("default", "stg_people", False) in [tuple(r) for r in session.sql("SHOW TABLES").collect()]
    code, out = run(root, "run", spark, select=["good"])
    assert code == 0, out
    assert "1 of 1 OK created sql table model default.good" in out
    code, out = run(root, "test", spark, select=["stg_people"])
    assert code == 0, out
    assert "PASS not_null_stg_people_id" in out and "Done. PASS=1 WARN=0 ERROR=0 SKIP=0 TOTAL=1" in out

def test_debug(spark, tmp_path):
    root = write_project(tmp_path / "p", {"profiles.yml": "p:\n  outputs:\n    dev: {database: checks}\n"}, "name: p\n")
    out = io.StringIO()
    assert DebugTask(Flags("debug", project_dir=str(root)), spark=spark, console=Console(out)).run() == 0
    text = out.getvalue()
    assert f"Using profiles.yml file at {root / 'profiles.yml'}" in text and "database: checks" in text
    assert "Connection test: [OK connection ok]" in text and text.rstrip().endswith("All checks passed!")
    (root / "profiles.yml").write_text("p:\n  outputs:\n    dev: {databse: x}\n")
    out = io.StringIO()
    assert DebugTask(Flags("debug", project_dir=str(root)), spark=spark, console=Console(out)).run() == 1
    assert "did you mean 'database'" in out.getvalue()


def test_fail_closed(spark, tmp_path, monkeypatch):
    root = write_project(tmp_path / "p", {
        "models/kept.sql": "{{ config(materialized='incremental', unique_key='id') }} SELECT 1 AS id",
    }, "name: p\n")
    assert run(root, "run", spark)[0] == 0
    table = root / "warehouse" / "kept"
    files_before = sorted(p.name for p in table.iterdir())

    real_is_dir = Storage.is_dir

    def failing_listing(self, rel=""):
        if rel == ".hoodie":
            raise PermissionError(13, "Permission denied")
        return real_is_dir(self, rel)

    monkeypatch.setattr(Storage, "is_dir", failing_listing)
    code, out = run(root, "run", spark)
    assert code == 1 and "cannot tell whether default.kept exists" in out and "instead of recreating" in out
    monkeypatch.undo()

    properties = table / ".hoodie" / "hoodie.properties"
    saved = properties.read_bytes()
    properties.unlink()
    code, out = run(root, "run", spark, full_refresh=True)
    assert code == 1 and "exists but has no hoodie.properties" in out
    assert sorted(p.name for p in table.iterdir()) == files_before  # nothing was recreated
    properties.write_bytes(saved)

    moved = tmp_path / "moved"  # the table's folder gone, its name registered at a folder without it
    shutil.rmtree(table)
    Catalog(str(root / "warehouse")).register_external("default", "kept", str(moved))
    code, out = run(root, "run", spark)
    assert code == 1 and f"registered at {moved}" in out and "refusing to recreate" in out
    assert not moved.exists() and not table.exists()


def test_build_runs_the_snapshots_and_compile_names_the_analyses_it_leaves_out(spark, tmp_path):
    """dbt build runs snapshots (from the snapshot-paths), so does hudiql's; dbt compile compiles
    analyses, hudiql's does not and says so for each such file (in the analysis-paths) instead of
    leaving it out unseen."""
    snapshot = """
    {% snapshot people_snapshot %}
    {{ config(unique_key='id', strategy='check', check_cols='all') }}
    SELECT 1 AS id
    {% endsnapshot %}
    """
    files = {"models/m.sql": "SELECT 1 AS id", "history/people.sql": snapshot, "analyses/a.sql": "SELECT * FROM {{ ref('m') }}"}
    root = write_project(tmp_path / "p", files, "name: p\nsnapshot-paths: [history]\nanalysis-paths: [analyses]\n")

    def warnings(out: str) -> list[str]:
        return [line.split("  ", 1)[1] for line in out.splitlines() if "[WARNING]" in line]

    code, out = run(root, "build", spark)
    assert code == 0 and "OK created sql view model default.m " in out
    assert "OK snapshotted default.people_snapshot " in out and warnings(out) == []
    code, out = run(root, "compile", spark)
    assert code == 0 and warnings(out) == [
        "[WARNING]: analyses/a.sql holds analyses, which hudiql leaves out; dbt-core with the hudiql adapter takes "
        "them (pip install 'hudiql[dbt]', then dbt compile)"]


HOOKED = {
    "models/orders.sql": """
        {{ config(materialized='incremental', unique_key='id', table_type='mor',
                  options={'hoodie.compact.inline': 'false'},
                  pre_hook=["CREATE TABLE IF NOT EXISTS audit (model STRING, event STRING) USING hudi",
                            "INSERT INTO audit VALUES ('{{ this }}', 'pre')"],
                  post_hook="CALL run_compaction(op => 'scheduleandexecute', table => '{{ this.identifier }}')") }}
        SELECT 1 AS id, '{{ var('v', 'a') }}' AS v
    """,
    "models/broken.sql": "{{ config(materialized='table', post_hook='SELECT * FROM no_such_table') }} SELECT 1 AS id",
}


def test_hooks_run_around_the_materialization(spark, tmp_path):
    """pre_hook and post_hook (a string or a list; the project's `+post-hook` first, then the
    model's) run in the model's session around its materialization, rendered then ({{ this }});
    a failing hook fails its model with the hook's error."""
    project_yml = """
    name: p
    models:
      p:
        +post-hook: "INSERT INTO audit VALUES ('{{ this }}', 'project post')"
    """
    root = write_project(tmp_path / "p", HOOKED, project_yml)
    code, out = run(root, "run", spark, select=["orders"])
    assert code == 0, out
    code, out = run(root, "run", spark, select=["orders"], vars={"v": "b"})  # an update: a log file
    assert code == 0, out
    assert rows(spark, root, "SELECT id, v FROM orders") == [(1, "b")]
    assert rows(spark, root, "SELECT model, event, count(*) FROM audit GROUP BY model, event") == [
        ("default.orders", "pre", 2), ("default.orders", "project post", 2)]
    timeline = sorted(p.name for p in (root / "warehouse" / "orders" / ".hoodie").iterdir() if p.name.endswith(".commit"))
    assert len(timeline) == 1  # the post-hook compacted the second run's log (the first left none)
    ran = (root / "target" / "run" / "p" / "models" / "orders.sql").read_text()
    assert "INSERT INTO audit VALUES ('default.orders', 'pre')" in ran
    assert ran.index("'project post'") < ran.index("CALL run_compaction")  # the project's hook first

    code, out = run(root, "run", spark, select=["broken"])
    assert code == 1 and "no_such_table" in out
    assert run_results(root)["model.p.broken"]["status"] == "error"


def test_a_hook_that_is_not_sql_text_is_refused_naming_the_model(tmp_path):
    root = write_project(tmp_path / "p", {"models/m.sql": "{{ config(post_hook=[1]) }} SELECT 1 AS id"},
                         "name: p\nmodels:\n  p:\n    +post-hook: \"SELECT 1\"\n")
    code, out = run(root, "compile")
    assert code == 2 and "model m" in out and "config 'post_hook' must be SQL text or a list of it, got ['SELECT 1', 1]" in out


def test_a_model_picks_its_table_version_with_its_options(spark, tmp_path):
    """options={'hoodie.write.table.version': '9'}: the model's table is a version 9 table, merged into
    as one (and read by the official reader)."""
    body = "SELECT 1 AS id, '{{ var('v') }}' AS v{% if var('more') %} UNION ALL SELECT 2, 'b'{% endif %}"
    root = write_project(tmp_path / "p", {
        "models/nine.sql": "{{ config(materialized='incremental', unique_key='id', table_type='mor', "
                           "options={'hoodie.write.table.version': '9'}) }} " + body,
    }, "name: p\n")
    assert run(root, "run", spark, vars={"v": "a", "more": False})[0] == 0
    assert run(root, "run", spark, vars={"v": "a2", "more": True})[0] == 0
    table = location(root, "nine").removeprefix("file://")
    assert "hoodie.table.version=9" in open(f"{table}/.hoodie/hoodie.properties").read()
    assert rows(spark, root, "SELECT id, v FROM nine") == [(1, "a2"), (2, "b")] == official_rows(table, ["id", "v"])


CROSS_DATABASE = """{{ config(materialized='table') }}
select {{ dbt.date_trunc('month', "to_date('2024-02-15')") }} as month_start,
  {{ dbt.dateadd('month', 1, "to_date('2024-01-31')") }} as plus_month,
  {{ dbt.datediff("to_date('2024-01-31')", "to_date('2024-02-01')", 'month') }} as months_between,
  {{ dbt.datediff("timestamp'2024-01-01 10:59:00'", "timestamp'2024-01-01 11:00:00'", 'hour') }} as hours_between,
  {{ dbt.last_day("to_date('2024-02-10')", 'month') }} as last_day,
  {{ dbt.hash("'a'") }} as hashed,
  {{ dbt.split_part("'a-b-c'", "'-'", -1) }} as last_part,
  {{ dbt.safe_cast("'x'", dbt.type_int()) }} as not_an_int,
  {{ dbt.concat(["'a'", "'b'"]) }} as ab,
  {{ dbt.array_append(dbt.array_construct([1, 2]), 3) }} as arr,
  {{ dbt.date(2024, 2, 29) }} as leap_day,
  {{ dbt.position("'b'", "'abc'") }} as pos,
  {{ dbt.right("'abc'", 2) }} as tail,
  {{ greeting() }} as greeting
"""


def test_dbt_cross_database_macros_and_dispatch(spark, tmp_path):
    """dbt's ``dbt`` namespace (cross-database macros in Spark SQL) and ``adapter.dispatch``, with
    dbt's search order: a project's ``spark__`` beats its ``default__``, and a project's
    ``default__hash`` beats the built-in one."""
    root = write_project(tmp_path / "p", {
        "models/x.sql": CROSS_DATABASE,
        "models/spine.sql": "{{ config(materialized='table') }} "
                            "{{ dbt.date_spine('day', \"to_date('2024-01-30')\", \"to_date('2024-02-02')\") }}",
        "models/agg.sql": "{{ config(materialized='table') }} select {{ dbt.listagg('v', \"'|'\", 'order by v desc') }} "
                          "as l, {{ dbt.bool_or('v > 1') }} as b from (select 1 as v union all select 2)",
        "models/lookup.sql": """
            -- depends_on: {{ ref('agg') }}
            {% set found = adapter.get_relation(database=none, schema=target.schema, identifier='agg') if execute %}
            {% set missing = adapter.get_relation(database=none, schema=target.schema, identifier='nope') if execute %}
            select '{{ found }}' as found, '{{ found.type if found }}' as kind, {{ missing is none }} as missing
        """,
        "macros/greeting.sql": """
            {% macro greeting() %}{{ return(adapter.dispatch('greeting')()) }}{% endmacro %}
            {% macro default__greeting() %}'default'{% endmacro %}
            {% macro spark__greeting() %}'spark'{% endmacro %}
            {% macro default__hash(field) %}sha1(cast({{ field }} as string)){% endmacro %}
        """,
    }, "name: p\n")
    code, out = run(root, "run", spark)
    assert code == 0, out
    session = hudiql.connect(warehouse=str(root / "warehouse"), spark=spark)
    [x] = [r.asDict() for r in session.sql("SELECT * FROM x").collect()]
    assert {k: v for k, v in x.items() if not k.startswith("_hoodie")} == {
        "month_start": datetime.datetime(2024, 2, 1), "plus_month": datetime.datetime(2024, 2, 29), "months_between": 1,
        "hours_between": 1, "last_day": datetime.date(2024, 2, 29), "hashed": hashlib.sha1(b"a").hexdigest(),
        "last_part": "c", "not_an_int": None, "ab": "ab", "arr": [1, 2, 3], "leap_day": datetime.date(2024, 2, 29),
        "pos": 2, "tail": "bc", "greeting": "spark"}
    assert rows(spark, root, "SELECT date_day FROM spine") == [
        (datetime.datetime(2024, 1, 30),), (datetime.datetime(2024, 1, 31),), (datetime.datetime(2024, 2, 1),)]
    assert rows(spark, root, "SELECT l, b FROM agg") == [("2|1", True)]
    assert rows(spark, root, "SELECT found, kind, missing FROM lookup") == [("default.agg", "table", True)]
    # a spine of no day is refused, as dbt refuses it
    (root / "models" / "spine.sql").write_text("{{ config(materialized='table') }} "
                                               "{{ dbt.date_spine('day', \"to_date('2024-01-30')\", \"to_date('2024-01-30')\") }}")
    code, out = run(root, "run", spark, select=["spine"])
    assert code == 1 and "generate_series: upper bound must be positive" in out


def test_statement_blocks_load_result_and_run_query_tables(spark, tmp_path):
    """dbt's ``{% call statement(name, fetch_result=True) %}`` and ``load_result(name)`` (its
    response, ``data`` and ``table``), and ``run_query``'s table as dbt's macros use it
    (``.columns[...].values()``, ``.rows``, ``.column_names``); a statement without a name only runs."""
    root = write_project(tmp_path / "p", {
        "models/base.sql": "{{ config(materialized='table') }} select 1 as id, 'a' as v union all select 2, 'b'",
        "models/uses.sql": """
            -- depends_on: {{ ref('base') }}
            {% call statement('ids', fetch_result=True) %}
              select id, v from {{ ref('base') }} order by id
            {% endcall %}
            {% call statement() %}select 1{% endcall %}
            {% call noop_statement('noop', 'nothing ran', 'OK', 0) %}select 1{% endcall %}
            {% if execute %}
              {% set loaded = load_result('ids') %}
              {% set ids = loaded['table'].columns['id'].values() %}
              {% set found = run_query('select v from ' ~ ref('base') ~ ' order by v desc') %}
              {% set firsts = found.columns[0].values() | join(',') %}
              {% set shape = [loaded['data'] | length, loaded['table'].column_names | join('+'), found.rows[0]['v'],
                              load_result('nothing') is none, loaded['response'].code,
                              load_result('noop')['response'] ~ ''] %}
            {% else %}
              {% set ids, firsts, shape = [], '', [] %}
            {% endif %}
            select {{ ids | sum }} as total, '{{ firsts }}' as firsts, '{{ shape | join("/") }}' as shape
        """,
        "models/bad.sql": "{% call statement('x', language='python') %}select 1{% endcall %} select 1 as one",
    }, "name: p\n")
    code, out = run(root, "run", spark, select=["base", "uses"])
    assert code == 0, out
    assert rows(spark, root, "SELECT total, firsts, shape FROM uses") == [(3, "b,a", "2/id+v/b/True/OK/nothing ran")]
    code, out = run(root, "run", spark, select=["bad"])
    assert code == 1 and "statement(language='python'): hudiql runs SQL statements only" in out


def said(out: str) -> list[str]:
    """The console's lines after the first ("Running with ..."), without their time."""
    return [line.split("  ", 1)[-1] for line in out.splitlines()[1:]]


def test_run_operation_calls_a_macro_that_runs_statements(spark, tmp_path):
    """``hudiql run-operation`` as dbt's: the macro runs with its ``--args`` and may run statements;
    only what it logs is printed; a failure is one line and exit code 1; an unknown macro is refused;
    ``run_results.json`` names the macro."""
    root = write_project(tmp_path / "p", {
        "models/base.sql": "{{ config(materialized='table') }} select 1 as id union all select 2",
        "macros/ops.sql": """
            {% macro grow(rows, label='added') %}
              {% do run_query('INSERT INTO ' ~ target.schema ~ '.base VALUES (' ~ rows | join('), (') ~ ')') %}
              {% set n = run_query('select count(*) as n from ' ~ target.schema ~ '.base').columns['n'].values()[0] %}
              {{ log(label ~ ': ' ~ n ~ ' rows', info=True) }}
            {% endmacro %}
            {% macro broken() %}{% do run_query('select * from no_such_table') %}{% endmacro %}
        """,
    }, "name: p\n")
    assert run(root, "run", spark)[0] == 0
    code, out = run(root, "run-operation", spark, macro="grow", macro_args={"rows": [7, 8]})
    assert code == 0, out
    assert said(out) == ["added: 4 rows"]
    assert rows(spark, root, "SELECT id FROM base") == [(1,), (2,), (7,), (8,)]
    assert run_results(root)["macro.p.grow"]["status"] == "success"
    code, out = run(root, "run-operation", spark, macro="p.grow", macro_args={"rows": [9], "label": "now"})
    assert code == 0 and said(out) == ["now: 5 rows"], out
    code, out = run(root, "run-operation", spark, macro="broken")
    [line] = said(out)
    assert code == 1 and line.startswith("Encountered an error while running operation: ") and "no_such_table" in line
    assert run_results(root)["macro.p.broken"]["status"] == "error"
    code, out = run(root, "run-operation", spark, macro="nope")
    assert code == 2 and "could not find a macro with the name 'nope'" in out


def test_show_previews_a_model_or_an_inline_query_as_dbt_does(spark, tmp_path):
    """``hudiql show``: a model's first rows (``--limit``, 5 by default) drawn as agate draws them,
    an ``--inline`` query with ``ref``, JSON output, and one line for a failing query."""
    root = write_project(tmp_path / "p", {
        "models/nums.sql": "{{ config(materialized='table') }} select id, id * 1.5 as half, concat('n', id) as name "
                           "from range(1, 8)",
    }, "name: p\n")
    assert run(root, "run", spark)[0] == 0
    code, out = run(root, "show", spark, select=["nums"])
    assert code == 0, out
    lines = out.splitlines()
    assert lines[1].endswith("Previewing node 'nums':")
    assert lines[2:4] == ["| id | half | name |", "| -- | ---- | ---- |"]
    assert len(lines[4:]) == 5 and lines[4:6] == ["|  1 |  1.5 | n1   |", "|  2 |  3.0 | n2   |"]
    code, out = run(root, "show", spark, inline="select max(id) as top from {{ ref('nums') }}", limit=-1)
    assert code == 0 and out.splitlines()[1].endswith("Previewing inline node:") and out.splitlines()[4] == "|   7 |"
    code, out = run(root, "show", spark, inline="select id, name from {{ ref('nums') }} where id < 3", output="json")
    shown = json.loads(out.split("\n", 1)[1].split("  ", 1)[1])
    assert code == 0 and shown == {"show": [{"id": 1, "name": "n1"}, {"id": 2, "name": "n2"}]}
    code, out = run(root, "show", spark, inline="select * from no_such_table")
    assert code == 1 and "Encountered an error while previewing sql_operation inline_query" in out
    assert run(root, "show", spark)[0] == 2  # neither --select nor --inline


def test_state_result_and_test_type_selectors(spark, tmp_path):
    """``state:new`` / ``state:modified`` (``.body``, ``.configs``) / ``state:unmodified`` and
    ``result:<status>`` against an earlier run's target folder (``--state``), and ``test_type:`` /
    ``test_name:``, as dbt selects them."""
    root = write_project(tmp_path / "p", {
        "models/a.sql": "{{ config(materialized='table') }} select 1 as id",
        "models/b.sql": "{{ config(materialized='table') }} select id from {{ ref('a') }}",
        "models/bad.sql": "{{ config(materialized='table') }} select * from no_such_table",
        "models/schema.yml": "version: 2\nmodels:\n  - name: a\n    columns:\n      - name: id\n        data_tests: [not_null, unique]\n",
        "tests/a_is_small.sql": "select * from {{ ref('a') }} where id > 10",
    }, "name: p\n")
    code, _ = run(root, "build", spark)
    assert code == 1  # bad fails
    shutil.copytree(root / "target", tmp_path / "state")
    (root / "models" / "b.sql").write_text("{{ config(materialized='table') }} select id + 1 as id from {{ ref('a') }}")
    (root / "models" / "a.sql").write_text("{{ config(materialized='view') }} select 1 as id")
    (root / "models" / "c.sql").write_text("select 2 as id")

    def selected(*selector: str, types: tuple[str, ...] = ("model",)) -> list[str]:
        code, out = run(root, "ls", spark, select=list(selector), state=str(tmp_path / "state"), resource_types=list(types))
        assert code == 0, out
        return sorted(line.split(".")[-1] for line in out.splitlines())

    assert selected("state:new") == ["c"]
    # (a's file changed with its config() call: its body too, as dbt compares the file's checksum)
    assert selected("state:modified.body") == ["a", "b", "c"]
    assert selected("state:modified.configs") == ["a", "c"]
    assert selected("state:modified") == ["a", "b", "c"]
    assert selected("state:unmodified") == ["bad"] == selected("state:old,state:unmodified")
    assert selected("result:error") == ["bad"]
    assert selected("result:pass", types=("test",)) == ["a_is_small", "not_null_a_id", "unique_a_id"]
    assert selected("test_type:singular", types=("test",)) == ["a_is_small"]
    assert selected("test_type:generic", types=("test",)) == ["not_null_a_id", "unique_a_id"] == selected(
        "test_type:schema", types=("test",))
    assert selected("test_name:not_null", types=("test",)) == ["not_null_a_id"]
    code, out = run(root, "ls", spark, select=["state:modified"])
    assert code == 2 and "give its target folder with --state" in out


def test_retry_runs_the_previous_command_on_what_it_did_not_finish(spark, tmp_path):
    """``hudiql retry``: the previous command (its flags) again, on the nodes that errored, failed
    or were skipped; nothing left: one line, exit 0; no previous run: one line, exit 2."""
    root = write_project(tmp_path / "p", {
        "models/good.sql": "{{ config(materialized='table') }} select 1 as id",
        "models/bad.sql": "{{ config(materialized='table') }} select id from {{ ref('good') }} join missing_table",
        "models/after.sql": "{{ config(materialized='table') }} select * from {{ ref('bad') }}",
    }, "name: p\n")
    code, out = run(root, "retry", spark)
    assert code == 2 and "Could not find previous run" in out
    code, _ = run(root, "run", spark, vars={"k": 1})
    assert code == 1
    assert {u: r["status"] for u, r in run_results(root).items()} == {
        "model.p.good": "success", "model.p.bad": "error", "model.p.after": "skipped"}
    # A run that selected by an earlier state: its retry keeps the selection's state, not re-selecting.
    shutil.copytree(root / "target", tmp_path / "state")
    code, _ = run(root, "run", spark, select=["result:error+"], state=str(tmp_path / "state"), vars={"k": 1})
    assert code == 1 and set(run_results(root)) == {"model.p.bad", "model.p.after"}
    (root / "models" / "bad.sql").write_text("{{ config(materialized='table') }} select id + 1 as id from {{ ref('good') }}")
    code, out = run(root, "retry", spark)
    assert code == 0, out
    assert {u: r["status"] for u, r in run_results(root).items()} == {"model.p.bad": "success", "model.p.after": "success"}
    assert json.loads((root / "target" / "run_results.json").read_text())["args"]["vars"] == {"k": 1}
    assert rows(spark, root, "SELECT id FROM after") == [(2,)]
    code, out = run(root, "retry", spark)
    assert code == 0 and "Nothing to do." in out


def test_source_freshness_checks_load_times_against_their_criteria(spark, tmp_path):
    """``hudiql source freshness``: each selected source table with criteria is pass, warn, error
    (stale; a table without rows too) or a runtime error. A table's criteria merge into its
    source's threshold by threshold (``freshness: null`` turns them off; ``filter`` narrows the
    rows); ``target/sources.json`` has them; a stale table exits 1."""
    session = hudiql.connect(warehouse=str(tmp_path / "p" / "warehouse"), spark=spark)
    session.sql("CREATE DATABASE IF NOT EXISTS raw")
    for name, hours_ago in (("fresh", 1), ("aging", 30), ("old", 100)):
        session.sql(f"CREATE TABLE raw.{name} (id INT, loaded TIMESTAMP) USING hudi TBLPROPERTIES (primaryKey='id')")
        session.sql(f"INSERT INTO raw.{name} SELECT 1, current_timestamp() - INTERVAL {hours_ago} HOURS")
    session.sql("INSERT INTO raw.old SELECT 2, current_timestamp()")  # only outside the filter
    session.sql("CREATE TABLE raw.empty (id INT, loaded TIMESTAMP) USING hudi TBLPROPERTIES (primaryKey='id')")
    root = write_project(tmp_path / "p", {
        "models/sources.yml": """
            sources:
              - name: raw
                loaded_at_field: loaded
                freshness: {warn_after: {count: 24, period: hour}, error_after: {count: 3, period: day}}
                tables:
                  - name: fresh
                  - name: aging  # warn_after stays the source's 24 hours
                    freshness: {error_after: {count: 4, period: day}}
                  - name: empty
                  - name: old
                    freshness: {error_after: {count: 2, period: day}, filter: "id = 1"}
                  - name: unchecked
                    freshness: null
                  - name: missing
        """,
    }, "name: p\n")
    code, out = run(root, "source", spark)
    statuses = {r["unique_id"].split(".")[-1]: r["status"]
                for r in json.loads((root / "target" / "sources.json").read_text())["results"]}
    assert statuses == {"fresh": "pass", "aging": "warn", "old": "error", "missing": "runtime error", "empty": "error"}
    assert code == 1, out
    lines = [line.split("  ", 1)[1] for line in out.splitlines()]
    assert any(line.startswith("5 of 5 ERROR STALE freshness of raw.old ") and line.endswith("s]") for line in lines)
    assert any(line.startswith("1 of 5 WARN freshness of raw.aging ") for line in lines)
    code, out = run(root, "source", spark, select=["source:raw.fresh"])
    assert code == 0, out


def test_properties_of_a_model_that_is_not_there_are_a_warning_as_in_dbt(spark, tmp_path):
    """dbt-core warns of a ``.yml`` entry whose model file is gone (NoNodeForYamlKey) and runs the
    rest; so does hudiql, in dbt's words."""
    root = write_project(tmp_path / "p", {
        "models/kept.sql": "SELECT 1 AS id",
        "models/schema.yml": "models:\n  - name: kept\n  - name: gone\n    description: removed last week\n",
    }, "name: p\n")
    code, out = run(root, "run", spark)
    assert code == 0, out
    warning = ("[WARNING]: Did not find matching node for patch with name 'gone' in the 'models' section of file "
               "'models/schema.yml'")
    assert [line.split("  ", 1)[1] for line in out.splitlines() if "[WARNING]" in line] == [warning]
