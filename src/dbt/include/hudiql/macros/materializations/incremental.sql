{#- Incremental models: the first run (and --full-refresh) builds the table like `table`; later runs write
    the model's rows by incremental_strategy, with the statements `hudiql run` writes
    (adapter.hudi_increment_sql):
    - merge (default with unique_key): MERGE INTO on the key columns, an upsert by the table's ordering field;
    - append: INSERT with the Hudi insert operation (no lookup of existing keys);
    - insert_overwrite: the partitions the new rows land in are replaced (one INSERT OVERWRITE).
    on_schema_change: ignore (write the columns both have), fail, append_new_columns (ALTER TABLE ADD
    COLUMNS first; older rows read NULL in them), sync_all_columns (the same: hudiql cannot drop columns,
    so a removed column is an error naming it). -#}
{% materialization incremental, adapter='hudiql' %}
  {%- set existing = adapter.get_relation(database=database, schema=schema, identifier=this.identifier) -%}
  {%- set target = this.incorporate(type='table') -%}
  {%- set hudi = adapter.hudi_config(model.config, model.name) -%}
  {%- set on_schema_change = incremental_validate_on_schema_change(config.get('on_schema_change'), default='ignore') -%}
  {{ run_hooks(pre_hooks) }}
  {%- if existing is none or not existing.is_table or should_full_refresh() -%}
    {%- if existing is not none -%}{%- do adapter.drop_relation(existing) -%}{%- endif -%}
    {%- set main_sql = create_table_as(False, target, sql) -%}
  {%- else -%}
    {%- set problem = adapter.hudi_table_problem(target, hudi) -%}
    {%- if problem -%}{{ exceptions.raise_compiler_error(problem) }}{%- endif -%}
    {%- set main_sql = adapter.hudi_increment_sql(target, sql, hudi, on_schema_change) -%}
  {%- endif -%}
  {% call statement('main') -%}
    {{ main_sql }}
  {%- endcall %}
  {{ run_hooks(post_hooks) }}
  {{ return({'relations': [target]}) }}
{% endmaterialization %}
