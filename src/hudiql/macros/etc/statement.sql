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
