"""Snapshots in hudiql's own engine (``hudiql snapshot`` and ``build``): each run of a snapshot adds
the versions of its query's rows that changed since the last, closing the versions they replace,
as dbt-core 1.11's snapshots do; the table is a Hudi table the official reader reads."""

from __future__ import annotations

import datetime
import json

import hudiql
import pytest
from test_artifacts_schema import validated
from test_project_helpers import loaded, run, run_results, write_project

from conftest import official_rows

JAN, FEB, MAR = (datetime.datetime(2024, m, 1) for m in (1, 2, 3))

FILES = {
    "models/sources.yml": """
        sources:
          - name: raw
            tables:
              - name: customers
    """,
    "snapshots/customers.sql": """
        {% snapshot by_time %}
        {{ config(unique_key='id', strategy='timestamp', updated_at='updated_at') }}
        select * from {{ source('raw', 'customers') }}
        {% endsnapshot %}

        {% snapshot by_check %}
        {{ config(unique_key='id', strategy='check', check_cols=['name'], hard_deletes='new_record') }}
        select id, name from {{ source('raw', 'customers') }}
        {% endsnapshot %}
    """,
    "snapshots/history/more.yml": """
        snapshots:
          - name: by_yaml
            relation: source('raw', 'customers')
            description: every column checked; deleted keys closed
            config:
              unique_key: id
              strategy: check
              check_cols: all
              hard_deletes: invalidate
              dbt_valid_to_current: "to_timestamp('9999-12-31')"
              snapshot_meta_column_names: {dbt_valid_from: valid_from, dbt_valid_to: valid_to}
    """,
    "models/current_customers.sql": "select id, name from {{ ref('by_time') }} where dbt_valid_to is null\n",
}


