"""Unit tests of ``hudiql.catalog``: names (identifiers, never paths; lower case; at most
``MAX_NAME_LENGTH`` characters; one clear error otherwise), databases (``default`` and ``<db>.db``
folders), where managed and external tables live and which exist (a folder with ``.hoodie/``, or a
registry file under ``.hudiql/tables/``), and persistent views (files under ``.hudiql/views/``), all
read back by a new ``Catalog`` as after a restart. No Spark.
"""

from __future__ import annotations

import pytest
from conftest import HUDI_TABLES, unzip
from hudiql.catalog import DEFAULT_DATABASE, MAX_NAME_LENGTH, Catalog, View, check_name
from hudiql.errors import SqlError


@pytest.fixture
def catalog(warehouse) -> Catalog:
    warehouse.mkdir()
    return Catalog(str(warehouse))


def reopened(catalog: Catalog) -> Catalog:
    """The catalog as the next session sees it: nothing but the warehouse's files."""
    return Catalog(catalog.storage.base_uri)


def table_folder(path) -> None:
    (path / ".hoodie").mkdir(parents=True)


# ---- names ------------------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "expected"), [("orders", "orders"), ("Orders_2024", "orders_2024"),
                                                ("_tmp", "_tmp"), ("A" * MAX_NAME_LENGTH, "a" * MAX_NAME_LENGTH)])
def test_a_name_is_an_identifier_in_lower_case(name, expected):
    assert check_name("table", name) == expected


@pytest.mark.parametrize(
    "name",
    ["../other", "a/b", "/tmp/x", "db.t", "a b", "a-b", "x;", "t'", "ünï", "1st", ".hudiql", "a\nb"],
)
def test_a_name_that_is_not_an_identifier_is_refused_in_one_line(name):
    with pytest.raises(SqlError) as error:
        check_name("view", name)
    assert str(error.value) == (f"view name '{name}' is not valid; use letters, digits and '_' "
                                "(a name is not a path: use LOCATION '...' to place a table)")


def test_a_name_ending_in_a_newline_is_refused():
    with pytest.raises(SqlError, match="is not valid"):
        check_name("table", "orders\n")


def test_an_empty_name_is_refused():
    with pytest.raises(SqlError, match=r"^table name is empty; use letters, digits and '_'$"):
        check_name("table", "")


def test_a_name_longer_than_the_limit_is_refused():
    name = "a" * (MAX_NAME_LENGTH + 1)
    assert MAX_NAME_LENGTH == 128
    with pytest.raises(SqlError) as error:
        check_name("database", name)
    assert str(error.value) == f"database name '{'a' * 20}...' is 129 characters long; use at most 128"


# ---- databases ----------------------------------------------------------------------------------

def test_databases_are_default_and_the_db_folders(catalog, warehouse):
    assert catalog.databases() == [DEFAULT_DATABASE] and catalog.database_exists("default")
    catalog.create_database("Sales")
    (warehouse / "plain").mkdir()  # a folder without the suffix is no database
    (warehouse / "notes.db").write_text("")  # nor is a file
    assert (warehouse / "sales.db").is_dir()
    assert reopened(catalog).databases() == ["default", "sales"]
    assert catalog.database_exists("sales") and not catalog.database_exists("plain")
    assert not catalog.database_exists("notes")


def test_a_bad_database_name_creates_nothing(catalog, warehouse):
    with pytest.raises(SqlError, match="database name '../x' is not valid"):
        catalog.create_database("../x")
    assert list(warehouse.parent.iterdir()) == [warehouse] and list(warehouse.iterdir()) == []


# ---- tables ------------------------------------------------------------------------------------

