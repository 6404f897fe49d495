"""The SQL of a dbt snapshot (a type-2 slowly changing dimension of a query), as dbt-core 1.11's
snapshot materialization builds it, for ``hudiql snapshot`` and ``build``.

The snapshot table is a Hudi table keyed by ``dbt_scd_id`` (one row per version of a source
key). Its first run is a CTAS of the query's rows, each a current version; a later run computes
the changes (``staging_sql``: new versions to insert, current versions to close, and with
``hard_deletes`` the versions of keys gone from the query) and applies them in one MERGE
(``merge_sql``, one commit). Strategies, as dbt's:

- ``timestamp``: a key's row changed when its ``updated_at`` is later than its current version's
  ``dbt_valid_from``; versions are valid from ``updated_at``;
- ``check``: a key's row changed when any ``check_cols`` column (``all``: every column of the
  query) differs, NULLs included; versions are valid from the snapshot's time.

Example:
    >>> config = {"strategy": "timestamp", "unique_key": ["id"], "updated_at": "updated_at", "hard_deletes": "ignore"}
    >>> strategy = SnapshotStrategy.of(config, now="timestamp_micros(0)")
    >>> strategy.scd_id
    "md5(concat_ws('|', coalesce(cast(id as string), ''), coalesce(cast(updated_at as string), '')))"
    >>> print(build_sql("SELECT * FROM raw.customers", strategy, SnapshotColumns.of(config), config))
    SELECT *,
      md5(concat_ws('|', coalesce(cast(id as string), ''), coalesce(cast(updated_at as string), ''))) AS dbt_scd_id,
      updated_at AS dbt_updated_at,
      updated_at AS dbt_valid_from,
      coalesce(nullif(updated_at, updated_at), NULL) AS dbt_valid_to
    FROM (
    SELECT * FROM raw.customers
    ) AS sbq
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hudiql.project.adapter.materialization import quote
from hudiql.project.config.model_config import SNAPSHOT_META_COLUMNS
#: Staging columns that are not written to the snapshot table.
CHANGE_TYPE = "dbt_change_type"


def hash_arguments(args: Sequence[str]) -> str:
    """The version id of a row: an md5 of its arguments (SQL expressions) joined by ``|``, a NULL
    as empty text; ``hudiql__snapshot_hash_arguments`` gives dbt-core's runs the same ids."""
    return "md5(concat_ws('|', " + ", ".join(f"coalesce(cast({a} as string), '')" for a in args) + "))"


@dataclass(frozen=True)
class SnapshotColumns:
    """The names of the snapshot table's meta columns."""

    dbt_valid_from: str
    dbt_valid_to: str
    dbt_scd_id: str
    dbt_updated_at: str
    dbt_is_deleted: str

    @classmethod
    def of(cls, config: Mapping[str, Any]) -> SnapshotColumns:
        names = config.get("snapshot_meta_column_names") or {}
        return cls(**{c: str(names.get(c) or c) for c in SNAPSHOT_META_COLUMNS})

    def written(self, hard_deletes: str) -> list[str]:
        """The meta columns a snapshot table has, in the order the first run creates them."""
        extra = [self.dbt_is_deleted] if hard_deletes == "new_record" else []
        return [self.dbt_scd_id, self.dbt_updated_at, self.dbt_valid_from, self.dbt_valid_to, *extra]


@dataclass(frozen=True)
class SnapshotStrategy:
    """What a strategy decides (dbt's ``snapshot_<name>_strategy`` result): the expression of a
    version's time, when a row changed (``snapshotted_data`` against ``source_data``), the version id."""

    unique_key: tuple[str, ...]
    updated_at: str
    row_changed: str
    scd_id: str
    hard_deletes: str

    @classmethod
    def of(cls, config: Mapping[str, Any], now: str, check_columns: Sequence[str] = (),
           column_added: bool = False) -> SnapshotStrategy:
        """``now``: the snapshot's time as SQL, one value for the whole run; ``check_columns``: the
        columns the ``check`` strategy compares, ``column_added``: the query has a column the table
        has not (every row counts as changed, as in dbt)."""
        keys = tuple(config["unique_key"])
        if config["strategy"] == "timestamp":
            updated_at = str(config["updated_at"])
            row_changed = f"(snapshotted_data.dbt_valid_from_ < source_data.{updated_at})"
        else:
            updated_at = str(config.get("updated_at") or now)
            row_changed = "(TRUE)" if column_added else "(" + " OR ".join(
                f"snapshotted_data.{c} != source_data.{c} OR ((snapshotted_data.{c} IS NULL) != (source_data.{c} IS NULL))"
                for c in check_columns) + ")"
        return cls(keys, updated_at, row_changed, hash_arguments([*keys, updated_at]), config["hard_deletes"])


