"""The interactive ``hudiql sql`` shell: its logic on a stand-in session, then the real thing in a
pseudo-terminal (one JVM)."""

from __future__ import annotations

import io
import os
import pty
import re
import select
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from hudiql.errors import SqlError
from hudiql.shell import History, Shell, history_entry, statement_complete


@pytest.mark.parametrize("text, complete", [
    ("SELECT 1;", True),
    ("SELECT 1", False),
    ("SELECT ';'", False),
    ("SELECT 'a;", False),  # an open quote
    ("SELECT 1 /* ; */", False),
    ("SELECT 1 /* open ;", False),  # an open comment
    ("SELECT 1 -- ;", False),
    ("SELECT 1; -- done", True),
    ("SELECT `a;b`;", True),
    ("SELECT\n  1\n;", True),
])
def test_statement_complete(text, complete):
    assert statement_complete(text) is complete


def test_history_entry_is_one_line():
    assert history_entry("-- why\nSELECT a,\n   b\nFROM t;") == "SELECT a, b FROM t;"


@dataclass
class FakeFrame:
    columns: list[str]
    rows: list[tuple]


@dataclass
class FakeResult:
    df: FakeFrame
    is_rows: bool


class FakeSession:
    """Answers like a hudiql Session: SET stores, USE switches, SELECT x returns a row, FAIL raises."""

    def __init__(self) -> None:
        self.database = "default"
        self.conf: dict[str, str] = {}
        self.ran: list[str] = []

    def execute(self, text: str) -> list[FakeResult]:
        self.ran.append(text)
        words = text.split()
        if words[0].upper() == "SET":
            key, _, value = words[1].partition("=")
            self.conf[key] = value
            return [FakeResult(FakeFrame(["key", "value"], [(key, value)]), False)]
        if words[0].upper() == "USE":
            self.database = words[1]
            return [FakeResult(FakeFrame(["result"], []), False)]
        if words[0].upper() == "FAIL":
            raise SqlError("that went wrong")
        return [FakeResult(FakeFrame(["a", "b"], [(1, "x"), (2, None)]), True)]


def fake_shell() -> tuple[Shell, FakeSession, io.StringIO, io.StringIO]:
    session, out, err = FakeSession(), io.StringIO(), io.StringIO()
    format_rows = lambda df: ["\t".join("NULL" if v is None else str(v) for v in row) for row in df.rows]
    return Shell(session, out, err, format_rows), session, out, err


def feed_all(shell: Shell, lines: list[str | type[BaseException]]) -> list[str]:
    """Run the shell's loop on ``lines`` (an exception class is raised as that keystroke); the prompts."""
    prompts, queue = [], list(lines)

    def read(prompt: str) -> str:
        prompts.append(prompt)
        if not queue:
            raise EOFError
        item = queue.pop(0)
        if isinstance(item, type):
            raise item()
        return item

    shell.loop(read)
    return prompts


def test_shell_logic():
    shell, session, out, err = fake_shell()
    prompts = feed_all(shell, [
        "SELECT a,", "  b FROM t;",              # two lines, one statement
        "SELECT ';'", "; SET hudiql.cli.print.header=true;",  # a ; in quotes does not end it; two statements on a line
        "SELECT 1;",
        "FAIL;", "USE sales;",                   # an error, and the shell goes on
        "SELECT", KeyboardInterrupt, "SELECT 2;",  # Ctrl-C drops the statement being typed
        "quit;", "SELECT never;",
    ])
    assert session.ran == ["SELECT a,\n  b FROM t", "SELECT ';'", "SET hudiql.cli.print.header=true", "SELECT 1", "FAIL", "USE sales", "SELECT 2"]
    assert prompts[:2] == ["hudiql (default)> ", "                > "]
    # "SELECT", then Ctrl-C at the continuation prompt, "SELECT 2;" and "quit;" at fresh prompts
    assert prompts[-4:] == ["hudiql (sales)> ", "              > ", "hudiql (sales)> ", "hudiql (sales)> "]
    assert out.getvalue().splitlines() == ["1\tx", "2\tNULL", "1\tx", "2\tNULL", "a\tb", "1\tx", "2\tNULL", "", "a\tb", "1\tx", "2\tNULL"]
    assert re.findall(r"Fetched (\d+) row", err.getvalue()) == ["2", "2", "0", "2", "0", "2"]
    assert [line for line in err.getvalue().splitlines() if line.startswith("Error")] == ["Error: that went wrong"]


def test_shell_ends_at_end_of_input():
    shell, session, out, _ = fake_shell()
    feed_all(shell, ["SELECT 1;"])  # then Ctrl-D
    assert session.ran == ["SELECT 1"] and out.getvalue().endswith("\n")


def test_history_is_kept_across_sessions(tmp_path):
    readline = pytest.importorskip("readline")
    path = tmp_path / "history"
    first = History(path)
    readline.clear_history()
    first.add("SELECT 1;")
    first.save()
    readline.clear_history()
    History(path)
    assert readline.get_history_item(readline.get_current_history_length()) == "SELECT 1;"


