-- A copy-on-write upsert table: created, loaded, upserted and queried with plain SQL.
-- Run: hudiql sql -f models_example/quickstart.sql

DROP TABLE IF EXISTS orders;

CREATE TABLE orders (
  order_id    BIGINT,
  customer    STRING,
  amount      DECIMAL(10, 2),
  status      STRING,
  updated_at  TIMESTAMP,
  order_date  STRING
) USING hudi
PARTITIONED BY (order_date)
TBLPROPERTIES (primaryKey = 'order_id', preCombineField = 'updated_at');

INSERT INTO orders VALUES
  (1, 'alice', 30.00, 'placed',  TIMESTAMP'2024-05-01 09:00:00', '2024-05-01'),
  (2, 'bob',   12.50, 'placed',  TIMESTAMP'2024-05-01 10:00:00', '2024-05-01'),
  (3, 'carol', 99.90, 'placed',  TIMESTAMP'2024-05-02 08:30:00', '2024-05-02');

-- Upsert: order 1 ships, order 2 gets a late (older) event that must not win, order 4 is new.
INSERT INTO orders VALUES
  (1, 'alice', 30.00, 'shipped', TIMESTAMP'2024-05-02 12:00:00', '2024-05-01'),
  (2, 'bob',   12.50, 'lost?',   TIMESTAMP'2024-04-30 23:59:00', '2024-05-01'),
  (4, 'dave',  7.25,  'placed',  TIMESTAMP'2024-05-02 13:00:00', '2024-05-02');

SELECT order_id, customer, amount, status, order_date FROM orders ORDER BY order_id;

SELECT order_date, count(*) AS orders, sum(amount) AS total FROM orders GROUP BY order_date ORDER BY order_date;
