"""One dbt project (seed, source, table, view, ephemeral and incremental models, ``changes()``,
generic tests, unit tests, a snapshot), run by dbt-core with the hudiql adapter and by ``hudiql``'s own commands: both write
the same rows, report the same nodes and statuses, and describe the warehouse alike
(``docs generate``'s ``catalog.json``)."""

from __future__ import annotations

import datetime
import io
import json
from pathlib import Path

import hudiql
import pytest
from dbt.tests.util import run_dbt
from hudiql.project.cli.flags import Flags
from hudiql.project.cli.main import invoke

SEED = "id,name,amount\n1,ann,1.5\n2,bo,2.25\n"
MODELS = {
    "orders.sql": "{{ config(materialized='table', unique_key='id') }} "
                  "select id, name, cast(amount as decimal(10, 2)) as amount, current_date() as day from {{ ref('people') }}",
    "names.sql": "{{ config(materialized='view') }} select name from {{ ref('orders') }}",
    "eph.sql": "{{ config(materialized='ephemeral') }} select 1 as one",
    "merged.sql": "{{ config(materialized='incremental', unique_key='id', precombine_field='ts') }} "
                  "select id, name, 1 as ts from {{ ref('orders') }} join {{ ref('eph') }} on true",
    "downstream.sql": "{{ config(materialized='incremental', unique_key='id') }} "
                      "select id, upper(name) as name from {{ changes(ref('merged')) }}",
    "sources.yml": "sources:\n  - name: raw\n    schema: \"{{ target.schema }}\"\n    tables:\n      - name: people\n",
    "schema.yml": "models:\n  - name: orders\n    columns:\n      - name: id\n        data_tests: [unique, not_null]\n"
                  "      - name: name\n        data_tests:\n          - accepted_values:\n"
                  "              arguments: {values: [ann, bo]}\n",
    # One unit test that passes and one that fails (tagged, so the build can leave it out).
    "unit.yml": """
unit_tests:
  - name: amounts_are_decimals
    model: orders
    given:
      - input: ref('people')
        rows: [{id: 7, name: x, amount: 1.255}]
    expect:
      rows: [{id: 7, amount: 1.26}]
  - name: wrong_on_purpose
    model: merged
    config: {tags: [wrong]}
    given:
      - input: ref('orders')
        format: csv
        rows: |
          id,name
          3,c
      - input: ref('eph')
        format: sql
        rows: select 1 as one
    expect:
      rows: [{id: 3, name: d, ts: 1}]
""",
}
# The rows of round 2 change one person and lose another: a new version, a closed one, an invalidated one.
ROUND = "{{ var('round', 1) }}"
SNAPSHOTS = {
    "history.sql": "{% snapshot people_history %}"
                   "{{ config(unique_key='id', strategy='timestamp', updated_at='updated_at', hard_deletes='invalidate') }}"
                   f"select id, case when id = 1 and {ROUND} = 2 then 'ann2' else name end as name, "
                   f"case when id = 1 and {ROUND} = 2 then timestamp'2024-02-01 00:00:00' else timestamp'2024-01-01 00:00:00' end "
                   f"as updated_at from {{{{ ref('people') }}}} where not (id = 2 and {ROUND} = 2)"
                   "{% endsnapshot %}",
    "deleted.sql": "{% snapshot people_deleted %}"
                   "{{ config(unique_key='id', strategy='check', check_cols=['name'], hard_deletes='new_record') }}"
                   f"select id, name from {{{{ ref('people') }}}} where not (id = 2 and {ROUND} = 2)"
                   "{% endsnapshot %}",
}
PROFILE = """test:
  target: default
  outputs:
    default:
      type: hudiql
      warehouse: {warehouse}
      schema: {schema}
      threads: 1
"""


def named(manifest: dict) -> dict:
    """How a manifest names each node, unit test and source: its unique id, resource type and fqn."""
    return {section: {uid: (n["resource_type"], n["fqn"]) for uid, n in manifest[section].items()}
            for section in ("nodes", "unit_tests", "sources")}


def described(catalog: dict) -> dict:
    """What a catalog says of each table and view: its kind, schema, name and columns (dbt writes
    an empty database for an adapter without one, hudiql none: both mean the same here)."""
    return {section: {uid: (t["metadata"]["type"], t["metadata"]["schema"], t["metadata"]["name"],
                            [(c["name"], c["type"], c["index"]) for c in t["columns"].values()], t["stats"])
                      for uid, t in catalog[section].items()}
            for section in ("nodes", "sources")}


