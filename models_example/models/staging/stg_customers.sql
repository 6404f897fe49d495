SELECT
  customer_id,
  initcap(name) AS customer_name,
  upper(country) AS country,
  signup_date
FROM {{ ref('customers') }}
