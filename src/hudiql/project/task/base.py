"""What every command shares.

- ``BaseTask``: a command, flags in and exit code out;
- ``ConfiguredTask``: a command on a loaded project (``load``: project, profile, macros, manifest,
  DAG; then the ``--select`` / ``--exclude`` selection);
- ``BaseRunner``: one node's execution, which returns a result and never raises (the node fails,
  the run goes on; the message says why).
"""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import SparkSession

import hudiql
from hudiql.errors import HudiqlError
from hudiql.project.adapter.impl import Adapter, NodeScope, describe_error
from hudiql.project.artifacts.manifest import Manifest, write_manifest
from hudiql.project.artifacts.nodes import Node
from hudiql.project.artifacts.results import NodeResult
from hudiql.project.artifacts.writer import timestamp, write_run
from hudiql.project.cli.flags import EXIT_ERROR, Flags
from hudiql.project.compilation import Compiler
from hudiql.project.config.profile import load_target
from hudiql.project.config.project import load_project
from hudiql.project.console import Console
from hudiql.project.context.macros import MacroLibrary
from hudiql.project.context.providers import Invocation
from hudiql.project.graph.graph import Graph
from hudiql.project.graph.selector import Comparison, Selection, select
from hudiql.project.graph.state import PreviousState, current_nodes
from hudiql.project.parser import parse_project


@dataclass
class Loaded:
    """A parsed project: its manifest, its DAG and the adapter its nodes run on."""

    invocation: Invocation
    manifest: Manifest
    graph: Graph
    adapter: Adapter


def load(flags: Flags, console: Console, spark: SparkSession | None, quiet: bool) -> Loaded:
    """Project, profile, macros, manifest and DAG; every problem raises a ``HudiqlError``."""
    project = load_project(Path(flags.project_dir), flags.vars)
    target = load_target(project, flags.profiles_dir, flags.target, flags.threads)
    library = MacroLibrary.load([project.root / p for p in project.macro_paths] + project.generic_test_paths(),
                                project.name, project.root, project.dispatch)
    invocation = Invocation(project, target, full_refresh=flags.full_refresh, library=library, log=console.line)
    manifest = parse_project(invocation)
    graph = Graph.build(manifest)
    write_manifest(invocation, manifest, graph.parents, graph.children, library)
    return Loaded(invocation, manifest, graph, Adapter(target, project.root, spark, quiet=quiet))


class BaseTask(ABC):
    """A command; ``spark``: an existing SparkSession (else one starts when a node needs it)."""

    def __init__(self, flags: Flags, spark: SparkSession | None = None, console: Console | None = None,
                 quiet: bool = False) -> None:
        self.flags = flags
        self.spark = spark
        self.console = console or Console()
        self.quiet = quiet

    @abstractmethod
    def run(self) -> int:
        """Run the command; its exit code (``cli.flags``)."""


class ConfiguredTask(BaseTask):
    """A command on a loaded project and the nodes ``--select`` / ``--exclude`` chose."""

    announce = True  # the "Running with" line; ``ls`` prints nothing but its list
    #: The nodes to run instead of the selection's (unique ids): ``retry``'s.
    only: set[str] | None = None

    def run(self) -> int:
        if self.announce:
            self.console.line(f"Running with hudiql={hudiql.__version__}")
        try:
            loaded = load(self.flags, self.console, self.spark, self.quiet)
            if self.only is not None:  # (retry: the nodes are chosen already)
                known = set(loaded.manifest.nodes) | set(loaded.manifest.sources)
                chosen = Selection({u for u in self.only if u in known}, [])
            else:
                state = None
                if self.flags.state:
                    state = Comparison(PreviousState.load(self.flags.state),
                                       current_nodes(loaded.invocation.project.target_dir))
                chosen = select(loaded.manifest, loaded.graph, self.flags.select, self.flags.exclude, state)
        except HudiqlError as e:
            self.console.line("Encountered an error:")
            self.console.line(str(e))
            return EXIT_ERROR
        if self.announce and loaded.invocation.project.not_run:
            self.console.line(f"[WARNING]: hudiql does not run this project's {', '.join(sorted(loaded.invocation.project.not_run))}; "
                              "dbt-core would")
        for warning in loaded.manifest.parse_warnings if self.announce else ():
            self.console.line(f"[WARNING]: {warning}")
        for criterion in chosen.unmatched:
            self.console.line(f"[WARNING]: The selection criterion '{criterion}' does not match any enabled nodes")
        return self.run_selected(loaded, chosen.nodes)

    @abstractmethod
    def run_selected(self, loaded: Loaded, chosen: set[str]) -> int:
        """The command on the chosen nodes (unique ids of nodes and sources)."""


class BaseRunner(ABC):
    """Runs one kind of node in a node scope of the adapter (its statements go to ``target/run``)."""

    def __init__(self, compiler: Compiler, adapter: Adapter) -> None:
        self.compiler = compiler
        self.adapter = adapter

    def execute(self, node: Node) -> NodeResult:
        started, clock = timestamp(), time.monotonic()
        result = NodeResult(node, "success", thread_id=threading.current_thread().name)
        try:
            with self.adapter.node_scope() as scope:
                self.run_node(node, result, scope)
                result.adapter_response = {"_message": "OK", **scope.response}
                write_run(self.compiler.invocation, node, scope.statements)
        except Exception as e:  # the node fails, the run goes on; the message says why
            result.status, result.message = "error", describe_error(e)
        result.execution_time = time.monotonic() - clock
        result.timing = [{"name": "execute", "started_at": started, "completed_at": timestamp()}]
        return result

    @abstractmethod
    def run_node(self, node: Node, result: NodeResult, scope: NodeScope) -> None:
        """Run ``node``, filling ``result``'s status, message and compiled code; raise on error."""
