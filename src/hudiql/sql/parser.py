r"""SQL text -> typed statements, with sqlglot (Spark dialect; Flink DDL is recognised by its shape).

Every statement knows where it starts in the user's text, and every parse error names the
statement number, line and column in words (no sqlglot class names, no sqlglot warnings).

Example:
    >>> [type(s).__name__ for s in parse("SET a=1; SELECT 1")]
    ['SetConf', 'Query']
    >>> create = parse("CREATE TABLE sales.orders (id BIGINT, day DATE) USING hudi PARTITIONED BY (day) "
    ...                "TBLPROPERTIES (primaryKey = 'id')")[0]
    >>> create.table, create.columns.simpleString(), create.partitioned_by, create.options
    (TableName(database='sales', name='orders'), 'struct<id:bigint,day:date>', ['day'], {'primaryKey': 'id'})
    >>> parse("SELECT 1;\nSELEC 2")
    Traceback (most recent call last):
    hudiql.errors.SqlError: statement 2 (line 2, column 1): 'SELEC' does not start a statement; did you mean SELECT?
"""

from __future__ import annotations

import contextlib
import difflib
import logging
import re
from collections.abc import Iterator

import sqlglot
from pyspark.sql import types as T
from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import TokenType

from hudiql.catalog import check_name
from hudiql.errors import HudiqlError, SqlError
from hudiql.sql import statements as S
from hudiql.sql.options import FLINK, SPARK, check_column_names
from hudiql.record.schema import with_comment

DIALECT = "spark"

_SET_RE = re.compile(r"^SET(?:\s+(?P<key>[^=\s]+)\s*(?:=\s*(?P<value>.*?))?)?\s*$", re.I | re.S)
_USE_RE = re.compile(r"^USE\s+(?:DATABASE\s+|SCHEMA\s+)?`?(?P<db>\w+)`?\s*$", re.I)
_SHOW_TABLES_RE = re.compile(r"^SHOW\s+TABLES(?:\s+(?:IN|FROM)\s+`?(?P<db>\w+)`?)?\s*$", re.I)
_SHOW_CREATE_RE = re.compile(r"^SHOW\s+CREATE\s+TABLE\s+(?P<table>[\w.`]+)\s*$", re.I)
_CALL_RE = re.compile(r"^CALL\s+(?P<call>.+)$", re.I | re.S)
#: Hudi's compaction statements: ``SCHEDULE | RUN COMPACTION ON t | '<path>' [AT instant]``,
#: ``SHOW COMPACTION ON t | '<path>' [LIMIT n]``.
_COMPACTION_RE = re.compile(
    r"^(?P<verb>SCHEDULE|RUN|SHOW)\s+COMPACTION\s+ON\s+(?:'(?P<path>[^']+)'|(?P<table>[\w.`]+))"
    r"(?:\s+AT\s+(?P<at>\d+)|\s+LIMIT\s+(?P<limit>\d+))?\s*$", re.I | re.S)
_NAME = r"(?P<table>[\w.`]+)"
_TABLE_RE = re.compile(rf"^TABLE\s+{_NAME}\s*$", re.I)
_SHOW_DATABASES_RE = re.compile(r"^SHOW\s+(?:DATABASES|SCHEMAS)(?:\s+(?:LIKE\s+)?'(?P<pattern>[^']*)')?\s*$", re.I)
_SHOW_COLUMNS_RE = re.compile(rf"^SHOW\s+COLUMNS\s+(?:IN|FROM)\s+{_NAME}(?:\s+(?:IN|FROM)\s+`?(?P<db>\w+)`?)?\s*$", re.I)
_SHOW_TBLPROPERTIES_RE = re.compile(rf"^SHOW\s+TBLPROPERTIES\s+{_NAME}(?:\s*\(\s*'?(?P<key>[^')]+?)'?\s*\))?\s*$", re.I)
_SPEC = r"PARTITION\s*\(.*\)"
_SHOW_PARTITIONS_RE = re.compile(rf"^SHOW\s+PARTITIONS\s+{_NAME}(?:\s+(?P<spec>{_SPEC}))?\s*$", re.I | re.S)
_TRUNCATE_RE = re.compile(rf"^TRUNCATE\s+TABLE\s+{_NAME}(?:\s+(?P<spec>{_SPEC}))?\s*$", re.I | re.S)
_DROP_PARTITION_RE = re.compile(
    rf"^ALTER\s+TABLE\s+{_NAME}\s+DROP\s+(?P<exists>IF\s+EXISTS\s+)?(?P<specs>{_SPEC})(?P<purge>\s+PURGE)?\s*$", re.I | re.S
)
_CREATE_INDEX_RE = re.compile(
    rf"^CREATE\s+INDEX\s+(?P<exists>IF\s+NOT\s+EXISTS\s+)?`?(?P<name>\w+)`?\s+ON\s+(?:TABLE\s+)?{_NAME}\s*"
    r"(?:USING\s+(?P<type>\w+)\s*)?\((?P<columns>[^)]*)\)\s*(?:OPTIONS\s*\((?P<options>.*)\))?\s*$", re.I | re.S)
_DROP_INDEX_RE = re.compile(rf"^DROP\s+INDEX\s+(?P<exists>IF\s+EXISTS\s+)?`?(?P<name>\w+)`?\s+ON\s+(?:TABLE\s+)?{_NAME}\s*$",
                            re.I | re.S)
