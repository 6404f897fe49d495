{#- CTAS into a Hudi table; an existing table is replaced atomically (see replace_table). -#}
{% macro materialization_table() %}
  {%- do replace_table(this, sql) -%}
{% endmacro %}
