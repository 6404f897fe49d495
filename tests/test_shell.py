"""The interactive ``hudiql sql`` shell: its logic on a stand-in session, then the real thing in a
pseudo-terminal (one JVM)."""

from __future__ import annotations

import io
import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from hudiql.console import Console
from hudiql.errors import SqlError
from hudiql.shell import History, Shell, history_entry, statement_complete
from hudiql.sql import statements as S


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
    """Answers like a hudiql Session: SET stores, USE switches, INSERT counts, a query naming
    ``fail`` raises, any other query returns two rows."""

    def __init__(self) -> None:
        self.database = "default"
        self.conf: dict[str, str] = {}
        self.ran: list[str] = []

    def run(self, statement: S.Statement) -> FakeResult:
        self.ran.append(statement.text)
        if isinstance(statement, S.SetConf):
            self.conf[statement.key] = statement.value
            return FakeResult(FakeFrame(["key", "value"], [(statement.key, statement.value)]), False)
        if isinstance(statement, S.Use):
            self.database = statement.database
            return FakeResult(FakeFrame(["result"], []), False)
        if isinstance(statement, S.Insert):
            return FakeResult(FakeFrame(["num_affected_rows", "num_inserted_rows"], [(1, 1)]), True)
        if "fail" in statement.text:
            raise SqlError("that went wrong")
        return FakeResult(FakeFrame(["a", "b"], [(1, "x"), (2, None)]), True)


def fake_format_rows(df: FakeFrame, named: bool = False) -> list[str]:
    cells = [["NULL" if v is None else str(v) for v in row] for row in df.rows]
    return ["\t".join(f"{c}={v}" if named else v for c, v in zip(df.columns, row)) for row in cells]


def fake_shell() -> tuple[Shell, FakeSession, io.StringIO, io.StringIO]:
    session, out, err = FakeSession(), io.StringIO(), io.StringIO()
    return Shell(Console(session, out, err, fake_format_rows)), session, out, err


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
        "SELECT fail;", "USE sales;",            # an error, and the shell goes on
        "SELECT", KeyboardInterrupt, "SELECT 2;",  # Ctrl-C drops the statement being typed
        "quit;", "SELECT never;",
    ])
    assert session.ran == ["SELECT a,\n  b FROM t", "SELECT ';'", "SET hudiql.cli.print.header=true", "SELECT 1", "SELECT fail", "USE sales", "SELECT 2"]
    assert prompts[:2] == ["hudiql (default)> ", "                > "]
    # "SELECT", then Ctrl-C at the continuation prompt, "SELECT 2;" and "quit;" at fresh prompts
    assert prompts[-4:] == ["hudiql (sales)> ", "              > ", "hudiql (sales)> ", "hudiql (sales)> "]
    assert out.getvalue().splitlines() == ["1\tx", "2\tNULL", "1\tx", "2\tNULL", "a\tb", "1\tx", "2\tNULL", "", "a\tb", "1\tx", "2\tNULL"]
    assert re.findall(r"Fetched (\d+) row", err.getvalue()) == ["2", "2", "0", "2", "0", "2"]
    assert [line for line in err.getvalue().splitlines() if line.startswith("Error")] == ["Error: that went wrong"]


def test_shell_parses_a_line_before_running_it():
    shell, session, _, err = fake_shell()
    feed_all(shell, ["SELECT 1; SELEC 2;", "SELECT 3;"])
    assert session.ran == ["SELECT 3"]  # nothing of the line with the typo ran
    assert err.getvalue().splitlines()[0] == (
        "Error: statement 2 (line 1, column 11): 'SELEC' does not start a statement; did you mean SELECT?")


def test_shell_names_the_failing_statement_of_a_line():
    shell, session, _, err = fake_shell()
    feed_all(shell, ["SELECT 1;", "SELECT 2; SELECT fail;", "SELECT 3;"])
    assert session.ran == ["SELECT 1", "SELECT 2", "SELECT fail", "SELECT 3"]
    errors = [line for line in err.getvalue().splitlines() if line.startswith("Error")]
    assert errors == ["Error: statement 2 (line 1, column 11): that went wrong; 1 statement(s) before it completed"]


def test_shell_commands_need_no_semicolon():
    for word in ("exit", "quit", " QUIT ", "exit;"):
        shell, session, _, _ = fake_shell()
        feed_all(shell, ["SELECT 1;", word, "SELECT never;"])
        assert session.ran == ["SELECT 1"], word
    shell, session, out, _ = fake_shell()
    feed_all(shell, ["help", "SELECT 1; quit; SELECT never;"])
    assert "exit, quit" in out.getvalue() and "SELECT * FROM t;" in out.getvalue()
    assert session.ran == ["SELECT 1"]  # the statements before quit on its line still run
    shell, session, _, _ = fake_shell()
    feed_all(shell, ["SELECT", "quit;", "SELECT 2;"])  # inside a statement, quit is a column name
    assert session.ran == ["SELECT\nquit", "SELECT 2"]


