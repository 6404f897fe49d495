"""Typed statements: what the parser hands to the session.

Example:
    >>> from hudiql.sql.parser import parse
    >>> insert = parse("INSERT INTO sales.orders (id, amount) SELECT 1, 9.5")[0]
    >>> insert.table, insert.columns, insert.query.sql()
    (TableName(database='sales', name='orders'), ['id', 'amount'], 'SELECT 1, 9.5')
    >>> parse("SET hoodie.merge.ordering.enforce = false")[0]
    SetConf(key='hoodie.merge.ordering.enforce', value='false')
    >>> parse("CALL run_compaction(op => 'schedule', table => 'orders')")[0]
    Call(procedure='run_compaction', args={'op': 'schedule', 'table': 'orders'}, positional=[])
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyspark.sql import types as T
from sqlglot import exp


@dataclass(frozen=True)
class TableName:
    database: str | None
    name: str

    def __str__(self) -> str:
        return f"{self.database}.{self.name}" if self.database else self.name


@dataclass
class Statement:
    """One statement; ``number``, ``line`` and ``column`` place it in the text the user wrote
    (1-based), so that every error can point there."""

    text: str = field(default="", kw_only=True, repr=False)
    number: int = field(default=1, kw_only=True, repr=False)
    line: int = field(default=1, kw_only=True, repr=False)
    column: int = field(default=1, kw_only=True, repr=False)



@dataclass
class CreateTable(Statement):
    table: TableName
    if_not_exists: bool
    columns: T.StructType | None  # None: from the query (CTAS) or an existing table at LOCATION
    primary_key: list[str]
    partitioned_by: list[str]
    options: dict[str, str]
    location: str | None
    dialect: str
    query: exp.Expression | None = None


@dataclass
class CreateTableLike(Statement):
    """``CREATE TABLE t LIKE s``: the schema, keys, partitioning and options of ``s``."""

    table: TableName
    source: TableName
    if_not_exists: bool
    options: dict[str, str]
    location: str | None


@dataclass
class AlterTableProperties(Statement):
    """``ALTER TABLE t SET TBLPROPERTIES (...)`` or ``... UNSET TBLPROPERTIES [IF EXISTS] (...)``."""

    table: TableName
    set: dict[str, str]
    unset: list[str]
    if_exists: bool = False


@dataclass
class CreateView(Statement):
    """``CREATE [OR REPLACE] [TEMPORARY] VIEW v AS query``; ``sql`` is the query as written."""

    view: TableName
    query: exp.Expression
    sql: str
    temporary: bool
    replace: bool
    if_not_exists: bool


@dataclass
class DropView(Statement):
    view: TableName
    if_exists: bool


@dataclass
class ShowDatabases(Statement):
    pattern: str | None


@dataclass
class ShowColumns(Statement):
    table: TableName


@dataclass
class ShowTblProperties(Statement):
    table: TableName
    key: str | None


@dataclass
class ShowPartitions(Statement):
    table: TableName
    partition: dict[str, str | None] | None = None  # PARTITION (c = 'v', ...): only matching partitions


#: A partition as a statement names it: column -> value as written (None for NULL).
PartitionSpec = dict[str, str | None]


@dataclass
class RenameTable(Statement):
    """``ALTER TABLE t RENAME TO u``."""

    table: TableName
    new_name: TableName


@dataclass
class AlterTableColumns(Statement):
    """``ALTER TABLE t ADD COLUMNS (c type [COMMENT '...'], ...)`` or ``ALTER TABLE t ALTER [COLUMN] c
    TYPE type`` (also spelled ``CHANGE [COLUMN] c c type [COMMENT '...']``, or ``ALTER COLUMN c COMMENT '...'``),
    ``DROP COLUMN c`` / ``DROP COLUMNS (c, ...)``, ``RENAME COLUMN a TO b`` (or ``CHANGE COLUMN a b type``)."""

    table: TableName
    added: T.StructType = field(default_factory=T.StructType)
    retyped: dict[str, T.DataType] = field(default_factory=dict)
    comments: dict[str, str] = field(default_factory=dict)
    dropped: list[str] = field(default_factory=list)
    drop_if_exists: bool = False  # DROP COLUMN IF EXISTS: a name that is no column is no error
    renamed: dict[str, str] = field(default_factory=dict)  # old name: new name


@dataclass
class TruncateTable(Statement):
    table: TableName
    partition: PartitionSpec | None = None  # None: every row of the table


@dataclass
class DropPartitions(Statement):
    table: TableName
    partitions: list[PartitionSpec]
    if_exists: bool = False


@dataclass
class CreateIndex(Statement):
    """``CREATE INDEX [IF NOT EXISTS] name ON [TABLE] t [USING type] (column, ...) [OPTIONS (...)]``,
    Hudi's grammar."""

    name: str
    table: TableName
    columns: list[str]
    index_type: str | None = None  # None: a secondary index, as Hudi defaults it
    if_not_exists: bool = False
    options: dict[str, str] = field(default_factory=dict)


@dataclass
class DropIndex(Statement):
    name: str
    table: TableName
    if_exists: bool = False


@dataclass
class ShowIndexes(Statement):
    table: TableName


@dataclass
class Explain(Statement):
    """``EXPLAIN [EXTENDED | FORMATTED | ...] query``: the Spark plan of the query hudiql runs."""

    query: exp.Expression
    mode: str


@dataclass
class CreateDatabase(Statement):
    name: str
    if_not_exists: bool


@dataclass
class DropTable(Statement):
    table: TableName
    if_exists: bool


@dataclass
class Insert(Statement):
    table: TableName
    query: exp.Expression
    columns: list[str] | None = None
    partition: dict[str, exp.Expression | None] | None = None  # static values, or None for dynamic
    overwrite: bool = False  # INSERT OVERWRITE: the new rows replace the table or some partitions
    by_name: bool = False  # INSERT ... BY NAME: the query's columns fill the table's columns of their names
    schema_evolution: bool = False  # INSERT WITH SCHEMA EVOLUTION: new columns are added, narrower ones widened


@dataclass
class Query(Statement):
    expression: exp.Expression


@dataclass
class Describe(Statement):
    table: TableName
    extended: bool


@dataclass
class ShowTables(Statement):
    database: str | None


@dataclass
class ShowCreateTable(Statement):
    table: TableName


@dataclass
class Call(Statement):
    procedure: str
    args: dict[str, str]  # by name
    positional: list[str] = field(default_factory=list)


@dataclass
class SetConf(Statement):
    key: str | None  # None: list everything
    value: str | None  # None: show the key's value


@dataclass
class Use(Statement):
    database: str


@dataclass
class MergeClause:
    """One ``WHEN [NOT] MATCHED [AND cond] THEN ...`` clause."""

    matched: bool
    action: str  # "update", "delete" or "insert"
    condition: exp.Expression | None = None
    assignments: dict[str, exp.Expression] | None = None  # None: UPDATE SET * / INSERT *


@dataclass
class Merge(Statement):
    table: TableName
    alias: str | None
    source: exp.Expression  # a table or a subquery
    source_alias: str | None
    on: exp.Expression
    clauses: list[MergeClause]
    schema_evolution: bool = False  # MERGE WITH SCHEMA EVOLUTION: new columns are added, narrower ones widened


@dataclass
class Update(Statement):
    table: TableName
    alias: str | None
    assignments: dict[str, exp.Expression]
    where: exp.Expression | None


@dataclass
class Delete(Statement):
    table: TableName
    alias: str | None
    where: exp.Expression | None