def _valid_to_current(time: str, config: Mapping[str, Any]) -> str:
    """What a current version has as ``dbt_valid_to``: NULL, or ``dbt_valid_to_current``, typed as
    its version's time ``time`` is (dbt's ``coalesce(nullif(...))``)."""
    return f"coalesce(nullif({time}, {time}), {config.get('dbt_valid_to_current') or 'NULL'})"


def _is_current(column: str, config: Mapping[str, Any]) -> str:
    if config.get("dbt_valid_to_current"):
        return f"({column} = {config['dbt_valid_to_current']} OR {column} IS NULL)"
    return f"{column} IS NULL"


def build_sql(sql: str, strategy: SnapshotStrategy, columns: SnapshotColumns, config: Mapping[str, Any]) -> str:
    """The first run's rows: every row of ``sql`` as its key's current version."""
    meta = [
        f"{strategy.scd_id} AS {columns.dbt_scd_id}",
        f"{strategy.updated_at} AS {columns.dbt_updated_at}",
        f"{strategy.updated_at} AS {columns.dbt_valid_from}",
        f"{_valid_to_current(strategy.updated_at, config)} AS {columns.dbt_valid_to}",
    ]
    if strategy.hard_deletes == "new_record":
        meta.append(f"'False' AS {columns.dbt_is_deleted}")
    return "SELECT *,\n  " + ",\n  ".join(meta) + f"\nFROM (\n{sql}\n) AS sbq"


def staging_sql(target: object, sql: str, strategy: SnapshotStrategy, columns: SnapshotColumns,
                config: Mapping[str, Any], query_columns: Sequence[str], target_columns: Sequence[str], now: str) -> str:
    """The changes of a later run, one row each with ``dbt_change_type``: ``insert`` (a new version,
    with every column of the table), ``update`` and ``delete`` (the current version ``dbt_scd_id``
    closes at ``dbt_valid_to``). ``query_columns``: the columns of ``sql``; ``target_columns``: the table's."""
    keys = [f"{k} AS dbt_unique_key_{i}" for i, k in enumerate(strategy.unique_key, 1)]
    key_columns = [f"dbt_unique_key_{i}" for i in range(1, len(strategy.unique_key) + 1)]
    join = " AND ".join(f"snapshotted_data.{k} = source_data.{k}" for k in key_columns)
    new_record = strategy.hard_deletes == "new_record"
    deleted = f"snapshotted_data.{columns.dbt_is_deleted} = 'True'"
    changed = strategy.row_changed + (f" OR {deleted}" if new_record else "")
    time = "source_data.dbt_snapshot_time_"

    def change(name: str, kind: str, side: Mapping[str, str], version: tuple[str, str, str, str, str], rows: str) -> str:
        """One kind of change, every branch with the same columns: the query's (each from ``side``,
        by column; else from ``source_data``), the key, then the version's meta columns
        (updated_at, valid_from, valid_to, scd_id, is_deleted) from ``version``."""
        values = [f"{side.get(c.lower(), 'source_data')}.{quote(c)}" for c in query_columns]
        keys_from = side.get("dbt_unique_key", "source_data")
        meta = zip(version, (columns.dbt_updated_at, columns.dbt_valid_from, columns.dbt_valid_to, columns.dbt_scd_id,
                             columns.dbt_is_deleted))
        selected = [f"'{kind}' AS {CHANGE_TYPE}", *values, *(f"{keys_from}.{k}" for k in key_columns),
                    *(f"{value} AS {column}" for value, column in list(meta)[:5 if new_record else 4])]
        return f"{name} AS (\n  SELECT " + ",\n    ".join(selected) + f"\n  FROM {rows}\n)"

    ctes = [
        f"snapshot_query AS (\n{sql}\n)",
        # The current versions; ``dbt_valid_from_`` under a fixed name for the timestamp strategy's test.
        f"snapshotted_data AS (\n  SELECT *, {', '.join(keys)}, {columns.dbt_valid_from} AS dbt_valid_from_\n"
        f"  FROM {target}\n  WHERE {_is_current(columns.dbt_valid_to, config)}\n)",
        f"source_data AS (\n  SELECT *, {', '.join(keys)},\n    {strategy.updated_at} AS dbt_snapshot_time_,\n"
        f"    {strategy.scd_id} AS dbt_scd_id_\n  FROM snapshot_query\n)",
        # a new version of a new or changed key
        change("insertions", "insert", {}, (time, time, _valid_to_current(time, config), "source_data.dbt_scd_id_", "'False'"),
               f"source_data LEFT JOIN snapshotted_data ON {join}\n  WHERE snapshotted_data.dbt_unique_key_1 IS NULL OR ({changed})"),
        # the current version of a changed key, closed
        change("updates", "update", {}, (time, time, time, f"snapshotted_data.{columns.dbt_scd_id}",
                                         f"snapshotted_data.{columns.dbt_is_deleted}"),
               f"source_data JOIN snapshotted_data ON {join}\n  WHERE {changed}"),
    ]
    branches = ["insertions", "updates"]
    if strategy.hard_deletes in ("invalidate", "new_record"):
        # Keys gone from the query; a key already closed as deleted is left alone.
        gone = (f"snapshotted_data LEFT JOIN source_data ON {join}\n  WHERE source_data.dbt_unique_key_1 IS NULL"
                + (f" AND NOT ({deleted} AND {_is_current('snapshotted_data.' + columns.dbt_valid_to, config)})" if new_record else ""))
        ctes.append(change("deletes", "delete", {}, (now, now, now, f"snapshotted_data.{columns.dbt_scd_id}",
                                                      f"snapshotted_data.{columns.dbt_is_deleted}"), gone))
        branches.append("deletes")
        if new_record:
            # The version that says the key was deleted: its last values, valid from now.
            side = {c.lower(): "snapshotted_data" for c in target_columns} | {"dbt_unique_key": "snapshotted_data"}
            scd_id = hash_arguments(["snapshotted_data." + columns.dbt_scd_id, now])
            ctes.append(change("deletion_records", "insert", side,
                               (now, now, f"snapshotted_data.{columns.dbt_valid_to}", scd_id, "'True'"), gone))
            branches.append("deletion_records")
    return "WITH " + ",\n".join(ctes) + "\n" + "\nUNION ALL\n".join(f"SELECT * FROM {b}" for b in branches)


