{#- A snapshot: a Hudi table keyed by dbt_scd_id with one row per version of each key of the
    snapshot's query (dbt's type-2 history). The first run creates it; later runs add the query's
    new columns, then close changed (and, with hard_deletes, deleted) versions and insert the new
    ones in one MERGE. The statements come from adapter.snapshot_sql. -#}
{% macro materialization_snapshot() %}
  {%- do run_query(adapter.snapshot_sql(this, sql, model.config)) -%}
{% endmacro %}
