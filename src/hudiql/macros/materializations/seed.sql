{#- A seed is a table of its CSV rows, typed by inference or column_types; reloaded every run. -#}
{% macro materialization_seed() %}
  {%- do replace_table(this, adapter.load_seed(model)) -%}
{% endmacro %}
