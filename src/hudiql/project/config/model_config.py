"""Node configs: which keys each resource type takes, the ``+key`` tree of ``dbt_project.yml``,
and validation. An unknown key is an error naming the closest valid one, never ignored.

Configs are merged in dbt's order: the project tree (outer folders first), then the ``config:``
of the node's ``.yml`` properties, then ``config(...)`` in the file itself.

Example:
    >>> validate("model", {"materialized": "incremental", "unique_key": "order_id"}, "model m")["unique_key"]
    ['order_id']
    >>> check_key("model", "uniqe_key", "model m")
    Traceback (most recent call last):
      ...
    hudiql.project.errors.ConfigError: model m: unknown config 'uniqe_key'; did you mean 'unique_key'?
"""

from __future__ import annotations

from typing import Any

from hudiql.config import registry
from hudiql.config import table_config as C
from hudiql.config.registry import closest
from hudiql.project.errors import ConfigError

COMMON = {"enabled", "tags", "meta"}
HUDI = {"unique_key", "partition_by", "table_type", "precombine_field", "options"}
#: SQL run before and after a model's or seed's materialization, in its session (``{{ this }}`` is
#: rendered then). Every level's hooks run, the project's first, as in dbt.
HOOKS = ("pre_hook", "post_hook")
VALID_KEYS: dict[str, set[str]] = {
    "model": COMMON | HUDI | set(HOOKS) | {
        "materialized", "on_schema_change", "incremental_strategy", "schema", "alias", "full_refresh",
    },
    "seed": COMMON | HUDI | set(HOOKS) | {"schema", "alias", "column_types", "delimiter"},  # seeds are reloaded every run
    "test": COMMON | {"severity", "where"},
    "unit_test": COMMON,
    # A snapshot's table is keyed by dbt_scd_id: its unique_key is the query's key, not the table's.
    "snapshot": COMMON | HUDI - {"precombine_field"} | set(HOOKS) | {
        "materialized", "schema", "alias", "database", "target_schema", "target_database", "strategy",
        "updated_at", "check_cols", "hard_deletes", "invalidate_hard_deletes", "dbt_valid_to_current",
        "snapshot_meta_column_names",
    },
}
DEFAULTS: dict[str, dict[str, Any]] = {
    "model": {"materialized": "view", "on_schema_change": "ignore", "table_type": "cow"},
    "seed": {"materialized": "seed", "table_type": "cow", "delimiter": ","},
    "test": {"materialized": "test", "severity": "error"},
    "unit_test": {"materialized": "unit"},
    "snapshot": {"materialized": "snapshot", "table_type": "cow"},
}
STRATEGIES = ("merge", "append", "insert_overwrite")
SNAPSHOT_STRATEGIES = ("timestamp", "check")
#: A snapshot's ``hard_deletes``: keys gone from its query are left alone, have their current
#: version closed, or get a closing version marked ``dbt_is_deleted = 'True'``.
HARD_DELETES = ("ignore", "invalidate", "new_record")
#: A snapshot table's own columns (dbt's ``get_snapshot_table_column_names``);
#: ``snapshot_meta_column_names`` renames them.
SNAPSHOT_META_COLUMNS = ("dbt_valid_from", "dbt_valid_to", "dbt_scd_id", "dbt_updated_at", "dbt_is_deleted")
SCHEMA_CHANGES = ("ignore", "fail", "append_new_columns", "sync_all_columns")
# Hudi options that have a first-class config: setting them under ``options`` would be a second,
# conflicting way to say the same thing.
FIRST_CLASS_OPTIONS = {
    registry.RECORD_KEY_OPTION: "unique_key",
    C.RECORD_KEY_FIELDS: "unique_key",
    registry.PARTITION_OPTION: "partition_by",
    C.PARTITION_FIELDS: "partition_by",
    registry.PRECOMBINE_OPTION: "precombine_field",
    C.PRECOMBINE_FIELD: "precombine_field",
    registry.TABLE_TYPE_OPTION: "table_type",
    C.TABLE_TYPE: "table_type",
}


def check_key(resource_type: str, key: str, where: str) -> None:
    valid = VALID_KEYS[resource_type]
    if key not in valid:
        guess = closest(key, valid)
        hint = f"did you mean '{guess}'?" if guess else f"valid keys are {', '.join(sorted(valid))}"
        raise ConfigError(f"{where}: unknown config '{key}'; {hint}")


