"""The commands: ``run``, ``build``, ``test``, ``seed``, ``compile``, ``ls`` (``debug`` is in debug.py).

Each loads the project and profile, parses it into a manifest and a DAG, selects nodes, and then
executes, compiles or lists them. Exit codes: 0 success, 1 a node failed (an error or a failing
test), 2 the project could not be loaded or parsed (bad config, unknown ref, cycle, bad selector).

Example:
    >>> run_task(Flags("build", project_dir="models_example"), spark=existing_session)
    0
"""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO

from pyspark.sql import SparkSession

import hudiql
from hudiql.errors import HudiqlError
from hudiql.project.adapter import Adapter
from hudiql.project.artifacts import write_manifest, write_run_results
from hudiql.project.compiler import Compiler, compiled_path
from hudiql.project.console import Console, duration, plural
from hudiql.project.context import Invocation
from hudiql.project.executor import Executor, NodeResult
from hudiql.project.graph import Graph
from hudiql.project.jinja import MacroLibrary
from hudiql.project.nodes import Node, Source
from hudiql.project.parser import Manifest, parse_project
from hudiql.project.profiles import load_target
from hudiql.project.project_file import load_project
from hudiql.project.runner import Runner
from hudiql.project.selection import select

EXIT_OK, EXIT_FAILED, EXIT_ERROR = 0, 1, 2
RESOURCE_TYPES = {
    "run": {"model"}, "build": {"seed", "model", "test"}, "test": {"test"}, "seed": {"seed"},
    "compile": {"model", "test"}, "ls": {"model", "seed", "test", "source"},
}


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
    output: str = "selector"  # ls: selector, name, path or json
    resource_types: list[str] = field(default_factory=list)  # ls


@dataclass
class Loaded:
    manifest: Manifest
    graph: Graph
    adapter: Adapter


def load(flags: Flags, console: Console, spark: SparkSession | None, quiet: bool) -> Loaded:
    """Project, profile, macros, manifest and DAG; every problem raises a ``HudiqlError``."""
    project = load_project(Path(flags.project_dir), flags.vars)
    target = load_target(project, flags.profiles_dir, flags.target, flags.threads)
    library = MacroLibrary.load([project.root / p for p in project.macro_paths], project.name, project.root)
    invocation = Invocation(project, target, library, full_refresh=flags.full_refresh, log=console.line)
    manifest = parse_project(invocation)
    graph = Graph.build(manifest)
    write_manifest(manifest, graph)
    return Loaded(manifest, graph, Adapter(target, project.root, spark, quiet=quiet))


def run_task(flags: Flags, spark: SparkSession | None = None, out: TextIO | None = None, quiet: bool = False) -> int:
    """Run one command; ``spark``: an existing SparkSession (else one starts when needed)."""
    console = Console(out)
    if flags.command != "ls":
        console.line(f"Running with hudiql={hudiql.__version__}")
    try:
        loaded = load(flags, console, spark, quiet)
        chosen = select(loaded.manifest, loaded.graph, flags.select, flags.exclude)
    except HudiqlError as e:
        console.line("Encountered an error:")
        console.line(str(e))
        return EXIT_ERROR
    for criterion in chosen.unmatched:
        console.line(f"[WARNING]: The selection criterion '{criterion}' does not match any enabled nodes")
    if flags.command == "ls":
        return list_nodes(loaded.manifest, chosen.nodes, flags, console)
    console.line(f"Found {_found(loaded.manifest)}")
    types = RESOURCE_TYPES[flags.command]
    nodes = [loaded.manifest.nodes[u] for u in loaded.graph.order(chosen.nodes & set(loaded.manifest.nodes))
             if loaded.manifest.nodes[u].resource_type in types]
    if flags.command == "compile":
        return compile_nodes(loaded, nodes, console)
    return execute_nodes(loaded, [n for n in nodes if not n.is_ephemeral], flags, console)


def _found(manifest: Manifest) -> str:
    counts = Counter(n.resource_type for n in manifest.nodes.values())
    parts = [plural(counts["model"], "model"), plural(counts["seed"], "seed"), plural(counts["test"], "data test"),
             plural(len(manifest.sources), "source"), plural(len(manifest.invocation.library.origin), "macro")]
    return ", ".join(parts)


def waits_for(nodes: list[Node], graph: Graph, with_tests: bool) -> dict[str, set[str]]:
    """For each node, the selected nodes it must wait for: its nearest selected ancestors (through
    unselected ones), and in ``build`` the tests of those (a failing test stops what is downstream)."""
    selected = {n.unique_id for n in nodes}
    out: dict[str, set[str]] = {}
    for node in nodes:
        needs, frontier = set(), set(graph.parents.get(node.unique_id, ()))
        seen: set[str] = set()
        while frontier:
            uid = frontier.pop()
            seen.add(uid)
            if uid in selected:
                needs.add(uid)
            else:
                frontier |= graph.parents.get(uid, set()) - seen
        out[node.unique_id] = needs
    if with_tests:
        tests = [n for n in nodes if n.resource_type == "test"]
        for node in nodes:
            if node.resource_type == "test":
                continue
            below = graph.descendants(node.unique_id) | {node.unique_id}
            for test in tests:
                if set(test.depends_on) & out[node.unique_id] and not set(test.depends_on) & below:
                    out[node.unique_id].add(test.unique_id)
    return out


