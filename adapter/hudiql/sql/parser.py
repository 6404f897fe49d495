"""SQL text -> typed statements, with sqlglot (Spark dialect; Flink DDL is recognised by its shape).

Example:
    >>> [type(s).__name__ for s in parse("SET a=1; SELECT 1")]
    ['SetConf', 'Query']
"""

from __future__ import annotations

import re

import sqlglot
from pyspark.sql import types as T
from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import TokenType

from hudiql.errors import SqlError
from hudiql.sql import statements as S
from hudiql.sql.options import FLINK, SPARK

DIALECT = "spark"

_SET_RE = re.compile(r"^SET(?:\s+(?P<key>[^=\s]+)\s*(?:=\s*(?P<value>.*?))?)?\s*$", re.I | re.S)
_USE_RE = re.compile(r"^USE\s+(?:DATABASE\s+|SCHEMA\s+)?`?(?P<db>\w+)`?\s*$", re.I)
_SHOW_TABLES_RE = re.compile(r"^SHOW\s+TABLES(?:\s+(?:IN|FROM)\s+`?(?P<db>\w+)`?)?\s*$", re.I)
_SHOW_CREATE_RE = re.compile(r"^SHOW\s+CREATE\s+TABLE\s+(?P<table>[\w.`]+)\s*$", re.I)
_CALL_RE = re.compile(r"^CALL\s+(?P<call>\w+\s*\(.*\))\s*$", re.I | re.S)


def split_statements(text: str) -> list[str]:
    """Split on ``;`` outside strings and comments; empty statements are dropped."""
    try:
        tokens = Spark().tokenize(text)
    except TokenError as e:
        raise SqlError(f"cannot read the SQL: {e}") from None
    out, start = [], 0
    for tok in tokens:
        if tok.token_type == TokenType.SEMICOLON:
            out.append(text[start:tok.start])
            start = tok.end + 1
    out.append(text[start:])
    return [s.strip() for s in out if _has_code(s)]


def _has_code(text: str) -> bool:
    try:
        return bool(Spark().tokenize(text))
    except TokenError:
        return bool(text.strip())


def parse(text: str) -> list[S.Statement]:
    return [parse_statement(s) for s in split_statements(text)]


def parse_statement(text: str) -> S.Statement:
    statement = _parse_command(text) or _parse_with_sqlglot(text)
    statement.text = text
    return statement


def _parse_command(text: str) -> S.Statement | None:
    """Statements sqlglot leaves as opaque commands."""
    stripped = _strip_comments(text)
    if m := _SET_RE.match(stripped):
        value = m["value"]
        if value is not None:
            value = value.strip()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
        return S.SetConf(m["key"], value)
    if m := _USE_RE.match(stripped):
        return S.Use(m["db"].lower())
    if m := _SHOW_TABLES_RE.match(stripped):
        return S.ShowTables(m["db"].lower() if m["db"] else None)
    if m := _SHOW_CREATE_RE.match(stripped):
        return S.ShowCreateTable(table_name_text(m["table"]))
    if m := _CALL_RE.match(stripped):
        return _parse_call(m["call"])
    return None


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return "\n".join(line.split("--")[0] if "'" not in line else line for line in text.splitlines()).strip()


def table_name_text(text: str) -> S.TableName:
    parts = [p.strip("`").lower() for p in text.split(".")]
    if len(parts) > 2 or not all(parts):
        raise SqlError(f"'{text}' is not a table name; use [database.]table")
    return S.TableName(parts[0] if len(parts) == 2 else None, parts[-1])


def _parse_call(text: str) -> S.Call:
    try:
        call = sqlglot.parse_one(text, read=DIALECT)
    except ParseError as e:
        raise SqlError(f"cannot parse CALL: {_first_line(e)}") from None
    args: dict[str, str] = {}
    for arg in call.expressions:
        if not isinstance(arg, exp.Kwarg):
            raise SqlError(f"CALL {call.name}: pass arguments by name, e.g. table => 't'")
        args[arg.this.name.lower()] = arg.expression.name if isinstance(arg.expression, exp.Literal) else arg.expression.sql(DIALECT)
    return S.Call(call.name.lower(), args)