_SHOW_INDEXES_RE = re.compile(rf"^SHOW\s+INDEX(?:ES)?\s+(?:FROM|IN)\s+(?:TABLE\s+)?{_NAME}\s*$", re.I)
_EXPLAIN_RE = re.compile(r"^EXPLAIN(?:\s+(?P<mode>EXTENDED|FORMATTED|CODEGEN|COST|SIMPLE))?\s+(?P<query>.+)$", re.I | re.S)
_UNSET_RE = re.compile(rf"^ALTER\s+TABLE\s+{_NAME}\s+UNSET\s+TBLPROPERTIES\s*(?P<exists>IF\s+EXISTS\s*)?\((?P<keys>[^)]*)\)\s*$", re.I | re.S)

#: First words of the statements hudiql runs, for "did you mean" on a typo.
STATEMENT_WORDS = [
    "SELECT", "WITH", "VALUES", "INSERT", "MERGE", "UPDATE", "DELETE", "CREATE", "DROP", "ALTER", "DESCRIBE",
    "DESC", "SHOW", "CALL", "SET", "USE", "EXPLAIN", "FROM", "TABLE", "TRUNCATE", "SCHEDULE", "RUN",
]
#: Statements Spark SQL or Hudi have and hudiql does not (yet): refused by name, never misread.
_NOT_SUPPORTED = {
    "REFRESH": "REFRESH is not needed: every statement reads the table's latest snapshot",
    "RESET": "RESET is not supported; SET k=v again with the value you want",
    "CACHE": "CACHE TABLE is not supported; hudiql reads each table's latest snapshot",
    "UNCACHE": "UNCACHE TABLE is not supported; hudiql caches no table",
    "MSCK": "MSCK REPAIR TABLE is not needed: hudiql finds partitions from the table's timeline",
    "ANALYZE": "ANALYZE TABLE is not supported",
    "LOAD": "LOAD DATA is not supported; use INSERT INTO t SELECT * FROM parquet.`<path>`",
    "GRANT": "GRANT is not supported: hudiql has no access control",
    "REVOKE": "REVOKE is not supported: hudiql has no access control",
    "ADD": "ADD JAR/FILE is not supported",
}


class _Located(SqlError):
    """A parse error at a line and column of one statement's own text (1-based)."""

    def __init__(self, message: str, line: int = 1, column: int = 1) -> None:
        super().__init__(message)
        self.line, self.column = line, column


def _position(text: str, offset: int) -> tuple[int, int]:
    """1-based line and column of ``offset`` in ``text``."""
    before = text[:offset]
    return before.count("\n") + 1, offset - (before.rfind("\n") + 1) + 1


def _pieces(text: str) -> list[tuple[str, int]]:
    """The statements of ``text`` split on ``;`` outside strings and comments, each with the
    offset where its code starts; empty statements are dropped."""
    try:
        tokens = Spark().tokenize(text)
    except TokenError:
        opened = _open_quote(text)
        line, column = _position(text, opened)
        number = len(split_statements(text[:opened] + "x"))  # the statements before, and this one
        raise SqlError(f"statement {number} (line {line}, column {column}): a quote or comment is never closed") from None
    out, first = [], None
    for tok in tokens:
        if tok.token_type == TokenType.SEMICOLON:
            if first is not None:
                out.append((text[first:tok.start].strip(), first))
            first = None
        elif first is None:
            # A token's start skips the comments before it; the statement starts at its first token.
            first = tok.start
    if first is not None:
        out.append((text[first:].strip(), first))
    return out


def _open_quote(text: str) -> int:
    """Where the quote or block comment that the tokenizer could not close starts."""
    i, quote = 0, None
    opened = 0
    while i < len(text):
        ch = text[i]
        if quote is None:
            if text.startswith("--", i):
                i = text.find("\n", i) if "\n" in text[i:] else len(text)
                continue
            if text.startswith("/*", i):
                end = text.find("*/", i + 2)
                if end < 0:
                    return i
                i = end + 2
                continue
            if ch in "'\"`":
                quote, opened = ch, i
        elif ch == "\\":
            i += 1
        elif ch == quote:
            quote = None
        i += 1
    return opened if quote else 0


def split_statements(text: str) -> list[str]:
    """Split on ``;`` outside strings and comments; empty statements are dropped."""
    return [piece for piece, _ in _pieces(text)]


def parse(text: str) -> list[S.Statement]:
    """Every statement of ``text``, parsed before anything runs; a parse error names the
    statement's number and the line and column in ``text``."""
    out = []
    for number, (piece, offset) in enumerate(_pieces(text), start=1):
        line, column = _position(text, offset)
        try:
            statement = parse_statement(piece)
        except RecursionError:
            raise SqlError(f"statement {number} (line {line}, column {column}): it nests its expressions too deeply "
                           "to parse; split it (a CTE or a view per part)") from None
        except _Located as e:
            at_line = line + e.line - 1
            at_column = column + e.column - 1 if e.line == 1 else e.column
            raise SqlError(f"statement {number} (line {at_line}, column {at_column}): {e}") from None
        except HudiqlError as e:  # a refusal while parsing (a bad column list, ...): same class, placed
            raise type(e)(f"statement {number} (line {line}, column {column}): {e}") from None
        statement.number, statement.line, statement.column = number, line, column
        out.append(statement)
    return out


