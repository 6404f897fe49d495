"""``{{ changes(...) }}``: an incremental model that reads only what its upstream hudiql table changed
since its last run, across runs where upstream rows are added, updated and deleted, a run with no
change, a full refresh, and an upstream whose needed instants the cleaner removed."""

from __future__ import annotations

import hudiql
import pytest
from hudiql.project.adapter.changes import consumed_key, last_consumed
from hudiql.project.artifacts.nodes import Relation
from hudiql.table.table import HudiTable
from test_project_helpers import run, write_project

SOURCES = """
version: 2
sources:
  - name: shop
    schema: default
    tables:
      - name: orders
"""
MODEL = """{{ config(materialized='incremental', unique_key='id') }}
SELECT id, amount * 2 AS doubled, _hoodie_is_deleted FROM {{ changes(source('shop', 'orders')) }}
"""


@pytest.fixture(autouse=True)
def no_user_profiles(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("HUDIQL_PROFILES_DIR", raising=False)


def test_a_model_reads_only_what_its_upstream_changed(spark, tmp_path):
    root = write_project(tmp_path / "p", {"models/sources.yml": SOURCES, "models/doubled.sql": MODEL}, "name: p\n")
    upstream = hudiql.connect(warehouse=str(root / "warehouse"), spark=spark)
    upstream.sql("CREATE TABLE orders (id INT, amount INT) USING hudi TBLPROPERTIES (primaryKey = 'id')")
    upstream.sql("INSERT INTO orders VALUES (1, 10), (2, 20)")

    def build(**flags) -> tuple[str, str]:
        code, out = run(root, "run", spark, **flags)
        assert code == 0, out
        return out, (root / "target/run/p/models/doubled.sql").read_text()

    def model_rows() -> list[tuple]:
        return sorted(tuple(r) for r in upstream.sql("SELECT id, doubled FROM doubled").collect())

    def consumed() -> str | None:
        return last_consumed(HudiTable.load(str(root / "warehouse" / "doubled")), consumed_key(Relation("default", "orders", "table")))

    def upstream_latest() -> str:
        return HudiTable.load(str(root / "warehouse" / "orders")).timeline.completed()[-1].timestamp

    # Run 1: the model is built from the whole upstream, and records what it read.
    out, statements = build()
    assert "changes(default.orders) reads the whole of default.orders" in out and "built from scratch" in out
    assert model_rows() == [(1, 20), (2, 40)] and consumed() == upstream_latest()

    # Run 2: a row added upstream; only the changes since run 1 are read.
    first = upstream_latest()
    upstream.sql("INSERT INTO orders VALUES (3, 30)")
    out, statements = build()
    assert f"hudi_table_changes('default.orders', 'latest_state', '{first}', '{upstream_latest()}')" in statements
    assert "reads the whole" not in out
    assert model_rows() == [(1, 20), (2, 40), (3, 60)] and consumed() == upstream_latest()

    # Run 3: a row updated and one deleted upstream, in two commits.
    upstream.sql("UPDATE orders SET amount = 11 WHERE id = 1")
    upstream.sql("DELETE FROM orders WHERE id = 2")
    out, statements = build()
    assert "hudi_table_changes" in statements and "reads the whole" not in out
    assert model_rows() == [(1, 22), (3, 60)]

    # Run 4: nothing changed upstream: nothing read, nothing lost.
    out, statements = build()
    assert model_rows() == [(1, 22), (3, 60)] and consumed() == upstream_latest()

    # A full refresh reads the whole upstream again, and says so.
    out, statements = build(full_refresh=True)
    assert "built from scratch" in out and model_rows() == [(1, 22), (3, 60)]

    # The cleaner removed the instant the model read up to: the whole upstream, with the reason.
    upstream.sql("ALTER TABLE orders SET TBLPROPERTIES ('hoodie.cleaner.commits.retained' = '1')")
    upstream.sql("UPDATE orders SET amount = 31 WHERE id = 3")
    upstream.sql("INSERT INTO orders VALUES (4, 40)")
    out, statements = build()
    assert "the cleaner removed the files of its begin" in out and "hudi_table_changes" not in statements
    assert model_rows() == [(1, 22), (3, 62), (4, 80)] and consumed() == upstream_latest()


def test_changes_of_a_view_is_refused(spark, tmp_path):
    model = "{{ config(materialized='incremental', unique_key='id') }} SELECT * FROM {{ changes(ref('v')) }}"
    root = write_project(tmp_path / "p", {"models/v.sql": "{{ config(materialized='view') }} SELECT 1 AS id",
                                          "models/m.sql": model}, "name: p\n")
    code, out = run(root, "run", spark)
    assert code == 1
    assert "changes(default.v): default.v is not a hudiql table (a view or an ephemeral model has no commits); " \
           "read it with ref() instead" in out
