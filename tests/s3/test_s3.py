"""Tables on S3 (a local moto server, ``conftest.py``): the core copy-on-write and merge-on-read
scenarios end to end, read back by hudiql and by the official reader, and bad credentials or
an unreachable endpoint failing with one line that names the path and the endpoint."""

from __future__ import annotations

import socket

import pyarrow as pa
import pyarrow.fs as pafs
import pytest

import hudiql
from hudiql.errors import OptionError
from hudiql.errors import StorageError
from hudiql.io.storage import resolve_options
from tests.conftest import hudiql_rows
from tests.s3.conftest import BUCKET, REGION

COLUMNS = ["id", "price", "day"]


def connect(s3, spark, warehouse: str, **options) -> hudiql.Session:
    return hudiql.connect(warehouse=warehouse, spark=spark, storage_options={**s3.options, **options})


def bucket(s3) -> pafs.S3FileSystem:
    """The bucket as the test sees it, past hudiql."""
    return pafs.S3FileSystem(access_key=s3.access_key, secret_key=s3.secret_key, endpoint_override=s3.endpoint,
                             region=REGION)


def files(s3, prefix: str) -> list[str]:
    selector = pafs.FileSelector(f"{BUCKET}/{prefix}", recursive=True, allow_not_found=True)
    return sorted(f.path for f in bucket(s3).get_file_info(selector) if f.type == pafs.FileType.File)


def official_rows(s3, uri: str) -> list[tuple]:
    """The rows the official reader (PyPI ``hudi``) reads from the table on S3."""
    from hudi import HudiTableBuilder

    batches = HudiTableBuilder.from_base_uri(uri).with_storage_options(s3.official_options).build().read()
    rows = pa.Table.from_batches(batches).select(COLUMNS).to_pylist() if batches else []
    return sorted(tuple(r[c] for c in COLUMNS) for r in rows)


def commits(session: hudiql.Session, table: str) -> list[str]:
    return sorted(r.commit_time for r in session.sql(f"CALL show_commits(table => '{table}', limit => 100)").collect())


