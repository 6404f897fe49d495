"""The ``hudiql`` command line.

    hudiql --version
    hudiql sql [--warehouse DIR] [-i INIT] [-e "SQL" | -f FILE]   (no -e/-f: an interactive shell)
    hudiql compact [--warehouse DIR] TABLE
    hudiql run|build|test|seed|compile|ls|debug [--project-dir DIR] ...   (dbt-style projects)

``hudiql sql`` parses every statement (of ``-i``, then ``-e`` or ``-f``) before Spark starts, so a
typo costs no JVM start, then runs them in order and stops at the first that fails: exit code 1,
one ``Error: ...`` line that names the statement and says how many before it completed. Ctrl-C
cancels the running statement (exit code 130). What is printed, and where, is decided in
``hudiql.console``.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import sys
import time
from collections.abc import Sequence

from hudiql.console import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    Console,
    open_session,
    parse_script,
    read_script,
)
from hudiql.errors import HudiqlError
from hudiql.project.cli.main import add_commands
from hudiql.shell import run_shell


def run_sql(args: argparse.Namespace) -> int:
    if args.execute is None and args.file is None:
        return run_shell(args)
    try:
        scripts = [(args.init, parse_script(read_script(args.init), args.init))] if args.init else []
        text = read_script(args.file) if args.file else args.execute
        scripts.append((None, parse_script(text)))
    except HudiqlError as e:
        print(f"Error: {e}", file=sys.stderr)
        return EXIT_FAILED
    if not any(statements for _, statements in scripts):
        return EXIT_OK
    console = Console(open_session(args.warehouse, sys.stderr, announce=sys.stderr.isatty()), sys.stdout, sys.stderr)
    for source, statements in scripts:
        outcome = console.run(statements, source)
        if outcome.exit_code != EXIT_OK:
            return outcome.exit_code
    return EXIT_OK


def run_compact(args: argparse.Namespace) -> int:
    """Schedule a compaction of a merge-on-read table (if any file group has logs) and run every pending one."""
    from hudiql.services import compaction
    from hudiql.sql.parser import table_name_text

    session = open_session(args.warehouse, sys.stderr, announce=sys.stderr.isatty())
    started = time.monotonic()
    try:
        table = session.table(table_name_text(args.table))
        rows = compaction.run_procedure(session.spark, table, "scheduleandexecute")
    except HudiqlError as e:
        print(f"Error: {e}", file=sys.stderr)
        return EXIT_FAILED
    for timestamp, operations, state in rows:
        print(f"{timestamp}\t{operations}\t{state}")
    print(f"Time taken: {time.monotonic() - started:.3f} seconds, compacted {len(rows)} instant(s)", file=sys.stderr)
    return EXIT_OK


def version() -> str:
    """``hudiql <version> (Spark <pyspark version>)``, from the installed packages' metadata."""
    return f"hudiql {importlib.metadata.version('hudiql')} (Spark {importlib.metadata.version('pyspark')})"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hudiql", description="Hudi upsert tables from plain SQL, on Spark.")
    parser.add_argument("--version", action="version", version=version())
    commands = parser.add_subparsers(dest="command", required=True)
    sql = commands.add_parser("sql", help="run SQL statements (an interactive shell without -e or -f)")
    sql.add_argument("--warehouse", default="warehouse", help="folder of managed tables (default: ./warehouse)")
    source = sql.add_mutually_exclusive_group()
    source.add_argument("-e", "--execute", help="SQL text to run")
    source.add_argument("-f", "--file", help="SQL file to run")
    sql.add_argument("-i", "--init", help="SQL file to run first (before -e, -f or the shell's first prompt)")
    sql.set_defaults(handler=run_sql)
    compact = commands.add_parser("compact", help="compact a merge-on-read table")
    compact.add_argument("--warehouse", default="warehouse", help="folder of managed tables (default: ./warehouse)")
    compact.add_argument("table", help="[database.]table")
    compact.set_defaults(handler=run_compact)
    add_commands(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.handler(args)
    except KeyboardInterrupt:  # Ctrl-C outside a statement (e.g. while Spark starts): no traceback
        print("Error: interrupted (Ctrl-C)", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as e:  # a bug or a broken environment: one line (HUDIQL_DEBUG=1 shows the traceback)
        if os.environ.get("HUDIQL_DEBUG"):
            raise
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        print(f"Error: {type(e).__name__}: {first}", file=sys.stderr)
        return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
