"""``hudiql sql`` without ``-e``/``-f``: an interactive shell in the style of ``spark-sql``.

- it says that Spark is starting (seconds to tens of seconds), then shows the prompt
  ``hudiql (<database>)> ``; a statement may span lines and runs when a line ends with ``;``
  outside quotes and comments; all statements of such a line are parsed before any runs;
- ``help`` lists what can be typed; ``exit``, ``quit`` (with or without ``;``) or Ctrl-D leave;
- ``SET k=v`` / ``SET k`` / ``SET`` / ``USE db`` / any hudiql SQL; ``-i init.sql`` runs a file
  first (parsed before Spark starts: a typo in it ends the shell at once, exit code 1);
- output as ``hudiql.console`` decides: rows tab-separated (a header line after
  ``SET hudiql.cli.print.header=true``), INSERT / MERGE / UPDATE / DELETE counts as ``name=value``
  pairs, ``Time taken: ...`` and errors (one ``Error: ...`` line, then the shell goes on) on stderr;
- Ctrl-C drops the statement being typed, or cancels the running one;
- history (one entry per statement) is kept in ``~/.hudiql_history`` across sessions.

Example:
    $ hudiql sql --warehouse /data/wh
    Starting Spark...
    Spark 4.0.1 started in 14.2 seconds; type help for help
    hudiql (default)> SELECT id,
                    >   name FROM t;
    1	a
    Time taken: 0.412 seconds, Fetched 1 row(s)
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from sqlglot.dialects.spark import Spark
from sqlglot.errors import TokenError
from sqlglot.tokens import TokenType

from hudiql.console import EXIT_FAILED, EXIT_OK, Console, open_session, parse_script, read_script
from hudiql.errors import HudiqlError

HISTORY_FILE = ".hudiql_history"
HISTORY_LENGTH = 1000
EXIT_WORDS = ("quit", "exit")


def statement_complete(text: str) -> bool:
    """Whether ``text`` ends with a ``;`` that is outside quotes and comments."""
    try:
        tokens = Spark().tokenize(text)
    except TokenError:  # an open quote or comment: the statement goes on
        return False
    return bool(tokens) and tokens[-1].token_type == TokenType.SEMICOLON


def history_entry(text: str) -> str:
    """A multi-line statement as one history line (the history file holds one entry per line);
    lines that are only a ``--`` comment are left out, since joined they would hide the rest."""
    return " ".join(line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("--"))


HELP = """\
Type SQL statements ending with ';' (a statement may span lines), for example:
  CREATE TABLE t (id INT, v STRING, ts BIGINT) USING hudi TBLPROPERTIES (primaryKey='id', preCombineField='ts');
  INSERT INTO t VALUES (1, 'a', 10);      -- an upsert
  MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *;
  UPDATE t SET v = 'b' WHERE id = 1;      DELETE FROM t WHERE id = 1;
  SELECT * FROM t;      SHOW TABLES;      DESCRIBE t;      SHOW CREATE TABLE t;
  CREATE DATABASE db;   USE db;           SET k=v;         SET;
  SET hudiql.cli.print.header=true;       -- a header line above query rows
Shell commands (no ';' needed):
  help          this text
  exit, quit    leave (so does Ctrl-D)
Ctrl-C drops the statement being typed, or cancels the running one.
"""


def until_exit(text: str) -> tuple[str, bool]:
    """``text`` up to an ``exit`` or ``quit`` statement in it, and whether there was one; the
    statements before it still run (``SELECT 1; quit;``)."""
    try:
        tokens = Spark().tokenize(text)
    except TokenError:  # the parser reports the open quote
        return text, False
    first = 0
    for i, token in enumerate(tokens + [None]):
        if token is None or token.token_type == TokenType.SEMICOLON:
            words = tokens[first:i]
            if len(words) == 1 and words[0].text.lower() in EXIT_WORDS:
                return text[:words[0].start], True
            first = i + 1
    return text, False


class Shell:
    """Reads lines and runs complete statements through ``console``."""

    def __init__(self, console: Console, on_statement: Callable[[str], None] | None = None) -> None:
        self.console = console
        self.on_statement = on_statement or (lambda text: None)
        self.buffer: list[str] = []
        self.done = False

    @property
    def prompt(self) -> str:
        main = f"hudiql ({self.console.session.database})> "
        return main if not self.buffer else " " * (len(main) - 2) + "> "

    def feed(self, line: str) -> None:
        """One line of input; runs the statements it completes."""
        command = line.strip().rstrip(";").strip().lower() if not self.buffer else ""
        if command == "help":  # shell commands, as spark-sql has them: no ';' needed
            self.console.out.write(HELP)
            self.console.out.flush()
            return
        if command in EXIT_WORDS:
            self.done = True
            return
        self.buffer.append(line)
        text = "\n".join(self.buffer)
        if not text.strip():
            self.buffer = []
            return
        if not statement_complete(text):
            return
        self.buffer = []
        self.on_statement(history_entry(text))
        self.run_text(text)

    def run_text(self, text: str) -> bool:
        """Run every statement of ``text`` (all parsed first); False when one failed (the rest
        are not run)."""
        text, self.done = until_exit(text)
        try:
            statements = parse_script(text)
        except HudiqlError as e:
            self.console.error(str(e))
            return False
        return self.console.run(statements).error is None

    def loop(self, read_line: Callable[[str], str]) -> None:
        """Prompt, read and run until ``quit`` or end of input (Ctrl-D); Ctrl-C drops the
        statement being typed."""
        while not self.done:
            try:
                line = read_line(self.prompt)
            except KeyboardInterrupt:
                self.console.out.write("\n")
                self.buffer = []
                continue
            except EOFError:
                self.console.out.write("\n")
                return
            self.feed(line)


class History:
    """readline history in ``~/.hudiql_history``: one entry per statement, kept across sessions."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            import readline
        except ImportError:  # no readline (e.g. Windows without pyreadline): no history, same shell
            self.readline = None
            return
        self.readline = readline
        readline.set_auto_history(False)  # lines of a multi-line statement become one entry
        readline.set_history_length(HISTORY_LENGTH)
        if path.is_file():
            try:
                readline.read_history_file(str(path))
            except OSError:
                pass

    def add(self, statement: str) -> None:
        if self.readline is not None:
            self.readline.add_history(statement)

    def save(self) -> None:
        if self.readline is not None:
            try:
                self.readline.write_history_file(str(self.path))
            except OSError as e:
                print(f"Warning: cannot save the history to {self.path}: {e.strerror}", file=sys.stderr)


def run_shell(args: argparse.Namespace) -> int:
    """The entry point of ``hudiql sql`` with neither ``-e`` nor ``-f``; returns the exit code."""
    init = getattr(args, "init", None)
    try:  # before Spark starts: a typo in -i should not cost a JVM start
        init_statements = parse_script(read_script(init), init) if init else []
    except HudiqlError as e:
        print(f"Error: {e}", file=sys.stderr)
        return EXIT_FAILED
    console = Console(open_session(args.warehouse, sys.stderr, announce=True, hint="; type help for help"), sys.stdout, sys.stderr)
    console.run(init_statements, init)
    history = History(Path.home() / HISTORY_FILE)
    shell = Shell(console, on_statement=history.add)
    try:
        shell.loop(input)
    finally:
        history.save()
    return EXIT_OK