def _first_line(e: Exception) -> str:
    return str(e).splitlines()[0]


def _parse_with_sqlglot(text: str) -> S.Statement:
    try:
        tree = sqlglot.parse_one(text, read=DIALECT)
    except (ParseError, TokenError) as e:
        raise SqlError(f"cannot parse SQL: {_first_line(e)}") from None
    if isinstance(tree, exp.Create):
        return _create(tree)
    if isinstance(tree, exp.Drop):
        if (tree.args.get("kind") or "").upper() != "TABLE":
            raise SqlError(f"DROP {tree.args.get('kind')} is not supported; use DROP TABLE")
        targets = tree.args.get("tables") or [tree.this]
        if len(targets) != 1:
            raise SqlError("DROP TABLE takes one table")
        return S.DropTable(table_name(targets[0]), bool(tree.args.get("exists")))
    if isinstance(tree, exp.Insert):
        return _insert(tree)
    if isinstance(tree, exp.Merge):
        return _merge(tree)
    if isinstance(tree, exp.Update):
        where = tree.args.get("where")
        if tree.args.get("from_") or tree.args.get("from"):
            raise SqlError("UPDATE ... FROM is not supported; use MERGE INTO")
        return S.Update(table_name(tree.this), tree.this.alias or None, _assignments(tree.expressions),
                        where.this if where else None)
    if isinstance(tree, exp.Delete):
        where = tree.args.get("where")
        if tree.args.get("using"):
            raise SqlError("DELETE ... USING is not supported; use MERGE INTO ... THEN DELETE")
        return S.Delete(table_name(tree.this), tree.this.alias or None, where.this if where else None)
    if isinstance(tree, exp.Describe):
        style = (tree.args.get("style") or "").upper()
        return S.Describe(table_name(tree.this), style in ("EXTENDED", "FORMATTED"))
    if isinstance(tree, exp.Query):
        return S.Query(tree)
    if isinstance(tree, exp.Command):
        raise SqlError(f"unsupported statement: {text.split()[0].upper()} {tree.expression.name[:40] if tree.expression else ''}".strip())
    raise SqlError(f"unsupported statement: {type(tree).__name__.upper()}")


def table_name(node: exp.Expression) -> S.TableName:
    if isinstance(node, exp.Schema):
        node = node.this
    if not isinstance(node, exp.Table) or not node.name:
        raise SqlError(f"expected a table name, got '{node.sql(DIALECT) if node else ''}'")
    if node.catalog:
        raise SqlError(f"'{node.sql(DIALECT)}': catalogs are not supported; use [database.]table")
    return S.TableName(node.db.lower() or None, node.name.lower())


