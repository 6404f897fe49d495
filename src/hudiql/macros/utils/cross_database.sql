{#- dbt's cross-database macros (the `dbt` namespace: `{{ dbt.date_trunc('month', 'd') }}`), with the
    signatures dbt-adapters gives them. Each dispatches as dbt does (`adapter.dispatch(name, 'dbt')`:
    the project's `hudiql__<name>`, `spark__<name>` or `default__<name>` first, then these), and its
    `default__` writes Spark SQL. -#}

{% macro any_value(expression) %}{{ return(adapter.dispatch('any_value', 'dbt')(expression)) }}{% endmacro %}
{% macro default__any_value(expression) -%} first({{ expression }}) {%- endmacro %}

{% macro bool_or(expression) %}{{ return(adapter.dispatch('bool_or', 'dbt')(expression)) }}{% endmacro %}
{% macro default__bool_or(expression) -%} max({{ expression }}) {%- endmacro %}

{% macro cast_bool_to_text(field) %}{{ return(adapter.dispatch('cast_bool_to_text', 'dbt')(field)) }}{% endmacro %}
{% macro default__cast_bool_to_text(field) -%} cast({{ field }} as string) {%- endmacro %}

{% macro concat(fields) %}{{ return(adapter.dispatch('concat', 'dbt')(fields)) }}{% endmacro %}
{% macro default__concat(fields) -%} concat({{ fields | join(', ') }}) {%- endmacro %}

{% macro date_trunc(datepart, date) %}{{ return(adapter.dispatch('date_trunc', 'dbt')(datepart, date)) }}{% endmacro %}
{% macro default__date_trunc(datepart, date) -%} date_trunc('{{ datepart }}', {{ date }}) {%- endmacro %}

{#- A timestamp `interval` dateparts after `from_date_or_timestamp` (Spark's timestampadd). -#}
{% macro dateadd(datepart, interval, from_date_or_timestamp) %}{{ return(adapter.dispatch('dateadd', 'dbt')(datepart, interval, from_date_or_timestamp)) }}{% endmacro %}
{% macro default__dateadd(datepart, interval, from_date_or_timestamp) -%}
timestampadd({{ datepart }}, {{ interval }}, {{ from_date_or_timestamp }})
{%- endmacro %}

{#- How many datepart boundaries lie between the two (dbt's meaning: datediff('month') from Jan 31 to
    Feb 1 is 1): the difference of both truncated to the datepart, in dateparts. -#}
{% macro datediff(first_date, second_date, datepart) %}{{ return(adapter.dispatch('datediff', 'dbt')(first_date, second_date, datepart)) }}{% endmacro %}
{% macro default__datediff(first_date, second_date, datepart) -%}
{%- set part = datepart | lower -%}
{%- if part in ('year', 'quarter', 'month', 'week', 'day') -%}
timestampdiff({{ part }}, date_trunc('{{ part }}', {{ first_date }}), date_trunc('{{ part }}', {{ second_date }}))
{%- elif part in ('hour', 'minute', 'second', 'millisecond', 'microsecond') -%}
timestampdiff({{ part }}, date_trunc('{{ part }}', cast({{ first_date }} as timestamp)), date_trunc('{{ part }}', cast({{ second_date }} as timestamp)))
{%- else -%}
{{ exceptions.raise_compiler_error("datediff: datepart '" ~ datepart ~ "' is not one of year, quarter, month, week, day, hour, minute, second, millisecond, microsecond") }}
{%- endif -%}
{%- endmacro %}

{% macro escape_single_quotes(expression) %}{{ return(adapter.dispatch('escape_single_quotes', 'dbt')(expression)) }}{% endmacro %}
{% macro default__escape_single_quotes(expression) -%} {{ expression | replace("'", "\\'") }} {%- endmacro %}

{% macro except() %}{{ return(adapter.dispatch('except', 'dbt')()) }}{% endmacro %}
{% macro default__except() -%} except {%- endmacro %}

{% macro intersect() %}{{ return(adapter.dispatch('intersect', 'dbt')()) }}{% endmacro %}
{% macro default__intersect() -%} intersect {%- endmacro %}

{% macro hash(field) %}{{ return(adapter.dispatch('hash', 'dbt')(field)) }}{% endmacro %}
{% macro default__hash(field) -%} md5(cast({{ field }} as string)) {%- endmacro %}

{% macro last_day(date, datepart) %}{{ return(adapter.dispatch('last_day', 'dbt')(date, datepart)) }}{% endmacro %}
{% macro default__last_day(date, datepart) -%}
cast({{ dbt.dateadd('day', '-1', dbt.dateadd(datepart, '1', dbt.date_trunc(datepart, date))) }} as date)
{%- endmacro %}

{% macro length(expression) %}{{ return(adapter.dispatch('length', 'dbt')(expression)) }}{% endmacro %}
{% macro default__length(expression) -%} length({{ expression }}) {%- endmacro %}

{#- The measure's values joined by the delimiter (a SQL string literal), in the order of
    `order_by_clause` ("order by ..."), the first `limit_num` of them. -#}
{% macro listagg(measure, delimiter_text="','", order_by_clause=none, limit_num=none) %}{{ return(adapter.dispatch('listagg', 'dbt')(measure, delimiter_text, order_by_clause, limit_num)) }}{% endmacro %}
{% macro default__listagg(measure, delimiter_text, order_by_clause, limit_num) -%}
{%- if limit_num and order_by_clause -%}
{{ exceptions.raise_compiler_error("listagg: order_by_clause and limit_num together are not supported on Spark; drop one") }}
{%- elif order_by_clause -%}
listagg({{ measure }}, {{ delimiter_text }}) within group ({{ order_by_clause }})
{%- elif limit_num -%}
array_join(slice(collect_list({{ measure }}), 1, {{ limit_num }}), {{ delimiter_text }})
{%- else -%}
listagg({{ measure }}, {{ delimiter_text }})
{%- endif -%}
{%- endmacro %}

{% macro position(substring_text, string_text) %}{{ return(adapter.dispatch('position', 'dbt')(substring_text, string_text)) }}{% endmacro %}
{% macro default__position(substring_text, string_text) -%} position({{ substring_text }} in {{ string_text }}) {%- endmacro %}

{% macro replace(field, old_chars, new_chars) %}{{ return(adapter.dispatch('replace', 'dbt')(field, old_chars, new_chars)) }}{% endmacro %}
{% macro default__replace(field, old_chars, new_chars) -%} replace({{ field }}, {{ old_chars }}, {{ new_chars }}) {%- endmacro %}

{% macro right(string_text, length_expression) %}{{ return(adapter.dispatch('right', 'dbt')(string_text, length_expression)) }}{% endmacro %}
{% macro default__right(string_text, length_expression) -%} right({{ string_text }}, {{ length_expression }}) {%- endmacro %}

{#- NULL where the value does not convert (try_cast), where cast would fail the query. -#}
{% macro safe_cast(field, type) %}{{ return(adapter.dispatch('safe_cast', 'dbt')(field, type)) }}{% endmacro %}
{% macro default__safe_cast(field, type) -%} try_cast({{ field }} as {{ type }}) {%- endmacro %}

{#- The part_number-th part (1 is the first, -1 the last) of the string split at the delimiter (a
    SQL string literal, taken literally). -#}
{% macro split_part(string_text, delimiter_text, part_number) %}{{ return(adapter.dispatch('split_part', 'dbt')(string_text, delimiter_text, part_number)) }}{% endmacro %}
{% macro default__split_part(string_text, delimiter_text, part_number) -%}
split_part({{ string_text }}, {{ delimiter_text }}, {{ part_number }})
{%- endmacro %}

{% macro string_literal(value) %}{{ return(adapter.dispatch('string_literal', 'dbt')(value)) }}{% endmacro %}
{% macro default__string_literal(value) -%} '{{ value }}' {%- endmacro %}

{% macro type_string() %}{{ return(adapter.dispatch('type_string', 'dbt')()) }}{% endmacro %}
{% macro default__type_string() -%} string {%- endmacro %}
{% macro type_timestamp() %}{{ return(adapter.dispatch('type_timestamp', 'dbt')()) }}{% endmacro %}
{% macro default__type_timestamp() -%} timestamp {%- endmacro %}
{% macro type_float() %}{{ return(adapter.dispatch('type_float', 'dbt')()) }}{% endmacro %}
{% macro default__type_float() -%} float {%- endmacro %}
{% macro type_numeric() %}{{ return(adapter.dispatch('type_numeric', 'dbt')()) }}{% endmacro %}
{% macro default__type_numeric() -%} decimal(28,6) {%- endmacro %}
{% macro type_bigint() %}{{ return(adapter.dispatch('type_bigint', 'dbt')()) }}{% endmacro %}
{% macro default__type_bigint() -%} bigint {%- endmacro %}
{% macro type_int() %}{{ return(adapter.dispatch('type_int', 'dbt')()) }}{% endmacro %}
{% macro default__type_int() -%} int {%- endmacro %}
{% macro type_boolean() %}{{ return(adapter.dispatch('type_boolean', 'dbt')()) }}{% endmacro %}
{% macro default__type_boolean() -%} boolean {%- endmacro %}

{% macro array_append(array, new_element) %}{{ return(adapter.dispatch('array_append', 'dbt')(array, new_element)) }}{% endmacro %}
{% macro default__array_append(array, new_element) -%} {{ dbt.array_concat(array, dbt.array_construct([new_element])) }} {%- endmacro %}

{% macro array_concat(array_1, array_2) %}{{ return(adapter.dispatch('array_concat', 'dbt')(array_1, array_2)) }}{% endmacro %}
{% macro default__array_concat(array_1, array_2) -%} concat({{ array_1 }}, {{ array_2 }}) {%- endmacro %}

{% macro array_construct(inputs=[], data_type='int') %}{{ return(adapter.dispatch('array_construct', 'dbt')(inputs, data_type)) }}{% endmacro %}
{% macro default__array_construct(inputs, data_type) -%}
{%- if inputs -%} array({{ inputs | join(', ') }}) {%- else -%} cast(array() as array<{{ data_type }}>) {%- endif -%}
{%- endmacro %}

{% macro cast(field, type) %}{{ return(adapter.dispatch('cast', 'dbt')(field, type)) }}{% endmacro %}
{% macro default__cast(field, type) -%} cast({{ field }} as {{ type }}) {%- endmacro %}

{% macro date(year, month, day) %}{{ return(adapter.dispatch('date', 'dbt')(year, month, day)) }}{% endmacro %}
{% macro default__date(year, month, day) -%} make_date({{ year }}, {{ month }}, {{ day }}) {%- endmacro %}

{#- SQL equality, as dbt's default (NULL is equal to nothing). -#}
{% macro equals(expr1, expr2) %}{{ return(adapter.dispatch('equals', 'dbt')(expr1, expr2)) }}{% endmacro %}
{% macro default__equals(expr1, expr2) -%} ({{ expr1 }} = {{ expr2 }}) {%- endmacro %}

{% macro current_timestamp() %}{{ return(adapter.dispatch('current_timestamp', 'dbt')()) }}{% endmacro %}
{% macro default__current_timestamp() -%} current_timestamp() {%- endmacro %}

{#- The smallest power of two (its exponent) at or above upper_bound. -#}
{% macro get_powers_of_two(upper_bound) %}{{ return(adapter.dispatch('get_powers_of_two', 'dbt')(upper_bound)) }}{% endmacro %}
{% macro default__get_powers_of_two(upper_bound) -%}
{%- if upper_bound <= 0 -%}{{ exceptions.raise_compiler_error("get_powers_of_two: upper bound must be positive") }}{%- endif -%}
{%- for i in range(1, 100) -%}{%- if upper_bound <= 2 ** i -%}{{ return(i) }}{%- endif -%}{%- endfor -%}
{%- endmacro %}

{#- The numbers 1 to upper_bound, as the column generated_number. -#}
{% macro generate_series(upper_bound) %}{{ return(adapter.dispatch('generate_series', 'dbt')(upper_bound)) }}{% endmacro %}
{% macro default__generate_series(upper_bound) -%}
{%- if upper_bound <= 0 -%}{{ exceptions.raise_compiler_error("generate_series: upper bound must be positive") }}{%- endif -%}
select explode(sequence(1, {{ upper_bound }})) as generated_number
{%- endmacro %}

{#- The number of dateparts between two dates, run as a query (1 while parsing, as in dbt). -#}
{% macro get_intervals_between(start_date, end_date, datepart) %}{{ return(adapter.dispatch('get_intervals_between', 'dbt')(start_date, end_date, datepart)) }}{% endmacro %}
{% macro default__get_intervals_between(start_date, end_date, datepart) -%}
{%- if execute -%}
{{ return(run_query("select " ~ dbt.datediff(start_date, end_date, datepart))[0][0] | int) }}
{%- else -%}
{{ return(1) }}
{%- endif -%}
{%- endmacro %}

{#- One row per datepart from start_date up to end_date (before it, when it is a datepart boundary), as
    date_<datepart>. -#}
{% macro date_spine(datepart, start_date, end_date) %}{{ return(adapter.dispatch('date_spine', 'dbt')(datepart, start_date, end_date)) }}{% endmacro %}
{% macro default__date_spine(datepart, start_date, end_date) -%}
select * from (
  select {{ dbt.dateadd(datepart, 'generated_number - 1', start_date) }} as date_{{ datepart }}
  from ({{ dbt.generate_series(dbt.get_intervals_between(start_date, end_date, datepart)) }}) as rawdata
) as all_periods
where date_{{ datepart }} <= {{ end_date }}
{%- endmacro %}