def parse_statement(text: str) -> S.Statement:
    """One statement (no ``;``); errors are ``SqlError``, positions relative to ``text``."""
    _check_first_word(text)
    _check_trailing_commas(text)
    plain, evolving = _without_schema_evolution(text)
    statement = _parse_command(plain) or _parse_with_sqlglot(plain)
    if evolving:
        assert isinstance(statement, S.Insert | S.Merge)  # the clause is only taken after INSERT or MERGE
        statement.schema_evolution = True
    statement.text = text
    return statement


_SCHEMA_EVOLUTION = ["WITH", "SCHEMA", "EVOLUTION"]


def _without_schema_evolution(text: str) -> tuple[str, bool]:
    """``text`` without Spark's ``WITH SCHEMA EVOLUTION`` after its INSERT or MERGE keyword (which
    sqlglot does not parse), and whether it was there. The clause is blanked out, so that error
    positions in the rest of the text stay where they were.

    >>> _without_schema_evolution("MERGE WITH SCHEMA EVOLUTION INTO t USING s ON t.id = s.id")
    ('MERGE                       INTO t USING s ON t.id = s.id', True)
    """
    tokens = Spark().tokenize(text)
    depth = 0
    for i, tok in enumerate(tokens):
        depth += {TokenType.L_PAREN: 1, TokenType.R_PAREN: -1}.get(tok.token_type, 0)
        if depth == 0 and tok.token_type in (TokenType.INSERT, TokenType.MERGE):
            words = tokens[i + 1:i + 1 + len(_SCHEMA_EVOLUTION)]
            if [w.text.upper() for w in words] == _SCHEMA_EVOLUTION:
                start, end = words[0].start, words[-1].end + 1
                return text[:start] + " " * (end - start) + text[end:], True
            break
    return text, False


def _check_first_word(text: str) -> None:
    word = re.match(r"\s*([A-Za-z_]+)", _strip_comments(text))
    if word is None:
        if text.lstrip().startswith("("):
            return  # a parenthesised query
        raise _Located("a statement starts with a keyword such as SELECT, INSERT or CREATE")
    first = word[1].upper()
    if first in _NOT_SUPPORTED:
        raise _Located(_NOT_SUPPORTED[first])
    if first not in STATEMENT_WORDS:
        guess = difflib.get_close_matches(first, STATEMENT_WORDS, n=1, cutoff=0.6)
        hint = f"; did you mean {guess[0]}?" if guess else "; statements start with SELECT, INSERT, MERGE, UPDATE, DELETE, CREATE, ..."
        raise _Located(f"'{word[1]}' does not start a statement{hint}")


def _check_trailing_commas(text: str) -> None:
    """Spark refuses a comma before ``)`` or ``FROM``; sqlglot would drop it in silence."""
    tokens = Spark().tokenize(text)
    for tok, nxt in zip(tokens, tokens[1:]):
        if tok.token_type == TokenType.COMMA and nxt.token_type in (TokenType.R_PAREN, TokenType.FROM):
            raise _Located(f"a comma before '{nxt.text}': remove the trailing comma", tok.line, tok.col)


@contextlib.contextmanager
def _sqlglot_quiet() -> Iterator[None]:
    """sqlglot logs a warning when it falls back to an opaque command; hudiql decides itself."""
    logger = logging.getLogger("sqlglot")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


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
    if m := _COMPACTION_RE.match(stripped):
        return _compaction(m)
    if m := _TABLE_RE.match(stripped):  # TABLE t: Spark's short SELECT * FROM t
        return S.Query(exp.select("*").from_(exp.to_table(str(table_name_text(m["table"])))))
    if m := _SHOW_DATABASES_RE.match(stripped):
        return S.ShowDatabases(m["pattern"])
    if m := _SHOW_COLUMNS_RE.match(stripped):
        table = table_name_text(m["table"])
        if m["db"]:
            table = S.TableName(check_name("database", m["db"]), table.name)
        return S.ShowColumns(table)
    if m := _SHOW_TBLPROPERTIES_RE.match(stripped):
        return S.ShowTblProperties(table_name_text(m["table"]), m["key"])
    if m := _SHOW_PARTITIONS_RE.match(stripped):
        return S.ShowPartitions(table_name_text(m["table"]), _one_spec(m["spec"]) if m["spec"] else None)
    if m := _TRUNCATE_RE.match(stripped):
        return S.TruncateTable(table_name_text(m["table"]), _one_spec(m["spec"]) if m["spec"] else None)
    if m := _DROP_PARTITION_RE.match(stripped):
        if m["purge"]:
            raise SqlError("DROP PARTITION ... PURGE is not supported: a dropped partition's files stay until "
                           "the table is cleaned; drop it without PURGE")
        return S.DropPartitions(table_name_text(m["table"]), _partition_specs(m["specs"]), bool(m["exists"]))
    if m := _CREATE_INDEX_RE.match(stripped):
        columns = [c.strip().strip("`") for c in m["columns"].split(",") if c.strip()]
        options = _option_pairs(m["options"]) if m["options"] else {}
        return S.CreateIndex(m["name"], table_name_text(m["table"]), columns, m["type"], bool(m["exists"]), options)
    if m := _DROP_INDEX_RE.match(stripped):
        return S.DropIndex(m["name"], table_name_text(m["table"]), bool(m["exists"]))
    if m := _SHOW_INDEXES_RE.match(stripped):
        return S.ShowIndexes(table_name_text(m["table"]))
    if stripped.upper().startswith("SHOW"):
        raise SqlError(
            "SHOW supports TABLES, DATABASES, COLUMNS IN t, TBLPROPERTIES t, PARTITIONS t, INDEXES FROM t, COMPACTION ON t and "
            "CREATE TABLE t"
        )
    if m := _EXPLAIN_RE.match(stripped):
        return _explain(m["query"], (m["mode"] or "simple").lower())
    if m := _UNSET_RE.match(stripped):
        keys = [k.strip().strip("'\"`") for k in m["keys"].split(",") if k.strip()]
        if not keys:
            raise SqlError("UNSET TBLPROPERTIES needs at least one key, e.g. UNSET TBLPROPERTIES ('hoodie.parquet.max.file.size')")
        return S.AlterTableProperties(table_name_text(m["table"]), {}, keys, bool(m["exists"]))
    return None


