"""The dbt-style project layer: ``hudiql run | build | test | seed | compile | ls | debug``.

A project is a folder with ``dbt_project.yml``, models (``.sql`` files of one SELECT rendered
with Jinja), seeds (CSV), tests and macros. The modules, one job each, in the order a command
uses them:

- ``project_file`` / ``profiles``: ``dbt_project.yml`` and ``profiles.yml`` (the target: warehouse,
  database, threads, Spark settings); ``yaml_render`` renders ``env_var()`` in both.
- ``configs``: the valid config keys of each resource type, the ``+key`` config tree, validation.
- ``nodes`` and ``parser``: the files of a project become nodes (models, seeds, tests, sources).
- ``jinja``: the Jinja environment, macros (built-in ones from ``hudiql/macros``, project ones
  override them) and the context functions (``ref``, ``source``, ``config``, ``var``, ...).
- ``graph`` and ``selection``: the DAG of ``ref``/``source`` edges and ``--select``/``--exclude``.
- ``compiler``: a node's SQL (Jinja rendered, ephemeral models injected as CTEs).
- ``relations``, ``swap``, ``seeds``, ``adapter``: what materialization macros call: table existence
  (fail closed), atomic table replacement, CSV loading, statements on the hudiql Session.
- ``executor`` and ``runner``: one node's execution; all nodes in DAG order on ``--threads``.
- ``console`` and ``artifacts``: dbt's console lines, ``target/`` files.
- ``tasks`` / ``debug``: the commands; ``cli``: their argparse wiring (``add_commands``).

Example:
    $ hudiql build --project-dir models_example
"""
