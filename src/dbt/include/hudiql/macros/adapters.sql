{#- hudiql's versions of dbt's dispatched macros (`hudiql__<name>`): SQL hudiql's parser runs. Schemas,
    relations, columns and the docs catalog are Python methods of the adapter (impl.py). -#}

{% macro hudiql__current_timestamp() -%}
current_timestamp()
{%- endmacro %}

{#- CTAS into a Hudi table with the model's configs; a temporary relation (dbt's staging of snapshots)
    is a temporary view of this connection's session: nothing is written. -#}
{% macro hudiql__create_table_as(temporary, relation, compiled_code, language='sql') -%}
{%- if temporary -%}
CREATE OR REPLACE TEMPORARY VIEW {{ relation.identifier }} AS
{{ compiled_code }}
{%- else -%}
{%- set hudi = adapter.hudi_config(model.config, model.name) -%}
{%- set record_key = (config.get('snapshot_table_column_names') or get_snapshot_table_column_names()).dbt_scd_id if model.resource_type == 'snapshot' else none -%}
{{ adapter.hudi_create_table_as(relation, adapter.hudi_table_clauses(hudi, record_key), compiled_code) }}
{%- endif -%}
{%- endmacro %}

{% macro hudiql__create_view_as(relation, sql) -%}
CREATE OR REPLACE VIEW {{ relation }} AS
{{ sql }}
{%- endmacro %}

{#- A temporary relation is a temporary view: it has no schema. -#}
{% macro hudiql__make_temp_relation(base_relation, suffix) -%}
{%- set identifier = base_relation.identifier ~ suffix -%}
{{ return(base_relation.incorporate(path={"schema": none, "database": none, "identifier": identifier})) }}
{%- endmacro %}

{% macro hudiql__drop_relation(relation) -%}
{%- do adapter.drop_relation(relation) -%}
{%- endmacro %}

{% macro hudiql__get_drop_sql(relation) -%}
DROP {{ 'VIEW' if relation.is_view else 'TABLE' }} IF EXISTS {{ relation }}
{%- endmacro %}

{% macro hudiql__truncate_relation(relation) -%}
{%- do adapter.truncate_relation(relation) -%}
{%- endmacro %}

{% macro hudiql__rename_relation(from_relation, to_relation) -%}
{%- do adapter.rename_relation(from_relation, to_relation) -%}
{%- endmacro %}

{% macro hudiql__alter_relation_add_remove_columns(relation, add_columns, remove_columns) -%}
{%- set alter = adapter.hudi_alter_columns_sql(relation, add_columns, remove_columns) -%}
{%- if alter -%}{%- do run_query(alter) -%}{%- endif -%}
{%- endmacro %}

{#- The data columns a query returns, from Spark's analysis (no job); a `SELECT *` of a Hudi table's meta
    columns are left out, as a table written from it does not store them. -#}
{% macro hudiql__get_columns_in_query(select_sql) -%}
{{ return(adapter.get_columns_in_query(select_sql) | map(attribute='name') | list) }}
{%- endmacro %}

{#- `{{ changes(ref('orders')) }}`: in an incremental model, only the rows the upstream hudiql table
    changed since the model's last run (deleted ones with _hoodie_is_deleted = true), as `hudiql run`
    reads them; the whole upstream on a first build or a full refresh. -#}
{% macro changes(relation) -%}
{{ return(adapter.hudi_changes(relation, this, is_incremental())) }}
{%- endmacro %}

{#- dbt's snapshots (hard_deletes: new_record) read a table's columns through this macro. -#}
{% macro hudiql__get_columns_in_relation(relation) -%}
  {{ return(adapter.get_columns_in_relation(relation)) }}
{%- endmacro %}
