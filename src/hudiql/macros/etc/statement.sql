{#- dbt's statement block: run the SQL of its body when the node executes, and keep what it returned
    under `name` for load_result(name) (its response, its rows as `data` and as `table`). -#}
{%- macro statement(name=None, fetch_result=False, auto_begin=True, language='sql') -%}
  {%- if execute -%}
    {%- if language != 'sql' -%}
      {{ exceptions.raise_compiler_error("statement(language='" ~ language ~ "'): hudiql runs SQL statements only") }}
    {%- endif -%}
    {%- set response, table = adapter.execute(caller(), auto_begin=auto_begin, fetch=fetch_result) -%}
    {%- if name is not none -%}
      {{ store_result(name, response=response, agate_table=table) }}
    {%- endif -%}
  {%- endif -%}
{%- endmacro %}

{#- dbt's noop_statement: keep a result under `name` without running anything. -#}
{%- macro noop_statement(name=None, message=None, code=None, rows_affected=None, res=None) -%}
  {%- set sql = caller() -%}
  {%- if name is not none -%}
    {{ store_raw_result(name, message=message, code=code, rows_affected=rows_affected, agate_table=res) }}
  {%- endif -%}
{%- endmacro %}
