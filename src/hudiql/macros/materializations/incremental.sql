{#- Incremental models: the first run (and --full-refresh) builds the table like `table`; later runs
    write only the model's new rows, by incremental_strategy:
    - merge (default with unique_key): MERGE INTO on the key columns, an upsert by the table's ordering field;
    - append: INSERT with the Hudi insert operation (no lookup of existing keys);
    - insert_overwrite: the partitions the new rows touch are replaced, the others kept (one INSERT OVERWRITE).
    on_schema_change: ignore (write the columns both have), fail, append_new_columns (ALTER TABLE ADD COLUMNS
    first; older rows read NULL in them), sync_all_columns (the same: hudiql cannot drop columns, so a
    removed column is an error naming it). The statements come from adapter.increment_sql, which the
    dbt-core adapter's materialization calls too. -#}
{% macro materialization_incremental() %}
  {%- do adapter.drop_view(this) -%}
  {%- if not adapter.table_exists(this) or should_full_refresh() -%}
    {%- do replace_table(this, sql) -%}
    {{ return(none) }}
  {%- endif -%}
  {%- set problem = adapter.check_table_config(this, model.config) -%}
  {%- if problem -%}{{ exceptions.raise_compiler_error(problem) }}{%- endif -%}
  {%- do run_query(adapter.increment_sql(this, sql, model.config, model.config['on_schema_change'])) -%}
{% endmacro %}
