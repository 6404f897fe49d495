"""The DAG of a project (``graph``), ``--select`` / ``--exclude`` (``selector``) and the order nodes
run in (``queue``)."""
