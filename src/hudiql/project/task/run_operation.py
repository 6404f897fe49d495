"""``hudiql run-operation MACRO [--args '{k: v}']``: call one macro of the project (or
``package.macro``) with the arguments, where it can run statements (``run_query``, ``statement``),
as dbt's run-operation does. Nothing is printed but what the macro logs; a failure is one line,
``Encountered an error while running operation: ...``, and exit code 1. ``target/run_results.json``
holds one result, under the macro's unique id."""

from __future__ import annotations

import threading
import time

from hudiql.errors import HudiqlError
from hudiql.project.adapter.impl import describe_error
from hudiql.project.artifacts.nodes import Node
from hudiql.project.artifacts.results import NodeResult, write_run_results
from hudiql.project.artifacts.writer import timestamp
from hudiql.project.cli.flags import EXIT_ERROR, EXIT_FAILED, EXIT_OK
from hudiql.project.compilation import Compiler
from hudiql.project.context.macros import BUILTIN_PACKAGE, DBT_NAMESPACE
from hudiql.project.task.base import BaseTask, Loaded, load

import hudiql


class RunOperationTask(BaseTask):
    def run(self) -> int:
        self.console.line(f"Running with hudiql={hudiql.__version__}")
        try:
            loaded = load(self.flags, self.console, self.spark, self.quiet)
            operation = self._operation(loaded)
        except HudiqlError as e:
            self.console.line("Encountered an error:")
            self.console.line(str(e))
            return EXIT_ERROR
        started, clock = timestamp(), time.monotonic()
        result = NodeResult(operation, "success", failures=0, thread_id=threading.current_thread().name)
        try:
            context = Compiler(loaded.invocation, loaded.manifest, loaded.adapter).context(operation)
            with loaded.adapter.node_scope():
                loaded.invocation.library.call(operation.name, context, f"operation {operation.name}", **self.flags.macro_args)
        except Exception as e:  # the operation fails: one line, as dbt's
            result.status, result.failures = "error", 1
            self.console.line(f"Encountered an error while running operation: {describe_error(e)}")
        result.execution_time = time.monotonic() - clock
        result.timing = [{"name": "execute", "started_at": started, "completed_at": timestamp()}]
        write_run_results(loaded.invocation, [result], result.execution_time, self.flags)
        return EXIT_OK if result.status == "success" else EXIT_FAILED

    def _operation(self, loaded: Loaded) -> Node:
        """The macro to run, as an operation node named by its unique id (``macro.<package>.<name>``)."""
        package, _, name = self.flags.macro.rpartition(".")
        library = loaded.invocation.library
        defined = library.origin.get(name)
        owner = defined.package if defined is not None else None
        if defined is None or package and package not in (owner, DBT_NAMESPACE if owner == BUILTIN_PACKAGE else owner):
            raise HudiqlError(f"hudiql could not find a macro with the name '{self.flags.macro}' in any package")
        return Node(unique_id=f"macro.{owner}.{name}", resource_type="operation", name=name, original_file_path="",
                    fqn=["macro", owner, name], raw_code="")