def normalize_key(key: str) -> str:
    """``+materialized`` -> ``materialized``; dashes as dbt allows them (``full-refresh``) -> ``_``."""
    return key.lstrip("+").replace("-", "_")


def tree_configs(tree: dict[str, Any] | None, fqn: list[str], resource_type: str, where: str) -> dict[str, Any]:
    """The configs a ``models:`` / ``seeds:`` / ``tests:`` tree gives the node at ``fqn``.

    ``fqn`` is ``[project, folder, ..., name]``. A ``+key`` is a config; a key without ``+`` is a
    config when its value is not a mapping or the key is a config name, else a sub-folder.
    """
    out: dict[str, Any] = {}
    level = tree or {}
    path = [where]
    for part in fqn:
        if not isinstance(level, dict):
            raise ConfigError(f"{'.'.join(path)} must be a mapping of folders and +configs")
        for key, value in level.items():
            name = normalize_key(str(key))
            if str(key).startswith("+") or not isinstance(value, dict) or name in VALID_KEYS[resource_type]:
                check_key(resource_type, name, ".".join(path))
                out[name] = value
        level = level.get(part) if isinstance(level.get(part), dict) else None
        if level is None:
            break
        path.append(part)
    else:
        for key, value in (level or {}).items():  # configs written at the node's own name
            name = normalize_key(str(key))
            check_key(resource_type, name, ".".join(path))
            out[name] = value
    return out


def merge(*layers: dict[str, Any]) -> dict[str, Any]:
    """Later layers win; ``tags`` add up and ``meta`` / ``options`` merge key by key, as in dbt."""
    out: dict[str, Any] = {}
    for layer in layers:
        for key, value in layer.items():
            if key == "tags" and key in out:
                before = _as_list(out[key], "tags", "")
                out[key] = before + [t for t in _as_list(value, "tags", "") if t not in before]
            elif key in HOOKS and key in out:  # validate() checks what they hold, naming the node
                out[key] = [*_listed(out[key]), *_listed(value)]
            elif key in ("meta", "options", "column_types") and isinstance(out.get(key), dict) and isinstance(value, dict):
                out[key] = {**out[key], **value}
            else:
                out[key] = value
    return out


