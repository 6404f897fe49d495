"""Files -> manifest: the models, seeds, tests and sources of a project, configs resolved.

- ``models/**.sql`` are models, ``seeds/**.csv`` seeds, ``tests/**.sql`` singular tests,
  ``{% snapshot name %}`` blocks in ``snapshots/**.sql`` snapshots;
- ``.yml`` files in the model, seed and snapshot folders describe models, seeds and snapshots
  (``description``, ``config``, ``columns`` with their tests), define snapshots of a ``relation``,
  declare ``sources`` and ``unit_tests`` (rows of a model's inputs and the rows it must return;
  fixture files in ``tests/fixtures/``);
- each model is rendered once with ``execute`` false, recording its ``ref``, ``source`` and
  ``config()`` calls; then configs are merged (project tree, ``.yml``, ``config()``) and validated.

``parse_project(invocation)`` returns the manifest (``task.base.load`` builds the invocation).
"""

from __future__ import annotations

import csv
import hashlib
import io
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from jinja2 import nodes as jnodes

from hudiql.catalog import check_name
from hudiql.project.artifacts.manifest import Manifest
from hudiql.project.artifacts.nodes import EPHEMERAL_PREFIX, Fixture, Node, Relation, Source, TestMetadata, UnitTest
from hudiql.project.config import model_config as configs
from hudiql.project.config.project import Project
from hudiql.project.config.renderer import read_yaml, render_values
from hudiql.project.context.providers import Invocation, ParseProvider
from hudiql.project.errors import ConfigError, ProjectError
from hudiql.config.registry import closest

# The keys dbt-core 1.11 accepts in property files (``contracts/graph/unparsed.py``): each one is
# used, or leaves the results alone (documentation), or is named in the run's warning (``_NOT_RUN``).
ENTRY_KEYS = {"name", "description", "config", "columns", "tests", "data_tests", "meta", "docs", "data_type",
              "constraints", "quote_columns", "access", "latest_version", "versions", "deprecation_date",
              "time_spine", "group", "contract"}
COLUMN_KEYS = {"name", "description", "tests", "data_tests", "meta", "data_type", "quote", "constraints", "docs",
               "config", "tags", "granularity"}
SOURCE_KEYS = {"name", "description", "schema", "database", "tables", "meta", "tags", "config", "loader",
               "quoting", "freshness", "loaded_at_field", "loaded_at_query", "overrides"}
SOURCE_TABLE_KEYS = {"name", "description", "identifier", "columns", "tests", "data_tests", "meta", "tags",
                     "data_type", "constraints", "docs", "config", "loaded_at_field", "loaded_at_query", "quoting",
                     "freshness", "external"}
PROPERTY_FILE_KEYS = {"version", "models", "seeds", "sources", "snapshots", "macros", "data_tests", "tests",
                      "analyses", "exposures", "functions", "metrics", "groups", "semantic_models", "unit_tests",
                      "saved_queries", "anchors"}
#: Property file content dbt runs or checks and hudiql does not: key -> what the run's warning names.
_NOT_RUN = {
    "analyses": "analyses", "exposures": "exposures", "functions": "functions",
    "metrics": "metrics", "groups": "groups", "semantic_models": "semantic models",
    "saved_queries": "saved queries", "constraints": "constraints", "contract": "model contracts",
    "access": "model access", "group": "groups", "deprecation_date": "deprecation dates",
    "time_spine": "time spines", "external": "external tables", "overrides": "source overrides",
    "quoting": "quoting", "quote_columns": "quoting",
}
#: The same, of a property file's top level (``data_tests:`` there describes singular tests).
_NOT_RUN_AT_TOP = {**_NOT_RUN, "data_tests": "singular test properties", "tests": "singular test properties"}
UNIT_TEST_KEYS = {"name", "model", "given", "expect", "description", "overrides", "config", "versions"}
FIXTURE_FORMATS = ("dict", "csv", "sql")
#: Source keys whose Jinja is rendered when the project loads (``target``, ``var``, ``env_var``).
_RENDERED_SOURCE_KEYS = ("schema", "database", "identifier", "loaded_at_field", "freshness")


def _check_keys(entry: dict[str, Any], allowed: set[str], where: str, not_run: set[str] | None = None,
                named: dict[str, str] = _NOT_RUN) -> None:
    """Refuse a key dbt does not accept either; add what the entry holds that hudiql does not run
    (``named``) to ``not_run``."""
    for key in entry:
        if key not in allowed:
            guess = closest(str(key), allowed)
            raise ProjectError(f"{where}: unknown key '{key}'" + (f"; did you mean '{guess}'?" if guess else ""))
        if key in ("versions", "latest_version"):
            raise ProjectError(f"{where}: {key}: hudiql does not build model versions; describe one model per file")
        if not_run is not None and key in named:
            not_run.add(named[key])


