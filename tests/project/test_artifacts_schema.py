"""Every JSON artifact a project command writes to ``target/`` validates against dbt's published JSON
schema of the version its ``metadata.dbt_schema_version`` claims (the schema files are carried in
``tests/data/dbt_schemas``, see its README), and says true things where the schema asks for them."""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from pathlib import Path

import hudiql
import jsonschema
import pytest
from test_project_helpers import run, write_project

SCHEMAS = Path(__file__).resolve().parents[1] / "data" / "dbt_schemas"
SCHEMA_URL = re.compile(r"^https://schemas\.getdbt\.com/dbt/(?P<path>[a-z-]+/v\d+)\.json$")

PROJECT = {
    "seeds/people.csv": "id,name\n1,ann\n2,bo\n",
    "seeds/people.yml": "seeds:\n  - name: people\n    description: who\n    config: {column_types: {id: int}}\n",
    "models/stg_people.sql": "SELECT id, upper(name) AS name FROM {{ ref('people') }}",
    "models/eph.sql": "{{ config(materialized='ephemeral') }} SELECT id, {{ shout('name') }} AS name FROM {{ ref('stg_people') }}",
    "models/good.sql": "{{ config(materialized='table', unique_key='id', tags=['daily'], post_hook='SELECT count(*) FROM {{ this }}') }} "
                       "SELECT * FROM {{ ref('eph') }}",
    "models/joined.sql": "SELECT e.id FROM {{ source('landing', 'events') }} e JOIN {{ ref('good') }} g ON e.id = g.id",
    "models/bad.sql": "{{ config(materialized='table') }} SELECT * FROM no_such_table",
    "models/after_bad.sql": "SELECT * FROM {{ ref('bad') }}",
    "models/off.sql": "{{ config(enabled=false) }} SELECT 1 AS id",
    "models/schema.yml": """
        models:
          - name: good
            description: the good ones
            columns:
              - name: id
                data_type: int
                tests: [unique, not_null]
              - name: name
                tests:
                  - accepted_values: {values: [ANN!], config: {severity: warn}}
          - name: joined
            columns:
              - name: id
                tests:
                  - relationships: {to: "ref('good')", field: id}
        sources:
          - name: landing
            description: raw events
            schema: default
            loaded_at_field: at
            freshness: {warn_after: {count: 1, period: day}}
            tables:
              - name: events
                identifier: landing_events
                columns:
                  - name: id
                    tests: [not_null]
    """,
    "macros/shout.sql": "{% macro shout(x) %}concat({{ x }}, '!'){% endmacro %}",
    "tests/no_negative_ids.sql": "SELECT * FROM {{ ref('good') }} WHERE id < 0",
}