def _compaction(m: re.Match) -> S.Call:
    """Hudi's compaction statements, as the procedures they stand for (``run_compaction``,
    ``show_compaction``): RUN without AT schedules a compaction and runs every pending one."""
    verb = m["verb"].upper()
    target = {"path": m["path"]} if m["path"] else {"table": m["table"]}
    if verb == "SHOW":
        if m["at"]:
            raise SqlError("SHOW COMPACTION ON t takes LIMIT n, not AT")
        return S.Call("show_compaction", {**target, **({"limit": m["limit"]} if m["limit"] else {})})
    if m["limit"]:
        raise SqlError(f"{verb} COMPACTION ON t takes AT <instant>, not LIMIT")
    if verb == "SCHEDULE" and m["at"]:
        raise SqlError("SCHEDULE COMPACTION picks its own instant time; RUN COMPACTION ON t AT <instant> runs a pending plan")
    if m["at"]:
        return S.Call("run_compaction", {"op": "run", **target, "timestamp": m["at"]})
    return S.Call("run_compaction", {"op": "schedule" if verb == "SCHEDULE" else "scheduleandexecute", **target})


def _partition_specs(text: str) -> list[S.PartitionSpec]:
    """``PARTITION (c = 'v', ...)[, PARTITION (...)]``: each spec as column -> value (None: NULL)."""
    specs: list[S.PartitionSpec] = []
    depth, start = 0, 0
    for token in Spark().tokenize(text):
        if token.token_type == TokenType.L_PAREN:
            depth += 1
            if depth == 1:
                start = token.end + 1
        elif token.token_type == TokenType.R_PAREN:
            depth -= 1
            if depth == 0:
                specs.append(_spec(text[start:token.start]))
        elif depth == 0 and token.token_type not in (TokenType.COMMA, TokenType.PARTITION):
            raise SqlError(f"'{token.text}' is not part of a partition spec; write PARTITION (col = 'value', ...)")
    if depth != 0 or not specs:
        raise SqlError("a partition spec is PARTITION (col = 'value', ...)")
    return specs


def _one_spec(text: str) -> S.PartitionSpec:
    specs = _partition_specs(text)
    if len(specs) != 1:
        raise SqlError("name one partition: PARTITION (col = 'value', ...)")
    return specs[0]


def _spec(inner: str) -> S.PartitionSpec:
    """``c = 'v', d = 1`` as {'c': 'v', 'd': '1'}."""
    try:
        with _sqlglot_quiet():
            items = sqlglot.parse_one(f"SELECT {inner}", read=DIALECT).expressions
    except (ParseError, TokenError):
        items = []
    spec: S.PartitionSpec = {}
    for item in items:
        if not (isinstance(item, exp.EQ) and isinstance(item.this, exp.Column)
                and isinstance(item.expression, (exp.Literal, exp.Null))):
            raise SqlError(f"'{inner.strip()}' is not a partition spec; write PARTITION (col = 'value', ...)")
        name = item.this.name
        if name.lower() in {k.lower() for k in spec}:
            raise SqlError(f"PARTITION ({inner.strip()}) names {name} twice")
        spec[name] = None if isinstance(item.expression, exp.Null) else item.expression.name
    if not spec:
        raise SqlError(f"'{inner.strip()}' is not a partition spec; write PARTITION (col = 'value', ...)")
    return spec


def _explain(text: str, mode: str) -> S.Explain:
    inner = parse_statement(text)
    if not isinstance(inner, S.Query):
        raise SqlError("EXPLAIN shows the plan of a query; write EXPLAIN SELECT ...")
    return S.Explain(inner.expression, mode)


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return "\n".join(line.split("--")[0] if "'" not in line else line for line in text.splitlines()).strip()


def table_name_text(text: str) -> S.TableName:
    """``[db.]table`` as written in a command or a procedure argument (the same rule as ``table_name``)."""
    parts = [p.strip().strip("`") for p in text.split(".")]
    if len(parts) > 2 or not all(parts):
        raise SqlError(f"'{text}' is not a table name; use [database.]table")
    return _table_name(parts[0] if len(parts) == 2 else None, parts[-1])


