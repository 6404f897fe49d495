{#- Building blocks of the materializations. A project macro with the same name replaces one. -#}

{#- A Spark SQL string literal. -#}
{% macro sql_string(value) -%}
'{{ value | string | replace("\\", "\\\\") | replace("'", "\\'") }}'
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
{%- set partition_by = config.get('partition_by') or [] -%}
{%- if partition_by %}
PARTITIONED BY ({% for column in partition_by %}{{ adapter.quote(column) }}{{ ", " if not loop.last }}{% endfor %})
{%- endif %}
TBLPROPERTIES (
  type = {{ sql_string(config.get('table_type')) }}
  {%- if config.get('unique_key') %},
  primaryKey = {{ sql_string(config.get('unique_key') | join(',')) }}
  {%- endif %}
  {%- if config.get('precombine_field') %},
  preCombineField = {{ sql_string(config.get('precombine_field')) }}
  {%- endif %}
  {%- for key, value in (config.get('options') or {}).items() %},
  {{ sql_string(key) }} = {{ sql_string(value) }}
  {%- endfor %}
)
{%- endmacro %}

{% macro create_table_as(relation, sql) -%}
CREATE TABLE {{ relation }} USING hudi
{{- hudi_table_clauses() }}
AS
{{ sql }}
{%- endmacro %}

{#- `c1 type1, c2 type2` of `columns` (name and data_type), for ADD COLUMNS. -#}
{% macro column_definitions(columns) -%}
{% for column in columns %}{{ adapter.quote(column.name) }} {{ column.data_type }}{{ ", " if not loop.last }}{% endfor %}
{%- endmacro %}

{#- Create the table, or rebuild it in place: one INSERT OVERWRITE of the whole table (a replacecommit),
    so the table keeps its path and readers see the old rows until the new ones are committed. A model
    whose columns, keys, partitioning, type or ordering field changed is refused, unless --full-refresh
    drops the table and creates it again (readers see no table meanwhile). -#}
{% macro replace_table(relation, sql) -%}
{%- do adapter.drop_view(relation) -%}
{%- set problem = adapter.rebuild_problem(relation, model.config, sql) if adapter.table_exists(relation) else none -%}
{%- if problem == "" -%}
  {%- do overwrite_table(relation, sql, adapter.get_columns(relation) | map(attribute='name') | list, 'insert_overwrite_table') -%}
{%- elif problem and not should_full_refresh() -%}
  {{ exceptions.raise_compiler_error(problem) }}
{%- else -%}
  {%- if problem -%}{%- do adapter.drop_table(relation) -%}{%- endif -%}
  {%- do run_query(create_table_as(relation, sql)) -%}
{%- endif -%}
{%- endmacro %}

{#- INSERT OVERWRITE of `relation` with the rows of `source_sql` (its `columns`, by name); `operation`:
    insert_overwrite_table replaces the whole table, insert_overwrite the partitions the rows land in. -#}
{% macro overwrite_table(relation, source_sql, columns, operation) -%}
{%- set column_list -%}{% for column in columns %}{{ adapter.quote(column) }}{{ ", " if not loop.last }}{% endfor %}{%- endset -%}
{%- do run_query("SET hoodie.datasource.write.operation=" ~ operation) -%}
{%- do run_query("INSERT OVERWRITE TABLE " ~ relation ~ " (" ~ column_list ~ ")\nSELECT " ~ column_list ~ " FROM (\n" ~ source_sql ~ "\n) AS DBT_INTERNAL_SOURCE") -%}
{%- endmacro %}

{#- Rows of `source_sql` shaped like a table of `columns`: a column the source lacks is a typed NULL. -#}
{% macro select_columns(source_sql, columns) -%}
{%- set present = adapter.get_query_columns(source_sql) | map(attribute='name') | map('lower') | list -%}
SELECT {% for column in columns -%}
{%- if column.name | lower in present -%}{{ adapter.quote(column.name) }}{%- else -%}CAST(NULL AS {{ column.data_type }}) AS {{ adapter.quote(column.name) }}{%- endif -%}
{{ ", " if not loop.last }}
{%- endfor %}
FROM (
{{ source_sql }}
) AS DBT_INTERNAL_SOURCE
{%- endmacro %}
