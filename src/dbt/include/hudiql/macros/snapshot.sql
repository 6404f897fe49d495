{#- Snapshots run dbt's own snapshot materialization: the table is a Hudi table keyed by dbt_scd_id
    (hudiql__create_table_as), the staging rows a temporary view of the node's session
    (hudiql__make_temp_relation), and the new versions go in by one MERGE (one commit). -#}

{% macro hudiql__snapshot_hash_arguments(args) -%}
md5(concat_ws('|', {%- for arg in args -%}coalesce(cast({{ arg }} as string), ''){{ ", " if not loop.last }}{%- endfor -%}))
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
    versions; the ON clause names the table's record key, dbt_scd_id, as a hudiql MERGE requires. -#}
{% macro hudiql__snapshot_merge_sql(target, source, insert_cols) -%}
{%- set columns = config.get("snapshot_table_column_names") or get_snapshot_table_column_names() -%}
MERGE INTO {{ target }} AS DBT_INTERNAL_DEST
USING (SELECT * FROM {{ source.identifier if source.schema is none else source }}) AS DBT_INTERNAL_SOURCE
ON DBT_INTERNAL_SOURCE.{{ columns.dbt_scd_id }} = DBT_INTERNAL_DEST.{{ columns.dbt_scd_id }}
WHEN MATCHED
  {% if config.get("dbt_valid_to_current") -%}
  AND (DBT_INTERNAL_DEST.{{ columns.dbt_valid_to }} = {{ config.get("dbt_valid_to_current") }} OR DBT_INTERNAL_DEST.{{ columns.dbt_valid_to }} IS NULL)
  {%- else -%}
  AND DBT_INTERNAL_DEST.{{ columns.dbt_valid_to }} IS NULL
  {%- endif %}
  AND DBT_INTERNAL_SOURCE.dbt_change_type IN ('update', 'delete')
  THEN UPDATE SET {{ columns.dbt_valid_to }} = DBT_INTERNAL_SOURCE.{{ columns.dbt_valid_to }}
WHEN NOT MATCHED AND DBT_INTERNAL_SOURCE.dbt_change_type = 'insert'
  THEN INSERT ({{ insert_cols | join(', ') }})
  VALUES ({% for column in insert_cols %}DBT_INTERNAL_SOURCE.{{ column }}{{ ", " if not loop.last }}{% endfor %})
{%- endmacro %}