def _parse_call(text: str) -> S.Call:
    """``[system.]name(args)``: arguments by name (``limit => 5``) after those by position."""
    try:
        with _sqlglot_quiet():
            call = sqlglot.parse_one(text, read=DIALECT)
    except ParseError as e:
        raise _syntax_error(e) from None
    if isinstance(call, exp.Dot) and call.this.name.lower() == "system":
        call = call.expression
    if not isinstance(call, exp.Func):
        raise SqlError(f"CALL {text}: write CALL procedure(arg => value, ...); CALL help() lists the procedures")
    name = call.sql_name() if not isinstance(call, exp.Anonymous) else call.name
    args: dict[str, str] = {}
    positional: list[str] = []
    for arg in call.expressions if isinstance(call, exp.Anonymous) else call.iter_expressions():
        value = arg.expression if isinstance(arg, exp.Kwarg) else arg
        text_value = value.name if isinstance(value, exp.Literal) else value.sql(DIALECT)
        if isinstance(arg, exp.Kwarg):
            args[arg.this.name.lower()] = text_value
        elif args:
            raise SqlError(f"CALL {name}: arguments by position come before those by name")
        else:
            positional.append(text_value)
    return S.Call(name.lower(), args, positional)


def _syntax_error(error: ParseError) -> _Located:
    """sqlglot's parse error in words: where it is and the text there, without class names."""
    detail = error.errors[0] if error.errors else {}
    near = (detail.get("highlight") or "").strip()
    description = detail.get("description") or ""
    if description.startswith("Expecting "):
        what = f"expected {description.removeprefix('Expecting ')}"
    elif "missing" in description or description.startswith("Expected"):
        what = "the statement ends too early" if not detail.get("end_context") else "something is missing"
    else:
        what = "unexpected text"
    where = f" near '{near}'" if near else ""
    return _Located(f"syntax error{where}: {what}", detail.get("line") or 1, max(1, (detail.get("col") or 1) - len(near) + 1))


def _parse_with_sqlglot(text: str) -> S.Statement:
    try:
        with _sqlglot_quiet():
            tree = sqlglot.parse_one(text, read=DIALECT)
    except ParseError as e:
        raise _syntax_error(e) from None
    except TokenError:
        raise SqlError("a quote or comment is never closed") from None
    _check_time_travel(tree)
    if isinstance(tree, exp.Create):
        return _create(tree, text)
    if isinstance(tree, exp.Alter):
        return _alter(tree)
    if isinstance(tree, exp.Drop):
        kind = (tree.args.get("kind") or "").upper()
        if kind not in ("TABLE", "VIEW"):
            if kind == "INDEX":
                raise SqlError("DROP INDEX names the index and its table: DROP INDEX [IF EXISTS] name ON t")
            raise SqlError(f"DROP {kind} is not supported; use DROP TABLE or DROP VIEW")
        targets = tree.args.get("tables") or [tree.this]
        if len(targets) != 1:
            raise SqlError(f"DROP {kind} takes one name")
        if kind == "VIEW":
            return S.DropView(table_name(targets[0]), bool(tree.args.get("exists")))
        return S.DropTable(table_name(targets[0]), bool(tree.args.get("exists")))
    if isinstance(tree, exp.Insert):
        return _insert(tree)
    if isinstance(tree, exp.Merge):
        return _merge(tree)
    if isinstance(tree, exp.Update):
        where = tree.args.get("where")
        if tree.args.get("from_") or tree.args.get("from"):
            raise SqlError("UPDATE ... FROM is not supported; use MERGE INTO")
        if not tree.expressions:
            raise SqlError("UPDATE needs SET: UPDATE t SET column = value [WHERE ...]")
        return S.Update(table_name(tree.this), tree.this.alias or None, _assignments(tree.expressions),
                        where.this if where else None)
    if isinstance(tree, exp.Delete):
        where = tree.args.get("where")
        if tree.args.get("using"):
            raise SqlError("DELETE ... USING is not supported; use MERGE INTO ... THEN DELETE")
        return S.Delete(table_name(tree.this), tree.this.alias or None, where.this if where else None)
    if isinstance(tree, exp.Describe):
        style = (tree.args.get("style") or "").upper()
        if style == "HISTORY":  # a Delta user's spelling of CALL show_commits
            return S.Call("show_commits", {"table": str(table_name(tree.this))})
        if style not in ("", "EXTENDED", "FORMATTED"):
            raise SqlError(f"DESCRIBE {style} is not supported; use DESCRIBE [EXTENDED] t")
        kind = (tree.args.get("kind") or "TABLE").upper()
        if kind != "TABLE" or not isinstance(tree.this, exp.Table):
            raise SqlError("DESCRIBE takes a table or view: DESCRIBE [EXTENDED] t (databases: SHOW DATABASES)")
        return S.Describe(table_name(tree.this), style in ("EXTENDED", "FORMATTED"))
    if isinstance(tree, exp.Values):
        return S.Query(_values_query(tree))
    if isinstance(tree, exp.Query):
        return S.Query(tree)
    words = " ".join(text.split()[:2]).upper()
    raise SqlError(f"{words} ... is not a statement hudiql runs; see the README's list of supported SQL")


