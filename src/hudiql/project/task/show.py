"""``hudiql show --select MODEL | --inline "SQL" [--limit 5] [--output text | json]``: compile a model
(or a query written on the command line, with ``ref`` and ``source``), run it with a limit and
print its first rows, as dbt's show does: ``Previewing node 'name':`` then the rows as agate draws
them (``adapter.result.QueryResult.print_table``), or as JSON. A negative ``--limit`` shows every row."""

from __future__ import annotations

import json

from hudiql.project.adapter.impl import describe_error
from hudiql.project.adapter.result import QueryResult
from hudiql.project.artifacts.nodes import Node
from hudiql.project.cli.flags import EXIT_ERROR, EXIT_FAILED, EXIT_OK
from hudiql.project.compilation import Compiler
from hudiql.project.task.base import ConfiguredTask, Loaded
from hudiql.record.schema import META_COLUMNS

#: The node a query written on the command line becomes, as in dbt.
INLINE_NAME = "inline_query"


class ShowTask(ConfiguredTask):
    def run(self) -> int:
        if not (self.flags.select or self.flags.inline):
            self.console.line("Encountered an error:")
            self.console.line("Either --select or --inline must be passed to show")
            return EXIT_ERROR
        return super().run()

    def run_selected(self, loaded: Loaded, chosen: set[str]) -> int:
        if self.flags.inline:
            project = loaded.invocation.project.name
            nodes = [Node(unique_id=f"sql_operation.{project}.{INLINE_NAME}", resource_type="sql_operation",
                          name=INLINE_NAME, original_file_path=f"sql/{INLINE_NAME}.sql", fqn=[project, "sql", INLINE_NAME],
                          raw_code=self.flags.inline)]
        else:
            nodes = sorted((loaded.manifest.nodes[u] for u in chosen if u in loaded.manifest.nodes
                            and loaded.manifest.nodes[u].resource_type in ("model", "seed")), key=lambda n: n.fqn)
        compiler = Compiler(loaded.invocation, loaded.manifest, loaded.adapter)
        limit = None if self.flags.limit < 0 else self.flags.limit
        for node in nodes:
            try:
                with loaded.adapter.node_scope():
                    sql = f"SELECT * FROM {node.relation}" if node.resource_type == "seed" else compiler.compile(node)
                    if limit is not None:
                        sql = f"select * from (\n{sql}\n) as model_limit_subq limit {limit}"
                    _, table = loaded.adapter.execute(sql, fetch=True)
                # (the meta columns of a Hudi table are not the model's columns)
                table = QueryResult([c for c in table.column_names if c not in META_COLUMNS],
                                    [[v for c, v in r.items() if c not in META_COLUMNS] for r in table.rows])
            except Exception as e:  # one line, as every command's errors
                self.console.line(f"Encountered an error while previewing {node.label}: {describe_error(e)}")
                return EXIT_FAILED
            self._print(node, table)
        return EXIT_OK

    def _print(self, node: Node, table: QueryResult) -> None:
        inline = bool(self.flags.inline)
        if self.flags.output == "json":
            shown = {"show": json.loads(table.to_json())} if inline else {"node": node.name, "show": json.loads(table.to_json())}
            self.console.line(json.dumps(shown, indent=2))
            return
        self.console.line("Previewing inline node:" if inline else f"Previewing node '{node.name}':")
        table.print_table(output=self.console.out, max_rows=None)
