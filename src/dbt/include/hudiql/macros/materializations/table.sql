{#- A Hudi table of the model's rows, with its Hudi configs. An existing table of the same columns,
    keys, partitioning, type and ordering field is rebuilt in place by one INSERT OVERWRITE of the whole
    table (a replacecommit: readers see the old rows until the new ones are committed); otherwise, or
    with --full-refresh, it is dropped and created again. -#}
{% materialization table, adapter='hudiql' %}
  {%- set existing = adapter.get_relation(database=database, schema=schema, identifier=this.identifier) -%}
  {%- set target = this.incorporate(type='table') -%}
  {%- set hudi = adapter.hudi_config(model.config, model.name) -%}
  {{ run_hooks(pre_hooks) }}
  {% call statement('main') -%}
    {{ hudiql__replace_table_sql(existing, target, sql, hudi) }}
  {%- endcall %}
  {{ run_hooks(post_hooks) }}
  {{ return({'relations': [target]}) }}
{% endmaterialization %}

{#- The statements that make `target` hold the rows of `sql`; drops what cannot be rebuilt in place. -#}
{% macro hudiql__replace_table_sql(existing, target, sql, hudi) -%}
{%- set in_place = existing is not none and existing.is_table and not should_full_refresh()
                   and adapter.hudi_rebuild_problem(target, hudi, sql) == '' -%}
{%- if in_place -%}
{{ adapter.hudi_overwrite_sql(target, sql, adapter.get_columns_in_relation(target) | map(attribute='name') | list, 'insert_overwrite_table') }}
{%- else -%}
{%- if existing is not none -%}{%- do adapter.drop_relation(existing) -%}{%- endif -%}
{{ create_table_as(False, target, sql) }}
{%- endif -%}
{%- endmacro %}