def _check_time_travel(tree: exp.Expression) -> None:
    """``TIMESTAMP AS OF`` takes an instant or a time, as a literal; ``VERSION AS OF`` is Delta's
    and has no meaning on a Hudi timeline."""
    for node in tree.find_all(exp.Table):
        version = node.args.get("version")
        if version is None:
            continue
        if str(version.this).upper() != "TIMESTAMP":
            raise SqlError(
                f"'{node.name} {version.sql(DIALECT)}': a Hudi table has no version numbers; read it as of an instant: "
                f"{node.name} TIMESTAMP AS OF '<instant>' (CALL show_commits(table => '{node.name}') lists them)"
            )
        if not isinstance(version.expression, exp.Literal):
            raise SqlError(f"'{node.name} {version.sql(DIALECT)}': TIMESTAMP AS OF takes a quoted instant "
                           "('yyyyMMddHHmmss[SSS]') or time ('yyyy-MM-dd[ HH:mm:ss[.SSS]]')")


def table_name(node: exp.Expression) -> S.TableName:
    """A table (or view) name; each part is an identifier, never a path."""
    if isinstance(node, exp.Schema):
        node = node.this
    if not isinstance(node, exp.Table) or not node.name:
        raise SqlError(f"expected a table name, got '{node.sql(DIALECT) if node else ''}'")
    if node.catalog:
        raise SqlError(f"'{node.sql(DIALECT)}': catalogs are not supported; use [database.]table")
    return _table_name(node.db or None, node.name)


def _table_name(database: str | None, table: str) -> S.TableName:
    """Each part is an identifier, never a path (``check_name``), compared without case."""
    return S.TableName(check_name("database", database) if database else None, check_name("table", table))


def _create(tree: exp.Create, text: str) -> S.Statement:
    kind = (tree.args.get("kind") or "").upper()
    if kind in ("DATABASE", "SCHEMA"):
        # sqlglot reads the name of CREATE SCHEMA s as a database part of a table name
        name = tree.this.name or tree.this.args.get("db") and tree.this.db
        return S.CreateDatabase(check_name("database", name or ""), bool(tree.args.get("exists")))
    if kind == "VIEW":
        return _create_view(tree, text)
    if kind == "INDEX":
        raise SqlError("CREATE INDEX takes a name, a table and a column: CREATE INDEX name ON t [USING secondary_index] (column)")
    if kind != "TABLE":
        raise SqlError(f"CREATE {kind} is not supported; use CREATE TABLE, CREATE VIEW or CREATE DATABASE")
    if tree.args.get("replace"):
        raise SqlError("CREATE OR REPLACE TABLE is not supported yet; DROP TABLE then CREATE TABLE")
    options: dict[str, str] = {}
    partitioned_by: list[str] = []
    location = None
    file_format = None
    like = None
    for prop in (tree.args.get("properties") or exp.Properties(expressions=[])).expressions:
        if isinstance(prop, exp.FileFormatProperty):
            file_format = prop.this.name.lower()
        elif isinstance(prop, exp.PartitionedByProperty):
            partitioned_by = [c.name for c in prop.this.expressions]
        elif isinstance(prop, exp.LocationProperty):
            location = prop.this.name
            if not location.strip():
                raise SqlError("LOCATION '' is empty; give a folder, e.g. LOCATION '/data/orders'")
        elif isinstance(prop, exp.LikeProperty):
            like = table_name(prop.this)
        elif isinstance(prop, exp.OptionsProperty):
            options.update(_property_pairs(prop.expressions))
        elif isinstance(prop, exp.Property):
            options.update(_property_pairs([prop]))
        else:
            raise SqlError(f"unsupported table clause: {prop.sql(DIALECT)}")
    if like is not None:
        if file_format not in (None, "hudi"):
            raise SqlError(f"CREATE TABLE ... LIKE makes a Hudi table; remove USING {file_format}")
        if partitioned_by or isinstance(tree.this, exp.Schema) or tree.expression is not None:
            raise SqlError("CREATE TABLE ... LIKE copies columns and partitioning; remove the column list, PARTITIONED BY or AS SELECT")
        return S.CreateTableLike(table_name(tree.this), like, bool(tree.args.get("exists")), options, location)
    connector = options.pop("connector", None)
    dialect = FLINK if connector is not None else SPARK
    if connector is not None and connector.lower() != "hudi":
        raise SqlError(f"'connector'='{connector}' is not supported; use 'connector'='hudi'")
    if dialect == SPARK and file_format != "hudi":
        raise SqlError("hudiql creates Hudi tables only; add USING hudi (or WITH ('connector'='hudi'))")
    path = options.pop("path", None)
    if path is not None and location is not None and path != location:
        raise SqlError(f"OPTIONS path '{path}' and LOCATION '{location}' differ; give the folder once")
    location = location or path

    columns, primary_key = None, []
    target = tree.this
    if isinstance(target, exp.Schema):
        fields = []
        if not target.expressions:
            raise SqlError("CREATE TABLE needs at least one column, e.g. CREATE TABLE t (id BIGINT, ...)")
        for item in target.expressions:
            if isinstance(item, exp.ColumnDef):
                if item.args.get("kind") is None:
                    raise SqlError(f"column '{item.name}' has no type; write {item.name} <type>, e.g. {item.name} STRING")
                fields.append(_field(item))
                for constraint in item.args.get("constraints") or []:
                    if isinstance(constraint.args.get("kind"), exp.PrimaryKeyColumnConstraint):
                        primary_key.append(item.name)
            elif isinstance(item, exp.PrimaryKey):
                primary_key.extend(i.name for i in item.expressions)
            else:
                raise SqlError(f"unsupported column definition: {item.sql(DIALECT)}")
        columns = T.StructType(fields)
    query = tree.expression if isinstance(tree.expression, exp.Query) else None
    if columns is not None:
        check_column_names(columns)
    if columns is not None and query is not None:
        raise SqlError("CREATE TABLE ... AS SELECT takes its columns from the query; remove the column list")
    return S.CreateTable(
        table=table_name(target), if_not_exists=bool(tree.args.get("exists")), columns=columns,
        primary_key=primary_key, partitioned_by=partitioned_by, options=options, location=location,
        dialect=dialect, query=query,
    )


