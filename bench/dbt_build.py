#!/usr/bin/env python
"""Benchmark: ``hudiql build`` against dbt-core's ``dbt build`` with the hudiql adapter, on the same
project and warehouse layout (issue 35, item 6).

Usage:
    python bench/dbt_build.py [--runs 3] [--scale 1.0] [--projects demo,example] [--workdir DIR]

Projects:
* ``demo``: generated here in the shape of dbt Labs' newer demo project (jaffle-shop): six seeds of
  about 180k rows in all (``--scale`` multiplies them), six staging views, six mart tables (one of
  them incremental, merged on its key) and a ``unique`` / ``not_null`` test on each mart's key.
* ``example``: a copy of ``models_example`` (its ``orders_enriched`` reads ``changes()``, which the
  dbt-core adapter offers too).

Each run builds each project from an empty warehouse with each engine, every build a fresh process
(``hudiql build --project-dir P`` and ``dbt build --project-dir P --profiles-dir P``, one
``profiles.yml`` of type ``hudiql``, ``local[2]``, one thread), alternating which engine goes
first; the figures are wall times of whole commands, medians of ``--runs``, and their ratio
hudiql / dbt-core.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from common import REPO

PROFILE = """{name}:
  target: dev
  outputs:
    dev:
      type: hudiql
      warehouse: warehouse
      database: default
      threads: 1
      master: "local[2]"
      spark_conf:
        spark.sql.shuffle.partitions: "4"
"""

DEMO_MODELS = {
    "staging/stg_customers.sql": "select id as customer_id, name as customer_name from {{ ref('raw_customers') }}",
    "staging/stg_orders.sql": "select id as order_id, customer as customer_id, store_id as location_id, "
                              "cast(ordered_at as timestamp) as ordered_at, subtotal, tax_paid, order_total "
                              "from {{ ref('raw_orders') }}",
    "staging/stg_order_items.sql": "select id as order_item_id, order_id, sku as product_id from {{ ref('raw_items') }}",
    "staging/stg_products.sql": "select sku as product_id, name as product_name, type as product_type, price "
                                "from {{ ref('raw_products') }}",
    "staging/stg_locations.sql": "select id as location_id, name as location_name, tax_rate from {{ ref('raw_stores') }}",
    "staging/stg_supplies.sql": "select id as supply_uuid, sku as product_id, cost as supply_cost, perishable "
                                "from {{ ref('raw_supplies') }}",
    "marts/products.sql": "select * from {{ ref('stg_products') }}",
    "marts/locations.sql": "select * from {{ ref('stg_locations') }}",
    "marts/supplies.sql": "select product_id, sum(supply_cost) as supply_cost, max(perishable) as perishable "
                          "from {{ ref('stg_supplies') }} group by product_id",
    "marts/order_items.sql": "select i.order_item_id, i.order_id, i.product_id, p.product_price, "
                             "coalesce(s.supply_cost, 0) as supply_cost from {{ ref('stg_order_items') }} i "
                             "join (select product_id, price as product_price from {{ ref('stg_products') }}) p "
                             "on i.product_id = p.product_id left join {{ ref('supplies') }} s on i.product_id = s.product_id",
    "marts/orders.sql": "{{ config(materialized='incremental', unique_key='order_id') }} "
                        "select o.order_id, o.customer_id, o.location_id, o.ordered_at, o.order_total, "
                        "count(i.order_item_id) as item_count, sum(i.supply_cost) as order_cost "
                        "from {{ ref('stg_orders') }} o left join {{ ref('order_items') }} i on o.order_id = i.order_id "
                        "group by o.order_id, o.customer_id, o.location_id, o.ordered_at, o.order_total",
    "marts/customers.sql": "select c.customer_id, c.customer_name, count(o.order_id) as orders, "
                           "sum(o.order_total) as lifetime_spend, min(o.ordered_at) as first_order "
                           "from {{ ref('stg_customers') }} c left join {{ ref('orders') }} o "
                           "on c.customer_id = o.customer_id group by c.customer_id, c.customer_name",
}
DEMO_PROJECT = """name: demo
profile: demo
config-version: 2
models:
  demo:
    staging:
      +materialized: view
    marts:
      +materialized: table
