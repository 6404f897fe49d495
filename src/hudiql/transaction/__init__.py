"""Everything that makes a change to a table atomic, below the writer and the table services that
change it: the table lock (``lock``), the heartbeats that claim instant times and tell a running
writer from a dead one (``heartbeat``), what each change does first (``prologue``), the conflict
check of optimistic concurrency (``conflict``), the write transaction from snapshot to completed
instant (``write_transaction``), and rollback: of failed writes, of a completed commit, and the
restore of a savepoint (``rollback``).
"""
