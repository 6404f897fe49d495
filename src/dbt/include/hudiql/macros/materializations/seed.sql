{#- A seed is a Hudi table of its CSV rows (typed by dbt's inference or column_types), rebuilt every
    run like a `table` model. -#}
{% materialization seed, adapter='hudiql' %}
  {%- set existing = adapter.get_relation(database=database, schema=schema, identifier=this.identifier) -%}
  {%- set target = this.incorporate(type='table') -%}
  {%- set hudi = adapter.hudi_config(model.config, model.name) -%}
  {%- set agate_table = load_agate_table() -%}
  {%- do store_result('agate_table', response='OK', agate_table=agate_table) -%}
  {{ run_hooks(pre_hooks) }}
  {%- set rows_sql = adapter.hudi_seed_query(this, agate_table, config.get('column_types')) -%}
  {%- set main_sql = hudiql__replace_table_sql(existing, target, rows_sql, hudi) -%}
  {%- do run_query(main_sql) -%}
  {% call noop_statement('main', 'INSERT ' ~ (agate_table.rows | length), 'INSERT', agate_table.rows | length) -%}
    {{ main_sql }}
  {%- endcall %}
  {{ run_hooks(post_hooks) }}
  {{ return({'relations': [target]}) }}
{% endmaterialization %}
