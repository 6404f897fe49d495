"""What every write and table service does first, before it changes anything in a table.

``open_for_write`` refuses a table hudiql cannot write (another timeline layout), and removes a
metadata table that the change would leave stale (``table.metadata_table``: hudiql does not maintain
one yet), under the table lock, saying so in one line.

Example:
    >>> from hudiql.config.table_config import METADATA_PARTITIONS, TableConfig
    >>> table = HudiTable.create(warehouse + "/orders", TableConfig({"hoodie.table.name": "orders", METADATA_PARTITIONS: "files"}))
    >>> open_for_write(table, {})
    >>> table.config.metadata_partitions
    []
"""

from __future__ import annotations

from collections.abc import Mapping

from hudiql.errors import warn
from hudiql.table.metadata_table import has_metadata_table, remove_metadata_table
from hudiql.table.table import HudiTable
from hudiql.timeline.active import ensure_writable
from hudiql.transaction.lock import commit_lock


def open_for_write(table: HudiTable, settings: Mapping[str, str]) -> None:
    """Make ``table`` ready to be changed by hudiql, or refuse it (``HudiqlError``); once per
    statement (its services share the table)."""
    if table.opened_for_write:
        return
    ensure_writable(table.config, table.base_uri)
    if has_metadata_table(table.storage, table.config):
        with commit_lock(table.storage, settings, "metadata table removal"):
            config = remove_metadata_table(table.storage)
        table.config.props = dict(config.props)  # the statement's snapshots share this config
        warn(f"removed the metadata table of table {table.config.name} (.hoodie/metadata): hudiql does not "
             "maintain it yet, and readers that list files through it would miss what hudiql writes; "
             "Hudi writers with hoodie.metadata.enable=true build it again")
    table.opened_for_write = True