def _create_view(tree: exp.Create, text: str) -> S.CreateView:
    query = tree.expression
    if not isinstance(query, exp.Query):
        raise SqlError("CREATE VIEW needs AS SELECT ...: CREATE [OR REPLACE] [TEMPORARY] VIEW v AS SELECT ...")
    props = (tree.args.get("properties") or exp.Properties(expressions=[])).expressions
    temporary = any(isinstance(p, exp.TemporaryProperty) for p in props)
    others = [p for p in props if not isinstance(p, exp.TemporaryProperty)]
    if others or isinstance(tree.this, exp.Schema):
        raise SqlError("CREATE VIEW takes a name and AS SELECT only (no column list or properties)")
    if tree.args.get("replace") and tree.args.get("exists"):
        raise SqlError("CREATE OR REPLACE VIEW and IF NOT EXISTS cannot be used together")
    found = re.search(r"\bAS\b", text, re.I)
    sql = query.sql(DIALECT)
    if found is not None:
        # The query as the user wrote it, when sqlglot reads it back to the same tree.
        candidate = text[found.end():].strip()
        with contextlib.suppress(ParseError, TokenError), _sqlglot_quiet():
            if sqlglot.parse_one(candidate, read=DIALECT) == query:
                sql = candidate
    return S.CreateView(table_name(tree.this), query, sql, temporary, bool(tree.args.get("replace")),
                        bool(tree.args.get("exists")))


def _alter(tree: exp.Alter) -> S.AlterTableProperties | S.AlterTableColumns | S.RenameTable:
    if (tree.args.get("kind") or "").upper() != "TABLE":
        raise SqlError("ALTER supports ALTER TABLE t SET TBLPROPERTIES (...) and UNSET TBLPROPERTIES (...)")
    actions = tree.args.get("actions") or []
    if len(actions) == 1 and isinstance(actions[0], exp.AlterSet):
        props = actions[0].expressions
        if len(props) == 1 and isinstance(props[0], exp.Properties):
            return S.AlterTableProperties(table_name(tree.this), _property_pairs(props[0].expressions), [])
    if len(actions) == 1 and isinstance(actions[0], exp.AlterRename):
        return S.RenameTable(table_name(tree.this), table_name(actions[0].this))
    if len(actions) == 1 and isinstance(actions[0], exp.Schema) and actions[0].expressions:
        fields = []
        for item in actions[0].expressions:
            if not isinstance(item, exp.ColumnDef) or item.args.get("kind") is None:
                raise SqlError(f"ADD COLUMNS takes name and type, e.g. ADD COLUMNS (c STRING); got {item.sql(DIALECT)}")
            fields.append(_field(item))
        added = T.StructType(fields)
        check_column_names(added)
        return S.AlterTableColumns(table_name(tree.this), added=added)
    if len(actions) == 1 and isinstance(actions[0], exp.AlterColumn) and (
            actions[0].args.get("dtype") is not None or isinstance(actions[0].args.get("comment"), exp.Literal)):
        action = actions[0]
        renamed = action.args.get("rename_to")
        dtype = action.args.get("dtype")
        comment = action.args.get("comment") if isinstance(action.args.get("comment"), exp.Literal) else None
        return S.AlterTableColumns(table_name(tree.this),
                                   retyped={action.name: spark_type(dtype)} if dtype is not None else {},
                                   comments={action.name: comment.name} if comment is not None else {},
                                   renamed=_renamed(action.name, renamed.name) if renamed is not None else {})
    if len(actions) == 1 and isinstance(actions[0], exp.RenameColumn):
        return S.AlterTableColumns(table_name(tree.this),
                                   renamed=_renamed(_top_level(actions[0].this), actions[0].args["to"].name))
    if len(actions) == 1 and isinstance(actions[0], exp.Drop) and (actions[0].args.get("kind") or "").upper() in (
            "COLUMN", "COLUMNS"):
        named = [n for t in actions[0].args.get("tables") or [] for n in (t.expressions if isinstance(t, exp.Schema) else [t])]
        return S.AlterTableColumns(table_name(tree.this), dropped=[_top_level(n) for n in named],
                                   drop_if_exists=bool(actions[0].args.get("exists")))
    raise SqlError(
        "ALTER TABLE supports SET / UNSET TBLPROPERTIES (...), ADD COLUMNS (...), ALTER COLUMN c TYPE t, "
        "DROP COLUMN c, RENAME COLUMN a TO b, RENAME TO and DROP PARTITION (...)"
    )