def _loaded_at(source: dict[str, Any], table: dict[str, Any], where: str) -> tuple[str | None, str | None]:
    """A source table's ``loaded_at_field`` and ``loaded_at_query`` as dbt resolves them: the table's
    (a property, or in its ``config:``), else the source's; a table that names a field (even null)
    does not take its source's query. Both at one level are refused, as dbt refuses them."""
    def given(entry: dict[str, Any], key: str) -> Any:
        return entry.get(key) or (entry.get("config") or {}).get(key)

    for level, entry in (("table", table), ("source", source)):
        if given(entry, "loaded_at_field") and given(entry, "loaded_at_query"):
            raise ProjectError(f"{where}: give loaded_at_field or loaded_at_query at {level} level, not both")
    table_names_field = "loaded_at_field" in table or "loaded_at_field" in (table.get("config") or {})
    field = given(table, "loaded_at_field") if table_names_field else given(source, "loaded_at_field")
    query = given(table, "loaded_at_query") or (None if table_names_field else given(source, "loaded_at_query"))
    return field, query


_PERIODS = ("minute", "hour", "day")
_THRESHOLDS = ("warn_after", "error_after")


def _freshness(source: dict[str, Any], table: dict[str, Any], where: str) -> dict[str, Any] | None:
    """A source table's freshness criteria, merged as dbt merges them: the source's ``freshness``,
    then its ``config:``'s, the table's, the table's ``config:``'s, each threshold's count and period
    and the ``filter`` taken from the latest level that gives them; a level that says
    ``freshness: null`` turns checks off (until a later level gives criteria again). None: no
    ``warn_after`` nor ``error_after`` to check."""
    merged: dict[str, Any] | None = {}
    for entry in (source, source.get("config") or {}, table, table.get("config") or {}):
        if "freshness" not in entry:
            continue
        level = entry["freshness"]
        if level is None:
            merged = None
            continue
        if not isinstance(level, dict):
            raise ProjectError(f"{where}: freshness must be a mapping with warn_after and/or error_after")
        unknown = set(level) - {*_THRESHOLDS, "filter"}
        if unknown:
            raise ProjectError(f"{where}: freshness: unknown key '{sorted(unknown)[0]}'; keys are warn_after, error_after, filter")
        if merged is None and not level:
            continue
        merged = dict(merged or {})
        for key, value in level.items():
            if key in _THRESHOLDS and value is not None:
                if not isinstance(value, dict):
                    raise ProjectError(f"{where}: freshness {key} needs a count and a period, e.g. {{count: 12, period: hour}}")
                value = {**(merged.get(key) or {}), **{k: v for k, v in value.items() if v is not None}}
            merged[key] = value
    if not merged:
        return None
    out: dict[str, Any] = {"warn_after": None, "error_after": None, "filter": merged.get("filter")}
    for key in _THRESHOLDS:
        value = merged.get(key)
        if not value:
            continue
        count, period = value.get("count"), value.get("period")
        if not isinstance(count, int) or isinstance(count, bool) or period not in _PERIODS or set(value) - {"count", "period"}:
            raise ProjectError(f"{where}: freshness {key} needs a count (a whole number) and a period "
                               f"({', '.join(_PERIODS)}), e.g. {{count: 12, period: hour}}")
        out[key] = {"count": count, "period": period}
    return out if out["warn_after"] or out["error_after"] else None


def _files(root: Path, folders: list[str], suffixes: tuple[str, ...]) -> list[tuple[Path, Path]]:
    """(path, folder) pairs of the files below ``folders`` ending with ``suffixes``."""
    out = []
    for folder in folders:
        base = root / folder
        if base.is_dir():
            out += [(p, base) for p in sorted(base.rglob("*")) if p.is_file() and p.name.endswith(suffixes)]
    return out


def sql_files(project: Project, folders: list[str]) -> list[str]:
    """The SQL files below ``folders`` of ``project``, relative to it (its snapshots or analyses,
    which hudiql does not build)."""
    return [str(path.relative_to(project.root)) for path, _ in _files(project.root, folders, (".sql",))]


