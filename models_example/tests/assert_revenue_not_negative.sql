-- A singular test: the rows it returns are failures.
SELECT customer_id, revenue FROM {{ ref('customer_revenue') }} WHERE revenue < 0
