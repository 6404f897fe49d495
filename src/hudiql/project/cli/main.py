"""The project commands on the command line: ``add_commands(subparsers)`` registers ``run``,
``build``, ``test``, ``seed``, ``snapshot``, ``compile``, ``ls``, ``debug``, ``run-operation``, ``show``, ``source
freshness``, ``docs generate`` and ``retry``; ``invoke(flags)`` runs one in-process (the task class of its command) and
returns its exit code.

Example:
    >>> parser = argparse.ArgumentParser(prog="hudiql")
    >>> add_commands(parser.add_subparsers(dest="command", required=True))
    >>> parser.parse_args(["run", "-s", "+fct_orders", "--threads", "2"]).select
    ['+fct_orders']
    >>> parser.parse_args(["run-operation", "grant_select", "--args", "{role: analyst}"]).args
    '{role: analyst}'
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import Any, TextIO

from pyspark.sql import SparkSession

from hudiql.project.cli.flags import EXIT_ERROR, Flags, flags_from_args
from hudiql.project.console import Console
from hudiql.project.errors import ProjectError
from hudiql.project.task.base import BaseTask
from hudiql.project.task.build import BuildTask
from hudiql.project.task.compile import CompileTask
from hudiql.project.task.debug import DebugTask
from hudiql.project.task.docs import DocsGenerateTask
from hudiql.project.task.freshness import FreshnessTask
from hudiql.project.task.list import ListTask
from hudiql.project.task.retry import RetryTask
from hudiql.project.task.run import RunTask
from hudiql.project.task.run_operation import RunOperationTask
from hudiql.project.task.seed import SeedTask
from hudiql.project.task.show import ShowTask
from hudiql.project.task.snapshot import SnapshotTask
from hudiql.project.task.test import TestTask

#: Each command: its task class and its help line.
COMMANDS: dict[str, tuple[type[BaseTask], str]] = {
    "run": (RunTask, "build the selected models"),
    "build": (BuildTask, "load seeds, build models and run tests in DAG order"),
    "test": (TestTask, "run the data tests"),
    "seed": (SeedTask, "load the CSV seeds into Hudi tables"),
    "snapshot": (SnapshotTask, "run the snapshots: keep each change of their rows as a new version"),
    "compile": (CompileTask, "write the compiled SQL of models and tests to target/compiled"),
    "ls": (ListTask, "list the selected nodes"),
    "debug": (DebugTask, "check the project, the profile, Java and the Spark connection"),
    "run-operation": (RunOperationTask, "call a macro with arguments, where it can run statements"),
    "show": (ShowTask, "run a model or an --inline query and print its first rows"),
    "source": (FreshnessTask, "source freshness: how long ago each source table was loaded, against its criteria"),
    "docs": (DocsGenerateTask, "docs generate: write target/catalog.json, the tables and columns of the models, "
                               "seeds and sources"),
    "retry": (RetryTask, "run the previous command again on the nodes that errored, failed or were skipped"),
}


def invoke(flags: Flags, spark: SparkSession | None = None, out: TextIO | None = None, quiet: bool = False) -> int:
    """Run ``flags.command``; ``spark``: an existing SparkSession (else one starts when needed)."""
    task_class, _ = COMMANDS[flags.command]
    return task_class(flags, spark=spark, console=Console(out), quiet=quiet).run()


def add_commands(subparsers: Any) -> None:
    for command, (_, text) in COMMANDS.items():
        parser = subparsers.add_parser(command, help=text, description=text)
        parser.add_argument("--project-dir", default=".", help="the folder with dbt_project.yml (default: .)")
        parser.add_argument("--profiles-dir", help="the folder with profiles.yml (default: $HUDIQL_PROFILES_DIR, the project, ~/.hudiql)")
        parser.add_argument("-t", "--target", help="the profile output to use (default: the profile's target)")
        parser.add_argument("--vars", default="{}", help="YAML mapping of vars, e.g. '{day: 2024-05-01}'")
        parser.set_defaults(handler=_handle)
        if command == "debug":
            continue
        if command == "retry":
            parser.add_argument("--state", help="the target folder of the run to retry (default: the project's)")
            continue
        if command == "run-operation":
            parser.add_argument("macro", help="the macro to call, or package.macro")
            parser.add_argument("--args", help="YAML mapping of the macro's arguments, e.g. '{days: 3}'")
            continue
        parser.add_argument("-s", "--select", "-m", "--models", nargs="+", default=[], help="nodes to include (dbt selection syntax)")
        parser.add_argument("--exclude", nargs="+", default=[], help="nodes to leave out")
        parser.add_argument("--state", help="an earlier run's target folder, for state: and result: selectors")
        if command in ("run", "build", "test", "seed", "snapshot"):
            parser.add_argument("--threads", type=int, help="nodes run at once (default: the profile's threads)")
        if command in ("run", "build", "seed"):
            parser.add_argument("-f", "--full-refresh", action="store_true", help="rebuild incremental models from scratch")
        if command == "source":
            parser.add_argument("subcommand", choices=["freshness"], help="what to check of the sources")
        if command == "docs":
            parser.add_argument("subcommand", choices=["generate"], help="what to do (dbt-docs' site: dbt docs serve)")
            parser.add_argument("--no-compile", dest="compile", action="store_false", help="do not compile the nodes first")
            parser.add_argument("--empty-catalog", action="store_true", help="write a catalog without tables")
        if command == "show":
            parser.add_argument("--inline", help="a query to preview instead of --select (ref() and source() work)")
            parser.add_argument("--limit", type=int, default=5, help="rows to show (default 5; negative: all)")
            parser.add_argument("--output", choices=["text", "json"], default="text")
        if command == "ls":
            parser.add_argument("--output", choices=["selector", "name", "path", "json"], default="selector")
            parser.add_argument("--resource-type", dest="resource_types", nargs="+", default=[],
                                choices=["model", "seed", "snapshot", "test", "unit_test", "source"])


def _handle(args: argparse.Namespace) -> int:
    try:
        flags = flags_from_args(args)
    except ProjectError as e:
        print(f"Error: {e}", file=sys.stderr)
        return EXIT_ERROR
    return _exit_code(lambda: invoke(flags, quiet=True))


def _exit_code(run: Callable[[], int]) -> int:
    """A crash (a bug, a dead JVM, Ctrl-C) is exit code 2 with one line, as dbt's unhandled errors."""
    try:
        return run()
    except KeyboardInterrupt:
        print("Interrupted", file=sys.stderr)
        return EXIT_ERROR
    except Exception as e:
        print(f"Encountered an error: {type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}", file=sys.stderr)
        if os.environ.get("HUDIQL_DEBUG"):
            raise
        return EXIT_ERROR