def merge_sql(target: object, source: str, columns: SnapshotColumns, insert_columns: Sequence[str],
              valid_to_current: str | None) -> str:
    """The MERGE that applies staged changes (``source``: a relation or a parenthesized query):
    close the current version of changed and deleted keys, insert the new versions. It matches on
    the table's record key, ``dbt_scd_id``; one statement, one commit. dbt-core's runs use it too
    (``hudiql__snapshot_merge_sql``).

    >>> print(merge_sql("db.s", "stage", SnapshotColumns.of({}), ["`id`", "dbt_scd_id"], None))
    MERGE INTO db.s AS DBT_INTERNAL_DEST
    USING stage AS DBT_INTERNAL_SOURCE
    ON DBT_INTERNAL_SOURCE.dbt_scd_id = DBT_INTERNAL_DEST.dbt_scd_id
    WHEN MATCHED AND DBT_INTERNAL_DEST.dbt_valid_to IS NULL
      AND DBT_INTERNAL_SOURCE.dbt_change_type IN ('update', 'delete')
      THEN UPDATE SET dbt_valid_to = DBT_INTERNAL_SOURCE.dbt_valid_to
    WHEN NOT MATCHED AND DBT_INTERNAL_SOURCE.dbt_change_type = 'insert'
      THEN INSERT (`id`, dbt_scd_id)
      VALUES (DBT_INTERNAL_SOURCE.`id`, DBT_INTERNAL_SOURCE.dbt_scd_id)
    """
    current = _is_current(f"DBT_INTERNAL_DEST.{columns.dbt_valid_to}", {"dbt_valid_to_current": valid_to_current})
    return "\n".join([
        f"MERGE INTO {target} AS DBT_INTERNAL_DEST",
        f"USING {source} AS DBT_INTERNAL_SOURCE",
        f"ON DBT_INTERNAL_SOURCE.{columns.dbt_scd_id} = DBT_INTERNAL_DEST.{columns.dbt_scd_id}",
        f"WHEN MATCHED AND {current}",
        f"  AND DBT_INTERNAL_SOURCE.{CHANGE_TYPE} IN ('update', 'delete')",
        f"  THEN UPDATE SET {columns.dbt_valid_to} = DBT_INTERNAL_SOURCE.{columns.dbt_valid_to}",
        f"WHEN NOT MATCHED AND DBT_INTERNAL_SOURCE.{CHANGE_TYPE} = 'insert'",
        f"  THEN INSERT ({', '.join(insert_columns)})",
        f"  VALUES ({', '.join('DBT_INTERNAL_SOURCE.' + c for c in insert_columns)})",
    ])
