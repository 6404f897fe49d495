"""The commands, one class each (``run``, ``seed``, ``test``, ``build``, ``compile``, ``ls``, ``debug``),
on ``base`` (task and node-runner base classes, project loading), ``runnable`` (nodes on threads
in DAG order) and ``printer`` (dbt's console lines)."""