def _as_list(value: Any, key: str, where: str) -> list[str]:
    """A string or a list of strings as a list; ``"a, b"`` is two names."""
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return [v.strip() for v in value]
    raise ConfigError(f"{where}: config '{key}' must be a string or a list of strings, got {value!r}")


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _hooks(value: Any, key: str, where: str) -> list[str]:
    """A hook or a list of hooks (SQL text, not split on commas) as a list."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise ConfigError(f"{where}: config '{key}' must be SQL text or a list of it, got {value!r}")


def _one_of(value: Any, key: str, allowed: tuple[str, ...], where: str) -> str:
    text = str(value).lower()
    if text not in allowed:
        guess = closest(text, allowed)
        hint = f"did you mean '{guess}'? " if guess else ""
        raise ConfigError(f"{where}: {key} '{value}' is not valid; {hint}use one of {', '.join(allowed)}")
    return text


def _mapping(value: Any, key: str, where: str) -> dict[str, str]:
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: config '{key}' must be a mapping, got {value!r}")
    return {str(k): str(v).lower() if isinstance(v, bool) else str(v) for k, v in value.items()}


def validate(resource_type: str, config: dict[str, Any], where: str, materializations: set[str] | None = None) -> dict[str, Any]:
    """Checked and normalized configs with defaults filled in; ``where`` names the node in errors."""
    for key in config:
        check_key(resource_type, key, where)
    out = {**DEFAULTS[resource_type], **config}
    out["enabled"] = bool(out.get("enabled", True))
    out["tags"] = _as_list(out.get("tags", []), "tags", where)
    out["meta"] = dict(out.get("meta") or {})
    if resource_type == "unit_test":
        return out
    if resource_type == "test":
        out["severity"] = _one_of(out["severity"], "severity", ("error", "warn"), where)
        return out
    for key in ("unique_key", "partition_by"):
        out[key] = _as_list(out[key], key, where) if out.get(key) is not None else []
    if resource_type == "snapshot" and isinstance(config.get("unique_key"), str):
        out["unique_key"] = [config["unique_key"].strip()]  # one SQL expression, commas and all (as dbt)
    for key in HOOKS:
        out[key] = _hooks(out.get(key) or [], key, where)
    table_type = C.table_type(str(out["table_type"]))
    out["table_type"] = ("mor" if table_type == C.MERGE_ON_READ else "cow") if table_type else _one_of(
        out["table_type"], "table_type", ("cow", "mor"), where)
    out["options"] = _options(out.get("options") or {}, where)
    if out.get("precombine_field") is not None and not isinstance(out["precombine_field"], str):
        raise ConfigError(f"{where}: config 'precombine_field' must be one column name")
    if resource_type == "seed":
        out["column_types"] = _mapping(out.get("column_types") or {}, "column_types", where)
        if len(str(out["delimiter"])) != 1:
            raise ConfigError(f"{where}: delimiter must be one character, got {out['delimiter']!r}")
        return out
    if resource_type == "snapshot":
        return _snapshot(out, where)
    if materializations is not None and out["materialized"] not in materializations:
        out["materialized"] = _one_of(out["materialized"], "materialized", tuple(sorted(materializations)), where)
    out["on_schema_change"] = _one_of(out["on_schema_change"], "on_schema_change", SCHEMA_CHANGES, where)
    strategy = out.get("incremental_strategy") or ("merge" if out["unique_key"] else "append")
    out["incremental_strategy"] = _one_of(strategy, "incremental_strategy", STRATEGIES, where)
    if out["materialized"] == "incremental":
        if strategy == "merge" and not out["unique_key"]:
            raise ConfigError(f"{where}: incremental_strategy 'merge' needs unique_key (the columns MERGE INTO matches on)")
        if strategy == "insert_overwrite" and not out["partition_by"]:
            raise ConfigError(f"{where}: incremental_strategy 'insert_overwrite' replaces partitions; set partition_by")
    return out


def _snapshot(out: dict[str, Any], where: str) -> dict[str, Any]:
    """A snapshot's strategy configs, as dbt-core checks them (``SnapshotConfig.validate``)."""
    for key in ("database", "target_database"):
        if out.get(key):
            raise ConfigError(f"{where}: {key}: Spark has one level of namespace; name the database with "
                              "schema (or target_schema)")
    if not out.get("strategy") or not out["unique_key"]:
        raise ConfigError(f"{where}: a snapshot needs the configs strategy (timestamp or check) and unique_key")
    out["strategy"] = _one_of(out["strategy"], "strategy", SNAPSHOT_STRATEGIES, where)
    if out["strategy"] == "timestamp" and not out.get("updated_at"):
        raise ConfigError(f"{where}: the timestamp strategy needs updated_at (the column of each row's last change)")
    if out["strategy"] == "check":
        check_cols = out.get("check_cols")
        if check_cols != "all":
            if not check_cols:
                raise ConfigError(f"{where}: the check strategy needs check_cols ('all' or a list of columns)")
            out["check_cols"] = _as_list(check_cols, "check_cols", where)
    if "invalidate_hard_deletes" in out and "hard_deletes" in out:
        raise ConfigError(f"{where}: set hard_deletes, not both hard_deletes and invalidate_hard_deletes")
    legacy = "invalidate" if out.pop("invalidate_hard_deletes", False) else "ignore"
    out["hard_deletes"] = _one_of(out.get("hard_deletes") or legacy, "hard_deletes", HARD_DELETES, where)
    names = out.get("snapshot_meta_column_names") or {}
    if not isinstance(names, dict) or set(names) - set(SNAPSHOT_META_COLUMNS):
        raise ConfigError(f"{where}: snapshot_meta_column_names maps {', '.join(SNAPSHOT_META_COLUMNS)} to column names")
    return out


def _options(options: Any, where: str) -> dict[str, str]:
    options = _mapping(options, "options", where)
    for key in options:
        if key in FIRST_CLASS_OPTIONS:
            raise ConfigError(f"{where}: options '{key}' is set by the config '{FIRST_CLASS_OPTIONS[key]}'; use that instead")
        if not key.startswith("hoodie."):
            guess = closest(key, VALID_KEYS["model"])
            hint = f"; did you mean the config '{guess}'?" if guess else ""
            raise ConfigError(f"{where}: options '{key}' is not a Hudi option (options take hoodie.* keys){hint}")
    return options