class ProjectParser:
    def __init__(self, invocation: Invocation) -> None:
        self.invocation = invocation
        self.project = invocation.project
        self.manifest = Manifest(macros={
            f"macro.{file.package}.{name}": {"name": name, "package_name": file.package, "path": str(file.path), "macro_sql": file.blocks[name]}
            for name, file in invocation.library.origin.items()
        })
        self.properties: dict[tuple[str, str], tuple[dict[str, Any], str]] = {}  # (type, name) -> entry, yml path
        #: Snapshots a property file defines (with a ``relation:``): entry, yml path, its folder.
        self.yaml_snapshots: list[tuple[dict[str, Any], str, Path]] = []
        self.unit_tests: list[tuple[dict[str, Any], str]] = []  # entry, yml path

    def parse(self) -> Manifest:
        root = self.project.root
        self._read_property_files()
        found: dict[str, Node] = {}
        for path, folder in _files(root, self.project.model_paths, (".sql",)):
            self._add(found, self._model(path, folder))
        for path, folder in _files(root, self.project.seed_paths, (".csv",)):
            self._add(found, self._seed(path, folder))
        for path, folder in _files(root, self.project.snapshot_paths, (".sql",)):
            for name, raw in _snapshot_blocks(path, root):
                parts = path.relative_to(folder).with_suffix("").parts
                self._add(found, self._snapshot(path, [self.project.name, *parts, name], raw))
        for entry, yml, folder in self.yaml_snapshots:
            parts = (self.project.root / yml).relative_to(folder).parent.parts
            raw = "select * from {{ " + str(entry["relation"]) + " }}"  # dbt's query of a YAML snapshot
            self._add(found, self._snapshot(self.project.root / yml, [self.project.name, *parts, str(entry["name"])], raw))
        not_singular = self.project.generic_test_paths() + self.project.fixture_paths()
        for path, folder in _files(root, self.project.test_paths, (".sql",)):
            if not any(path.is_relative_to(g) for g in not_singular):
                self._add(found, self._singular_test(path, folder))
        for (resource_type, name), (_, yml) in self.properties.items():
            if not any(n.name == name and n.resource_type == resource_type for n in found.values()):
                self.manifest.parse_warnings.append(  # dbt's words (NoNodeForYamlKey)
                    f"Did not find matching node for patch with name '{name}' in the '{resource_type}s' section of "
                    f"file '{yml}'")
        for node in found.values():
            (self.manifest.nodes if node.config["enabled"] else self.manifest.disabled)[node.unique_id] = node
        for node in list(self.manifest.nodes.values()):
            entry, yml = self.properties.get((node.resource_type, node.name), ({}, ""))
            self._generic_tests(node, entry.get("tests") or entry.get("data_tests") or [], yml)
        for entry, yml in self.unit_tests:
            self._unit_test(entry, yml)
        for source in self.manifest.sources.values():
            self._generic_tests(source, source.tests, source.original_file_path)
        return self.manifest

    def _add(self, found: dict[str, Node], node: Node) -> None:
        clash = next((n for n in found.values() if n.name == node.name and n.resource_type != "test" and node.resource_type != "test"), None)
        if clash or node.unique_id in found:
            other = clash or found[node.unique_id]
            raise ProjectError(f"two nodes are named '{node.name}': {other.original_file_path} and {node.original_file_path}; rename one")
        found[node.unique_id] = node

    # ---- property (.yml) files ----------------------------------------------------------------
    def _read_property_files(self) -> None:
        folders = self.project.model_paths + self.project.seed_paths + self.project.snapshot_paths
        for path, folder in _files(self.project.root, folders, (".yml", ".yaml")):
            rel = str(path.relative_to(self.project.root))
            data = read_yaml(path) or {}
            if not isinstance(data, dict):
                raise ProjectError(f"{rel} must be a mapping with models:, seeds: or sources:")
            not_run = self.project.not_run
            _check_keys(data, PROPERTY_FILE_KEYS, rel, not_run, _NOT_RUN_AT_TOP)
            for resource_type, key in (("model", "models"), ("seed", "seeds"), ("snapshot", "snapshots")):
                for entry in data.get(key) or []:
                    if not isinstance(entry, dict) or "name" not in entry:
                        raise ProjectError(f"{rel}: each entry under {key}: needs a name")
                    _check_keys(entry, ENTRY_KEYS | ({"relation"} if key == "snapshots" else set()),
                                f"{rel} {resource_type} {entry['name']}", not_run)
                    if "relation" in entry:
                        if not is_relation_argument(entry["relation"]):
                            raise ProjectError(f"{rel}: snapshot {entry['name']}: relation must be ref('...') or "
                                               f"source('...', '...'), got {entry['relation']!r}")
                        self.yaml_snapshots.append((entry, rel, folder))
                    for column in entry.get("columns") or []:
                        _check_keys(column, COLUMN_KEYS, f"{rel} {resource_type} {entry['name']} column {column.get('name')}",
                                    not_run)
                    if (resource_type, entry["name"]) in self.properties:
                        raise ProjectError(f"{rel}: {resource_type} {entry['name']} is described twice")
                    self.properties[(resource_type, entry["name"])] = (entry, rel)
            for source in data.get("sources") or []:
                self._source(source, rel)
            for entry in data.get("unit_tests") or []:
                if not isinstance(entry, dict) or not all(k in entry for k in ("name", "model", "expect")):
                    raise ProjectError(f"{rel}: each entry under unit_tests: needs a name, a model and expect:")
                _check_keys(entry, UNIT_TEST_KEYS, f"{rel} unit test {entry['name']}")
                self.unit_tests.append((entry, rel))

    def _source(self, entry: dict[str, Any], rel: str) -> None:
        not_run = self.project.not_run
        _check_keys(entry, SOURCE_KEYS, f"{rel} source {entry.get('name')}", not_run)
        entry = self._rendered(entry, f"{rel} source {entry.get('name')}")
        name = entry["name"]
        schema = check_name("database", str(entry.get("schema") or name))
        for table in entry.get("tables") or []:
            _check_keys(table, SOURCE_TABLE_KEYS, f"{rel} source {name} table {table.get('name')}", not_run)
            table = self._rendered(table, f"{rel} source {name} table {table.get('name')}")
            if not {**(entry.get("config") or {}), **(table.get("config") or {})}.get("enabled", True):
                continue  # a disabled source table, as dbt leaves it out (its tests too)
            unique_id = f"source.{self.project.name}.{name}.{table['name']}"
            identifier = check_name("table", str(table.get("identifier") or table["name"]))
            where = f"{rel} source {name} table {table['name']}"
            self.manifest.sources[unique_id] = Source(
                unique_id, name, table["name"], rel, Relation(schema, identifier, "table"),
                table.get("description", ""), _columns(table), table.get("tests") or table.get("data_tests") or [],
                source_description=str(entry.get("description", "")),
                freshness=_freshness(entry, table, where),
            )
            source_table = self.manifest.sources[unique_id]
            source_table.loaded_at_field, source_table.loaded_at_query = _loaded_at(entry, table, where)

    def _rendered(self, entry: dict[str, Any], where: str) -> dict[str, Any]:
        """``entry`` with the Jinja of its names rendered (``schema: "{{ target.schema }}"``), as dbt renders them."""
        functions = {"var": self.invocation.var, "target": self.invocation.target.as_context()}
        return {k: render_values(v, functions, f"{where} {k}") if k in _RENDERED_SOURCE_KEYS else v
                for k, v in entry.items()}

    # ---- models, seeds, singular tests --------------------------------------------------------
    def _node(self, resource_type: str, path: Path, folder: Path, raw: str,
              fqn: list[str] | None = None) -> Node:
        """The node of a file below ``folder``, named after it (``fqn``: else its folders and name)."""
        name = fqn[-1] if fqn else path.stem
        node = Node(
            unique_id=f"{resource_type}.{self.project.name}.{name}",
            resource_type=resource_type,
            name=name,
            original_file_path=str(path.relative_to(self.project.root)),
            fqn=fqn or [self.project.name, *path.relative_to(folder).parent.parts, name],
            raw_code=raw,
        )
        entry, _ = self.properties.get((resource_type, name), ({}, ""))
        node.description = entry.get("description", "")
        node.columns = _columns(entry)
        tree = configs.tree_configs(self.project.trees[resource_type], node.fqn, resource_type, f"dbt_project.yml {resource_type}s")
        node.config = configs.merge(tree, entry.get("config") or {})
        return node

    def _model(self, path: Path, folder: Path) -> Node:
        # Each ``materialization_<name>`` macro makes ``<name>`` valid (but a seed's and a snapshot's);
        # ephemeral models are CTEs, no macro.
        materializations = {n.removeprefix("materialization_") for n in self.invocation.library.origin
                            if n.startswith("materialization_")} - {"seed", "snapshot"} | {"ephemeral"}
        return self._parsed(self._node("model", path, folder, path.read_text(encoding="utf-8")), materializations)

    def _parsed(self, node: Node, materializations: set[str] | None = None) -> Node:
        """A model or snapshot rendered once, recording its ``ref``, ``source`` and ``config()``
        calls; then its configs, validated, and its relation."""
        check_name(node.resource_type, node.name)
        recorder, recorded = ParseProvider(), {}
        node.relation = Relation(self.invocation.target.database, node.name, "table")  # provisional ``this``
        ctx = self.invocation.context(node, recorder, execute=False, recorded_config=recorded)
        self.invocation.library.render(node.raw_code, ctx, node.label)
        node.refs, node.sources = recorder.refs, recorder.sources
        recorded = {configs.normalize_key(k): v for k, v in recorded.items()}
        node.config = configs.validate(node.resource_type, configs.merge(node.config, recorded), node.label, materializations)
        node.relation = self._relation(node)
        return node

    def _seed(self, path: Path, folder: Path) -> Node:
        node = self._node("seed", path, folder, "")
        check_name("seed", node.name)
        node.config = configs.validate("seed", node.config, node.label)
        node.relation = self._relation(node)
        return node

    def _snapshot(self, path: Path, fqn: list[str], raw: str) -> Node:
        return self._parsed(self._node("snapshot", path, path.parent, raw, fqn))

    def _singular_test(self, path: Path, folder: Path) -> Node:
        node = self._node("test", path, folder, path.read_text(encoding="utf-8"))
        recorder, recorded = ParseProvider(), {}
        ctx = self.invocation.context(node, recorder, execute=False, recorded_config=recorded)
        self.invocation.library.render(node.raw_code, ctx, node.label)
        node.refs, node.sources = recorder.refs, recorder.sources
        node.config = configs.validate("test", configs.merge(node.config, recorded), node.label)
        return node

    # ---- unit tests from .yml ------------------------------------------------------------------
    def _unit_test(self, entry: dict[str, Any], yml: str) -> None:
        """The unit test node of a ``unit_tests:`` entry, as dbt-core 1.11 names it."""
        name, model_name = str(entry["name"]), str(entry["model"])
        where = f"{yml}: unit test {name}"
        if entry.get("versions"):
            raise ProjectError(f"{where}: versions: hudiql does not build model versions")
        model = self.manifest.named(model_name)
        if model is None or model.resource_type != "model":
            raise ProjectError(f"{where}: model '{model_name}' is not an enabled model of this project")
        given = entry.get("given") or []
        if not isinstance(given, list):
            raise ProjectError(f"{where}: given: must be a list of inputs, each with input: and rows:")
        fixtures = [self._fixture(g, f"{where} given", model) for g in given]
        expect = self._fixture(entry["expect"], f"{where} expect")
        overrides = entry.get("overrides") or {}
        if not isinstance(overrides, dict) or set(overrides) - {"macros", "vars", "env_vars"}:
            raise ProjectError(f"{where}: overrides: takes macros:, vars: and env_vars: mappings")
        incremental = (overrides.get("macros") or {}).get("is_incremental")
        if self._calls(model, "is_incremental"):  # as dbt: the test must say which run it is
            if not isinstance(incremental, bool):
                raise ProjectError(f"{where}: Boolean override for 'is_incremental' must be provided for unit test "
                                   f"'{name}' in model '{model_name}' (overrides: {{macros: {{is_incremental: true}}}})")
            if incremental and not any(f.input == "this" for f in fixtures):
                raise ProjectError(f"{where}: Unit test '{name}' for incremental model '{model_name}' must have a "
                                   "'this' input")
        folders = Path(yml).parts[1:-1]  # below the resource folder, as dbt's fqn
        node = Node(
            unique_id=f"unit_test.{self.project.name}.{model_name}.{name}", resource_type="unit_test", name=name,
            original_file_path=yml, fqn=[self.project.name, *folders, model_name, name], raw_code=model.raw_code,
            description=str(entry.get("description") or ""),
            unit_test=UnitTest(model_name, fixtures, expect, {k: dict(v or {}) for k, v in overrides.items()}),
        )
        node.refs = [model_name]
        tree = configs.tree_configs(self.project.trees["unit_test"], node.fqn, "unit_test", "dbt_project.yml unit_tests")
        node.config = configs.validate("unit_test", configs.merge(tree, entry.get("config") or {}), where)
        if not node.config["enabled"]:
            self.manifest.disabled[node.unique_id] = node
        elif node.unique_id in self.manifest.nodes:
            raise ProjectError(f"{where}: model {model_name} has two unit tests of this name")
        else:
            self.manifest.nodes[node.unique_id] = node

    def _fixture(self, spec: Any, where: str, model: Node | None = None) -> Fixture:
        """One ``given`` input of ``model``'s unit test (the ``expect`` output without a model), its
        rows read (csv text or a fixture file parsed) and its ``ref()`` or ``source()`` resolved."""
        expected = model is None
        if not isinstance(spec, dict) or (not expected and "input" not in spec):
            raise ProjectError(f"{where}: each input needs input: (ref('...'), source('...', '...') or this) and rows:")
        unknown = set(spec) - {"input", "rows", "format", "fixture"} - ({"input"} if expected else set())
        if unknown or (expected and "input" in spec):
            raise ProjectError(f"{where}: unknown key '{sorted(unknown or {'input'})[0]}'; keys are "
                               + ("rows, format, fixture" if expected else "input, rows, format, fixture"))
        source = spec.get("input")
        recorder = ParseProvider()
        if model is not None and source != "this":
            if not is_relation_argument(source):
                raise ProjectError(f"{where}: input {source!r} must be ref('...'), source('...', '...') or this")
            self.invocation.library.render("{{ " + source + " }}", self.invocation.context(model, recorder, execute=False), where)
        fmt = str(spec.get("format") or "dict")
        if fmt not in FIXTURE_FORMATS:
            raise ProjectError(f"{where}: format '{fmt}' is not valid; use one of {', '.join(FIXTURE_FORMATS)}")
        rows, fixture = spec.get("rows"), spec.get("fixture")
        if fixture is not None:
            if fmt == "dict":
                raise ProjectError(f"{where}: a fixture file is csv or sql; set format: csv or format: sql")
            rows = self._fixture_file(str(fixture), fmt, where)
        if fmt == "dict":
            if rows is None:
                rows = [] if expected else self._seed_rows(recorder.refs, str(source), where)
            if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
                raise ProjectError(f"{where}: rows must be a list of mappings (column: value) with format dict")
        elif not isinstance(rows, str):
            raise ProjectError(f"{where}: rows must be text (or a fixture file) with format {fmt}")
        elif fmt == "csv":
            rows = _csv_rows(io.StringIO(rows.strip()))
        return Fixture(source, rows, fmt, fixture, recorder.refs[0] if recorder.refs else None,
                       recorder.sources[0] if recorder.sources else None)

    def _seed_rows(self, refs: list[str], source: str, where: str) -> list[dict[str, Any]]:
        """An input given without rows (``refs``: what it names): the rows of its seed, as dbt reads them."""
        seed = self.manifest.named(refs[0]) if refs else None
        if seed is None or seed.resource_type != "seed":
            raise ProjectError(f"{where}: input {source} has no rows:, and is no seed to read them from")
        with open(self.project.root / seed.original_file_path, encoding="utf-8", newline="") as f:
            return _csv_rows(f, seed.config["delimiter"])

    def _calls(self, node: Node, macro: str) -> bool:
        """Whether ``node``'s Jinja calls ``macro`` by name."""
        calls = self.invocation.library.env.parse(node.raw_code).find_all(jnodes.Call)
        return any(isinstance(c.node, jnodes.Name) and c.node.name == macro for c in calls)

    def _fixture_file(self, name: str, fmt: str, where: str) -> str:
        for folder in self.project.fixture_paths():
            for path in sorted(folder.rglob(f"{name}.{fmt}")) if folder.is_dir() else []:
                return path.read_text(encoding="utf-8")
        raise ProjectError(f"{where}: no fixture file {name}.{fmt} in {', '.join(f'{p}/fixtures' for p in self.project.test_paths)}")

    def _relation(self, node: Node) -> Relation:
        identifier = check_name("alias", str(node.config.get("alias") or node.name))
        if node.materialized == "ephemeral":
            return Relation(None, EPHEMERAL_PREFIX + node.name, "cte")
        if node.config.get("target_schema"):  # a snapshot's legacy config: the database as given
            return Relation(check_name("database", str(node.config["target_schema"]).lower()), identifier, "table")
        ctx = self.invocation.context(node, ParseProvider(), execute=False)
        schema = str(self.invocation.library.call("generate_schema_name", ctx, node.label, node.config.get("schema"), ctx["model"])).strip()
        kind = "view" if node.materialized == "view" else "table"
        return Relation(check_name("database", schema.lower()), identifier, kind)

    # ---- generic tests from .yml ----------------------------------------------------------------
    def _generic_tests(self, parent: Node | Source, table_tests: list[Any], yml: str) -> None:
        """Test nodes for the tests a ``.yml`` file lists on ``parent`` and on its columns."""
        specs: list[tuple[str | None, Any]] = [(None, t) for t in table_tests]
        for column_name, column in parent.columns.items():
            specs += [(column_name, t) for t in (column.get("tests") or column.get("data_tests") or [])]
        for column_name, spec in specs:
            self._add_test(parent, column_name, spec, yml)

    def _add_test(self, parent: Node | Source, column_name: str | None, spec: Any, yml: str) -> None:
        if isinstance(spec, str):
            test_name, kwargs = spec, {}
        elif isinstance(spec, dict) and len(spec) == 1 and isinstance(next(iter(spec.values())), (dict, type(None))):
            test_name, kwargs = next(iter(spec.items()))
            kwargs = dict(kwargs or {})
        else:
            raise ProjectError(f"{yml}: test {spec!r} must be a name or a mapping {{test_name: {{arguments}}}}")
        where = f"{yml}: test '{test_name}' on {parent.name}" + (f".{column_name}" if column_name else "")
        if not self.invocation.library.has(f"test_{test_name}"):
            known = [n.removeprefix("test_") for n in self.invocation.library.origin if n.startswith("test_")]
            guess = closest(test_name, known)
            raise ConfigError(f"{where}: unknown test" + (f"; did you mean '{guess}'?" if guess else f"; tests are {', '.join(sorted(known))}"))
        test_config = dict(kwargs.pop("config", None) or {})
        custom_name = kwargs.pop("name", None)
        kwargs.pop("description", None)
        kwargs.update(kwargs.pop("arguments", None) or {})
        for key in _TEST_CONFIG_ARGUMENTS:  # the older way to write a test's config: among its arguments
            if key in kwargs:
                if key in test_config:
                    raise ConfigError(f"{where}: '{key}' is given both as an argument and under config; keep one")
                test_config[key] = kwargs.pop(key)
        if column_name:
            # A column's tags are its tests' tags too, as in dbt.
            column = parent.columns.get(column_name, {})
            tags = [*_tags(test_config.get("tags")), *_tags(column.get("tags")),
                    *_tags((column.get("config") or {}).get("tags"))]
            if tags:
                test_config["tags"] = list(dict.fromkeys(tags))
            kwargs["column_name"] = column_name
        if isinstance(parent, Source):
            prefix, target, model = "source_", f"{parent.source_name}_{parent.name}", f"source('{parent.source_name}', '{parent.name}')"
        else:
            prefix, target, model = "", parent.name, f"ref('{parent.name}')"
        name, compiled = generic_test_names(prefix + test_name, target, kwargs)
        if custom_name:
            name = compiled = str(custom_name)
        unique_id = generic_test_unique_id(self.project.name, name, test_name,
                                           {**kwargs, "model": f"{{{{ get_where_subquery({model}) }}}}"})
        folder = Path(yml).parent.parts[1:] if len(Path(yml).parts) > 1 else ()
        node = Node(
            unique_id=unique_id, resource_type="test", name=name,
            original_file_path=yml, fqn=[self.project.name, *folder, name],
            raw_code=f"{{{{ test_{test_name}(**_dbt_generic_test_kwargs) }}}}",
            test_metadata=TestMetadata(test_name, kwargs, parent.unique_id, compiled),
        )
        recorder = ParseProvider()
        if isinstance(parent, Source):
            recorder.sources.append((parent.source_name, parent.name))
        else:
            recorder.refs.append(parent.name)
        for value in kwargs.values():
            if is_relation_argument(value):
                self.invocation.library.render("{{ " + value + " }}", self.invocation.context(node, recorder, execute=False), node.label)
        node.refs, node.sources = recorder.refs, recorder.sources
        tree = configs.tree_configs(self.project.trees["test"], node.fqn, "test", "dbt_project.yml tests")
        node.config = configs.validate("test", configs.merge(tree, test_config), where)
        if compiled != name and not node.config.get("alias"):
            node.config["alias"] = compiled  # dbt's name of its compiled file
        if node.config["enabled"]:
            if node.unique_id in self.manifest.nodes:
                raise ProjectError(f"{where}: the same test is declared twice")
            self.manifest.nodes[node.unique_id] = node


