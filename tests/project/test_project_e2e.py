"""``models_example`` through the command line. The runs are module fixtures, in order: a first
``build``, a real subprocess with its own JVM (slow), then, in-process on the shared session as
the command line would run them (``invoke``), a second ``build`` (the incremental model merges)
and ``run --full-refresh`` with a failing model added (whose child is skipped): what those show
is the merge and the failure, not another start of Spark."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import hudiql
import pytest
from test_project_helpers import run as run_in_process
from test_project_helpers import run_results

EXAMPLE = Path(__file__).resolve().parents[2] / "models_example"
LINE = re.compile(r"^\d\d:\d\d:\d\d  (?P<text>.*)$")


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str

    @property
    def lines(self) -> list[str]:
        """Console lines without their time stamps (every line must have one)."""
        out = []
        for line in self.stdout.splitlines():
            m = LINE.match(line)
            assert m, f"a console line without the HH:MM:SS prefix: {line!r}"
            out.append(m["text"])
        return out


def hudiql_cli(project: Path, *args: str) -> Run:
    env = {k: v for k, v in os.environ.items() if k != "HUDIQL_PROFILES_DIR"}
    env["HOME"] = str(project.parent)  # no ~/.hudiql/profiles.yml of the machine
    proc = subprocess.run([sys.executable, "-m", "hudiql.project", *args, "--project-dir", str(project)],
                          capture_output=True, text=True, timeout=1800, env=env, check=False)
    return Run(proc.returncode, proc.stdout, proc.stderr)


def hudiql_in_process(spark, project: Path, command: str, **flags) -> Run:
    with pytest.MonkeyPatch.context() as env:
        env.delenv("HUDIQL_PROFILES_DIR", raising=False)
        env.setenv("HOME", str(project.parent))  # as hudiql_cli: no ~/.hudiql/profiles.yml of the machine
        code, console = run_in_process(project, command, spark, **flags)
    return Run(code, console, "")


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("e2e") / "models_example"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("target", "warehouse", "quickstart.sql"))
    return root


@pytest.fixture(scope="module")
def first_build(project) -> Run:
    return hudiql_cli(project, "build")


@pytest.fixture(scope="module")
def second_build(project, first_build, spark) -> Run:
    return hudiql_in_process(spark, project, "build")


@pytest.fixture(scope="module")
def failing_refresh(project, second_build, spark) -> Run:
    (project / "models/marts/broken.sql").write_text("SELECT order_id, no_such_column FROM {{ ref('fct_orders') }}")
    (project / "models/marts/after_broken.sql").write_text("SELECT * FROM {{ ref('broken') }}")
    return hudiql_in_process(spark, project, "run", full_refresh=True, select=["fct_orders+"])


def table_rows(spark, project: Path, sql: str) -> list[tuple]:
    session = hudiql.connect(warehouse=str(project / "warehouse"), spark=spark)
    return sorted(tuple(r) for r in session.sql(sql).collect())


def test_first_build_console(first_build):
    assert first_build.code == 0, first_build.stdout + first_build.stderr[-3000:]
    lines = first_build.lines
    assert lines[0] == "Running with hudiql=0.1.0"
    assert lines[1].startswith("Found 5 models, 3 seeds, 11 data tests, 0 sources,")
    assert "Concurrency: 1 threads (target='dev')" in lines
    start = next(line for line in lines if "START sql incremental model default.fct_orders" in line)
    assert re.fullmatch(r"\d+ of 19 START sql incremental model default\.fct_orders \.+ \[RUN\]", start)
    assert len(start) == len(start.split(" [")[0]) + len(" [RUN]") and len(start.split(" [")[0]) == 80
    assert any(re.fullmatch(r"\d+ of 19 OK created sql incremental model default\.fct_orders \.+ \[OK in \d+\.\d\ds\]", line) for line in lines)
    assert any(re.fullmatch(r"\d+ of 19 OK loaded seed file default\.order_updates \.+ \[INSERT 8 in \d+\.\d\ds\]", line) for line in lines)
    assert any(re.fullmatch(r"\d+ of 19 PASS unique_fct_orders_order_id \.+ \[PASS in \d+\.\d\ds\]", line) for line in lines)
    assert re.fullmatch(r"Finished running 3 seeds, 2 view models, .* in 0 hours \d+ minutes and \d+\.\d\d seconds \(\d+\.\d\ds\)\.",
                        next(line for line in lines if line.startswith("Finished running")))
    assert lines[-3:] == ["Completed successfully", "", "Done. PASS=19 WARN=0 ERROR=0 SKIP=0 TOTAL=19"]


def test_first_build_tables(first_build, project, spark):
    assert first_build.code == 0
    # the latest event of each order wins; 1002's late 'shipped' (older than 'cancelled') does not
    assert table_rows(spark, project, "SELECT order_id, status FROM fct_orders") == [
        (1001, "delivered"), (1002, "cancelled"), (1003, "shipped"), (1004, "placed"),
        (1005, "shipped"), (1006, "placed"), (1007, "placed"),
    ]
    assert table_rows(spark, project, "SELECT customer_name, orders, CAST(revenue AS STRING) FROM customer_revenue") == [
        ("Alice Martin", 2, "37.25"), ("Bob Smith", 2, "64.00"), ("Carol Jones", 1, "99.90"),
        ("Dave Brown", 1, "45.00"), ("Erin White", 1, "18.40"),
    ]
    properties = (project / "warehouse/fct_orders/.hoodie/hoodie.properties").read_text()
    assert "hoodie.table.type=MERGE_ON_READ" in properties and "hoodie.table.recordkey.fields=order_id" in properties


def test_artifacts(first_build, project):
    manifest = json.loads((project / "target/manifest.json").read_text())
    fct = manifest["nodes"]["model.hudiql_example.fct_orders"]
    assert fct["config"]["unique_key"] == ["order_id"] and fct["config"]["table_type"] == "mor"
    assert fct["depends_on"]["nodes"] == ["model.hudiql_example.stg_orders"]
    assert manifest["metadata"]["project_name"] == "hudiql_example"
    assert (project / "target/compiled/hudiql_example/models/staging/stg_orders.sql").read_text().count("CAST(amount AS DECIMAL(10, 2))") == 2
    assert (project / "target/run/hudiql_example/models/marts/fct_orders.sql").read_text().startswith("CREATE TABLE default.fct_orders USING hudi")


def test_second_build_merges(second_build, project, spark):
    assert second_build.code == 0, second_build.stdout + second_build.stderr[-3000:]
    assert "Done. PASS=19 WARN=0 ERROR=0 SKIP=0 TOTAL=19" in second_build.stdout
    merge = (project / "target/run/hudiql_example/models/marts/fct_orders.sql").read_text()
    assert merge.startswith("MERGE INTO default.fct_orders AS DBT_INTERNAL_DEST")
    assert "INTERVAL 3 DAYS FROM default.fct_orders" in merge
    response = run_results(project)["model.hudiql_example.fct_orders"]["adapter_response"]
    assert response["num_updated_rows"] > 0 and response["num_inserted_rows"] == 0
    assert len(list((project / "warehouse/fct_orders/.hoodie").glob("*.deltacommit"))) == 2
    assert table_rows(spark, project, "SELECT order_id, status FROM fct_orders")[1] == (1002, "cancelled")
    # orders_enriched read only what the second fct_orders merge changed, and agrees with it.
    assert "hudi_table_changes('default.fct_orders', 'latest_state'" in \
        (project / "target/run/hudiql_example/models/marts/orders_enriched.sql").read_text()
    assert table_rows(spark, project, "SELECT order_id, status FROM orders_enriched") == \
        table_rows(spark, project, "SELECT order_id, status FROM fct_orders")


def test_full_refresh_and_a_failing_model(failing_refresh, project, spark):
    assert failing_refresh.code == 1
    lines = failing_refresh.lines
    assert any(re.fullmatch(r"\d of 5 OK created sql incremental model default\.fct_orders \.+ \[OK in .*\]", line) for line in lines)
    assert any(re.fullmatch(r"\d of 5 ERROR creating sql table model default\.broken \.+ \[ERROR in .*\]", line) for line in lines)
    assert any(re.fullmatch(r"\d of 5 SKIP relation default\.after_broken \.+ \[SKIP\]", line) for line in lines)
    assert "Runtime Error in model broken (models/marts/broken.sql)" in lines
    assert lines[-1] == "Done. PASS=3 WARN=0 ERROR=1 SKIP=1 TOTAL=5"
    rebuilt = (project / "target/run/hudiql_example/models/marts/fct_orders.sql").read_text()
    assert "INSERT OVERWRITE TABLE default.fct_orders" in rebuilt  # same columns and keys: rebuilt in place
    assert run_results(project)["model.hudiql_example.after_broken"]["status"] == "skipped"
    assert len(table_rows(spark, project, "SELECT order_id FROM fct_orders")) == 7
    assert len(list((project / "warehouse/fct_orders/.hoodie").glob("*.replacecommit"))) == 1


def test_bad_usage_exits_2(tmp_path):
    assert hudiql_cli(tmp_path / "nowhere", "run").code == 2
    run = hudiql_cli(tmp_path, "run", "--vars", "[1, 2]")
    assert run.code == 2 and "--vars must be a YAML mapping" in run.stderr
