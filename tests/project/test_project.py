"""The project layer without Spark: project and profile files, configs, Jinja context, DAG,
selection, compilation and listing. Everything here runs in milliseconds."""

from __future__ import annotations

import datetime
import json

import pytest
from hudiql.errors import HudiqlError
from hudiql.project.adapter.seed import infer_type
from hudiql.project.compilation import Compiler, inject_ctes
from hudiql.project.config.profile import load_target
from hudiql.project.config.project import load_project
from hudiql.project.errors import CompilationError, ConfigError, ProjectError
from hudiql.project.graph.selector import select
from test_project_helpers import loaded, run, write_project


@pytest.fixture(autouse=True)
def no_user_profiles(tmp_path, monkeypatch):
    """A profiles.yml of the machine running the tests must not change what they see."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("HUDIQL_PROFILES_DIR", raising=False)


def shop(tmp_path, extra: dict[str, str] | None = None, project_yml: str | None = None):
    """seeds: customers, orders; models: stg_orders (view), int_orders (ephemeral), fct_orders
    (incremental), revenue (table, tag daily); tests on fct_orders."""
    files = {
        "seeds/customers.csv": "id,name\n1,a\n",
        "seeds/orders.csv": "order_id,customer_id,amount\n1,1,2.5\n",
        "models/staging/stg_orders.sql": "SELECT * FROM {{ ref('orders') }}",
        "models/staging/int_orders.sql": "{{ config(materialized='ephemeral') }} SELECT * FROM {{ ref('stg_orders') }}",
        "models/marts/fct_orders.sql": """
            {{ config(materialized='incremental', unique_key=['order_id', 'customer_id']) }}
            SELECT * FROM {{ ref('int_orders') }}
        """,
        "models/marts/revenue.sql": "{{ config(materialized='table', tags=['daily']) }} SELECT sum(amount) AS s FROM {{ ref('fct_orders') }}",
        "models/marts/schema.yml": """
            version: 2
            models:
              - name: fct_orders
                columns:
                  - name: order_id
                    tests: [unique, not_null]
                  - name: customer_id
                    tests:
                      - relationships: {to: "ref('customers')", field: id}
        """,
        **(extra or {}),
    }
    args = (project_yml,) if project_yml else ()
    return write_project(tmp_path / "shop", files, *args)


def names(manifest, ids) -> set[str]:
    return {(manifest.nodes.get(u) or manifest.sources[u]).name for u in ids}


# ---- project and profile files ------------------------------------------------------------------------

def test_project_defaults_and_vars(tmp_path):
    root = write_project(tmp_path / "p", {}, "name: p\nvars: {a: 1, b: 2}\n")
    project = load_project(root, cli_vars={"b": 3})
    assert (project.name, project.profile, project.model_paths, project.target_path) == ("p", "p", ["models"], "target")
    assert project.vars == {"a": 1, "b": 3}


def test_project_unknown_key_names_the_closest(tmp_path):
    root = write_project(tmp_path / "p", {}, "name: p\nmodel-path: [m]\n")
    with pytest.raises(ProjectError, match="unknown key 'model-path'; did you mean 'model-paths'"):
        load_project(root, {})


DBT_PROJECT_YML = """
name: p
require-dbt-version: [">=1.3.0", "<2.0.0"]
source-paths: [m]
docs-paths: [docs]
query-comment: hudiql
dbt-cloud: {project-id: 1}
semantic-models: {+enabled: true}
saved-queries: {}
dispatch: [{macro_namespace: dbt_utils, search_order: [p, dbt_utils]}]
"""


def test_a_project_dbt_loads_loads_and_names_what_hudiql_does_not_run(tmp_path):
    """Every key dbt-core 1.11 accepts is accepted; what dbt runs and hudiql does not is named in
    one warning of the run (``compile``), not an error."""
    root = write_project(tmp_path / "p", {
        "m/a.sql": "SELECT 1 AS id",
        "m/a.yml": """
            version: 2
            models:
              - name: a
                access: public
                columns:
                  - name: id
                    constraints: [{type: not_null}]
            semantic_models:
              - name: a_sm
                model: ref('a')
            metrics: []
            unit_tests:
              - name: t
                model: a
                given: []
                expect: {rows: [{id: 1}]}
            sources:
              - name: raw
                schema: "{{ target.schema }}_raw"
                loader: fivetran
                loaded_at_field: _loaded_at
                freshness: {warn_after: {count: 12, period: hour}}
                tables:
                  - name: orders
                    identifier: "{{ var('orders_table', 'orders_v2') }}"
        """,
    }, DBT_PROJECT_YML)
    project = load_project(root, {})
    assert project.model_paths == ["m"]
    assert project.not_run == {"dbt Cloud settings", "query comments", "saved queries", "semantic models"}
    assert project.dispatch == {"dbt_utils": ["p", "dbt_utils"]}
    manifest = loaded(root).manifest
    source = manifest.sources["source.p.raw.orders"]
    assert (source.relation.schema, source.relation.identifier) == ("default_raw", "orders_v2")
    assert (source.loaded_at_field, source.freshness) == (
        "_loaded_at", {"warn_after": {"count": 12, "period": "hour"}, "error_after": None, "filter": None})
    code, out = run(root, "compile")
    assert code == 0, out
    [warning] = [line for line in out.splitlines() if "[WARNING]" in line]
    assert warning.split("  ", 1)[1] == ("[WARNING]: hudiql does not run this project's constraints, dbt Cloud settings, "
                       "metrics, model access, query comments, saved queries, semantic models; dbt-core would")


def test_generic_test_blocks_in_macro_and_generic_test_folders(tmp_path):
    """``{% test name(...) %}`` blocks define the macro ``test_<name>``, as in dbt; the files of
    ``tests/generic/`` define generic tests and are no singular tests."""
    root = write_project(tmp_path / "p", {
        "models/a.sql": "SELECT 1 AS id",
        "models/a.yml": "models: [{name: a, columns: [{name: id, tests: [even, small]}]}]",
        "tests/generic/even.sql": """
            {%- test even(model, column_name) -%}
            SELECT * FROM {{ model }} WHERE {{ column_name }} % 2 = 1
            {%- endtest %}
        """,
        "macros/small.sql": "{% test small(model, column_name, limit=10) %}SELECT 1{% endtest %}",
        "tests/one_row.sql": "SELECT 1 WHERE false",
    }, "name: p\n")
    manifest = loaded(root).manifest
    assert sorted(n.name for n in manifest.nodes.values() if n.resource_type == "test") == [
        "even_a_id", "one_row", "small_a_id"]
    assert {"macro.p.test_even", "macro.p.test_small"} <= set(manifest.macros)


def test_generic_test_names_and_unique_ids_are_dbts(tmp_path):
    """The same project parsed by hudiql and by dbt-core 1.11 (``dbt parse``, in a process of its
    own, with hudiql's dbt-core adapter): every generic test has dbt's name, unique id, fqn and
    compiled file name, so ``--select`` by a dbt test name selects it."""
    import subprocess
    import sys

    from hudiql.project.artifacts.writer import compiled_path

    root = write_project(tmp_path / "p", {
        "models/orders.sql": "SELECT 1 AS id, 'placed' AS status, 1 AS customer_id",
        "models/staging/customers.sql": "SELECT 1 AS id",
        "models/staging/schema.yml": """
            version: 2
            sources:
              - name: raw
                tables:
                  - name: orders
                    columns:
                      - name: id
                        data_tests: [not_null]
              - name: retired
                config: {enabled: false}
                tables:
                  - name: old_orders
                    columns:
                      - name: id
                        data_tests: [not_null]
            models:
              - name: customers
                columns:
                  - name: id
                    tags: [keys]
                    tests: [unique]
        """,
        "models/schema.yml": """
            version: 2
            models:
              - name: orders
                columns:
                  - name: id
                    tests: [not_null, unique]
                  - name: status
                    tests:
                      - accepted_values: {values: [placed, shipped, completed, return_pending, returned]}
                      - accepted_values: {arguments: {values: [placed]}, config: {severity: warn}}
                      - not_null: {severity: warn, where: "id > 0", tags: [nightly]}
                  - name: customer_id
                    tests:
                      - relationships: {to: ref('customers'), field: id}
                      - not_null: {name: my_custom_nn}
        """,
        "profiles/profiles.yml": f"p: {{target: dev, outputs: {{dev: {{type: hudiql, warehouse: '{tmp_path}/wh', threads: 1}}}}}}",
    }, "name: p\nprofile: p\n")
    ours = {n.unique_id: (n.fqn, n.config.get("alias"), n.config["severity"].lower(), sorted(n.config.get("tags") or []),
                          compiled_path(n).rsplit("/", 1)[1])
            for n in loaded(root).manifest.nodes.values() if n.resource_type == "test"}
    parse = ("from dbt.cli.main import dbtRunner; import sys; "
             "sys.exit(0 if dbtRunner().invoke(['parse', '--profiles-dir', 'profiles', '--no-partial-parse']).success else 1)")
    done = subprocess.run([sys.executable, "-c", parse], cwd=root, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:]
    nodes = json.loads((root / "target" / "manifest.json").read_text())["nodes"]
    # (dbt keeps a disabled source's tests among its nodes, disabled; a column's tags are its tests' tags)
    dbts = {u: (n["fqn"], n["config"].get("alias"), n["config"]["severity"].lower(), sorted(n["tags"]), n["path"])
            for u, n in nodes.items() if n["resource_type"] == "test" and n["config"]["enabled"]}
    assert len(ours) == 9 and ours == dbts


def test_a_macro_the_dbt_namespace_lacks_is_not_defined():
    """As in dbt, a package can test for a macro: ``dbt.x is defined``."""
    from hudiql.project.context.macros import MacroLibrary

    library = MacroLibrary.load([], "p")
    context: dict = {}
    library.bind(context)
    assert library.render("{{ dbt.nope is defined }} {{ dbt.date_trunc is defined }}", context, "model a") == "False True"


@pytest.mark.parametrize(
    ("project_yml", "model", "message"),
    [
        ("name: p\n", "{{ adapter.dispatch('nothing', 'dbt')() }}",
         "In dispatch: No macro named 'nothing' found within namespace: 'dbt'; searched for: 'p.hudiql__nothing', "
         "'p.spark__nothing', 'p.default__nothing', 'dbt.hudiql__nothing', 'dbt.spark__nothing', 'dbt.default__nothing'"),
        ("name: p\ndispatch: [{macro_namespace: dbt_utils, search_order: [p]}]\n",
         "{{ adapter.dispatch('nothing', 'dbt_utils')() }}",
         "No macro named 'nothing' found within namespace: 'dbt_utils'; searched for: 'p.hudiql__nothing', "
         "'p.spark__nothing', 'p.default__nothing'"),
        ("name: p\n", "{{ adapter.get_relation('d', 's', 't') }}",
         "adapter.get_relation is not available while the project is parsed; guard it with {% if execute %}"),
        ("name: p\n", "{{ dbt.no_such_macro() }}", "dbt has no macro 'no_such_macro'"),
    ],
    ids=["no-macro", "search-order", "adapter-while-parsing", "not-in-dbt"],
)
def test_dispatch_and_the_dbt_namespace_refuse_in_one_line(tmp_path, project_yml, model, message):
    root = write_project(tmp_path / "p", {"models/a.sql": model}, project_yml)
    with pytest.raises(HudiqlError) as caught:
        loaded(root)
    assert message in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("project_yml", "files", "message"),
    [
        ("name: p\nrequire-dbt-version: '>=2.0.0'\n", {},
         "dbt_project.yml: project 'p' requires dbt ['>=2.0.0']; hudiql follows dbt 1.11.6"),
        ("name: p\non-run-start: ['GRANT ...']\n", {},
         "dbt_project.yml: on-run-start: hudiql does not run on-run-start hooks; run their SQL before hudiql, or move "
         "it into a model's pre_hook"),
        ("name: p\ntests: {+severity: warn}\ndata_tests: {+severity: warn}\n", {},
         "dbt_project.yml: 'tests' and 'data_tests' name the same thing; keep 'data_tests'"),
        ("name: p\n", {"models/a.sql": "SELECT 1", "models/a.yml": "models: [{name: a, versions: [{v: 1}]}]"},
         "models/a.yml model a: versions: hudiql does not build model versions; describe one model per file"),
    ],
    ids=["require-dbt-version", "on-run-start", "tests-twice", "model-versions"],
)
def test_what_dbt_would_run_differently_is_refused_in_one_line(tmp_path, project_yml, files, message):
    root = write_project(tmp_path / "p", files, project_yml)
    with pytest.raises(ProjectError) as caught:
        loaded(root)
    assert str(caught.value).endswith(message) and "\n" not in str(caught.value)


def test_missing_project_file(tmp_path):
    with pytest.raises(ProjectError, match="no dbt_project.yml"):
        load_project(tmp_path, {})


PROFILES = """
p:
  target: dev
  outputs:
    dev:
      warehouse: "{{ env_var('TEST_WH', 'wh_default') }}"
      database: Analytics
      threads: "{{ env_var('TEST_THREADS', 2) }}"
      spark_conf: {spark.sql.shuffle.partitions: 4, hoodie.write.x: true}
    prod:
      warehouse: /data/wh
"""


def test_profiles_search_order_and_env_var(tmp_path, monkeypatch):
    root = write_project(tmp_path / "p", {}, "name: p\n")
    project = load_project(root, {})
    default = load_target(project, None, None)
    assert (default.warehouse, default.database, default.threads, default.profiles_file) == (str(root / "warehouse"), "default", 1, None)

    home = tmp_path / "home" / ".hudiql"
    home.mkdir(parents=True)
    (home / "profiles.yml").write_text(PROFILES)
    assert load_target(project, None, None).profiles_file == home / "profiles.yml"
    (root / "profiles.yml").write_text(PROFILES)
    assert load_target(project, None, None).profiles_file == root / "profiles.yml"
    env_dir = tmp_path / "env"
    env_dir.mkdir()
    (env_dir / "profiles.yml").write_text(PROFILES)
    monkeypatch.setenv("HUDIQL_PROFILES_DIR", str(env_dir))
    assert load_target(project, None, None).profiles_file == env_dir / "profiles.yml"
    assert load_target(project, str(home), None).profiles_file == home / "profiles.yml"

    monkeypatch.setenv("TEST_THREADS", "3")
    target = load_target(project, None, None)
    assert target.warehouse == str(root / "wh_default")  # relative to the project folder
    assert (target.database, target.threads) == ("analytics", 3)
    assert target.spark_settings() == {"spark.master": "local[*]", "spark.sql.shuffle.partitions": "4", "hoodie.write.x": "true"}
    monkeypatch.setenv("TEST_WH", "/elsewhere")
    assert load_target(project, None, None).warehouse == "/elsewhere"
    assert load_target(project, None, "prod", threads=5).warehouse == "/data/wh"
    assert load_target(project, None, "prod", threads=5).threads == 5


@pytest.mark.parametrize("profiles, message", [
    ("p:\n  outputs:\n    dev: {warehous: x}\n", "unknown key 'warehous' in target 'dev'; did you mean 'warehouse'"),
    ("p:\n  target: qa\n  outputs:\n    dev: {}\n", "has no target 'qa'"),
    ("other:\n  outputs: {}\n", "has no profile 'p'"),
    ("p:\n  outputs:\n    dev: {warehouse: \"{{ env_var('NOT_SET_ANYWHERE') }}\"}\n", "NOT_SET_ANYWHERE"),
    ("p:\n  outputs:\n    dev: {type: spark}\n", "type: hudiql"),
])
def test_profile_errors(tmp_path, profiles, message):
    root = write_project(tmp_path / "p", {"profiles.yml": profiles}, "name: p\n")
    with pytest.raises(ProjectError, match=message):
        load_target(load_project(root, {}), None, None)


# ---- configs -------------------------------------------------------------------------------------------

def test_configs_merge_tree_yml_and_file(tmp_path):
    root = shop(tmp_path, {"models/marts/schema2.yml": "models:\n  - name: revenue\n    config: {tags: [yml], alias: rev}\n"}, """
        name: shop
        models:
          shop:
            +materialized: view
            +tags: [all]
            marts:
              +materialized: table
              +schema: marts
              revenue:
                +table_type: mor
    """)
    manifest = loaded(root).manifest
    revenue = manifest.nodes["model.shop.revenue"]
    assert revenue.config["materialized"] == "table"
    assert revenue.config["table_type"] == "mor"
    assert revenue.config["tags"] == ["all", "yml", "daily"]
    assert str(revenue.relation) == "default_marts.rev"
    assert manifest.nodes["model.shop.stg_orders"].config["materialized"] == "view"
    assert manifest.nodes["model.shop.fct_orders"].config["unique_key"] == ["order_id", "customer_id"]
    assert manifest.nodes["model.shop.fct_orders"].config["incremental_strategy"] == "merge"


@pytest.mark.parametrize("config, message", [
    ("materialised='table'", "unknown config 'materialised'; did you mean 'materialized'"),
    ("uniqe_key='id'", "unknown config 'uniqe_key'; did you mean 'unique_key'"),
    ("materialized='tabel'", "materialized 'tabel' is not valid; did you mean 'table'"),
    ("materialized='incremental', incremental_strategy='mrege', unique_key='id'", "did you mean 'merge'"),
    ("materialized='incremental', incremental_strategy='merge'", "'merge' needs unique_key"),
    ("materialized='incremental', incremental_strategy='insert_overwrite'", "set partition_by"),
    ("on_schema_change='sync_columns'", "on_schema_change 'sync_columns' is not valid"),
    ("table_type='merge'", "table_type 'merge' is not valid"),
    ("unique_key=5", "must be a string or a list of strings"),
    ("options={'precombine.field': 'ts'}", "not a Hudi option"),
    ("options={'hoodie.datasource.write.recordkey.field': 'id'}", "use that instead"),
    ("precombine_field=['a', 'b']", "must be one column name"),
])
def test_model_config_errors(tmp_path, config, message):
    root = write_project(tmp_path / "p", {"models/m.sql": f"{{{{ config({config}) }}}} SELECT 1 AS id"})
    with pytest.raises(ConfigError, match=message) as error:
        loaded(root)
    assert "model m (models/m.sql)" in str(error.value)


@pytest.mark.parametrize("files, project_yml, error, message", [
    ({"models/m.sql": "SELECT 1"}, "name: p\nmodels:\n  p:\n    +materialzed: view\n", ConfigError, "did you mean 'materialized'"),
    ({"seeds/s.csv": "a\n1\n"}, "name: p\nseeds:\n  p:\n    +column_type: {a: int}\n", ConfigError, "did you mean 'column_types'"),
    ({"models/m.sql": "SELECT 1", "models/m.yml": "models:\n  - name: m\n    colums: []\n"}, None, ProjectError, "did you mean 'columns'"),
    ({"models/m.sql": "SELECT 1 AS a", "models/m.yml": "models:\n  - name: m\n    columns:\n      - name: a\n        tests: [uniqe]\n"}, None, ConfigError, "unknown test; did you mean 'unique'"),
    ({"models/a/m.sql": "SELECT 1", "models/b/m.sql": "SELECT 2"}, None, ProjectError, "two nodes are named 'm'"),
    ({"models/m.sql": "SELECT {{ var('missing') }}"}, None, CompilationError, "required var 'missing'"),
    ({"models/m.sql": "SELECT {{ undefined_thing }}"}, None, CompilationError, "'undefined_thing' is undefined"),
    ({"models/m.sql": "SELECT {% if %}"}, None, CompilationError, "line 1"),
    ({"models/bad-name.sql": "SELECT 1"}, None, HudiqlError, "not valid"),
])
def test_project_errors(tmp_path, files, project_yml, error, message):
    root = write_project(tmp_path / "p", files, project_yml or "name: p\n")
    with pytest.raises(error, match=message):
        loaded(root)


def test_disabled_model_is_left_out_and_refs_to_it_fail(tmp_path):
    root = write_project(tmp_path / "p", {"models/a.sql": "{{ config(enabled=false) }} SELECT 1"}, "name: p\n")
    assert "model.p.a" not in loaded(root).manifest.nodes
    (root / "models/b.sql").write_text("SELECT * FROM {{ ref('a') }}")
    with pytest.raises(CompilationError, match="ref\\('a'\\) is disabled"):
        loaded(root)


# ---- the DAG -------------------------------------------------------------------------------------------

def test_unknown_ref_names_model_and_closest(tmp_path):
    root = shop(tmp_path, {"models/x.sql": "SELECT * FROM {{ ref('fct_order') }}"})
    with pytest.raises(CompilationError, match=r"model x \(models/x.sql\): ref\('fct_order'\) is not a model, seed or snapshot .*did you mean 'fct_orders'"):
        loaded(root)


def test_cycle_names_the_models(tmp_path):
    root = write_project(tmp_path / "p", {
        "models/a.sql": "SELECT * FROM {{ ref('c') }}",
        "models/b.sql": "SELECT * FROM {{ ref('a') }}",
        "models/c.sql": "SELECT * FROM {{ ref('b') }}",
    }, "name: p\n")
    with pytest.raises(CompilationError, match="found a cycle: a -> c -> b -> a"):
        loaded(root)


def test_undeclared_source(tmp_path):
    root = write_project(tmp_path / "p", {"models/a.sql": "SELECT * FROM {{ source('raw', 'x') }}"}, "name: p\n")
    with pytest.raises(CompilationError, match=r"source\('raw', 'x'\) is not declared"):
        loaded(root)


def test_graph_order_puts_parents_first(tmp_path):
    state = loaded(shop(tmp_path))
    order = [u.split(".")[-1] for u in state.graph.order(state.manifest.nodes) if not u.startswith("test")]
    assert order.index("orders") < order.index("stg_orders") < order.index("int_orders") < order.index("fct_orders") < order.index("revenue")


# ---- selection -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("include, exclude, expected", [
    (["fct_orders"], [], {"fct_orders", "unique_fct_orders_order_id", "not_null_fct_orders_order_id",
                          "relationships_fct_orders_customer_id__id__ref_customers_"}),
    (["+fct_orders"], ["resource_type:test"], {"fct_orders", "int_orders", "stg_orders", "orders"}),
    (["1+fct_orders"], ["resource_type:test"], {"fct_orders", "int_orders"}),
    (["stg_orders+"], ["resource_type:test"], {"stg_orders", "int_orders", "fct_orders", "revenue"}),
    (["stg_orders+1"], [], {"stg_orders", "int_orders"}),
    # @: descendants and all their ancestors; the relationships test of fct_orders brings customers
    (["@int_orders"], ["resource_type:test"], {"stg_orders", "int_orders", "fct_orders", "revenue", "orders", "customers"}),
    (["tag:daily"], [], {"revenue"}),
    (["path:models/staging"], [], {"stg_orders", "int_orders"}),
    (["models/marts/revenue.sql"], [], {"revenue"}),
    (["staging"], [], {"stg_orders", "int_orders"}),
    (["shop.marts.revenue"], [], {"revenue"}),
    (["config.materialized:ephemeral"], [], {"int_orders"}),
    (["config.unique_key:customer_id"], ["resource_type:test"], {"fct_orders"}),
    (["stg_*"], [], {"stg_orders"}),
    (["stg_orders revenue"], [], {"stg_orders", "revenue"}),  # space: union
    (["stg_orders+,tag:daily"], [], {"revenue"}),  # comma: intersection
    (["resource_type:seed"], ["resource_type:test"], {"orders", "customers"}),
    (["+revenue"], ["stg_orders+1", "resource_type:test"], {"revenue", "fct_orders", "orders"}),
])
def test_selection(tmp_path, include, exclude, expected):
    state = loaded(shop(tmp_path))
    chosen = select(state.manifest, state.graph, include, exclude)
    assert names(state.manifest, chosen.nodes) == expected


def test_selection_reports_unmatched_and_unknown_methods(tmp_path):
    state = loaded(shop(tmp_path))
    assert select(state.manifest, state.graph, ["nope", "revenue"], []).unmatched == ["nope"]
    with pytest.raises(ProjectError, match="unknown selector method 'tags:'; did you mean 'tag:'"):
        select(state.manifest, state.graph, ["tags:daily"], [])


def test_sources_are_selectable(tmp_path):
    root = write_project(tmp_path / "p", {
        "models/sources.yml": "sources:\n  - name: raw\n    schema: landing\n    tables:\n      - name: events\n        identifier: events_v2\n",
        "models/a.sql": "SELECT * FROM {{ source('raw', 'events') }}",
        "models/b.sql": "SELECT 1 AS x",
    }, "name: p\n")
    state = loaded(root)
    assert names(state.manifest, select(state.manifest, state.graph, ["source:raw+"], []).nodes) == {"events", "a"}
    assert state.manifest.sources["source.p.raw.events"].relation.__str__() == "landing.events_v2"


# ---- Jinja context and compilation --------------------------------------------------------------------

def compile_model(root, name: str, **flags) -> str:
    state = loaded(root, **flags)
    return Compiler(state.invocation, state.manifest, state.adapter).compile(state.manifest.nodes[f"model.{state.invocation.project.name}.{name}"])


def test_context_functions(tmp_path, monkeypatch):
    monkeypatch.setenv("SHOP_COUNTRY", "fr")
    root = shop(tmp_path, {
        "models/ctx.sql": """
            {{ config(materialized='table', alias='ctx_table') }}
            SELECT '{{ var("region") }}' AS region, '{{ var("absent", "dflt") }}' AS dflt,
                   '{{ env_var("SHOP_COUNTRY") }}' AS country, '{{ env_var("SHOP_UNSET", "none") }}' AS unset,
                   '{{ this }}' AS this_name, '{{ this.identifier }}' AS identifier, '{{ target.schema }}' AS schema,
                   '{{ target.name }}' AS target_name, '{{ run_started_at.strftime("%Y") }}' AS year,
                   '{{ config.get("materialized") }}' AS mat, {{ is_incremental() }} AS inc,
                   '{{ double("x") }}' AS macro_value, '{{ model.name }}' AS model_name
        """,
        "macros/double.sql": "{% macro double(v) %}{{ return(v ~ v) }}{% endmacro %}",
    })
    sql = compile_model(root, "ctx", vars={"region": "us"})
    year = str(datetime.datetime.now(datetime.timezone.utc).year)
    for expected in ["'us' AS region", "'dflt' AS dflt", "'fr' AS country", "'none' AS unset",
                     "'default.ctx_table' AS this_name", "'ctx_table' AS identifier", "'default' AS schema",
                     "'dev' AS target_name", f"'{year}' AS year", "'table' AS mat", "False AS inc",
                     "'xx' AS macro_value", "'ctx' AS model_name"]:
        assert expected in sql


def test_log_prints_with_info(tmp_path):
    root = shop(tmp_path, {"models/logged.sql": "{{ log('hello from the model', info=True) }}{{ log('quiet') }} SELECT 1 AS x"})
    code, out = run(root, "compile", select=["logged"])
    assert code == 0
    assert "hello from the model" in out and "quiet" not in out


def test_refs_render_tables_views_and_ephemeral_ctes(tmp_path):
    sql = compile_model(shop(tmp_path), "fct_orders")
    assert sql.startswith("WITH __dbt__cte__int_orders AS (")
    assert "SELECT * FROM default.stg_orders" in sql  # a view, recorded in the warehouse like a table
    assert "SELECT * FROM __dbt__cte__int_orders" in sql
    assert "FROM default.orders" not in sql


def test_inject_ctes_keeps_an_existing_with():
    sql = "WITH a AS (SELECT 1)\nSELECT * FROM a JOIN __dbt__cte__e"
    assert inject_ctes(sql, [("__dbt__cte__e", "SELECT 2")]) == (
        "WITH __dbt__cte__e AS (\nSELECT 2\n),\na AS (SELECT 1)\nSELECT * FROM a JOIN __dbt__cte__e"
    )


def test_project_macro_overrides_a_builtin(tmp_path):
    root = shop(tmp_path, {
        "macros/schema.sql": "{% macro generate_schema_name(custom_schema_name, node) %}{{ custom_schema_name or 'mine' }}{% endmacro %}",
        "models/placed.sql": "{{ config(materialized='table', schema='custom') }} SELECT 1 AS x",
    })
    state = loaded(root)
    manifest = state.manifest
    assert str(manifest.nodes["model.shop.placed"].relation) == "custom.placed"
    assert str(manifest.nodes["model.shop.revenue"].relation) == "mine.revenue"
    assert state.invocation.library.origin["generate_schema_name"].package == "shop"


def test_project_macro_override_reaches_builtin_callers(tmp_path):
    """create_table_as (built-in) calls hudi_table_clauses of the same file; the project's wins."""
    root = shop(tmp_path, {"macros/clauses.sql": "{% macro hudi_table_clauses() %} TBLPROPERTIES (type = 'mor') -- mine{% endmacro %}"})
    state = loaded(root)
    node = state.manifest.nodes["model.shop.revenue"]
    context = Compiler(state.invocation, state.manifest, state.adapter).context(node)
    assert "-- mine" in context["create_table_as"](node.relation, "SELECT 1")


def test_generic_test_compiles_from_its_macro(tmp_path):
    root = shop(tmp_path)
    state = loaded(root)
    test = next(n for n in state.manifest.nodes.values() if n.name.startswith("relationships_"))
    sql = Compiler(state.invocation, state.manifest, state.adapter).compile(test)
    assert "FROM default.fct_orders" in sql and "FROM default.customers" in sql
    assert set(test.depends_on) == {"model.shop.fct_orders", "seed.shop.customers"}
    assert (root / "target/compiled/shop/models/marts/schema.yml" / f"{test.name}.sql").read_text() == sql


def test_a_model_must_be_one_select(tmp_path):
    root = write_project(tmp_path / "p", {"models/two.sql": "SELECT 1; SELECT 2", "models/ins.sql": "INSERT INTO t VALUES (1)"}, "name: p\n")
    with pytest.raises(CompilationError, match="one SELECT statement; it compiles to 2 statements"):
        compile_model(root, "two")
    with pytest.raises(CompilationError, match="one SELECT statement; it compiles to a Insert"):
        compile_model(root, "ins")


# ---- commands without Spark ------------------------------------------------------------------------------

def test_ls_outputs(tmp_path):
    root = shop(tmp_path)
    code, out = run(root, "ls", select=["+revenue"], resource_types=["model"])
    assert code == 0
    assert out.splitlines() == ["shop.marts.fct_orders", "shop.marts.revenue", "shop.staging.int_orders", "shop.staging.stg_orders"]
    _, out = run(root, "ls", select=["revenue"], output="path")
    assert out.strip() == "models/marts/revenue.sql"
    _, out = run(root, "ls", select=["revenue"], output="json")
    assert json.loads(out)["config"]["materialized"] == "table"


def test_compile_prints_one_model_and_writes_artifacts(tmp_path):
    root = shop(tmp_path)
    code, out = run(root, "compile", select=["revenue"])
    assert code == 0
    assert "Compiled node 'revenue' is:" in out and "SELECT sum(amount) AS s FROM default.fct_orders" in out
    manifest = json.loads((root / "target/manifest.json").read_text())
    node = manifest["nodes"]["model.shop.revenue"]
    assert node["depends_on"]["nodes"] == ["model.shop.fct_orders"] and node["relation_name"] == "default.revenue"
    children = manifest["child_map"]["model.shop.fct_orders"]
    assert "model.shop.revenue" in children and sum(c.startswith("test.shop.") for c in children) == 3
    assert "macro.hudiql.materialization_incremental" in manifest["macros"]


def test_parse_errors_exit_2_with_one_message(tmp_path):
    root = write_project(tmp_path / "p", {"models/m.sql": "{{ config(materialised='view') }} SELECT 1"}, "name: p\n")
    code, out = run(root, "run")
    assert code == 2
    assert "Encountered an error:" in out and "did you mean 'materialized'" in out


def test_seed_type_inference():
    assert infer_type(["1", "-2", None]) == "bigint"
    assert infer_type(["1.5", "2"]) == "double"
    assert infer_type(["true", "FALSE"]) == "boolean"
    assert infer_type(["2024-05-01"]) == "date"
    assert infer_type(["2024-05-01 10:00:00", "2024-05-01T10:00:00.5"]) == "timestamp"
    assert infer_type(["1", "x"]) == "string"
    assert infer_type([None]) == "string"
