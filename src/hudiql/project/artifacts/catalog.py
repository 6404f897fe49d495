"""``target/catalog.json``, what dbt's ``docs generate`` writes: each table and view that the
project's models, seeds and sources name and the warehouse holds, with its columns as stored, in
dbt's catalog schema (v1). dbt reads the warehouse the same way through the hudiql adapter
(``dbt.adapters.hudiql``: ``get_columns_in_relation``), so both describe a table alike.

Example:
    >>> from hudiql.project.artifacts.nodes import Column
    >>> entry = catalog_entry("model.shop.orders", "analytics", "orders", "table", [Column("id", "bigint")])
    >>> entry["metadata"]["type"], entry["columns"]["id"], entry["stats"]["has_stats"]["value"]
    ('table', {'type': 'bigint', 'index': 1, 'name': 'id', 'comment': None}, False)
"""

from __future__ import annotations

from typing import Any

from hudiql.project.artifacts.nodes import Column

CATALOG_SCHEMA = "https://schemas.getdbt.com/dbt/catalog/v1.json"

#: dbt adds this statistic to every table; hudiql reports no others (nor does dbt with Spark).
_NO_STATS = {"has_stats": {"id": "has_stats", "label": "Has Stats?", "value": False, "include": False,
                           "description": "Indicates whether there are statistics for this table"}}


def catalog_entry(unique_id: str, schema: str, name: str, kind: str, columns: list[Column]) -> dict[str, Any]:
    """One table or view (``kind``) of the catalog, as dbt's ``CatalogTable`` serializes it: no
    database (Spark has one level of namespace), comments or owner."""
    return {
        "metadata": {"type": kind, "schema": schema, "name": name, "database": None, "comment": None, "owner": None},
        "columns": {c.name: {"type": c.data_type, "index": i, "name": c.name, "comment": None}
                    for i, c in enumerate(columns, start=1)},
        "stats": {k: dict(v) for k, v in _NO_STATS.items()},
        "unique_id": unique_id,
    }
