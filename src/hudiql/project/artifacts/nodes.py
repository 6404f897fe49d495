"""What a project is made of: nodes (models, seeds, snapshots, tests, unit tests), sources and the
relations they name.

Example:
    >>> node = Node("model.shop.orders", "model", "orders", "models/orders.sql", ["shop", "orders"], "select 1")
    >>> str(Relation("analytics", "orders", "table"))
    'analytics.orders'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

EPHEMERAL_PREFIX = "__dbt__cte__"
#: The resource types ``ref()`` names.
REFERABLE = ("model", "seed", "snapshot")


@dataclass(frozen=True)
class Relation:
    """A table, view or CTE as SQL names it. CTEs have no database."""

    schema: str | None
    identifier: str
    kind: str  # "table", "view" or "cte"

    def __str__(self) -> str:
        return f"{self.schema}.{self.identifier}" if self.schema else self.identifier

    @property
    def name(self) -> str:
        return self.identifier

    @property
    def type(self) -> str:
        """dbt's name of ``kind`` (``relation.type``)."""
        return self.kind

    @property
    def database(self) -> str | None:
        return self.schema


@dataclass
class Column:
    name: str
    data_type: str


@dataclass
class Source:
    """A table declared under ``sources:`` in a ``.yml`` file; ``source('name', 'table')``."""

    unique_id: str
    source_name: str
    name: str
    original_file_path: str
    relation: Relation
    description: str = ""
    columns: dict[str, dict[str, Any]] = field(default_factory=dict)
    tests: list[Any] = field(default_factory=list)  # table-level tests from the .yml
    source_description: str = ""  # the description of the whole source (``sources: - description:``)
    #: Source freshness (``hudiql source freshness``): the column of the rows' load time (or a query of
    #: it), and the criteria (``warn_after`` / ``error_after``: count and period, ``filter``), as resolved.
    loaded_at_field: str | None = None
    loaded_at_query: str | None = None
    freshness: dict[str, Any] | None = None

    @property
    def fqn(self) -> list[str]:
        return [self.unique_id.split(".")[1], self.source_name, self.name]


@dataclass
class TestMetadata:
    """A generic test: the ``test_<name>`` macro and its arguments."""

    name: str
    kwargs: dict[str, Any]
    attached_node: str | None  # the model, seed or source the test is about
    #: The name of its compiled file: dbt's name, shortened when long (whatever alias it is given).
    compiled_name: str


@dataclass
class Fixture:
    """Rows of a unit test: an input's (``input``: ``ref('m')``, ``source('s', 't')`` or ``this``) or
    the expected output's. ``rows``: a list of column -> value mappings, or SQL (``format: sql``)."""

    input: str | None
    rows: list[dict[str, Any]] | str
    format: str  # "dict", "csv" or "sql", as written (csv rows are parsed into mappings)
    fixture: str | None = None  # the fixture file the rows came from, as named
    ref: str | None = None  # the input resolved: the node ``ref()`` names, or
    source: tuple[str, str] | None = None  # the (source, table) ``source()`` names


@dataclass
class UnitTest:
    """A unit test of ``model``: its SELECT run on the ``given`` rows must return the ``expect`` rows
    (``overrides``: ``macros``, ``vars`` and ``env_vars`` values in place of the real ones)."""

    model: str
    given: list[Fixture]
    expect: Fixture
    overrides: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass
class Node:
    unique_id: str
    resource_type: str  # "model", "seed", "snapshot", "test" or "unit_test"
    name: str
    original_file_path: str  # relative to the project root
    fqn: list[str]
    raw_code: str
    config: dict[str, Any] = field(default_factory=dict)
    refs: list[str] = field(default_factory=list)
    sources: list[tuple[str, str]] = field(default_factory=list)
    depends_on: list[str] = field(default_factory=list)  # unique ids, filled by the graph
    description: str = ""
    columns: dict[str, dict[str, Any]] = field(default_factory=dict)
    relation: Relation | None = None  # None for tests
    test_metadata: TestMetadata | None = None
    unit_test: UnitTest | None = None

    @property
    def materialized(self) -> str:
        return self.config.get("materialized", "")

    @property
    def is_ephemeral(self) -> bool:
        return self.materialized == "ephemeral"

    @property
    def label(self) -> str:
        """How error messages name the node: ``model orders (models/orders.sql)``."""
        return f"{self.resource_type} {self.name} ({self.original_file_path})"
