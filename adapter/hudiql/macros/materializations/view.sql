{#- A Spark temporary view: it reads its tables as they are when it is created, and lives for the
    run; hudiql creates the views a node needs again in any later run. -#}
{% macro materialization_view() %}
  {%- do adapter.create_view(this, sql) -%}
{% endmacro %}