def _create(tree: exp.Create) -> S.Statement:
    kind = (tree.args.get("kind") or "").upper()
    if kind in ("DATABASE", "SCHEMA"):
        return S.CreateDatabase(tree.this.name.lower(), bool(tree.args.get("exists")))
    if kind != "TABLE":
        raise SqlError(f"CREATE {kind} is not supported; use CREATE TABLE")
    options: dict[str, str] = {}
    partitioned_by: list[str] = []
    location = None
    file_format = None
    for prop in (tree.args.get("properties") or exp.Properties(expressions=[])).expressions:
        if isinstance(prop, exp.FileFormatProperty):
            file_format = prop.this.name.lower()
        elif isinstance(prop, exp.PartitionedByProperty):
            partitioned_by = [c.name for c in prop.this.expressions]
        elif isinstance(prop, exp.LocationProperty):
            location = prop.this.name
        elif isinstance(prop, exp.OptionsProperty):
            options.update(_property_pairs(prop.expressions))
        elif isinstance(prop, exp.Property):
            options.update(_property_pairs([prop]))
        else:
            raise SqlError(f"unsupported table clause: {prop.sql(DIALECT)}")
    connector = options.pop("connector", None)
    dialect = FLINK if connector is not None else SPARK
    if connector is not None and connector.lower() != "hudi":
        raise SqlError(f"'connector'='{connector}' is not supported; use 'connector'='hudi'")
    if dialect == SPARK and file_format != "hudi":
        raise SqlError("hudiql creates Hudi tables only; add USING hudi (or WITH ('connector'='hudi'))")
    location = location or options.pop("path", None)

    columns, primary_key = None, []
    target = tree.this
    if isinstance(target, exp.Schema):
        fields = []
        for item in target.expressions:
            if isinstance(item, exp.ColumnDef):
                fields.append(T.StructField(item.name, spark_type(item.args["kind"]), True))
                for constraint in item.args.get("constraints") or []:
                    if isinstance(constraint.args.get("kind"), exp.PrimaryKeyColumnConstraint):
                        primary_key.append(item.name)
            elif isinstance(item, exp.PrimaryKey):
                primary_key.extend(i.name for i in item.expressions)
            else:
                raise SqlError(f"unsupported column definition: {item.sql(DIALECT)}")
        columns = T.StructType(fields)
    query = tree.expression if isinstance(tree.expression, exp.Query) else None
    if columns is not None and query is not None:
        raise SqlError("CREATE TABLE ... AS SELECT takes its columns from the query; remove the column list")
    return S.CreateTable(
        table=table_name(target), if_not_exists=bool(tree.args.get("exists")), columns=columns,
        primary_key=primary_key, partitioned_by=partitioned_by, options=options, location=location,
        dialect=dialect, query=query,
    )


def _property_pairs(props: list[exp.Expression]) -> dict[str, str]:
    out = {}
    for prop in props:
        key = prop.this.name if isinstance(prop.this, (exp.Literal, exp.Var, exp.Identifier)) else prop.this.sql(DIALECT)
        value = prop.args.get("value")
        out[key] = value.name if isinstance(value, (exp.Literal, exp.Var, exp.Identifier)) else value.sql(DIALECT)
    return out


def _insert(tree: exp.Insert) -> S.Insert:
    if tree.args.get("overwrite"):
        raise SqlError("INSERT OVERWRITE is not supported yet; use INSERT INTO (upsert) or DELETE then INSERT")
    target = tree.this
    columns = None
    if isinstance(target, exp.Schema):
        columns = [c.name for c in target.expressions]
        target = target.this
    partition = None
    spec = target.args.get("partition") if isinstance(target, exp.Table) else None
    if spec is not None:
        partition = {}
        for item in spec.expressions:
            if isinstance(item, exp.EQ):
                partition[item.this.name] = item.expression
            else:
                partition[item.name] = None
    query = tree.expression
    if isinstance(query, exp.Values):
        query = exp.select("*").from_(exp.Subquery(this=query, alias=exp.TableAlias(this=exp.to_identifier("__values"))))
    if not isinstance(query, exp.Query):
        raise SqlError("INSERT INTO takes VALUES or a SELECT")
    return S.Insert(table_name(target), query, columns, partition)