"""


def demo_project(root: str, scale: float) -> None:
    """The demo project: its seeds (about 180k rows at scale 1), models and tests."""
    rng = random.Random(7)
    n = {name: max(1, int(rows * scale)) for name, rows in
         {"customers": 20_000, "orders": 60_000, "items": 80_000, "products": 500, "stores": 50, "supplies": 19_450}.items()}
    seeds = {
        "raw_customers": ("id,name", (f"{i},customer {i}" for i in range(n["customers"]))),
        "raw_orders": ("id,customer,store_id,ordered_at,subtotal,tax_paid,order_total",
                       (f"{i},{rng.randrange(n['customers'])},{rng.randrange(n['stores'])},"
                        f"2024-0{1 + i % 9}-1{i % 10} 10:00:00,{i % 97}.5,{i % 7}.25,{i % 97 + i % 7}.75"
                        for i in range(n["orders"]))),
        "raw_items": ("id,order_id,sku", (f"{i},{rng.randrange(n['orders'])},SKU{rng.randrange(n['products'])}"
                                           for i in range(n["items"]))),
        "raw_products": ("sku,name,type,price", (f"SKU{i},product {i},{'jaffle' if i % 2 else 'beverage'},{i % 13 + 1}"
                                                  for i in range(n["products"]))),
        "raw_stores": ("id,name,tax_rate", (f"{i},store {i},0.0{i % 9}" for i in range(n["stores"]))),
        "raw_supplies": ("id,sku,cost,perishable", (f"S{i},SKU{i % n['products']},{i % 5}.5,{str(i % 3 == 0).lower()}"
                                                     for i in range(n["supplies"]))),
    }
    os.makedirs(os.path.join(root, "seeds"))
    for name, (header, rows) in seeds.items():
        with open(os.path.join(root, "seeds", f"{name}.csv"), "w") as f:
            f.write(header + "\n" + "\n".join(rows) + "\n")
    for path, sql in DEMO_MODELS.items():
        os.makedirs(os.path.dirname(os.path.join(root, "models", path)), exist_ok=True)
        with open(os.path.join(root, "models", path), "w") as f:
            f.write(sql + "\n")
    keys = {"products": "product_id", "locations": "location_id", "supplies": "product_id",
            "order_items": "order_item_id", "orders": "order_id", "customers": "customer_id"}
    with open(os.path.join(root, "models", "marts", "_marts.yml"), "w") as f:
        f.write("models:\n" + "".join(f"  - name: {m}\n    columns:\n      - name: {k}\n"
                                      f"        data_tests: [unique, not_null]\n" for m, k in keys.items()))
    with open(os.path.join(root, "dbt_project.yml"), "w") as f:
        f.write(DEMO_PROJECT)
    with open(os.path.join(root, "profiles.yml"), "w") as f:
        f.write(PROFILE.format(name="demo"))


def example_project(root: str) -> None:
    """models_example, with a profile of its own."""
    shutil.copytree(os.path.join(REPO, "models_example"), root,
                    ignore=shutil.ignore_patterns("warehouse", "target", "logs", "spark-warehouse", "metastore_db"))
    with open(os.path.join(root, "profiles.yml"), "w") as f:
        f.write(PROFILE.format(name="hudiql_example"))


def build(engine: str, root: str) -> tuple[float, str]:
    """One build from an empty warehouse, a fresh process: its wall time and summary line."""
    for folder in ("warehouse", "target", "logs"):
        shutil.rmtree(os.path.join(root, folder), ignore_errors=True)
    binary = os.path.join(os.path.dirname(sys.executable), "hudiql" if engine == "hudiql" else "dbt")
    command = [binary, "build", "--project-dir", root, "--profiles-dir", root]
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "DBT_SEND_ANONYMOUS_USAGE_STATS": "false"}
    started = time.perf_counter()
    proc = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    done = [line for line in proc.stdout.splitlines() if "Done." in line]
    summary = done[-1].split("Done.", 1)[1].strip() if done else "no summary"
    if proc.returncode != 0:
        print(proc.stdout[-2000:], proc.stderr[-2000:], sep="\n")
        raise SystemExit(f"{engine} build of {root} failed (exit {proc.returncode})")
    return seconds, summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--scale", type=float, default=1.0, help="the demo seeds' size (1: about 180k rows)")
    parser.add_argument("--projects", default="demo,example")
    parser.add_argument("--workdir", default=None)
    args = parser.parse_args()
    workdir = args.workdir or tempfile.mkdtemp(prefix="hudiql-dbt-build-")
    projects = {}
    for name in args.projects.split(","):
        root = os.path.join(workdir, name)
        shutil.rmtree(root, ignore_errors=True)
        demo_project(root, args.scale) if name == "demo" else example_project(root)
        projects[name] = root
    times: dict[tuple[str, str], list[float]] = {}
    for run in range(args.runs):
        for name, root in projects.items():
            engines = ("hudiql", "dbt") if run % 2 == 0 else ("dbt", "hudiql")
            for engine in engines:
                seconds, summary = build(engine, root)
                times.setdefault((name, engine), []).append(seconds)
                print(f"run {run + 1} {name:8s} {engine:7s} {seconds:6.1f} s  {summary}", flush=True)
    print(f"\nmedians of {args.runs} runs, each build a fresh process from an empty warehouse")
    print(f"{'project':8s} {'hudiql build':>13s} {'dbt build':>10s} {'hudiql / dbt':>13s}")
    for name in projects:
        ours, theirs = statistics.median(times[(name, "hudiql")]), statistics.median(times[(name, "dbt")])
        print(f"{name:8s} {ours:12.1f}s {theirs:9.1f}s {ours / theirs:12.2f}x")


if __name__ == "__main__":
    main()
