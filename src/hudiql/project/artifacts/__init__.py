"""Artifacts: the types a command produces (nodes, the manifest, node results) and every writer of
``target/`` (``manifest.json``, ``run_results.json``, ``compiled/``, ``run/``)."""
