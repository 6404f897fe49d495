{#- Each order with its customer's name, computed again only for the orders fct_orders changed since
    this model's last run: changes() reads hudi_table_changes from the fct_orders instant this table's
    last commit recorded (a first build, or --full-refresh, reads all of fct_orders, and says so). An
    order deleted from fct_orders comes with _hoodie_is_deleted = true: the merge deletes it here too. -#}
{{ config(materialized='incremental', unique_key='order_id') }}

SELECT o.order_id, c.customer_name, o.status, o.amount, o.order_date, o._hoodie_is_deleted
FROM {{ changes(ref('fct_orders')) }} o
JOIN {{ ref('stg_customers') }} c ON c.customer_id = o.customer_id