_SIMPLE_TYPES = {
    exp.DataType.Type.BOOLEAN: T.BooleanType(), exp.DataType.Type.TINYINT: T.ByteType(),
    exp.DataType.Type.SMALLINT: T.ShortType(), exp.DataType.Type.INT: T.IntegerType(),
    exp.DataType.Type.BIGINT: T.LongType(), exp.DataType.Type.FLOAT: T.FloatType(),
    exp.DataType.Type.DOUBLE: T.DoubleType(), exp.DataType.Type.TEXT: T.StringType(),
    exp.DataType.Type.VARCHAR: T.StringType(), exp.DataType.Type.CHAR: T.StringType(),
    exp.DataType.Type.BINARY: T.BinaryType(), exp.DataType.Type.VARBINARY: T.BinaryType(),
    exp.DataType.Type.DATE: T.DateType(), exp.DataType.Type.TIMESTAMP: T.TimestampType(),
    exp.DataType.Type.TIMESTAMPLTZ: T.TimestampType(), exp.DataType.Type.TIMESTAMPTZ: T.TimestampType(),
    exp.DataType.Type.TIMESTAMPNTZ: T.TimestampNTZType(), exp.DataType.Type.DATETIME: T.TimestampType(),
}


def spark_type(node: exp.DataType) -> T.DataType:
    """A Spark type for a DDL type."""
    kind = node.this
    if kind in _SIMPLE_TYPES:
        return _SIMPLE_TYPES[kind]
    params = node.expressions
    if kind == exp.DataType.Type.DECIMAL:
        nums = [int(p.this.name) for p in params] if params else [10, 0]
        return T.DecimalType(nums[0], nums[1] if len(nums) > 1 else 0)
    if kind == exp.DataType.Type.ARRAY:
        return T.ArrayType(spark_type(params[0]), True)
    if kind == exp.DataType.Type.MAP:
        return T.MapType(spark_type(params[0]), spark_type(params[1]), True)
    if kind == exp.DataType.Type.STRUCT:
        return T.StructType([T.StructField(p.name, spark_type(p.args["kind"]), True) for p in params])
    raise SqlError(f"column type {node.sql(DIALECT)} is not supported")


def _assignments(items: list[exp.Expression]) -> dict[str, exp.Expression]:
    out: dict[str, exp.Expression] = {}
    for item in items:
        if not isinstance(item, exp.EQ) or not isinstance(item.this, exp.Column):
            raise SqlError(f"'{item.sql(DIALECT)}' is not an assignment; write SET column = expression")
        name = item.this.name
        if name.lower() in {k.lower() for k in out}:
            raise SqlError(f"column '{name}' is assigned twice")
        out[name] = item.expression
    return out


def _merge(tree: exp.Merge) -> S.Merge:
    target = tree.this
    source = tree.args["using"]
    if isinstance(source, exp.Values):
        raise SqlError("MERGE ... USING VALUES is not supported; use USING (SELECT ...) AS s")
    clauses = []
    for when in tree.args["whens"].expressions:
        if when.args.get("source"):
            raise SqlError("WHEN NOT MATCHED BY SOURCE is not supported")
        then = when.args["then"]
        condition = when.args.get("condition")
        if isinstance(then, exp.Update):
            star = len(then.expressions) == 1 and isinstance(then.expressions[0], exp.Star)
            clause = S.MergeClause(True, "update", condition, None if star else _assignments(then.expressions))
        elif isinstance(then, exp.Var) and then.name.upper() == "DELETE":
            clause = S.MergeClause(True, "delete", condition)
        elif isinstance(then, exp.Insert):
            if isinstance(then.this, exp.Star):
                clause = S.MergeClause(False, "insert", condition, None)
            else:
                columns = [c.name for c in then.this.expressions]
                values = then.expression.expressions
                if len(columns) != len(values):
                    raise SqlError(f"INSERT ({', '.join(columns)}) has {len(values)} values; give one per column")
                clause = S.MergeClause(False, "insert", condition, dict(zip(columns, values)))
        else:
            raise SqlError(f"unsupported MERGE action: {then.sql(DIALECT)}")
        if clause.matched != bool(when.args.get("matched")):
            kind = "WHEN MATCHED" if when.args.get("matched") else "WHEN NOT MATCHED"
            raise SqlError(f"{kind} cannot {clause.action.upper()}")
        clauses.append(clause)
    return S.Merge(
        table_name(target), target.alias or None, source, source.alias or None, tree.args["on"], clauses
    )
