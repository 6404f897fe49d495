"""The timeline: the instants of a table, active (``active``: in ``.hoodie/``, their states, the
atomic completion of a write) and archived (``archived``), and what instants hold: commit metadata
(``commit``), and the plans and metadata of cleans, rollbacks and restores, replace commits
(clustering), compactions and savepoints."""