# dbt's snapshot block: ``{% snapshot name %} <its query, with config()> {% endsnapshot %}``.
_SNAPSHOT_BLOCK = re.compile(r"{%-?\s*snapshot\s+(\w+)\s*-?%}(.*?){%-?\s*endsnapshot\s*-?%}", re.DOTALL)


def _snapshot_blocks(path: Path, root: Path) -> list[tuple[str, str]]:
    """The (name, query) of each snapshot block of a snapshot file; a file without one is refused,
    as dbt refuses it."""
    text = path.read_text(encoding="utf-8")
    blocks = [(m.group(1), m.group(2)) for m in _SNAPSHOT_BLOCK.finditer(text)]
    if not blocks and text.strip():
        raise ProjectError(f"{path.relative_to(root)}: a snapshot file holds {{% snapshot name %}} ... {{% endsnapshot %}} "
                           "blocks (or define the snapshot in a .yml file with a relation:)")
    return blocks


def _csv_rows(lines: Iterable[str], delimiter: str = ",") -> list[dict[str, Any]]:
    """CSV rows as mappings by their header; an empty value is null, as dbt reads fixtures."""
    return [{k: (None if v == "" else v) for k, v in row.items()} for row in csv.DictReader(lines, delimiter=delimiter)]


def is_relation_argument(value: Any) -> bool:
    """A test argument such as ``to: ref('customers')``: Jinja to render into a relation."""
    return isinstance(value, str) and re.match(r"^\s*(ref|source)\s*\(", value) is not None