# ---- the real shell in a pseudo-terminal ----------------------------------------------------------------

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class Terminal:
    """A child process on a pseudo-terminal: type lines, read until text shows up."""

    def __init__(self, args: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.master, slave = pty.openpty()
        self.stderr_path = cwd / "stderr.txt"
        with self.stderr_path.open("wb") as stderr:
            self.proc = subprocess.Popen(
                args, stdin=slave, stdout=slave, stderr=stderr, cwd=cwd, env=env, close_fds=True,
                start_new_session=True,  # the child takes the terminal as its controlling tty (see SHELL)
            )
        os.close(slave)
        self.screen = ""

    @property
    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def read_until(self, text: str, timeout: float = 300) -> str:
        """Everything shown since the last call, up to and including ``text``."""
        deadline = time.monotonic() + timeout
        while text not in self.screen:
            if time.monotonic() > deadline:
                raise AssertionError(f"no {text!r} on the terminal after {timeout}s; it shows:\n{self.screen}\nstderr:\n{self.stderr[-3000:]}")
            ready, _, _ = select.select([self.master], [], [], 1)
            if ready:
                try:
                    chunk = os.read(self.master, 4096)
                except OSError:  # the child closed the terminal
                    break
                self.screen += ANSI.sub("", chunk.decode(errors="replace")).replace("\r", "")
        shown, _, self.screen = self.screen.partition(text)
        return shown

    def type(self, text: str) -> None:
        os.write(self.master, text.encode())


# The terminal becomes the controlling tty of the shell's process, as for a shell a person starts.
SHELL = (
    "import argparse, fcntl, sys, termios; fcntl.ioctl(0, termios.TIOCSCTTY, 0); from hudiql.shell import run_shell; "
    "sys.exit(run_shell(argparse.Namespace(warehouse=sys.argv[1], init=sys.argv[2])))"
)
MAIN = "hudiql (default)> "
MORE = "                > "


@pytest.fixture(scope="module")
def session_transcript(tmp_path_factory):
    """One interactive session; what the terminal showed after each input, stderr, and the files."""
    work = tmp_path_factory.mktemp("shell")
    (work / "init.sql").write_text(
        "CREATE TABLE t (id INT, name STRING) USING hudi TBLPROPERTIES (primaryKey='id');\n"
        "INSERT INTO t VALUES (1, 'a'), (2, NULL);\n"
    )
    env = {**os.environ, "HOME": str(work), "TERM": "xterm"}
    term = Terminal([sys.executable, "-c", SHELL, str(work / "wh"), str(work / "init.sql")], work, env)
    shown = {"start": term.read_until(MAIN)}
    steps = [
        ("multi", "SELECT id,\n", MORE),
        ("multi_end", "  name FROM t WHERE name <> ';' OR name IS NULL ORDER BY id;\n", MAIN),
        ("header", "SET hudiql.cli.print.header=true;\n", MAIN),
        ("with_header", "SELECT id, name FROM t ORDER BY id; -- done; really\n", MAIN),
        ("error", "SELECT * FROM missing_table;\n", MAIN),
        ("database", "CREATE DATABASE sales;\n", MAIN),
        ("use", "USE sales;\n", "hudiql (sales)> "),
        ("quit", "quit;\n", None),
    ]
    for name, text, until in steps:
        term.type(text)
        shown[name] = term.read_until(until) if until else ""
    code = term.proc.wait(timeout=120)
    return {"shown": shown, "code": code, "stderr": term.stderr, "home": work}


def test_shell_runs_statements_and_prints_rows(session_transcript):
    shown = session_transcript["shown"]
    assert "1\ta\n2\tNULL\n" in shown["multi_end"]
    assert "id\tname\n1\ta\n2\tNULL\n" in shown["with_header"]
    assert session_transcript["code"] == 0


def test_shell_errors_print_one_line_and_go_on(session_transcript):
    errors = [line for line in session_transcript["stderr"].splitlines() if line.startswith("Error:")]
    assert errors == ["Error: table default.missing_table does not exist; see SHOW TABLES"]
    assert "Traceback" not in session_transcript["stderr"]


def test_shell_prompt_follows_use(session_transcript):
    # Ctrl-C is covered by test_shell_logic: over a real terminal its SIGINT timing made this flaky.
    shown = session_transcript["shown"]
    assert shown["use"].endswith("USE sales;\n")  # then the prompt hudiql (sales)>
    assert "Error" not in session_transcript["stderr"].split("missing_table")[1]


def test_shell_time_taken_goes_to_stderr(session_transcript):
    fetched = re.findall(r"Time taken: \d+\.\d{3} seconds, Fetched (\d+) row\(s\)", session_transcript["stderr"])
    assert fetched[:2] == ["0", "1"]  # the init file: CREATE TABLE, then INSERT (its counts row)
    assert "2" in fetched
    assert "Time taken" not in "".join(session_transcript["shown"].values())


def test_shell_keeps_history(session_transcript):
    history = (session_transcript["home"] / ".hudiql_history").read_text()
    assert "SELECT id, name FROM t WHERE name <> ';' OR name IS NULL ORDER BY id;" in history
    assert "USE sales;" in history
