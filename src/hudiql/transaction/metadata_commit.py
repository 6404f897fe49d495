"""What a change of a table does with its metadata table (``table.metadata_table``): whether the
statement keeps it (``keeps_metadata_table``), and the metadata delta commit around the completion
of each data instant that changes files (``recording``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from hudiql.config import registry
from hudiql.errors import FormatError, HudiqlError, warn
from hudiql.table.metadata_table import FileChanges, open_for_write, rebuild_hint
from hudiql.table.table import HudiTable
from hudiql.timeline.active import Timeline


def keeps_metadata_table(table: HudiTable) -> bool:
    """Whether writes of ``table`` keep its metadata table: ``hoodie.metadata.enable`` (true by
    default), on the table versions hudiql keeps one for (8 and 9)."""
    return table.settings.flag(registry.METADATA_ENABLE) and table.config.version >= 8


@contextmanager
def recording(table: HudiTable, instant_time: str, changes: FileChanges) -> Iterator[None]:
    """Around the completion of data instant ``instant_time``: its metadata delta commit first
    (the table's metadata table built first if it has none), then, once the data instant completed,
    the metadata table's compaction when due. The caller holds the table lock. On a table whose
    writes keep no metadata table (``keeps_metadata_table``), nothing."""
    if not keeps_metadata_table(table):
        yield
        return
    mdt, config = open_for_write(table.storage)
    table.config.props = dict(config.props)  # the statement's snapshots share this config
    try:
        mdt.records(table.timeline)  # what this process read of it already is not read again
    except (HudiqlError, OSError) as exc:
        raise FormatError(f"{exc}; writes are refused until it is rebuilt. {rebuild_hint(table.config.name)}") from None
    mdt.commit(instant_time, changes)
    try:
        yield
    except BaseException:
        mdt.forget(instant_time)
        raise
    try:
        if mdt.compaction_due(table.settings.number(registry.METADATA_COMPACT_MAX_DELTA_COMMITS)):
            mdt.compact(Timeline.load(table.storage, table.config))  # with the instant that just completed
    except (HudiqlError, OSError) as exc:  # the data instant completed: the statement succeeded
        warn(f"could not compact the metadata table of {table.base_uri}: {exc}")
