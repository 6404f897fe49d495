"""Unit tests in hudiql's own engine (``hudiql test`` and ``build``), as dbt-core 1.11 runs them: a
model's SELECT runs on the rows each ``given`` input lists, and must return the ``expect`` rows in
any order. In ``build`` they run before their model, and a failing one skips it."""

from __future__ import annotations

import json

import hudiql
import pytest
from test_artifacts_schema import validated
from test_project_helpers import loaded, run, run_results, write_project

FILES = {
    "seeds/people.csv": "id,name,email\n1,ann,ann@x.com\n2,bo,bo@y.org\n",
    "models/flagged.sql": """
        {{ config(materialized='incremental', unique_key='id') }}
        select id, name, email like '%@%.%' as ok, '{{ var('region', 'eu') }}' as region
        from {{ ref('people') }}
        {% if is_incremental() %} where id > (select max(id) from {{ this }}) {% endif %}
    """,
    "models/totals.sql": """
        select f.id, f.ok, o.total from {{ ref('flagged') }} f join {{ source('shop', 'orders') }} o on o.id = f.id
    """,
    "models/after.sql": "select * from {{ ref('totals') }}",
    "models/schema.yml": """
        sources:
          - name: shop
            tables:
              - name: orders
                columns:
                  - {name: id, data_type: int}
                  - {name: total, data_type: 'decimal(10,2)'}
        unit_tests:
          - name: emails_are_checked
            description: an address needs an @ and a dot
            model: flagged
            overrides:
              macros: {is_incremental: false}
            given:
              - input: ref('people')
                rows:
                  - {id: 1, email: a@b.com}
                  - {id: 2, email: nope}
                  - {id: 3}
            expect:
              rows:
                - {id: 2, ok: false}
                - {id: 1, ok: true}
                - {id: 3, ok: null}
          - name: only_new_rows_when_incremental
            model: flagged
            overrides:
              macros: {is_incremental: true}
              vars: {region: us}
            given:
              - input: ref('people')
                format: csv
                fixture: people_rows
              - input: this
                format: sql
                rows: select 3 as id
            expect:
              format: csv
              rows: |
                id,name,region
                5,eve,us
          - name: totals_join
            model: totals
            config: {tags: [joins]}
            given:
              - input: ref('flagged')
                rows: [{id: 1, ok: true}, {id: 2, ok: false}]
              - input: source('shop', 'orders')
                rows: [{id: 1, total: 2.5}, {id: 2, total: 3}]
            expect:
              format: sql
              fixture: expected_totals
    """,
    "tests/fixtures/people_rows.csv": "id,name,email\n1,ann,a@b.com\n5,eve,e@f.com\n",
    "tests/fixtures/expected_totals.sql": "select 2 as id, false as ok, 3.00 as total union all select 1, true, 2.50",
}