class TestBothEngines:
    @pytest.fixture(scope="class")
    @classmethod
    def seeds(cls):
        return {"people.csv": SEED}

    @pytest.fixture(scope="class")
    @classmethod
    def models(cls):
        return MODELS

    @pytest.fixture(scope="class")
    @classmethod
    def snapshots(cls):
        return SNAPSHOTS

    def test_docs_generate_describes_the_warehouse_as_dbt_does(self, project, spark):
        run_dbt(["seed"])
        run_dbt(["run"])
        run_dbt(["docs", "generate"])
        target = Path(project.project_root) / "target"
        by_dbt = json.loads((target / "catalog.json").read_text())
        (target / "catalog.json").unlink()
        out = io.StringIO()
        code = invoke(Flags("docs", project_dir=str(project.project_root), profiles_dir=str(project.profiles_dir)),
                      spark=spark, out=out)
        assert code == 0, out.getvalue()
        by_hudiql = json.loads((target / "catalog.json").read_text())
        assert described(by_hudiql) == described(by_dbt)
        assert sorted(uid.split(".", 2)[::2] for uid in by_dbt["nodes"]) == [
            ["model", "downstream"], ["model", "merged"], ["model", "names"], ["model", "orders"], ["seed", "people"]]
        assert [uid.rsplit(".", 2)[1:] for uid in by_dbt["sources"]] == [["raw", "people"]]

    def test_build_writes_the_same_rows_and_results_as_dbt(self, project, spark, tmp_path):
        """``dbt build`` and ``hudiql build`` of one project, each into its own warehouse (twice: the
        second run merges, and its snapshots close versions): every model and the snapshot hold the
        same rows, the manifests name the same nodes, unit tests and sources alike, and the run
        results name the same nodes (dbt's test names) with the same statuses."""
        other = tmp_path / "hudiql_warehouse"
        (tmp_path / "profiles").mkdir()
        (tmp_path / "profiles" / "profiles.yml").write_text(PROFILE.format(warehouse=other, schema=project.test_schema))
        root = Path(project.project_root)
        for round_ in (1, 2):
            run_dbt(["build", "--vars", f"{{round: {round_}}}", "--exclude", "tag:wrong"])
            by_dbt = json.loads((root / "target" / "run_results.json").read_text())
            dbt_manifest = json.loads((root / "target" / "manifest.json").read_text())
            out = io.StringIO()
            code = invoke(Flags("build", project_dir=str(root), profiles_dir=str(tmp_path / "profiles"),
                                vars={"round": round_}, exclude=["tag:wrong"]), spark=spark, out=out)
            assert code == 0, out.getvalue()
            by_hudiql = json.loads((root / "target" / "run_results.json").read_text())
            own_manifest = json.loads((root / "target" / "manifest.json").read_text())
            assert named(own_manifest) == named(dbt_manifest)
            statuses = {r["unique_id"]: r["status"] for r in by_dbt["results"]}
            assert {r["unique_id"]: r["status"] for r in by_hudiql["results"]} == statuses
            assert statuses["snapshot.test.people_history"] == "success"
            assert statuses["unit_test.test.orders.amounts_are_decimals"] == "pass"
        dbt_session = hudiql.connect(warehouse=project.adapter.config.credentials.warehouse, spark=spark)
        own_session = hudiql.connect(warehouse=str(other), spark=spark)
        for name in ("people", "orders", "names", "merged", "downstream", "people_history", "people_deleted"):
            query = f"SELECT * FROM {project.test_schema}.{name}"
            # (a check snapshot's version ids hash the run's time)
            columns = [c for c in dbt_session.sql(query).columns
                       if not c.startswith("_hoodie") and not (name == "people_deleted" and c == "dbt_scd_id")]
            rows = [sorted((tuple(_same_run(r[c]) for c in columns) for r in s.sql(query).collect()), key=repr)
                    for s in (dbt_session, own_session)]
            assert rows[0] and rows[0] == rows[1], name
        history = sorted(tuple(r) for r in own_session.sql(
            f"SELECT id, name, updated_at, dbt_valid_to IS NULL FROM {project.test_schema}.people_history").collect())
        assert [(i, n, current) for i, n, _, current in history] == [
            (1, "ann", False), (1, "ann2", True), (2, "bo", False)]
        deleted = sorted(tuple(r) for r in own_session.sql(
            f"SELECT id, dbt_is_deleted, dbt_valid_to IS NULL FROM {project.test_schema}.people_deleted").collect())
        assert deleted == [(1, "False", True), (2, "False", False), (2, "True", True)]

    def test_a_failing_unit_test_fails_alike(self, project, spark):
        """``test --select test_type:unit``: the unit test whose expected rows are wrong fails under both
        engines, the other passes (the inputs' tables are the dbt build's above)."""
        root = Path(project.project_root)
        run_dbt(["test", "--select", "test_type:unit"], expect_pass=False)
        by_dbt = {r["unique_id"]: r for r in json.loads((root / "target" / "run_results.json").read_text())["results"]}
        out = io.StringIO()
        code = invoke(Flags("test", project_dir=str(root), profiles_dir=str(project.profiles_dir),
                            select=["test_type:unit"]), spark=spark, out=out)
        assert code == 1
        by_hudiql = {r["unique_id"]: r for r in json.loads((root / "target" / "run_results.json").read_text())["results"]}
        assert {u: (r["status"], r["failures"]) for u, r in by_hudiql.items()} == {
            u: (r["status"], r["failures"]) for u, r in by_dbt.items()} == {
            "unit_test.test.orders.amounts_are_decimals": ("pass", 0), "unit_test.test.merged.wrong_on_purpose": ("fail", 1)}
        # (dbt draws the changed row as one, "d→c"; hudiql as the row returned and the row expected)
        assert by_hudiql["unit_test.test.merged.wrong_on_purpose"]["message"].endswith("@@ ,id,name,ts\n+++,3,c,1\n---,3,d,1")


def _same_run(value):
    """A value as both engines must agree on it: the time a run invalidated a deleted key (its
    ``dbt_valid_to``) is each run's own clock."""
    return "run time" if isinstance(value, datetime.datetime) and value.year > 2024 else value
