{{ config(unique_key='customer_id') }}

SELECT
  c.customer_id,
  c.customer_name,
  c.country,
  count(o.order_id) AS orders,
  coalesce(sum(CASE WHEN o.status <> 'cancelled' THEN o.amount END), 0) AS revenue,
  max(o.updated_at) AS last_update
FROM {{ ref('stg_customers') }} AS c
LEFT JOIN {{ ref('fct_orders') }} AS o ON o.customer_id = c.customer_id
GROUP BY c.customer_id, c.customer_name, c.country
