"""The dbt-style project layer: ``hudiql run | build | test | seed | compile | ls | debug``.

A project is a folder with ``dbt_project.yml``, models (``.sql`` files of one SELECT rendered
with Jinja), seeds (CSV), tests and macros. Its packages, lowest layer first, as dbt-core splits them:

- ``errors``, ``console``: the project layer's errors and dbt's console lines;
- ``config/``: ``dbt_project.yml`` (``project``), ``profiles.yml`` (``profile``: the target),
  ``env_var()`` in both (``renderer``), the valid config keys of each resource type (``model_config``);
- ``artifacts/``: nodes, the manifest, node results, and every writer of ``target/``;
- ``context/``: the Jinja environment and macros (``macros``), the context of a node and the
  parse-time / run-time providers of ``ref`` and ``source`` (``providers``);
- ``parser``: the files of a project become the manifest;
- ``graph/``: the DAG (``graph``), ``--select`` / ``--exclude`` (``selector``), the run order (``queue``);
- ``adapter/``: what materialization macros call: statements on the hudiql Session (``impl``), table
  existence (``relation``), CSV reading (``seed``);
- ``compilation``: a node's SQL (Jinja rendered, ephemeral models injected as CTEs);
- ``task/``: one class per command, and the runners of models, seeds and tests;
- ``cli/``: the typed flags and exit codes, the argparse wiring and ``invoke``.

Example:
    $ hudiql build --project-dir models_example
"""
