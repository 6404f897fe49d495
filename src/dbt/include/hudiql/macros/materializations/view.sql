{#- A view recorded in the warehouse (CREATE OR REPLACE VIEW): it reads its tables when queried. A table
    of the model's name (the model was a table before) is dropped first. -#}
{% materialization view, adapter='hudiql' %}
  {%- set existing = adapter.get_relation(database=database, schema=schema, identifier=this.identifier) -%}
  {%- set target = this.incorporate(type='view') -%}
  {{ run_hooks(pre_hooks) }}
  {%- if existing is not none and not existing.is_view -%}
    {%- do adapter.drop_relation(existing) -%}
  {%- endif -%}
  {% call statement('main') -%}
    {{ get_create_view_as_sql(target, sql) }}
  {%- endcall %}
  {{ run_hooks(post_hooks) }}
  {{ return({'relations': [target]}) }}
{% endmaterialization %}