@pytest.mark.parametrize("table_type", ["cow", "mor"])
def test_every_statement_on_s3(s3, spark, table_type, monkeypatch):
    """Managed tables on an s3:// warehouse and an external one at LOCATION 's3://...': create,
    insert, upsert, MERGE, UPDATE, DELETE, SELECT, time travel, compaction (MOR), clean, archive;
    under the default optimistic concurrency, so each takes the table lock on S3."""
    warehouse = f"s3://{BUCKET}/{table_type}/warehouse"
    session = connect(s3, spark, warehouse)
    session.sql(f"""CREATE TABLE orders (id INT, price DOUBLE, day STRING) USING hudi PARTITIONED BY (day)
                    TBLPROPERTIES (primaryKey = 'id', 'hoodie.spark.sql.insert.into.operation'='upsert', type = '{table_type}', 'hoodie.compact.inline' = 'false')""")
    session.sql("INSERT INTO orders VALUES (1, 1.0, 'd1'), (2, 2.0, 'd1'), (3, 3.0, 'd2')")
    first = commits(session, "orders")[-1]
    session.sql("INSERT INTO orders VALUES (1, 10.0, 'd1'), (4, 4.0, 'd2')")                       # upsert
    session.sql("MERGE INTO orders t USING (SELECT 2 AS id, 20.0 AS price, 'd1' AS day UNION ALL "
                "SELECT 5, 5.0, 'd2') s ON t.id = s.id "
                "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
    session.sql("UPDATE orders SET price = price + 0.5 WHERE id = 3")
    session.sql("DELETE FROM orders WHERE id = 4")
    expected = [(1, 10.0, "d1"), (2, 20.0, "d1"), (3, 3.5, "d2"), (5, 5.0, "d2")]
    assert hudiql_rows(session, "SELECT id, price, day FROM orders") == expected
    assert hudiql_rows(session, "SELECT count(*) FROM orders") == [(4,)]
    assert hudiql_rows(session, f"SELECT id, price, day FROM orders TIMESTAMP AS OF '{first}'") == [
        (1, 1.0, "d1"), (2, 2.0, "d1"), (3, 3.0, "d2")]
    table_uri = f"{warehouse}/orders"
    if table_type == "mor":
        assert any(".log." in f for f in files(s3, f"{table_type}/warehouse/orders/day=d1"))
        assert hudiql_rows(session, "SELECT id, price, day FROM orders_ro") != expected           # logs not read
        session.sql("CALL run_compaction(op => 'scheduleandexecute', table => 'orders')")
        assert hudiql_rows(session, "SELECT id, price, day FROM orders_ro") == expected
    assert official_rows(s3, table_uri) == expected
    session.sql("CALL run_clean(table => 'orders', retain_commits => 1, trigger_max_commits => 1)")
    session.sql("CALL archive_commits(table => 'orders', min_commits => 2, max_commits => 3, retain_commits => 1)")
    archived = session.sql("CALL show_archived_commits(table => 'orders', start_ts => '0', end_ts => '99991231235959999')")
    assert first in {r.commit_time for r in archived.collect()}
    assert hudiql_rows(session, "SELECT id, price, day FROM orders") == expected

    # An external table, in a new session that knows the table only by its warehouse on S3 and
    # reaches S3 through the standard AWS variables alone.
    for option, value in s3.options.items():
        monkeypatch.setenv(option.upper(), value)
    again = hudiql.connect(warehouse=warehouse, spark=spark)
    again.sql(f"CREATE TABLE ext USING hudi LOCATION '{table_uri}'")                                # adopts it
    again.sql("INSERT INTO ext VALUES (6, 6.0, 'd3')")
    assert hudiql_rows(again, "SELECT id FROM ext WHERE day = 'd3'") == [(6,)]
    assert hudiql_rows(session, "SELECT count(*) FROM orders") == [(5,)]

    # Plain PySpark: df.write stages its rows on S3 (with its heartbeat there), and leaves none.
    rows = spark.createDataFrame([(7, 7.0, "d3")], "id INT, price DOUBLE, day STRING")
    rows.write.format("hudi").mode("append").save(table_uri)
    read = spark.read.format("hudi").load(table_uri).where("day = 'd3'").select(*COLUMNS)
    assert sorted(tuple(r) for r in read.collect()) == [(6, 6.0, "d3"), (7, 7.0, "d3")]
    assert [f for f in files(s3, f"{table_type}/warehouse/orders/.hoodie/.temp") if "hudiql-write-" in f] == []


def test_options_from_variables_config_file_and_profile(s3, tmp_path, monkeypatch):
    """Given options over the AWS variables over ~/.aws/config (its profile's region and
    endpoint_url); the service-specific endpoint variable first; profiles.yml's storage_options."""
    config = tmp_path / "config"
    config.write_text("[default]\nregion = eu-west-1\n[profile lake]\nregion = eu-west-3\nendpoint_url = http://cfg:1\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_PROFILE", "lake")
    assert resolve_options() == {"aws_region": "eu-west-3", "aws_endpoint_url": "http://cfg:1"}
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://global:2")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-west-2")
    assert resolve_options() == {"aws_region": "us-west-2", "aws_endpoint_url": "http://global:2"}
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", "http://s3:3")
    monkeypatch.setenv("AWS_REGION", "ap-south-1")
    assert resolve_options({"AWS_REGION": "sa-east-1"}) == {"aws_region": "sa-east-1", "aws_endpoint_url": "http://s3:3"}

    from hudiql.project.config.profile import load_target
    from hudiql.project.config.project import load_project
    from hudiql.project.errors import ProjectError
    from tests.project.test_project_helpers import write_project

    profiles = "p:\n  outputs:\n    dev:\n      warehouse: s3://lake/wh\n      storage_options: {%s}\n"
    root = write_project(tmp_path / "p", {"profiles.yml": profiles % f"aws_endpoint_url: '{s3.endpoint}'"}, "name: p\n")
    assert load_target(load_project(root, {}), None, None).storage_options == {"aws_endpoint_url": s3.endpoint}
    (root / "profiles.yml").write_text(profiles % "aws_secret_key: x")
    with pytest.raises(ProjectError, match="unknown storage option 'aws_secret_key'; did you mean 'aws_secret_access_key'"):
        load_target(load_project(root, {}), None, None)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_bad_credentials_and_endpoint_fail_with_one_line(s3, spark, tmp_path):
    """Wrong credentials, an unreachable endpoint, a URI with options, an unknown option: one
    line naming what to change, and nothing written."""
    warehouse = str(tmp_path / "warehouse")  # local: the catalog is reachable, the table is not
    good = connect(s3, spark, warehouse)
    good.sql(f"CREATE TABLE t (id INT, price DOUBLE, day STRING) USING hudi TBLPROPERTIES (primaryKey = 'id', 'hoodie.spark.sql.insert.into.operation'='upsert') "
             f"LOCATION 's3://{BUCKET}/bad/t'")
    good.sql("INSERT INTO t VALUES (1, 1.0, 'd1')")
    before = files(s3, "bad")

    wrong = connect(s3, spark, warehouse, aws_secret_access_key="not-the-secret")
    with pytest.raises(StorageError, match=rf"^cannot reach s3://{BUCKET}/bad/t\S* at S3 endpoint {s3.endpoint} "
                                           r"\((?:SIGNATURE_DOES_NOT_MATCH|ACCESS_DENIED) on "):
        wrong.sql("INSERT INTO t VALUES (2, 2.0, 'd1')")
    with pytest.raises(StorageError, match=rf"cannot reach s3://{BUCKET}/elsewhere at S3 endpoint {s3.endpoint}"):
        connect(s3, spark, f"s3://{BUCKET}/elsewhere", aws_access_key_id="AKIANOSUCHKEY")
    unreachable = f"http://127.0.0.1:{_closed_port()}"
    with pytest.raises(StorageError, match=rf"cannot reach s3://{BUCKET}/wh at S3 endpoint {unreachable} "
                                           r"\(NETWORK_CONNECTION"):
        connect(s3, spark, f"s3://{BUCKET}/wh", aws_endpoint_url=unreachable)
    with pytest.raises(OptionError, match="not in the URI"):
        connect(s3, spark, f"s3://{BUCKET}/wh?endpoint_override={s3.endpoint}")
    with pytest.raises(OptionError, match="unknown storage option 'aws_endpoint'; did you mean 'aws_endpoint_url'"):
        connect(s3, spark, warehouse, aws_endpoint=s3.endpoint)

    assert files(s3, "bad") == before and not files(s3, "elsewhere") and not files(s3, "wh")
    good = connect(s3, spark, warehouse)
    assert hudiql_rows(good, "SELECT id FROM t") == [(1,)]


def test_dbt_core_project_on_s3(s3, spark, tmp_path):
    """dbt-core with a `type: hudiql` profile whose warehouse is on S3: the profile's
    storage_options alone reach the bucket (the test's environment has no AWS variables), a second
    run merges; a misspelt option is refused by name."""
    import yaml
    from dbt.cli.main import dbtRunner

    project = tmp_path / "project"
    (project / "models").mkdir(parents=True)
    (project / "dbt_project.yml").write_text("name: on_s3\nversion: '1.0'\nprofile: on_s3\nconfig-version: 2\n")
    (project / "models" / "orders.sql").write_text(
        "{{ config(materialized='incremental', unique_key='id') }}\n"
        "select 1 as id, '{{ var(\"v\", \"a\") }}' as v union all select {{ var('id', 2) }}, 'b'")
    warehouse = f"s3://{BUCKET}/dbt/warehouse"

    def run(options: dict, *args: str):
        target = {"type": "hudiql", "warehouse": warehouse, "threads": 1, "storage_options": options}
        (tmp_path / "profiles.yml").write_text(yaml.safe_dump({"on_s3": {"target": "dev", "outputs": {"dev": target}}}))
        return dbtRunner().invoke(["run", "--project-dir", str(project), "--profiles-dir", str(tmp_path), *args])

    assert run(s3.options).success
    assert run(s3.options, "--vars", "{v: a2, id: 3}").success
    assert f"{BUCKET}/dbt/warehouse/orders/.hoodie/hoodie.properties" in files(s3, "dbt/warehouse/orders/.hoodie")
    session = connect(s3, spark, warehouse)
    assert hudiql_rows(session, "SELECT id, v FROM orders") == [(1, "a2"), (2, "b"), (3, "b")]

    refused = run({**s3.options, "aws_secret_acces_key": "x"})
    assert not refused.success and "did you mean 'aws_secret_access_key'" in str(refused.exception)


def test_a_version_9_merge_on_read_table_on_s3(s3, spark):
    """Timeline layout 2 on S3: instants in .hoodie/timeline (completed ones with their completion
    time), log files named by their delta commit, compaction; read back by both readers."""
    warehouse = f"s3://{BUCKET}/v9/warehouse"
    session = connect(s3, spark, warehouse)
    session.sql("""CREATE TABLE orders (id INT, price DOUBLE, day STRING) USING hudi PARTITIONED BY (day)
                   TBLPROPERTIES (primaryKey = 'id', 'hoodie.spark.sql.insert.into.operation'='upsert', type = 'mor', 'hoodie.write.table.version' = '9',
                                  'hoodie.compact.inline' = 'false')""")
    session.sql("INSERT INTO orders VALUES (1, 1.0, 'd1'), (2, 2.0, 'd1'), (3, 3.0, 'd2')")
    session.sql("UPDATE orders SET price = price + 0.5 WHERE id = 3")
    session.sql("DELETE FROM orders WHERE id = 2")
    expected = [(1, 1.0, "d1"), (3, 3.5, "d2")]
    table_uri = f"{warehouse}/orders"
    timeline = [f.rsplit("/", 1)[1] for f in files(s3, "v9/warehouse/orders/.hoodie/timeline")]
    assert sum(1 for n in timeline if n.endswith(".deltacommit") and "_" in n) == 3
    assert any(".log.1_" in f for f in files(s3, "v9/warehouse/orders/day=d2"))
    assert hudiql_rows(session, "SELECT id, price, day FROM orders") == official_rows(s3, table_uri) == expected
    session.sql("CALL run_compaction(op => 'scheduleandexecute', table => 'orders')")
    assert hudiql_rows(session, "SELECT id, price, day FROM orders_ro") == official_rows(s3, table_uri) == expected
