{#- Building blocks of the materializations. A project macro with the same name replaces one. -#}

{#- A Spark SQL string literal. -#}
{% macro sql_string(value) -%}
{{ adapter.sql_string(value) }}
{%- endmacro %}

{#- Where a model's table goes: the target's database, or `<target database>_<schema>` with `schema` set. -#}
{% macro generate_schema_name(custom_schema_name, node) -%}
{%- if custom_schema_name is none -%}
{{ target.schema }}
{%- else -%}
{{ target.schema }}_{{ custom_schema_name | trim }}
{%- endif -%}
{%- endmacro %}

{#- The Hudi clauses of CREATE TABLE from the model's configs; a composite key is one comma-separated string. -#}
{% macro hudi_table_clauses() -%}
{{ adapter.table_clauses(model.config) }}
{%- endmacro %}

{% macro create_table_as(relation, sql) -%}
{{ adapter.create_table_as(relation, hudi_table_clauses(), sql) }}
{%- endmacro %}

{#- Create the table, or rebuild it in place: one INSERT OVERWRITE of the whole table (a replacecommit),
    so the table keeps its path and readers see the old rows until the new ones are committed. A model
    whose columns, keys, partitioning, type or ordering field changed is refused, unless --full-refresh
    drops the table and creates it again (readers see no table meanwhile). -#}
{% macro replace_table(relation, sql) -%}
{%- do adapter.drop_view(relation) -%}
{%- set problem = adapter.rebuild_problem(relation, model.config, sql) if adapter.table_exists(relation) else none -%}
{%- if problem == "" -%}
  {%- do run_query(adapter.overwrite_sql(relation, sql, adapter.get_columns(relation) | map(attribute='name') | list, 'insert_overwrite_table')) -%}
{%- elif problem and not should_full_refresh() -%}
  {{ exceptions.raise_compiler_error(problem) }}
{%- else -%}
  {%- if problem -%}{%- do adapter.drop_table(relation) -%}{%- endif -%}
  {%- do run_query(create_table_as(relation, sql)) -%}
{%- endif -%}
{%- endmacro %}
