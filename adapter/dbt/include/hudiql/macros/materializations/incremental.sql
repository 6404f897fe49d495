{#- Incremental models: the first run (and --full-refresh) builds the table like `table`; later runs write
    the model's rows by incremental_strategy (as `hudiql run`):
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
    {%- set change = adapter.hudi_schema_change(target, sql) -%}
    {%- if change.changed and on_schema_change == 'fail' -%}
      {{ exceptions.raise_compiler_error(
          "the columns of " ~ target ~ " changed (new: " ~ (change.added | map(attribute='name') | join(', ') or 'none')
          ~ "; gone: " ~ (change.removed | map(attribute='name') | join(', ') or 'none')
          ~ ") and on_schema_change is 'fail'; run with --full-refresh or set on_schema_change") }}
    {%- endif -%}
    {%- if on_schema_change in ('append_new_columns', 'sync_all_columns') -%}
      {%- do hudiql__alter_relation_add_remove_columns(target, change.added,
                                                       change.removed if on_schema_change == 'sync_all_columns' else []) -%}
    {%- endif -%}
    {%- set source_names = (change.common + (change.added | map(attribute='name') | list)) | map('lower') | list -%}
    {%- set columns = adapter.get_columns_in_relation(target) -%}
    {%- set written = [] -%}
    {%- for column in columns if column.name | lower in source_names -%}{%- do written.append(column.name) -%}{%- endfor -%}
    {%- set main_sql = hudiql__increment_sql(hudi.incremental_strategy, target, sql, hudi.unique_key, columns, written) -%}
  {%- endif -%}
  {% call statement('main') -%}
    {{ main_sql }}
  {%- endcall %}
  {{ run_hooks(post_hooks) }}
  {{ return({'relations': [target]}) }}
{% endmaterialization %}

{#- The statements writing the model's rows into `target` (a table of `columns`); only the `written`
    columns (those the model returns) are set: an updated row keeps its other values, a new row has NULL. -#}
{% macro hudiql__increment_sql(strategy, target, source_sql, unique_key, columns, written) -%}
{%- if strategy == 'merge' -%}
{{ hudiql__merge_sql(target, source_sql, unique_key, written) }}
{%- elif strategy == 'append' -%}
{%- set column_list -%}{% for column in written %}{{ adapter.quote(column) }}{{ ", " if not loop.last }}{% endfor %}{%- endset -%}
SET hoodie.spark.sql.insert.into.operation=insert;
INSERT INTO {{ target }} ({{ column_list }})
SELECT {{ column_list }} FROM (
{{ source_sql }}
) AS DBT_INTERNAL_SOURCE
{%- else -%}
{%- set lowered = written | map('lower') | list -%}
{%- set shaped -%}
SELECT {% for column in columns -%}
{%- if column.name | lower in lowered -%}{{ adapter.quote(column.name) }}{%- else -%}CAST(NULL AS {{ column.data_type }}) AS {{ adapter.quote(column.name) }}{%- endif -%}
{{ ", " if not loop.last }}
{%- endfor %}
FROM (
{{ source_sql }}
) AS DBT_INTERNAL_SHAPED
{%- endset -%}
{{ hudiql__overwrite_sql(target, shaped, columns | map(attribute='name') | list, 'insert_overwrite') }}
{%- endif -%}
{%- endmacro %}

{#- MERGE on the key columns: matched rows take the new values of the other columns, new keys are inserted. -#}
{% macro hudiql__merge_sql(target, source_sql, unique_key, columns) -%}
{{ adapter.merge_sql(target, source_sql, unique_key, columns) }}
{%- endmacro %}
