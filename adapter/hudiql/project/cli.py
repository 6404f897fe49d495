"""Argparse wiring of the project commands: ``add_commands(subparsers)`` registers ``run``,
``build``, ``test``, ``seed``, ``compile``, ``ls`` and ``debug``; each sets ``handler`` to a
function of the parsed args returning the exit code.

Example:
    >>> parser = argparse.ArgumentParser(prog="hudiql")
    >>> add_commands(parser.add_subparsers(dest="command", required=True))
    >>> args = parser.parse_args(["run", "--project-dir", "models_example", "-s", "+fct_orders"])
    >>> args.handler(args)
    0
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import yaml

from hudiql.project.debug import run_debug
from hudiql.project.errors import ProjectError
from hudiql.project.tasks import EXIT_ERROR, Flags, run_task

HELP = {
    "run": "build the selected models",
    "build": "load seeds, build models and run tests in DAG order",
    "test": "run the data tests",
    "seed": "load the CSV seeds into Hudi tables",
    "compile": "write the compiled SQL of models and tests to target/compiled",
    "ls": "list the selected nodes",
    "debug": "check the project, the profile, Java and the Spark connection",
}


def add_commands(subparsers: Any) -> None:
    for command, text in HELP.items():
        parser = subparsers.add_parser(command, help=text, description=text)
        parser.add_argument("--project-dir", default=".", help="the folder with dbt_project.yml (default: .)")
        parser.add_argument("--profiles-dir", help="the folder with profiles.yml (default: $HUDIQL_PROFILES_DIR, the project, ~/.hudiql)")
        parser.add_argument("-t", "--target", help="the profile output to use (default: the profile's target)")
        parser.add_argument("--vars", default="{}", help="YAML mapping of vars, e.g. '{day: 2024-05-01}'")
        if command == "debug":
            parser.set_defaults(handler=_debug)
            continue
        parser.add_argument("-s", "--select", "-m", "--models", nargs="+", default=[], help="nodes to include (dbt selection syntax)")
        parser.add_argument("--exclude", nargs="+", default=[], help="nodes to leave out")
        if command in ("run", "build", "test", "seed"):
            parser.add_argument("--threads", type=int, help="nodes run at once (default: the profile's threads)")
        if command in ("run", "build", "seed"):
            parser.add_argument("-f", "--full-refresh", action="store_true", help="rebuild incremental models from scratch")
        if command == "ls":
            parser.add_argument("--output", choices=["selector", "name", "path", "json"], default="selector")
            parser.add_argument("--resource-type", dest="resource_types", nargs="+", default=[],
                                choices=["model", "seed", "test", "source"])
        parser.set_defaults(handler=_task)


def flags_from_args(args: argparse.Namespace) -> Flags:
    """``Flags`` from parsed arguments; ``--vars`` must be a YAML mapping."""

    try:
        cli_vars = yaml.safe_load(args.vars) or {}
    except yaml.YAMLError as e:
        raise ProjectError(f"--vars is not valid YAML: {e}") from None
    if not isinstance(cli_vars, dict):
        raise ProjectError(f"--vars must be a YAML mapping such as '{{key: value}}', got {args.vars!r}")
    return Flags(
        command=args.command, project_dir=args.project_dir, profiles_dir=args.profiles_dir, target=args.target,
        select=getattr(args, "select", []), exclude=getattr(args, "exclude", []), vars=cli_vars,
        full_refresh=getattr(args, "full_refresh", False), threads=getattr(args, "threads", None),
        output=getattr(args, "output", "selector"), resource_types=getattr(args, "resource_types", []),
    )


def _flags(args: argparse.Namespace) -> Flags | None:
    try:
        return flags_from_args(args)
    except ProjectError as e:
        print(f"Error: {e}", file=sys.stderr)
        return None


def _task(args: argparse.Namespace) -> int:
    flags = _flags(args)
    return EXIT_ERROR if flags is None else _exit_code(lambda: run_task(flags, quiet=True))


def _debug(args: argparse.Namespace) -> int:
    flags = _flags(args)
    return EXIT_ERROR if flags is None else _exit_code(lambda: run_debug(flags, quiet=True))


def _exit_code(run: Any) -> int:
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