def execute_nodes(loaded: Loaded, nodes: list[Node], flags: Flags, console: Console) -> int:
    manifest = loaded.manifest
    started = time.monotonic()
    if not nodes:
        console.line("Nothing to do. Try checking your model configs and model specification args")
        write_run_results(manifest, [], 0.0, asdict(flags))
        return EXIT_OK
    threads = manifest.invocation.target.threads
    console.line("")
    console.line(f"Concurrency: {threads} threads (target='{manifest.invocation.target.name}')")
    console.line("")
    loaded.adapter.start()  # start Spark now, so the first node's time is its own
    executor = Executor(manifest, Compiler(manifest, loaded.adapter), loaded.adapter)
    results = Runner(executor.execute, console, threads).run(nodes, waits_for(nodes, loaded.graph, flags.command == "build"))
    elapsed = time.monotonic() - started
    write_run_results(manifest, results, elapsed, asdict(flags))
    summarize(results, elapsed, console)
    return EXIT_FAILED if any(r.failed for r in results) else EXIT_OK


def summarize(results: list[NodeResult], elapsed: float, console: Console) -> None:
    kinds = Counter(
        "data test" if r.node.resource_type == "test" else "seed" if r.node.resource_type == "seed"
        else f"{r.node.materialized} model" for r in results
    )
    console.line("")
    console.line(f"Finished running {', '.join(plural(n, k) for k, n in kinds.items())} in {duration(elapsed)}.")
    console.line("")
    errors = [r for r in results if r.failed]
    warnings = [r for r in results if r.status == "warn"]
    if not errors and not warnings:
        console.line("Completed successfully")
    else:
        console.line(f"Completed with {plural(len(errors), 'error')} and {plural(len(warnings), 'warning')}:")
        for r in errors + warnings:
            console.line("")
            kind = {"fail": "Failure", "warn": "Warning"}.get(r.status, "Runtime Error")
            console.line(f"{kind} in {r.node.label}")
            console.line(f"  {r.message}")
            if r.compiled_code is not None and r.node.resource_type == "test":
                console.line(f"  compiled code at target/compiled/{r.node.fqn[0]}/{compiled_path(r.node)}")
    status = Counter(r.status for r in results)
    console.line("")
    console.line(
        f"Done. PASS={status['success'] + status['pass']} WARN={status['warn']} ERROR={status['error'] + status['fail']} "
        f"SKIP={status['skipped']} TOTAL={len(results)}"
    )


def compile_nodes(loaded: Loaded, nodes: list[Node], console: Console) -> int:
    compiler = Compiler(loaded.manifest, loaded.adapter)
    results = []
    for node in nodes:
        try:
            with loaded.adapter.node_scope():  # a model may run_query() while compiling
                results.append(NodeResult(node, "success", "OK", compiled_code=compiler.compile(node)))
        except HudiqlError as e:
            console.line("Encountered an error:")
            console.line(str(e))
            return EXIT_FAILED
    write_run_results(loaded.manifest, results, 0.0, {"command": "compile"})
    models = [r for r in results if r.node.resource_type == "model"]
    if len(models) == 1:
        console.line(f"Compiled node '{models[0].node.name}' is:")
        console.out.write((models[0].compiled_code or "") + "\n")
    return EXIT_OK


def list_nodes(manifest: Manifest, chosen: set[str], flags: Flags, console: Console) -> int:
    types = set(flags.resource_types) or RESOURCE_TYPES["ls"]
    items = [manifest.nodes.get(u) or manifest.sources[u] for u in sorted(chosen)]
    items = [i for i in items if _resource_type(i) in types]
    for item in sorted(items, key=lambda i: i.fqn):
        if flags.output == "name":
            text = item.name
        elif flags.output == "path":
            text = item.original_file_path
        elif flags.output == "json":
            text = json.dumps({"name": item.name, "unique_id": item.unique_id, "resource_type": _resource_type(item),
                               "original_file_path": item.original_file_path,
                               "config": getattr(item, "config", {})}, default=str)
        else:
            text = ("source:" if not isinstance(item, Node) else "") + ".".join(item.fqn)
        console.out.write(text + "\n")
    return EXIT_OK


def _resource_type(item: Node | Source) -> str:
    return item.resource_type if isinstance(item, Node) else "source"