@pytest.fixture(autouse=True)
def no_user_profiles(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("HUDIQL_PROFILES_DIR", raising=False)


def progress(out: str) -> list[str]:
    """The progress lines' texts, without their time, numbers and dots."""
    return [line.split(" of ", 1)[1].split(" .", 1)[0].split(" ", 1)[1] for line in out.splitlines() if " of " in line and " ." in line]


def with_orders(root, spark):
    session = hudiql.connect(warehouse=str(root / "warehouse"), spark=spark)
    session.sql("CREATE DATABASE IF NOT EXISTS shop")
    session.sql("CREATE TABLE shop.orders (id int, total decimal(10, 2)) USING hudi TBLPROPERTIES (primaryKey = 'id')")


def test_unit_tests_run_before_their_model_in_build(spark, tmp_path):
    root = write_project(tmp_path / "p", FILES, "name: shop\nprofile: shop\n")
    with_orders(root, spark)
    code, out = run(root, "build", spark)
    assert code == 0, out
    lines = progress(out)
    # Each model waits for its unit tests, which wait for the model's inputs.
    for test, model in (("flagged::emails_are_checked", "sql incremental model default.flagged"),
                        ("flagged::only_new_rows_when_incremental", "sql incremental model default.flagged"),
                        ("totals::totals_join", "sql view model default.totals")):
        assert lines.index(f"PASS {test}") < lines.index(f"START {model}")
    assert lines.index("OK loaded seed file default.people") < lines.index("START unit_test flagged::emails_are_checked")
    assert "Found 3 models, 1 seed, 0 data tests, 3 unit tests, 1 source" in out
    assert "Finished running 1 seed, 1 incremental model, 2 view models, 3 unit tests" in out
    statuses = {u: (r["status"], r["failures"]) for u, r in run_results(root).items() if u.startswith("unit_test.")}
    assert statuses == {"unit_test.shop.flagged.emails_are_checked": ("pass", 0),
                        "unit_test.shop.flagged.only_new_rows_when_incremental": ("pass", 0),
                        "unit_test.shop.totals.totals_join": ("pass", 0)}
    compiled = root / "target" / "compiled" / "shop" / "models" / "schema.yml" / "totals_join.sql"
    assert "__dbt__cte__shop__orders AS (" in compiled.read_text()

    manifest = json.loads((root / "target" / "manifest.json").read_text())
    entry = manifest["unit_tests"]["unit_test.shop.flagged.emails_are_checked"]
    assert entry["fqn"] == ["shop", "flagged", "emails_are_checked"] and entry["depends_on"]["nodes"] == ["model.shop.flagged"]
    assert entry["description"] == "an address needs an @ and a dot" and entry["given"][0]["input"] == "ref('people')"
    assert not any(u.startswith("unit_test.") for u in manifest["nodes"])
    validated(root)  # manifest.json and run_results.json, against dbt's schemas


def test_a_failing_unit_test_fails_and_skips_its_model(spark, tmp_path):
    files = {**FILES, "models/schema.yml": FILES["models/schema.yml"].replace("{id: 3, ok: null}", "{id: 3, ok: true}")}
    root = write_project(tmp_path / "p", files, "name: shop\nprofile: shop\n")
    with_orders(root, spark)
    code, out = run(root, "build", spark)
    assert code == 1
    lines = progress(out)
    assert "FAIL 1 flagged::emails_are_checked" in lines
    assert "SKIP relation default.flagged" in lines and "SKIP relation default.totals" in lines
    assert "actual differs from expected:" in out
    drawn = out.split("actual differs from expected:")[1].split("compiled code")[0]
    assert [line.split(maxsplit=1)[1] for line in drawn.splitlines() if len(line.split()) > 1] == [
        "@@ ,id,ok", "+++,3,null", "---,3,True"]


def test_unit_tests_are_selected_as_dbt_selects_them(tmp_path):
    root = write_project(tmp_path / "p", FILES, "name: shop\nprofile: shop\nunit_tests:\n  shop:\n    +tags: [unit]\n")
    def listed(**flags):
        code, out = run(root, "ls", **flags)
        assert code == 0, out
        return out.split()

    assert listed(select=["test_type:unit"]) == [
        "unit_test:shop.emails_are_checked", "unit_test:shop.only_new_rows_when_incremental", "unit_test:shop.totals_join"]
    assert listed(select=["totals"], resource_types=["unit_test"]) == ["unit_test:shop.totals_join"]
    # (excluding a model leaves its unit tests out too)
    assert listed(select=["test_type:unit"], exclude=["flagged"]) == ["unit_test:shop.totals_join"]
    assert listed(select=["unit_test:shop.totals_join"]) == ["unit_test:shop.totals_join"]
    assert listed(select=["tag:joins"]) == ["unit_test:shop.totals_join"]
    assert len(listed(select=["tag:unit"])) == 3
    node = loaded(root).manifest.nodes["unit_test.shop.totals.totals_join"]
    assert node.config["tags"] == ["unit", "joins"]


@pytest.mark.parametrize("unit_test, message", [
    ("{name: t, model: nope, given: [], expect: {rows: []}}", "unit test t: model 'nope' is not an enabled model"),
    ("{name: t, model: inc, given: [], expect: {rows: []}}",
     "Boolean override for 'is_incremental' must be provided for unit test 't' in model 'inc'"),
    ("{name: t, model: inc, overrides: {macros: {is_incremental: true}}, given: [], expect: {rows: []}}",
     "Unit test 't' for incremental model 'inc' must have a 'this' input"),
    ("{name: t, model: totals, given: [{input: ref('inc')}], expect: {rows: []}}",
     "input ref('inc') has no rows:, and is no seed to read them from"),
    ("{name: t, model: totals, given: [{input: 'orders', rows: []}], expect: {rows: []}}",
     "input 'orders' must be ref('...'), source('...', '...') or this"),
    ("{name: t, model: totals, given: [], expect: {rows: [], format: xml}}", "format 'xml' is not valid"),
    ("{name: t, model: totals, given: [], expect: {rows: [], colour: red}}", "unknown key 'colour'"),
    ("{name: t, model: totals, given: [{input: ref('flagged'), format: csv, fixture: missing}], expect: {rows: []}}",
     "no fixture file missing.csv"),
])
def test_a_bad_unit_test_is_one_line(tmp_path, unit_test, message):
    files = {"models/totals.sql": "select 1 as id", "models/u.yml": f"unit_tests:\n  - {unit_test}\n",
             "models/inc.sql": "{{ config(materialized='incremental') }} select 1 as id "
                               "{% if is_incremental() %} where false {% endif %}"}
    root = write_project(tmp_path / "p", files, "name: shop\nprofile: shop\n")
    code, out = run(root, "ls")
    assert code != 0 and message in out, out


@pytest.mark.parametrize("given, message", [
    # an input the model reads and the test does not give
    ("[{input: ref('flagged'), rows: [{id: 1}]}]", "the model reads source('shop', 'orders'), which the unit test does not give"),
    # a column the input does not have
    ("[{input: ref('flagged'), rows: [{id: 1, colour: red}]}, {input: \"source('shop', 'orders')\", rows: []}]",
     "Invalid column name: 'colour' in unit test fixture for 'flagged'"),
])
def test_a_unit_test_that_cannot_run_errors_in_one_line(spark, tmp_path, given, message):
    schema = FILES["models/schema.yml"].split("        unit_tests:")[0]
    unit = f"\n        unit_tests:\n          - {{name: t, model: totals, given: {given}, expect: {{rows: []}}}}\n"
    root = write_project(tmp_path / "p", {**FILES, "models/schema.yml": schema + unit}, "name: shop\nprofile: shop\n")
    with_orders(root, spark)
    assert run(root, "build", spark, exclude=["test_type:unit"])[0] == 0
    code, out = run(root, "test", spark, select=["unit_test:t"])
    assert code == 1 and message in out, out


def test_an_input_is_typed_by_its_table_else_by_its_declared_columns(spark, tmp_path):
    root = write_project(tmp_path / "p", FILES, "name: shop\nprofile: shop\n")
    code, out = run(root, "test", spark, select=["unit_test:emails_are_checked"])
    assert code == 1
    assert ("not able to get the columns of input ref('people') (default.people) because the relation doesn't "
            "exist: build it first, or give its columns a data_type in its .yml") in out
    # The source's table does not exist: its rows are typed as its .yml declares its columns.
    code, out = run(root, "build", spark, select=["people", "flagged"], exclude=["test_type:unit"])
    assert code == 0, out
    code, out = run(root, "test", spark, select=["unit_test:totals_join"])
    assert code == 0 and "PASS totals::totals_join" in out, out


def test_state_modified_selects_a_changed_unit_test(tmp_path):
    root = write_project(tmp_path / "p", FILES, "name: shop\nprofile: shop\n")
    assert run(root, "ls")[0] == 0
    state = tmp_path / "state"
    (root / "target").rename(state)
    schema = root / "models" / "schema.yml"
    schema.write_text(schema.read_text().replace("{id: 3, ok: null}", "{id: 3, ok: false}"))
    code, out = run(root, "ls", select=["state:modified"], state=str(state))
    assert code == 0 and out.split() == ["unit_test:shop.emails_are_checked"]


def test_seed_rows_overrides_through_dbt_and_failures_in_turn(spark, tmp_path):
    """An input given without rows reads its seed's; a macro override reaches ``dbt.<macro>`` too; in
    build, a model's unit tests run one after the other and a failing one skips the rest."""
    files = {
        "seeds/people.csv": "id,name\n1,ann\n2,bo\n",
        "models/stamped.sql": "select id, {{ dbt.current_timestamp() }} as at from {{ ref('people') }}",
        "models/u.yml": """
            unit_tests:
              - name: a_reads_the_seed
                model: stamped
                overrides: {macros: {current_timestamp: "cast('2024-01-01' as timestamp)"}}
                given: [{input: ref('people')}]
                expect: {rows: [{id: 1, at: 2024-01-01 00:00:00}, {id: 2, at: 2024-01-01 00:00:00}]}
              - name: b_fails
                model: stamped
                given: [{input: ref('people'), rows: [{id: 1}]}]
                expect: {rows: [{id: 2}]}
              - name: c_after
                model: stamped
                given: [{input: ref('people'), rows: [{id: 1}]}]
                expect: {rows: [{id: 1}]}
        """,
    }
    root = write_project(tmp_path / "p", files, "name: shop\nprofile: shop\n")
    code, out = run(root, "build", spark)
    assert code == 1
    lines = progress(out)
    assert "PASS stamped::a_reads_the_seed" in lines and "FAIL 1 stamped::b_fails" in lines
    assert "SKIP test stamped::c_after" in lines and "SKIP relation default.stamped" in lines
    code, out = run(root, "test", spark, select=["unit_test:c_after"])
    assert code == 0 and "PASS stamped::c_after" in out, out