@pytest.fixture(autouse=True)
def no_user_profiles(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("HUDIQL_PROFILES_DIR", raising=False)


@pytest.fixture
def project(tmp_path, spark):
    root = write_project(tmp_path / "p", FILES, "name: shop\nprofile: shop\n")
    session = hudiql.connect(warehouse=str(root / "warehouse"), spark=spark)
    session.sql("CREATE DATABASE raw")
    session.sql("CREATE TABLE raw.customers (id int, name string, updated_at timestamp) USING hudi "
                "TBLPROPERTIES (primaryKey = 'id')")
    session.sql(f"INSERT INTO raw.customers VALUES (1, 'a', TIMESTAMP'{JAN}'), (2, 'b', TIMESTAMP'{JAN}'), "
                f"(3, 'c', TIMESTAMP'{JAN}')")
    return root, session


def versions(session, table: str, valid_to: str = "dbt_valid_to", extra: str = "") -> list[tuple]:
    """(id, name, current?) of each version, in order."""
    rows = session.sql(f"SELECT id, name, {valid_to} {extra} FROM default.{table}").collect()
    return sorted((r[0], r[1], r[2] is None or r[2].year == 9999, *r[3:]) for r in rows)


def test_snapshots_keep_each_version_by_strategy(project, spark):
    root, session = project
    code, out = run(root, "build", spark)
    assert code == 0, out
    assert "START snapshot default.by_time" in out and "OK snapshotted default.by_time" in out
    assert "Finished running 3 snapshots, 1 view model" in out
    statuses = {uid: r["status"] for uid, r in run_results(root).items()}
    assert statuses == {"snapshot.shop.by_time": "success", "snapshot.shop.by_check": "success",
                        "snapshot.shop.by_yaml": "success", "model.shop.current_customers": "success"}

    session.sql(f"UPDATE raw.customers SET name = 'a2', updated_at = TIMESTAMP'{FEB}' WHERE id = 1")
    session.sql("DELETE FROM raw.customers WHERE id = 2")
    session.sql(f"INSERT INTO raw.customers VALUES (4, 'd', TIMESTAMP'{FEB}')")
    code, out = run(root, "snapshot", spark)
    assert code == 0, out
    # timestamp: a new version from the row's updated_at; a deleted key is left alone (hard_deletes: ignore)
    assert versions(session, "by_time", extra=", dbt_valid_from") == [
        (1, "a", False, JAN), (1, "a2", True, FEB), (2, "b", True, JAN), (3, "c", True, JAN), (4, "d", True, FEB)]
    closed = session.sql("SELECT dbt_valid_to FROM default.by_time WHERE name = 'a'").collect()
    assert closed[0][0] == FEB
    # check on name; new_record: the deleted key gets a closing version marked deleted
    assert versions(session, "by_check", extra=", dbt_is_deleted") == [
        (1, "a", False, "False"), (1, "a2", True, "False"), (2, "b", False, "False"), (2, "b", True, "True"),
        (3, "c", True, "False"), (4, "d", True, "False")]
    # check on every column; invalidate: the deleted key's version is closed; current is 9999-12-31
    assert versions(session, "by_yaml", "valid_to") == [
        (1, "a", False), (1, "a2", True), (2, "b", False), (3, "c", True), (4, "d", True)]
    assert session.sql("SELECT count(*) FROM default.by_yaml WHERE valid_to = to_timestamp('9999-12-31')").collect()[0][0] == 3
    assert sorted(tuple(r) for r in session.sql("SELECT * FROM default.current_customers").collect()) == [
        (1, "a2"), (2, "b"), (3, "c"), (4, "d")]

    # A deleted key that comes back: its deletion version closes, a new current version opens.
    session.sql(f"INSERT INTO raw.customers VALUES (2, 'b', TIMESTAMP'{MAR}')")
    code, out = run(root, "snapshot", spark, select=["by_check", "by_yaml"])
    assert code == 0, out
    assert versions(session, "by_check", extra=", dbt_is_deleted")[2:5] == [
        (2, "b", False, "False"), (2, "b", False, "True"), (2, "b", True, "False")]
    assert versions(session, "by_yaml", "valid_to")[2:4] == [(2, "b", False), (2, "b", True)]
    # A run without changes adds nothing.
    code, out = run(root, "snapshot", spark)
    assert code == 0, out
    assert len(versions(session, "by_time")) == 6 and len(versions(session, "by_check")) == 7

    # The table is Hudi's, keyed by the version id: the official reader reads every version.
    table = root / "warehouse" / "by_time"
    assert official_rows(table, ["id", "name"]) == sorted((i, n) for i, n, _ in versions(session, "by_time"))
    properties = (table / ".hoodie" / "hoodie.properties").read_text()
    assert "hoodie.table.recordkey.fields=dbt_scd_id" in properties
    validated(root)  # manifest.json and run_results.json, against dbt's schemas


def test_new_columns_of_the_query_are_added(tmp_path, spark):
    files = {"snapshots/s.sql": """
        {% snapshot people %}
        {{ config(unique_key='id', strategy='check', check_cols='all') }}
        select 1 as id, 'x' as name {% if var('more', false) %}, 7 as age{% endif %}
        {% endsnapshot %}
    """}
    root = write_project(tmp_path / "p", files, "name: shop\nprofile: shop\n")
    assert run(root, "snapshot", spark)[0] == 0
    code, out = run(root, "snapshot", spark, vars={"more": True})
    assert code == 0, out
    session = hudiql.connect(warehouse=str(root / "warehouse"), spark=spark)
    # As dbt: the table gains the column, and a column new to the table counts as a change.
    rows = sorted((r.dbt_valid_to is None, r.id, r.age) for r in session.sql("SELECT * FROM default.people").collect())
    assert rows == [(False, 1, None), (True, 1, 7)]


def test_snapshot_nodes_are_selected_and_listed_as_dbt_names_them(tmp_path):
    root = write_project(tmp_path / "p", FILES, "name: shop\nprofile: shop\nsnapshots:\n  shop:\n    +tags: [hist]\n")
    manifest = loaded(root).manifest
    node = manifest.nodes["snapshot.shop.by_time"]
    assert node.fqn == ["shop", "customers", "by_time"]  # a SQL snapshot's fqn names its file
    assert manifest.nodes["snapshot.shop.by_yaml"].fqn == ["shop", "history", "by_yaml"]
    assert node.config["tags"] == ["hist"] and node.config["hard_deletes"] == "ignore"
    assert manifest.nodes["snapshot.shop.by_yaml"].description == "every column checked; deleted keys closed"
    code, out = run(root, "ls", select=["resource_type:snapshot"], output="name")
    assert code == 0 and sorted(out.split()) == ["by_check", "by_time", "by_yaml"]
    code, out = run(root, "ls", select=["tag:hist"])
    assert code == 0 and out.split() == ["shop.customers.by_check", "shop.customers.by_time", "shop.history.by_yaml"]
    written = json.loads((root / "target" / "manifest.json").read_text())["nodes"]["snapshot.shop.by_check"]
    assert written["resource_type"] == "snapshot" and written["path"] == "customers.sql"
    assert written["config"]["strategy"] == "check" and written["config"]["check_cols"] == ["name"]


@pytest.mark.parametrize("config, message", [
    ("strategy='timestamp'", "a snapshot needs the configs strategy (timestamp or check) and unique_key"),
    ("unique_key='id', strategy='timestamp'", "the timestamp strategy needs updated_at"),
    ("unique_key='id', strategy='check'", "the check strategy needs check_cols"),
    ("unique_key='id', strategy='merge'", "strategy 'merge' is not valid"),
    ("unique_key='id', strategy='check', check_cols='all', hard_deletes='drop'", "hard_deletes 'drop' is not valid"),
    ("unique_key='id', strategy='check', check_cols='all', target_database='x'", "target_database: Spark has one level"),
])
def test_a_bad_snapshot_config_is_one_line(tmp_path, config, message):
    files = {"snapshots/s.sql": f"{{% snapshot s %}}{{{{ config({config}) }}}} select 1 as id {{% endsnapshot %}}"}
    root = write_project(tmp_path / "p", files, "name: shop\nprofile: shop\n")
    code, out = run(root, "ls")
    assert code != 0
    assert message in out and "snapshot s (snapshots/s.sql)" in out


def test_a_snapshot_file_without_a_block_is_refused(tmp_path):
    root = write_project(tmp_path / "p", {"snapshots/s.sql": "select 1 as id"}, "name: shop\nprofile: shop\n")
    code, out = run(root, "ls")
    assert code != 0 and "snapshots/s.sql: a snapshot file holds {% snapshot name %}" in out


def test_a_table_that_is_no_snapshot_is_not_written(tmp_path, spark):
    files = {"snapshots/s.sql": "{% snapshot s %}{{ config(unique_key='id', strategy='check', check_cols='all') }}"
                                " select 1 as id {% endsnapshot %}"}
    root = write_project(tmp_path / "p", files, "name: shop\nprofile: shop\n")
    session = hudiql.connect(warehouse=str(root / "warehouse"), spark=spark)
    session.sql("CREATE TABLE default.s (id int) USING hudi TBLPROPERTIES (primaryKey = 'id')")
    session.sql("INSERT INTO default.s VALUES (5)")
    code, out = run(root, "snapshot", spark)
    assert code != 0
    assert "default.s is not a snapshot table (it has no dbt_scd_id, dbt_valid_from, dbt_valid_to, dbt_updated_at)" in out
    assert [tuple(r) for r in session.sql("SELECT id FROM default.s").collect()] == [(5,)]


def test_a_key_expression_and_the_check_columns_are_the_querys(tmp_path, spark):
    """``unique_key`` is one SQL expression, commas and all; ``check_cols`` are resolved against the
    query, so a misspelt one is an error rather than a change on every run."""
    files = {"snapshots/s.sql": """
        {% snapshot pairs %}
        {{ config(unique_key="concat(a, '-', b)", strategy='check', check_cols=var('cols', ['v'])) }}
        select 1 as a, 'x' as b, {{ var('v', 1) }} as v
        {% endsnapshot %}
    """}
    root = write_project(tmp_path / "p", files, "name: shop\nprofile: shop\n")
    for v in (1, 1, 2):
        code, out = run(root, "snapshot", spark, vars={"v": v})
        assert code == 0, out
    session = hudiql.connect(warehouse=str(root / "warehouse"), spark=spark)
    rows = sorted((r.v, r.dbt_valid_to is None) for r in session.sql("SELECT * FROM default.pairs").collect())
    assert rows == [(1, False), (2, True)]
    code, out = run(root, "snapshot", spark, vars={"v": 2, "cols": ["vv"]})
    assert code == 1 and "vv" in out
    assert len(session.sql("SELECT * FROM default.pairs").collect()) == 2


def test_new_record_on_a_snapshot_without_its_column_is_refused(tmp_path, spark):
    files = {"snapshots/s.sql": """
        {% snapshot s %}
        {{ config(unique_key='id', strategy='check', check_cols='all', hard_deletes=var('hd', 'ignore')) }}
        select 1 as id
        {% endsnapshot %}
    """}
    root = write_project(tmp_path / "p", files, "name: shop\nprofile: shop\n")
    assert run(root, "snapshot", spark)[0] == 0
    code, out = run(root, "snapshot", spark, vars={"hd": "new_record"})
    assert code == 1
    assert ("snapshot table default.s has no column dbt_is_deleted, which hard_deletes: new_record keeps; drop the "
            "table to snapshot anew, or keep the earlier hard_deletes") in out


def test_a_composite_key_keeps_one_history_per_key(tmp_path, spark):
    """``unique_key`` as a list: a key is the pair, so the same ``a`` under another ``b`` is another
    key's history; a pair gone from the query is closed (``invalidate``)."""
    files = {"snapshots/s.sql": """
        {% snapshot pairs %}
        {{ config(unique_key=['a', 'b'], strategy='check', check_cols='all', hard_deletes='invalidate') }}
        select * from values {{ var('rows') }} as t(a, b, v)
        {% endsnapshot %}
    """}
    root = write_project(tmp_path / "p", files, "name: shop\nprofile: shop\n")
    for rows in ("(1, 'x', 1), (1, 'y', 1), (2, 'x', 1)", "(1, 'x', 2), (1, 'y', 1)"):
        code, out = run(root, "snapshot", spark, vars={"rows": rows})
        assert code == 0, out
    session = hudiql.connect(warehouse=str(root / "warehouse"), spark=spark)
    rows = sorted((r.a, r.b, r.v, r.dbt_valid_to is None) for r in session.sql("SELECT * FROM default.pairs").collect())
    assert rows == [(1, "x", 1, False), (1, "x", 2, True), (1, "y", 1, True), (2, "x", 1, False)]


def test_a_model_is_not_materialized_as_a_snapshot(tmp_path):
    root = write_project(tmp_path / "p", {"models/m.sql": "{{ config(materialized='snapshot') }} select 1 as id"},
                         "name: shop\nprofile: shop\n")
    code, out = run(root, "ls")
    assert code != 0 and "materialized 'snapshot' is not valid" in out, out
