"""What a command prints about its nodes, in dbt's words: the ``Found`` line, each node's start and
result lines, and the end-of-run summary.

Example:
    >>> from hudiql.project.artifacts.nodes import Node, Relation
    >>> node = Node("model.shop.orders", "model", "orders", "models/orders.sql", ["shop", "orders"], "",
    ...             config={"materialized": "table"}, relation=Relation("analytics", "orders", "table"))
    >>> start_message(node)
    'START sql table model analytics.orders'
    >>> result_message(NodeResult(node, "success"))
    ('OK created sql table model analytics.orders', 'OK')
"""

from __future__ import annotations

from collections import Counter

from hudiql.project.artifacts.manifest import Manifest
from hudiql.project.artifacts.nodes import Node
from hudiql.project.artifacts.results import NodeResult
from hudiql.project.artifacts.writer import compiled_path
from hudiql.project.console import Console, duration, plural


def found_line(manifest: Manifest) -> str:
    counts = Counter(n.resource_type for n in manifest.nodes.values())
    parts = [plural(counts["model"], "model"), *([plural(counts["snapshot"], "snapshot")] if counts["snapshot"] else []),
             plural(counts["seed"], "seed"), plural(counts["test"], "data test"),
             *([plural(counts["unit_test"], "unit test")] if counts["unit_test"] else []),
             plural(len(manifest.sources), "source"), plural(len(manifest.macros), "macro")]
    return "Found " + ", ".join(parts)


def test_name(node: Node) -> str:
    """How progress lines name a test: a unit test as ``model::test``, as dbt does."""
    return f"{node.unit_test.model}::{node.name}" if node.unit_test is not None else node.name


def start_message(node: Node) -> str:
    if node.resource_type in ("test", "unit_test"):
        return f"START {node.resource_type} {test_name(node)}"
    if node.resource_type == "seed":
        return f"START seed file {node.relation}"
    if node.resource_type == "snapshot":
        return f"START snapshot {node.relation}"
    return f"START sql {node.materialized} model {node.relation}"


def result_message(result: NodeResult) -> tuple[str, str]:
    """The progress line's text and bracketed status for a finished node."""
    node, status = result.node, result.status
    if status == "skipped":
        return (f"SKIP test {test_name(node)}" if node.relation is None else f"SKIP relation {node.relation}"), "SKIP"
    if node.resource_type in ("test", "unit_test"):
        if status == "error":
            return f"ERROR {test_name(node)}", "ERROR"
        if status == "pass":
            return f"PASS {test_name(node)}", "PASS"
        return f"{status.upper()} {result.failures} {test_name(node)}", f"{status.upper()} {result.failures}"
    if node.resource_type == "seed":
        if status == "error":
            return f"ERROR loading seed file {node.relation}", "ERROR"
        return f"OK loaded seed file {node.relation}", result.message
    if node.resource_type == "snapshot":
        return (f"ERROR snapshotting {node.relation}", "ERROR") if status == "error" else (f"OK snapshotted {node.relation}", "OK")
    if status == "error":
        return f"ERROR creating sql {node.materialized} model {node.relation}", "ERROR"
    return f"OK created sql {node.materialized} model {node.relation}", "OK"


def print_run_end(results: list[NodeResult], elapsed: float, console: Console) -> None:
    """What ran, how long it took, each error and warning, and the PASS/WARN/ERROR/SKIP counts."""
    kinds = Counter(
        "data test" if r.node.resource_type == "test" else "unit test" if r.node.resource_type == "unit_test"
        else r.node.resource_type if r.node.resource_type in ("seed", "snapshot") else f"{r.node.materialized} model"
        for r in results
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
            for line in str(r.message).splitlines():
                console.line(f"  {line}" if line else "")
            if r.compiled_code is not None and r.node.resource_type in ("test", "unit_test"):
                console.line(f"  compiled code at target/compiled/{r.node.fqn[0]}/{compiled_path(r.node)}")
    status = Counter(r.status for r in results)
    console.line("")
    console.line(
        f"Done. PASS={status['success'] + status['pass']} WARN={status['warn']} ERROR={status['error'] + status['fail']} "
        f"SKIP={status['skipped']} TOTAL={len(results)}"
    )