def _columns(entry: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {str(c["name"]): dict(c) for c in entry.get("columns") or [] if isinstance(c, dict) and "name" in c}


#: Test arguments dbt takes as the test's config (``generic_test_builders.CONFIG_ARGS``).
_TEST_CONFIG_ARGUMENTS = ("severity", "tags", "enabled", "where", "limit", "warn_if", "error_if", "fail_calc",
                          "store_failures", "store_failures_as", "meta", "database", "schema", "alias")


def _tags(value: Any) -> list[str]:
    return [] if value is None else [str(value)] if isinstance(value, str) else [str(v) for v in value]


def generic_test_names(test_name: str, target_name: str, args: dict[str, Any]) -> tuple[str, str]:
    """dbt's names of a generic test (``generic_test_builders.synthesize_generic_test_names``):
    (its name, which its unique id and fqn carry; the name of its compiled file, shortened with a
    hash of the name when that reaches 64 characters). Every argument (``column_name`` too) in
    name order, its values flattened and cleaned.

    >>> generic_test_names("accepted_values", "orders", {"column_name": "status", "values": ["placed", "shipped"]})
    ('accepted_values_orders_status__placed__shipped', 'accepted_values_orders_status__placed__shipped')
    >>> generic_test_names("unique", "orders", {})
    ('unique_orders_', 'unique_orders_')
    >>> generic_test_names("accepted_values", "orders", {"column_name": "status", "values": ["a" * 20, "b" * 20]})[1]
    'accepted_values_orders_68537a34214affa4fa16a909611ec82b'
    """
    flat: list[str] = []
    for key in sorted(args):
        value = args[key]
        parts = list(value.values()) if isinstance(value, dict) else list(value) if isinstance(value, (list, tuple)) else [value]
        flat += [re.sub(r"[^0-9a-zA-Z_]+", "_", str(part)) for part in parts]
    identifier = f"{test_name}_{target_name}"
    name = f"{identifier}_{'__'.join(flat)}"
    compiled = f"{identifier[:30]}_{hashlib.md5(name.encode()).hexdigest()}" if len(name) >= 64 else name
    return name, compiled


def generic_test_unique_id(project: str, name: str, test_name: str, args: dict[str, Any]) -> str:
    """dbt's unique id of a generic test: ``test.<project>.<name>.<hash>``, the hash of its name and
    its metadata as dbt hashes it (``schema_generic_tests.create_test_node``); ``args`` hold
    ``model`` as dbt writes it (``{{ get_where_subquery(ref('orders')) }}``).

    >>> generic_test_unique_id("p", "not_null_orders_id", "not_null",
    ...                        {"column_name": "id", "model": "{{ get_where_subquery(ref('orders')) }}"})
    'test.p.not_null_orders_id.84ef11d8fe'
    """
    def hashable(value: Any) -> Any:
        if type(value) is dict:
            return {k: hashable(value[k]) for k in sorted(value)}
        if type(value) is list:
            return [hashable(v) for v in value]
        return str(value)

    metadata = {"namespace": None, "name": test_name, "kwargs": args}
    digest = hashlib.md5((name + repr(hashable(metadata))).encode()).hexdigest()[-10:]
    return f"test.{project}.{name}.{digest}"


def parse_project(invocation: Invocation) -> Manifest:
    """The manifest of ``invocation.project``; every Jinja or config problem raises a ``HudiqlError``."""
    return ProjectParser(invocation).parse()
