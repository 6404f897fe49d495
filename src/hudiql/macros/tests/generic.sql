{#- Generic tests: each returns the failing rows; the test passes when there are none.
    A project macro `test_<name>(model, column_name, ...)` adds a test usable in .yml files. -#}

{% macro test_not_null(model, column_name) %}
SELECT * FROM {{ model }} WHERE {{ adapter.quote(column_name) }} IS NULL
{% endmacro %}

{% macro test_unique(model, column_name) %}
SELECT {{ adapter.quote(column_name) }} AS unique_field, count(*) AS n_records
FROM {{ model }}
WHERE {{ adapter.quote(column_name) }} IS NOT NULL
GROUP BY {{ adapter.quote(column_name) }}
HAVING count(*) > 1
{% endmacro %}

{% macro test_accepted_values(model, column_name, values, quote=true) %}
SELECT {{ adapter.quote(column_name) }} AS value_field, count(*) AS n_records
FROM {{ model }}
WHERE {{ adapter.quote(column_name) }} NOT IN ({% for value in values %}{{ sql_string(value) if quote else value }}{{ ", " if not loop.last }}{% endfor %})
GROUP BY {{ adapter.quote(column_name) }}
{% endmacro %}

{% macro test_relationships(model, column_name, to, field) %}
SELECT child.from_field
FROM (SELECT {{ adapter.quote(column_name) }} AS from_field FROM {{ model }} WHERE {{ adapter.quote(column_name) }} IS NOT NULL) AS child
LEFT JOIN (SELECT {{ adapter.quote(field) }} AS to_field FROM {{ to }}) AS parent
  ON child.from_field = parent.to_field
WHERE parent.to_field IS NULL
{% endmacro %}
