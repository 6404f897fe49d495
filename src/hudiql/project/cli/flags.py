"""The command line of a project command as one typed value, and what its exit code means.

Exit codes: 0 success, 1 a node failed (an error or a failing test), 2 the project could not be
loaded or parsed (bad config, unknown ref, cycle, bad selector) or the command crashed.

Example:
    >>> import argparse
    >>> args = argparse.Namespace(command="run", project_dir=".", profiles_dir=None, target=None, vars="{day: 3}")
    >>> flags_from_args(args).vars
    {'day': 3}
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import Any

import yaml

from hudiql.project.errors import ProjectError

EXIT_OK, EXIT_FAILED, EXIT_ERROR = 0, 1, 2


@dataclass
class Flags:
    """The command line of a project command."""

    command: str
    project_dir: str = "."
    profiles_dir: str | None = None
    target: str | None = None
    select: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    vars: dict[str, Any] = field(default_factory=dict)
    full_refresh: bool = False
    threads: int | None = None
    output: str = "selector"  # ls: selector, name, path or json; show: text or json
    resource_types: list[str] = field(default_factory=list)  # ls
    macro: str = ""  # run-operation: the macro, or package.macro
    macro_args: dict[str, Any] = field(default_factory=dict)  # run-operation: --args
    inline: str | None = None  # show: a query instead of --select
    state: str | None = None  # --state: an earlier run's target folder (state: and result: selectors)
    limit: int = 5  # show: rows shown (negative: all)
    compile: bool = True  # docs generate: compile the selected nodes first (--no-compile: not)
    empty_catalog: bool = False  # docs generate: write a catalog without tables (--empty-catalog)


def flags_from_args(args: argparse.Namespace) -> Flags:
    """``Flags`` from parsed arguments; ``--vars`` (and run-operation's ``--args``) must be YAML mappings."""
    return Flags(
        command=args.command, project_dir=args.project_dir, profiles_dir=args.profiles_dir, target=args.target,
        select=getattr(args, "select", []), exclude=getattr(args, "exclude", []), vars=_yaml_mapping("--vars", args.vars),
        full_refresh=getattr(args, "full_refresh", False), threads=getattr(args, "threads", None),
        output=getattr(args, "output", "selector"), resource_types=getattr(args, "resource_types", []),
        macro=getattr(args, "macro", ""), macro_args=_yaml_mapping("--args", getattr(args, "args", None) or "{}"),
        inline=getattr(args, "inline", None), limit=getattr(args, "limit", 5), state=getattr(args, "state", None),
        compile=getattr(args, "compile", True), empty_catalog=getattr(args, "empty_catalog", False),
    )


def _yaml_mapping(flag: str, text: str) -> dict[str, Any]:
    try:
        value = yaml.safe_load(text) or {}
    except yaml.YAMLError as e:
        raise ProjectError(f"{flag} is not valid YAML: {e}") from None
    if not isinstance(value, dict):
        raise ProjectError(f"{flag} must be a YAML mapping such as '{{key: value}}', got {text!r}")
    return value
