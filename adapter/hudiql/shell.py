"""``hudiql sql`` without ``-e``/``-f``: an interactive shell in the style of ``spark-sql``.

- prompt ``hudiql (<database>)> ``; a statement may span lines and runs when a line ends with
  ``;`` outside quotes and comments;
- ``SET k=v`` / ``SET k`` / ``SET`` / ``USE db`` / any hudiql SQL; ``-i init.sql`` runs a file first;
- rows print tab-separated (``NULL`` for nulls), with a header line after
  ``SET hudiql.cli.print.header=true``; ``Time taken: ...`` goes to stderr;
- an error prints one ``Error: ...`` line and the shell goes on; Ctrl-C drops the statement being
  typed (or cancels the running one); ``quit;``, ``exit;`` or Ctrl-D leaves;
- history (one entry per statement) is kept in ``~/.hudiql_history`` across sessions.

Example:
    $ hudiql sql --warehouse /data/wh
    hudiql (default)> SELECT id,
                    >   name FROM t;
    1	a
    Time taken: 0.412 seconds, Fetched 1 row(s)
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from sqlglot.dialects.spark import Spark
from sqlglot.errors import TokenError
from sqlglot.tokens import TokenType

from hudiql.errors import HudiqlError
from hudiql.session import Session

PRINT_HEADER = "hudiql.cli.print.header"
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


class Shell:
    """Reads lines, runs complete statements on ``session``, prints what they return."""

    def __init__(self, session: Session, out: TextIO, err: TextIO, format_rows: Callable, on_statement: Callable[[str], None] | None = None) -> None:
        self.session = session
        self.out = out
        self.err = err
        self.format_rows = format_rows
        self.on_statement = on_statement or (lambda text: None)
        self.buffer: list[str] = []
        self.done = False

    @property
    def prompt(self) -> str:
        main = f"hudiql ({self.session.database})> "
        return main if not self.buffer else " " * (len(main) - 2) + "> "

    def feed(self, line: str) -> None:
        """One line of input; runs the statements it completes."""
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
        """Run every statement of ``text``; False when one failed (the rest are not run)."""
        from hudiql.sql.parser import split_statements

        try:
            statements = split_statements(text)
        except HudiqlError as e:
            self._error(str(e))
            return False
        for statement in statements:
            if statement.strip().rstrip(";").strip().lower() in EXIT_WORDS:
                self.done = True
                return True
            if not self._run(statement):
                return False
        return True

    def _run(self, statement: str) -> bool:
        started = time.monotonic()
        header = self.session.conf.get(PRINT_HEADER, "false").lower() == "true"
        lines: list[str] = []
        fetched = 0
        try:
            for result in self.session.execute(statement):
                if result.is_rows:
                    rows = self.format_rows(result.df)
                    lines += (["\t".join(result.df.columns)] if header else []) + rows
                    fetched += len(rows)
        except HudiqlError as e:
            self._error(str(e))
            return False
        except KeyboardInterrupt:
            self.session.spark.sparkContext.cancelAllJobs()
            self._error("interrupted")
            return False
        except Exception as e:  # a bug or an environment failure: still one line, and the shell goes on
            first = str(e).strip().splitlines()[0] if str(e).strip() else ""
            self._error(f"{type(e).__name__}: {first}")
            return False
        for line in lines:
            self.out.write(line + "\n")
        self.out.flush()
        self.err.write(f"Time taken: {time.monotonic() - started:.3f} seconds, Fetched {fetched} row(s)\n")
        self.err.flush()
        return True

    def _error(self, message: str) -> None:
        self.err.write(f"Error: {message}\n")
        self.err.flush()

    def loop(self, read_line: Callable[[str], str]) -> None:
        """Prompt, read and run until ``quit;`` or end of input (Ctrl-D); Ctrl-C drops the
        statement being typed."""
        while not self.done:
            try:
                line = read_line(self.prompt)
            except KeyboardInterrupt:
                self.out.write("\n")
                self.buffer = []
                continue
            except EOFError:
                self.out.write("\n")
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
    from hudiql import cli  # imported here: hudiql.cli imports this module
    from hudiql.session import connect

    init = getattr(args, "init", None)
    try:
        init_sql = Path(init).read_text(encoding="utf-8") if init else ""
    except OSError as e:  # before Spark starts: a typo in -i should not cost a JVM start
        print(f"Error: cannot read {init}: {e.strerror}", file=sys.stderr)
        return cli.EXIT_FAILED
    session = connect(warehouse=args.warehouse)
    cli._quiet(session)
    history = History(Path.home() / HISTORY_FILE)
    shell = Shell(session, sys.stdout, sys.stderr, cli._format_rows, on_statement=history.add)
    shell.run_text(init_sql)
    try:
        shell.loop(input)
    finally:
        history.save()
    return cli.EXIT_OK
