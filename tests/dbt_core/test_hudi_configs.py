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
