{#- Snapshots run dbt's own snapshot materialization: the table is a Hudi table keyed by dbt_scd_id
    (hudiql__create_table_as), the staging rows a temporary view of the node's session
    (hudiql__make_temp_relation), and the new versions go in by one MERGE (one commit). -#}

{% macro hudiql__snapshot_hash_arguments(args) -%}
{{ adapter.hudi_snapshot_hash_arguments(args) }}
{%- endmacro %}

{% macro hudiql__snapshot_string_as_time(timestamp) -%}
to_timestamp('{{ timestamp }}')
{%- endmacro %}

{% macro hudiql__create_columns(relation, columns) -%}
{%- do hudiql__alter_relation_add_remove_columns(relation, columns, []) -%}
{%- endmacro %}

{% macro hudiql__post_snapshot(staging_relation) -%}
{%- do run_query("DROP VIEW IF EXISTS " ~ staging_relation.identifier) -%}
{%- endmacro %}

{#- Close the current version of changed (and, with hard_deletes, deleted) keys and insert the new
    versions, in the MERGE `hudiql snapshot` runs (it matches on the table's record key, dbt_scd_id). -#}
{% macro hudiql__snapshot_merge_sql(target, source, insert_cols) -%}
{{ adapter.hudi_snapshot_merge_sql(target, source.identifier if source.schema is none else source, insert_cols,
                                   config.get("snapshot_table_column_names") or get_snapshot_table_column_names(),
                                   config.get("dbt_valid_to_current")) }}
{%- endmacro %}
