{#- A project macro: amounts as two-decimal numbers. -#}
{% macro money(column) -%}
CAST({{ column }} AS DECIMAL(10, 2))
{%- endmacro %}
