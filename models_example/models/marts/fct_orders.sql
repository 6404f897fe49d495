{#- The latest state of each order. Merged on order_id; the greatest updated_at wins, so a late
    event older than the stored row is skipped and a duplicate changes nothing. -#}
{{ config(
    materialized='incremental',
    unique_key='order_id',
    precombine_field='updated_at',
    partition_by='order_date',
    table_type='mor',
    tags=['orders'],
) }}

SELECT order_id, customer_id, status, amount, order_date, updated_at
FROM {{ ref('stg_orders') }}
{% if is_incremental() %}
-- Re-read a window of recent events: late ones merge by updated_at.
WHERE updated_at >= (SELECT max(updated_at) - INTERVAL {{ var('lookback_days') }} DAYS FROM {{ this }})
{% endif %}
