"""The ``hudiql`` command line.

    hudiql sql [--warehouse DIR] [-e "SQL" | -f FILE | -i INIT]   (no -e/-f: an interactive shell)
    hudiql compact [--warehouse DIR] TABLE
    hudiql run|build|test|seed|compile|ls|debug [--project-dir DIR] ...   (dbt-style projects)

Query rows go to stdout, tab-separated (``NULL`` for nulls); ``Time taken: ...`` goes to
stderr; the first failing statement prints one line and the exit code is 1.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

from hudiql.errors import HudiqlError
from hudiql.project.cli import add_commands

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def _format_rows(df) -> list[str]:
    """Rows as spark-sql prints them; values are formatted by Spark, in tasks."""
    from pyspark.sql import functions as F

    cells = [F.coalesce(F.col(f"`{c}`").cast("string"), F.lit("NULL")) for c in df.columns]
    return ["\t".join(r) for r in df.select(*cells).collect()]


def _quiet(session) -> None:
    """Errors reach the user as one hudiql line: silence Spark's own error records."""
    from pyspark.logger import PySparkLogger

    session.spark.sparkContext.setLogLevel("ERROR")
    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        PySparkLogger.getLogger(name).disabled = True


def run_sql(args: argparse.Namespace) -> int:
    from hudiql.session import connect
    from hudiql.sql.parser import split_statements

    if args.execute is None and args.file is None:
        from hudiql.shell import (
            run_shell,  # imported here: hudiql.shell imports this module
        )

        return run_shell(args)
    if args.file:
        try:
            with open(args.file, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            print(f"Error: cannot read {args.file}: {e.strerror}", file=sys.stderr)
            return EXIT_FAILED
    else:
        text = args.execute
    try:
        statements = split_statements(text)
    except HudiqlError as e:
        print(f"Error: {e}", file=sys.stderr)
        return EXIT_FAILED
    session = connect(warehouse=args.warehouse)
    _quiet(session)
    for statement in statements:
        started = time.monotonic()
        try:
            results = session.execute(statement)
            lines = [line for r in results if r.is_rows for line in _format_rows(r.df)]
        except HudiqlError as e:
            print(f"Error: {e}", file=sys.stderr)
            return EXIT_FAILED
        except Exception as e:  # a bug or an environment failure: still one line, no trace
            first = str(e).strip().splitlines()[0] if str(e).strip() else ""
            print(f"Error: {type(e).__name__}: {first}", file=sys.stderr)
            return EXIT_FAILED
        for line in lines:
            print(line)
        sys.stdout.flush()
        print(f"Time taken: {time.monotonic() - started:.3f} seconds, Fetched {len(lines)} row(s)", file=sys.stderr)
    return EXIT_OK


def run_compact(args: argparse.Namespace) -> int:
    """Schedule a compaction of a merge-on-read table (if any file group has logs) and run every pending one."""
    from hudiql.services import compaction
    from hudiql.session import connect
    from hudiql.sql.parser import table_name_text

    session = connect(warehouse=args.warehouse)
    _quiet(session)
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hudiql", description="Hudi upsert tables from plain SQL, on Spark.")
    commands = parser.add_subparsers(dest="command", required=True)
    sql = commands.add_parser("sql", help="run SQL statements (an interactive shell without -e or -f)")
    sql.add_argument("--warehouse", default="warehouse", help="folder of managed tables (default: ./warehouse)")
    source = sql.add_mutually_exclusive_group()
    source.add_argument("-e", "--execute", help="SQL text to run")
    source.add_argument("-f", "--file", help="SQL file to run")
    sql.add_argument("-i", "--init", help="SQL file the interactive shell runs before its first prompt")
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
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())