@pytest.fixture(autouse=True)
def no_user_profiles(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("HUDIQL_PROFILES_DIR", raising=False)


def schema_errors(artifact: Path) -> list[str]:
    """What dbt's published schema of the claimed version says is wrong with ``artifact``."""
    data = json.loads(artifact.read_text())
    claimed = data["metadata"]["dbt_schema_version"]
    match = SCHEMA_URL.match(claimed)
    assert match, f"{artifact.name} claims an unknown dbt schema {claimed!r}"
    schema = json.loads((SCHEMAS / f"{match['path']}.json").read_text())
    assert schema["$id"] == claimed
    validator = jsonschema.validators.validator_for(schema)(schema, format_checker=jsonschema.FormatChecker())
    return [f"{artifact.name} {e.json_path}: {e.message[:300]}" for error in validator.iter_errors(data) for e in leaves(error)]


def leaves(error: jsonschema.ValidationError) -> list[jsonschema.ValidationError]:
    """The errors below an ``anyOf`` (dbt's node types), in the branch that fits best: the one of the
    node's own ``resource_type`` with the fewest errors."""
    if not error.context:
        return [error]
    branches: dict[int, list[jsonschema.ValidationError]] = {}
    for sub in error.context:
        branches.setdefault(sub.relative_schema_path[0], []).append(sub)
    own = [b for b in branches.values() if not any(e.validator == "const" for e in b)] or list(branches.values())
    return [leaf for e in min(own, key=len) for leaf in leaves(e)]


def validated(root: Path) -> dict[str, dict]:
    """Every JSON file of ``target/``, each checked against its schema; name -> content."""
    artifacts = sorted((root / "target").glob("*.json"))
    assert {p.name for p in artifacts} >= {"manifest.json", "run_results.json"}
    errors = [e for p in artifacts for e in schema_errors(p)]
    assert not errors, f"{len(errors)} schema errors:\n" + "\n".join(errors[:40])
    return {p.name: json.loads(p.read_text()) for p in artifacts}


def sha256(text: str) -> str:
    """dbt's checksum of a file: of its text without surrounding blanks."""
    return hashlib.sha256(text.strip().encode()).hexdigest()


def check_metadata(metadata: dict) -> None:
    """dbt's formats: a UUID, UTC times with microseconds, the dbt release whose schemas are followed."""
    assert uuid.UUID(metadata["invocation_id"]).version == 4
    for key in ("generated_at", "invocation_started_at"):
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", metadata[key]), metadata
    assert metadata["dbt_version"] == f"1.11.6+hudiql.{hudiql.__version__}"


def test_artifacts_validate_against_dbt_schemas(spark, tmp_path):
    root = write_project(tmp_path / "p", PROJECT, "name: p\n")
    hudiql.connect(warehouse=str(root / "warehouse"), spark=spark).sql(
        "CREATE VIEW landing_events AS SELECT 1 AS id, 'ann' AS name, current_timestamp() AS at")
    code, out = run(root, "build", spark)
    assert code == 1 and "Done. PASS=9 WARN=1 ERROR=1 SKIP=1 TOTAL=12" in out, out
    artifacts = validated(root)
    manifest, results = artifacts["manifest.json"], artifacts["run_results.json"]
    assert manifest["metadata"]["invocation_id"] == results["metadata"]["invocation_id"]

    # What the schema requires is true: checksums of the files, the macros a node calls, the
    # compiled SQL of what ran, the statuses of dbt's vocabulary.
    nodes = manifest["nodes"]
    good = nodes["model.p.good"]
    assert good["checksum"] == {"name": "sha256", "checksum": sha256((root / "models/good.sql").read_text())}
    assert nodes["seed.p.people"]["checksum"]["checksum"] == sha256(PROJECT["seeds/people.csv"])
    assert nodes["model.p.eph"]["depends_on"] == {"nodes": ["model.p.stg_people"], "macros": ["macro.p.shout"]}
    assert nodes["model.p.joined"]["depends_on"]["nodes"] == ["model.p.good", "source.p.landing.events"]
    assert (good["database"], good["schema"], good["alias"], good["relation_name"]) == (None, "default", "good", "default.good")
    assert (nodes["model.p.eph"]["alias"], nodes["model.p.eph"]["relation_name"]) == ("eph", None)
    not_null = next(n for n in nodes.values() if n["name"] == "not_null_good_id")
    assert not_null["depends_on"]["macros"] == ["macro.hudiql.test_not_null"]
    assert not_null["test_metadata"]["kwargs"] == {"column_name": "id"} and not_null["checksum"]["name"] == "none"
    assert manifest["macros"]["macro.p.shout"]["macro_sql"] == PROJECT["macros/shout.sql"]
    assert manifest["macros"]["macro.hudiql.test_not_null"]["macro_sql"].startswith("{% macro test_not_null(model, column_name) %}")
    assert good["config"]["post-hook"] == [{"sql": "SELECT count(*) FROM {{ this }}", "transaction": True, "index": 0}]
    assert manifest["sources"]["source.p.landing.events"]["relation_name"] == "default.landing_events"
    assert manifest["sources"]["source.p.landing.events"]["source_description"] == "raw events"
    assert list(manifest["disabled"]) == ["model.p.off"]

    by_id = {r["unique_id"]: r for r in results["results"]}
    assert by_id["model.p.bad"]["status"] == "error" and by_id["model.p.after_bad"]["status"] == "skipped"
    assert by_id["model.p.good"]["compiled_code"].startswith("WITH __dbt__cte__eph AS (")
    assert results["args"]["which"] == "build"
    check_metadata(results["metadata"])
    check_metadata(manifest["metadata"])

    # compile and a command that selects nothing write their artifacts too.
    code, out = run(root, "compile", spark, select=["good"])
    assert code == 0, out
    assert "model.p.good" in [r["unique_id"] for r in validated(root)["run_results.json"]["results"]]
    code, out = run(root, "source", spark)
    assert code == 0, out
    [fresh] = validated(root)["sources.json"]["results"]
    assert (fresh["unique_id"], fresh["status"], fresh["criteria"]["warn_after"]) == (
        "source.p.landing.events", "pass", {"count": 1, "period": "day"})
    assert validated(root)["manifest.json"]["sources"]["source.p.landing.events"]["loaded_at_field"] == "at"
    code, out = run(root, "seed", spark, select=["no_such_node"])
    assert code == 0 and "Nothing to do" in out
    assert validated(root)["run_results.json"]["results"] == []

    # docs generate: what the warehouse holds of the models, seeds and sources (the failed model's
    # table and the one after it were never made; an ephemeral model has none), as dbt describes it.
    code, out = run(root, "docs", spark)
    assert code == 0 and "Catalog written to" in out, out
    catalog = validated(root)["catalog.json"]
    check_metadata(catalog["metadata"])
    nodes = catalog["nodes"]
    assert set(nodes) == {"seed.p.people", "model.p.stg_people", "model.p.good", "model.p.joined"}
    assert nodes["model.p.good"]["metadata"] == {"type": "table", "schema": "default", "name": "good",
                                                 "database": None, "comment": None, "owner": None}
    assert nodes["model.p.good"]["columns"] == {"id": {"type": "int", "index": 1, "name": "id", "comment": None},
                                                "name": {"type": "string", "index": 2, "name": "name", "comment": None}}
    assert nodes["model.p.good"]["stats"]["has_stats"]["value"] is False
    assert nodes["model.p.stg_people"]["metadata"]["type"] == "view"
    assert list(catalog["sources"]) == ["source.p.landing.events"]
    assert [c["name"] for c in catalog["sources"]["source.p.landing.events"]["columns"].values()] == ["id", "name", "at"]
    code, out = run(root, "docs", spark, select=["good"], compile=False)
    assert code == 0 and set(validated(root)["catalog.json"]["nodes"]) == {"model.p.good"}
    code, out = run(root, "docs", spark, empty_catalog=True, compile=False)
    assert code == 0 and validated(root)["catalog.json"]["nodes"] == {}
