-- Every known event of every order: the first extract and the update feed.
SELECT order_id, customer_id, status, {{ money('amount') }} AS amount, order_date, updated_at
FROM {{ ref('orders') }}
UNION ALL
SELECT order_id, customer_id, status, {{ money('amount') }} AS amount, order_date, updated_at
FROM {{ ref('order_updates') }}
