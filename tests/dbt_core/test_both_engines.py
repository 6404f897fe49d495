"""One dbt project, read by dbt-core with the hudiql adapter and by ``hudiql``'s own commands: both
describe its warehouse alike (``docs generate``'s ``catalog.json``)."""

from __future__ import annotations

import io
import json
from pathlib import Path

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
    "sources.yml": "sources:\n  - name: raw\n    schema: \"{{ target.schema }}\"\n    tables:\n      - name: people\n",
}


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
        assert sorted(uid.split(".", 2)[::2] for uid in by_dbt["nodes"]) == [["model", "names"], ["model", "orders"],
                                                                             ["seed", "people"]]
        assert [uid.rsplit(".", 2)[1:] for uid in by_dbt["sources"]] == [["raw", "people"]]