@pytest.mark.parametrize(("database", "folder"), [("default", "orders"), ("sales", "sales.db/orders")])
def test_a_managed_table_is_a_folder_with_hoodie(catalog, warehouse, database, folder):
    expected = f"file://{warehouse}/{folder}"
    assert catalog.managed_location(database, "orders") == expected
    assert catalog.location(database, "orders") is None
    (warehouse / folder).mkdir(parents=True)  # a folder alone is not a table
    assert catalog.location(database, "orders") is None and catalog.tables(database) == []
    # a table folder with a damaged (missing) hoodie.properties is still a table: loading it says what is wrong
    table_folder(warehouse / folder)
    assert reopened(catalog).location(database, "orders") == expected
    assert reopened(catalog).tables(database) == ["orders"]
    assert not catalog.is_external(database, "orders")


def test_a_table_apache_hudi_wrote_copied_into_the_warehouse_is_a_table(catalog, warehouse):
    unzip(HUDI_TABLES / "sample_table" / "cow" / "v6_nonpartitioned.zip", warehouse)
    assert catalog.tables("default") == ["v6_nonpartitioned"]
    assert catalog.location("default", "v6_nonpartitioned") == f"file://{warehouse}/v6_nonpartitioned"


def test_an_external_table_is_a_registry_file_holding_its_location(catalog, warehouse, tmp_path):
    elsewhere = tmp_path / "lake" / "events"
    catalog.register_external("sales", "events", str(elsewhere))
    entry = warehouse / ".hudiql" / "tables" / "sales" / "events"
    assert entry.read_text() == str(elsewhere)
    assert reopened(catalog).location("sales", "events") == str(elsewhere)
    assert catalog.is_external("sales", "events") and not catalog.is_external("default", "events")
    assert catalog.tables("sales") == ["events"] and catalog.tables("default") == []

    catalog.unregister("sales", "events")
    assert not entry.exists()
    assert catalog.location("sales", "events") is None and catalog.tables("sales") == []


def test_a_registry_entry_is_read_without_surrounding_whitespace(catalog, warehouse):
    entry = warehouse / ".hudiql" / "tables" / "default" / "t"
    entry.parent.mkdir(parents=True)
    entry.write_text("s3://bucket/t\n")
    assert catalog.location("default", "t") == "s3://bucket/t"


def test_tables_lists_managed_and_external_tables_of_one_database(catalog, warehouse, tmp_path):
    table_folder(warehouse / "b")
    table_folder(warehouse / "sales.db" / "s")  # another database's table
    (warehouse / "not_a_table").mkdir()
    catalog.register_external("default", "a", str(tmp_path / "a"))
    catalog.register_external("default", "b", str(tmp_path / "b"))  # both: listed once
    catalog.save_view("default", "v", "SELECT 1")  # views are not tables
    assert reopened(catalog).tables("default") == ["a", "b"]
    assert catalog.tables("sales") == ["s"]
    assert catalog.tables("nothing") == []


def test_a_hidden_folder_is_never_a_table(catalog, warehouse):
    table_folder(warehouse / ".trash")
    assert catalog.tables("default") == []


# ---- views ----------------------------------------------------------------------------------------

def test_a_persistent_view_is_a_file_holding_its_query(catalog, warehouse):
    sql = "SELECT id, sum(amount) AS total\nFROM orders GROUP BY id"
    catalog.save_view("sales", "totals", sql)
    assert (warehouse / ".hudiql" / "views" / "sales" / "totals").read_text() == sql
    assert reopened(catalog).view("sales", "totals") == View("sales.totals", "sales", sql, temporary=False)
    assert catalog.view("default", "totals") is None
    catalog.save_view("sales", "totals", "SELECT 2")  # CREATE OR REPLACE VIEW
    assert catalog.view("sales", "totals").sql == "SELECT 2"


def test_views_of_a_database_and_drop_view(catalog):
    for name in ("b", "a", "c"):
        catalog.save_view("default", name, f"SELECT '{name}'")
    catalog.save_view("other", "z", "SELECT 1")
    assert reopened(catalog).views("default") == ["a", "b", "c"]
    catalog.drop_view("default", "b")
    assert catalog.views("default") == ["a", "c"] and catalog.view("default", "b") is None
    assert catalog.views("other") == ["z"] and catalog.views("empty") == []
