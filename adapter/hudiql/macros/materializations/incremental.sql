{#- Incremental models: the first run (and --full-refresh) builds the table like `table`; later runs
    write only the model's new rows, by incremental_strategy:
    - merge (default with unique_key): MERGE INTO on the key columns, an upsert by the table's ordering field;
    - append: INSERT with the Hudi insert operation (no lookup of existing keys);
    - insert_overwrite: the partitions the new rows touch are replaced, the others kept (one INSERT OVERWRITE).
    on_schema_change: ignore (write the columns both have), fail, append_new_columns (ALTER TABLE ADD COLUMNS
    first; older rows read NULL in them). -#}
{% macro materialization_incremental() %}
  {%- do adapter.drop_view(this) -%}
  {%- if not adapter.table_exists(this) or should_full_refresh() -%}
    {%- do replace_table(this, sql) -%}
    {{ return(none) }}
  {%- endif -%}
  {%- set problem = adapter.check_table_config(this, model.config) -%}
  {%- if problem -%}{{ exceptions.raise_compiler_error(problem) }}{%- endif -%}

  {%- set on_schema_change = config.get('on_schema_change') -%}
  {%- set change = adapter.schema_change(this, sql) -%}
  {%- if change.changed and on_schema_change == 'fail' -%}
    {{ exceptions.raise_compiler_error(
        "the columns of " ~ this ~ " changed (new: " ~ (change.added | map(attribute='name') | join(', ') or 'none')
        ~ "; gone: " ~ (change.removed | map(attribute='name') | join(', ') or 'none')
        ~ ") and on_schema_change is 'fail'; run with --full-refresh or set on_schema_change") }}
  {%- endif -%}

  {%- set columns = adapter.get_columns(this) -%}
  {%- if change.added and on_schema_change == 'append_new_columns' -%}
    {%- do run_query("ALTER TABLE " ~ this ~ " ADD COLUMNS (" ~ column_definitions(change.added) ~ ")") -%}
    {%- set columns = columns + change.added -%}
  {%- endif -%}
  {%- do write_increment(this, columns, change) -%}
{% endmacro %}

{#- Write the model's rows (`sql`) into `relation`, a table of `columns`; only the columns the model
    returns are written (an updated row keeps its other values, a new row has NULL in them). -#}
{% macro write_increment(relation, columns, change) -%}
  {%- set written = [] -%}
  {%- for column in columns if column.name | lower in (change.common + change.added | map(attribute='name') | list) | map('lower') | list -%}
    {%- do written.append(column.name) -%}
  {%- endfor -%}
  {%- set strategy = config.get('incremental_strategy') -%}
  {%- if strategy == 'merge' -%}
    {%- do run_query(get_merge_sql(relation, sql, config.get('unique_key'), written)) -%}
  {%- elif strategy == 'append' -%}
    {%- do run_query("SET hoodie.spark.sql.insert.into.operation=insert") -%}
    {%- do run_query(get_insert_sql(relation, sql, written)) -%}
  {%- else -%}
    {%- do overwrite_table(relation, select_columns(sql, columns), columns | map(attribute='name') | list, 'insert_overwrite') -%}
  {%- endif -%}
{%- endmacro %}

{#- MERGE on the key columns: matched rows take the new values of the other `columns`, new keys are inserted. -#}
{% macro get_merge_sql(target, source_sql, unique_key, columns) -%}
{{ adapter.merge_sql(target, source_sql, unique_key, columns) }}
{%- endmacro %}

{% macro get_insert_sql(target, source_sql, columns) -%}
{%- set column_list -%}{% for column in columns %}{{ adapter.quote(column) }}{{ ", " if not loop.last }}{% endfor %}{%- endset -%}
INSERT INTO {{ target }} ({{ column_list }})
SELECT {{ column_list }} FROM (
{{ source_sql }}
) AS DBT_INTERNAL_SOURCE
{%- endmacro %}