def test_shell_prints_dml_counts_with_their_names():
    shell, _, out, _ = fake_shell()
    feed_all(shell, ["INSERT INTO t VALUES (1);"])
    assert out.getvalue() == "num_affected_rows=1\tnum_inserted_rows=1\n\n"  # then Ctrl-D's newline


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
#: Runs for hours unless cancelled (Spark's range checks for a kill between batches); two short
#: lines, so that the terminal echoes each as typed (a line wider than the terminal would wrap).
LONG_QUERY = ["SELECT count(*) FROM range(0, 100000000000, 1, 2)", "WHERE sha2(CAST(id AS STRING), 256) = '';"]
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
        ("help", "help\n", "hudiql (sales)> "),
        ("insert", "INSERT INTO default.t VALUES (3, 'c');\n", "hudiql (sales)> "),
        ("quit", "exit\n", None),
    ]
    for name, text, until in steps:
        term.type(text)
        shown[name] = term.read_until(until) if until else ""
        if name == "help":
            # Ctrl-C during a long statement, sent once the shell has read it (the terminal echoed the
            # line) and is surely running it: whether its job has started or not, the cancel is the same.
            term.type("\n".join(LONG_QUERY) + "\n")
            term.read_until(LONG_QUERY[-1] + "\n")
            time.sleep(3)
            os.kill(term.proc.pid, signal.SIGINT)
            shown["cancel"] = term.read_until("hudiql (sales)> ", timeout=120)
    code = term.proc.wait(timeout=120)
    return {"shown": shown, "code": code, "stderr": term.stderr, "home": work}


def test_shell_runs_statements_and_prints_rows(session_transcript):
    shown = session_transcript["shown"]
    assert "1\ta\n2\tNULL\n" in shown["multi_end"]
    assert "id\tname\n1\ta\n2\tNULL\n" in shown["with_header"]
    assert session_transcript["code"] == 0


def test_shell_errors_print_one_line_and_go_on(session_transcript):
    errors = [line for line in session_transcript["stderr"].splitlines() if line.startswith("Error:")]
    assert errors == ["Error: table default.missing_table does not exist; see SHOW TABLES", "Error: cancelled (Ctrl-C)"]
    assert "Traceback" not in session_transcript["stderr"]


def test_shell_says_it_starts_spark_then_prompts(session_transcript):
    stderr = session_transcript["stderr"]
    assert stderr.index("Starting Spark...") < stderr.index("Time taken")  # before the init file ran
    assert re.search(r"Spark \d+\.\d+\.\d+ started in \d+\.\d seconds; type help for help", stderr)
    assert "Setting default log level" not in stderr


def test_shell_help_and_exit_need_no_semicolon(session_transcript):
    shown = session_transcript["shown"]
    assert "exit, quit    leave" in shown["help"]
    assert "Error" not in shown["help"]
    assert session_transcript["code"] == 0  # 'exit' without ';' left the shell


def test_shell_ctrl_c_cancels_the_running_statement(session_transcript):
    # The one line, then the prompt (in the 'sales' database) again, and the shell goes on.
    stderr = session_transcript["stderr"]
    assert "Error: cancelled (Ctrl-C)" in stderr.splitlines()
    assert re.search(r"^num_affected_rows=1\t.*num_inserted_rows=1", session_transcript["shown"]["insert"], re.M)
    for noise in ("Traceback", "py4j", "Py4J", "Exception", "KeyboardInterrupt"):
        assert noise not in stderr


def test_shell_dml_results_carry_their_names(session_transcript):
    # the init file's INSERT, before the first prompt
    assert re.match(r"num_affected_rows=2\t.*num_inserted_rows=2", session_transcript["shown"]["start"])


def test_shell_prompt_follows_use(session_transcript):
    shown = session_transcript["shown"]
    assert shown["use"].endswith("USE sales;\n")  # then the prompt hudiql (sales)>
    assert "Error" not in session_transcript["stderr"].split("missing_table")[1].split("Error: cancelled (Ctrl-C)")[0]


def test_shell_time_taken_goes_to_stderr(session_transcript):
    fetched = re.findall(r"Time taken: \d+\.\d{3} seconds, Fetched (\d+) row\(s\)", session_transcript["stderr"])
    assert fetched[:2] == ["0", "1"]  # the init file: CREATE TABLE, then INSERT (its counts row)
    assert "2" in fetched
    assert "Time taken" not in "".join(session_transcript["shown"].values())


def test_shell_keeps_history(session_transcript):
    history = (session_transcript["home"] / ".hudiql_history").read_text()
    assert "SELECT id, name FROM t WHERE name <> ';' OR name IS NULL ORDER BY id;" in history
    assert "USE sales;" in history
