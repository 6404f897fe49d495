"""The Hudi model configs through dbt-core: they reach the table, and later runs write by the strategy."""

from __future__ import annotations

import pytest
from dbt.tests.util import relation_from_name, run_dbt

ROUND_1 = "select 1 as id, 10 as ts, 'a' as v, '2024-01-01' as day union all select 2, 10, 'b', '2024-01-01'"
ROUND_2 = ("select 1 as id, 20 as ts, 'a2' as v, '2024-01-01' as day union all select 2, 5, 'old', '2024-01-01' "
           "union all select 3, 1, 'c', '2024-01-02'")
ROWS = f"{{% if var('round', 1) == 1 %}} {ROUND_1} {{% else %}} {ROUND_2} {{% endif %}}"

MERGED = """{{ config(materialized='incremental', unique_key='id', partition_by=['day'], table_type='mor',
                      precombine_field='ts') }}
""" + ROWS
OVERWRITTEN = """{{ config(materialized='incremental', incremental_strategy='insert_overwrite', partition_by='day') }}
{% if is_incremental() %} select 9 as id, 0 as ts, 'z' as v, '2024-01-02' as day {% else %} """ + ROUND_2 + " {% endif %}"


class TestHudiConfigs:
    @pytest.fixture(scope="class")
    @classmethod
    def models(cls):
        return {"merged.sql": MERGED, "overwritten.sql": OVERWRITTEN}

    def rows(self, project, name: str) -> list[tuple]:
        relation = relation_from_name(project.adapter, name)
        return [tuple(r) for r in project.run_sql(f"select id, v, day from {relation} order by id", fetch="all")]

    def test_configs_and_strategies(self, project):
        run_dbt(["run"])
        merged = relation_from_name(project.adapter, "merged")
        props = dict(project.run_sql(f"show tblproperties {merged}", fetch="all"))
        assert props["hoodie.table.type"] == "MERGE_ON_READ"
        assert props["hoodie.table.recordkey.fields"] == "id"
        assert props["hoodie.table.partition.fields"] == "day"
        assert props["hoodie.table.precombine.field"] == "ts"

        run_dbt(["run", "--vars", "round: 2"])
        # merge: an upsert by the ordering field (the stored row of id 2 is newer and stays)
        assert self.rows(project, "merged") == [(1, "a2", "2024-01-01"), (2, "b", "2024-01-01"), (3, "c", "2024-01-02")]
        # insert_overwrite: the partition the new rows land in is replaced, the other kept
        assert self.rows(project, "overwritten") == [(1, "a2", "2024-01-01"), (2, "old", "2024-01-01"), (9, "z", "2024-01-02")]


class TestErrorsInOneLine:
    """A model whose SQL Spark refuses: dbt's one-line message, no Java stack trace before it
    (PySpark's query-context logger is quiet, as under ``hudiql run``)."""

    @pytest.fixture(scope="class")
    @classmethod
    def models(cls):
        return {"broken.sql": "select no_such_column from (select 1 as id)"}

    def test_a_spark_error_is_one_line(self, project, capfd):
        capfd.readouterr()
        [result] = run_dbt(["run"], expect_pass=False)
        out, err = capfd.readouterr()
        assert result.status == "error" and "no_such_column" in result.message
        assert "JVM stacktrace" not in out + err and "org.apache.spark.sql" not in out + err, (out + err)[-3000:]


UP = """{{ config(materialized='incremental', unique_key='id', precombine_field='ts') }}
{% if var('round', 1) == 1 %} select 1 as id, 1 as ts, 'a' as v union all select 2, 1, 'b'
{% else %} select 2 as id, 2 as ts, 'b2' as v union all select 3, 2, 'c' {% endif %}"""
DOWN = """{{ config(materialized='incremental', unique_key='id') }}
select id, v, {{ var('round', 1) }} as read_in_round from {{ changes(ref('up')) }}"""
# Runs after down on the same connection: what down's changes() set must not reach it.
PLAIN = """-- depends_on: {{ ref('down') }}
{{ config(materialized='table') }} select id, v from {{ ref('up') }}"""


class TestChanges:
    """``changes()`` through dbt-core, as ``hudiql run`` reads it: a later run of an incremental
    model reads only what its upstream changed, and the session settings it needs (the consumed
    instant, deleted rows) end with the model."""

    @pytest.fixture(scope="class")
    @classmethod
    def models(cls):
        return {"up.sql": UP, "down.sql": DOWN, "plain.sql": PLAIN, "viewed.sql": "select 1 as id",
                "reads_view.sql": "{{ config(materialized='incremental') }} select * from {{ changes(ref('viewed')) }}"}

    def test_a_later_run_reads_only_the_changes(self, project):
        from hudiql.catalog import Catalog
        from hudiql.table.fsview import read_commit_metadata
        from hudiql.table.table import HudiTable

        run_dbt(["run", "--exclude", "reads_view"])
        run_dbt(["run", "--exclude", "reads_view", "--vars", "{round: 2}"])
        relation = relation_from_name(project.adapter, "down")
        rows = project.run_sql(f"select id, v, read_in_round from {relation} order by id", fetch="all")
        assert [tuple(r) for r in rows] == [(1, "a", 1), (2, "b2", 2), (3, "c", 2)]  # row 1 unchanged: not read again

        catalog = Catalog(project.adapter.config.credentials.warehouse)
        def extra(name: str) -> dict:
            table = HudiTable.load(catalog.location(project.test_schema, name))
            return read_commit_metadata(table.timeline, table.timeline.completed()[-1]).extra_metadata
        assert any(k.startswith("_hudiql.consumed.") for k in extra("down"))
        assert not any(k.startswith("_hudiql.consumed.") for k in extra("plain"))

    def test_changes_of_a_view_is_refused_in_one_line(self, project):
        run_dbt(["run", "--select", "viewed"])
        [result] = run_dbt(["run", "--select", "reads_view"], expect_pass=False)
        assert result.status == "error"
        assert "is not a hudiql table (a view or an ephemeral model has no commits); read it with ref() instead" in result.message
        assert result.message.startswith("Compilation Error in model reads_view") and "Traceback" not in result.message
