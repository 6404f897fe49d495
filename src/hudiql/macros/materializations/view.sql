{#- A view recorded in the warehouse (CREATE OR REPLACE VIEW): it reads its tables as they are
    when it is queried, and survives the run. -#}
{% macro materialization_view() %}
  {%- do adapter.create_view(this, sql) -%}
{% endmacro %}