def _top_level(column: exp.Expression) -> str:
    """The name of a column an ALTER drops or renames: a top-level one (a field of a STRUCT column
    is refused: hudiql rewrites columns, not fields)."""
    if isinstance(column, exp.Column) and len(column.parts) > 1:
        raise SqlError(f"{column.sql(DIALECT)} is a field of a STRUCT column; DROP and RENAME COLUMN take a column of "
                       "the table")
    return column.name


def _renamed(old: str, new: str) -> dict[str, str]:
    """A column's new name (none when it is its own), checked as CREATE checks names."""
    if new.lower() == old.lower():
        return {}
    check_column_names(T.StructType([T.StructField(new, T.StringType())]))
    return {old: new}


def _field(column: exp.ColumnDef) -> T.StructField:
    """A column definition's field, its ``COMMENT '...'`` kept as Spark keeps it."""
    comments = [c.args["kind"].this.name for c in column.args.get("constraints") or []
                if isinstance(c.args.get("kind"), exp.CommentColumnConstraint)]
    return with_comment(T.StructField(column.name, spark_type(column.args["kind"]), True), comments[-1] if comments else None)


def _property_pairs(props: list[exp.Expression]) -> dict[str, str]:
    out = {}
    for prop in props:
        key = prop.this.name if isinstance(prop.this, (exp.Literal, exp.Var, exp.Identifier)) else prop.this.sql(DIALECT)
        value = prop.args.get("value")
        if value is None:
            raise SqlError(f"unsupported table clause: {prop.sql(DIALECT)}; options are given as TBLPROPERTIES ('key' = 'value')")
        out[key] = value.name if isinstance(value, (exp.Literal, exp.Var, exp.Identifier)) else value.sql(DIALECT)
    return out


_OPTION_RE = re.compile(r"""\s*[`'"]?(?P<key>[\w.]+)[`'"]?\s*=\s*'(?P<value>[^']*)'\s*(?:,|$)""")


def _option_pairs(text: str) -> dict[str, str]:
    """``key = 'value', ...`` of an OPTIONS clause."""
    pairs, pos = {}, 0
    while pos < len(text.strip()):
        m = _OPTION_RE.match(text, pos)
        if m is None:
            raise SqlError(f"OPTIONS ({text}) is not valid; give OPTIONS (key = 'value', ...)")
        pairs[m["key"]] = m["value"]
        pos = m.end()
    return pairs


def _values_query(values: exp.Values) -> exp.Query:
    """``VALUES (...), (...)`` as ``SELECT * FROM (VALUES ...)``, which every planner takes."""
    return exp.select("*").from_(exp.Subquery(this=values, alias=exp.TableAlias(this=exp.to_identifier("__values"))))


def _with(query: exp.Query, ctes: exp.With) -> exp.Query:
    """``query`` inside the CTEs a statement's WITH gives (kept in front of the query's own)."""
    if not isinstance(query, exp.Select):
        query = exp.select("*").from_(exp.Subquery(this=query, alias=exp.TableAlias(this=exp.to_identifier("__query"))))
    own = query.args.get("with_")
    merged = ctes.copy()
    if own is not None:
        merged.set("expressions", [*merged.expressions, *own.expressions])
    query.set("with_", merged)
    return query


def _insert(tree: exp.Insert) -> S.Insert:
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
        query = _values_query(query)
    if not isinstance(query, exp.Query):
        raise SqlError(f"INSERT {'OVERWRITE' if tree.args.get('overwrite') else 'INTO'} takes VALUES or a SELECT")
    if tree.args.get("with_") is not None:  # WITH c AS (...) INSERT INTO t SELECT ... FROM c
        query = _with(query, tree.args["with_"])
    by_name = bool(tree.args.get("by_name"))
    if by_name and columns is not None:
        raise SqlError("INSERT ... BY NAME takes the columns from the query; remove the column list")
    return S.Insert(table_name(target), query, columns, partition, bool(tree.args.get("overwrite")), by_name)


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
        precision, scale = nums[0], nums[1] if len(nums) > 1 else 0
        if not 1 <= precision <= 38 or not 0 <= scale <= precision or len(nums) > 2:
            raise SqlError(f"{node.sql(DIALECT)}: DECIMAL(precision, scale) needs 1 <= precision <= 38 and 0 <= scale <= precision")
        return T.DecimalType(precision, scale)
    if kind == exp.DataType.Type.ARRAY and len(params) == 1:
        return T.ArrayType(spark_type(params[0]), True)
    if kind == exp.DataType.Type.MAP and len(params) == 2:
        return T.MapType(spark_type(params[0]), spark_type(params[1]), True)
    if kind in (exp.DataType.Type.ARRAY, exp.DataType.Type.MAP):
        raise SqlError(f"column type {node.sql(DIALECT)} is not complete; write ARRAY<type> or MAP<key type, value type>")
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
    if tree.args.get("with_") is not None:  # WITH s AS (...) MERGE INTO t USING s ...
        inner = exp.select("*").from_(source.copy())
        source = exp.Subquery(this=_with(inner, tree.args["with_"]),
                              alias=exp.TableAlias(this=exp.to_identifier(source.alias_or_name)))
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
