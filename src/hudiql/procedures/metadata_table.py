"""The procedures of the metadata table, by Hudi's names: ``delete_metadata_table`` and
``create_metadata_table`` (together: how a damaged metadata table is rebuilt),
``show_metadata_table_partitions`` and ``show_metadata_table_files``."""

from __future__ import annotations

import time

from hudiql.config import registry
from hudiql.errors import SqlError
from hudiql.layout import METADATA_TABLE_FOLDER
from hudiql.procedures.base import INT, TABLE, Context, Parameter, Procedure
from hudiql.table.metadata_table import MetadataTable, remove_metadata_table
from hudiql.transaction.lock import commit_lock
from hudiql.transaction.prologue import locked


def _delete(ctx: Context, args: dict[str, object]) -> list[tuple]:
    storage = ctx.table.storage
    with commit_lock(storage, ctx.table.settings, "delete_metadata_table"):
        ctx.table.config.props = dict(remove_metadata_table(storage).props)
    return [(f"Deleted Metadata Table at '{storage.uri(METADATA_TABLE_FOLDER)}'",)]


def _create(ctx: Context, args: dict[str, object]) -> list[tuple]:
    table = ctx.table
    if table.config.version < 8:
        registry.check_metadata_table({registry.METADATA_ENABLE: "true"}, table.config.name, table.config.version)
    folder = table.storage.uri(METADATA_TABLE_FOLDER)
    if table.storage.list(METADATA_TABLE_FOLDER):
        raise SqlError(f"CALL create_metadata_table: the metadata directory ({folder}) is not empty; "
                       "CALL delete_metadata_table first")
    started = time.monotonic()
    with locked(table, "create_metadata_table", roll_back_failed_writes=True) as held:
        MetadataTable.create(table.storage, table.config, held.table.timeline)
    return [(f"Created Metadata Table in {folder} (duration={time.monotonic() - started:.3f}secs)",)]


def _metadata_table(ctx: Context, procedure: str) -> MetadataTable:
    if "files" not in ctx.table.config.metadata_partitions:
        raise SqlError(f"CALL {procedure}: table {ctx.table.config.name} has no metadata table; "
                       "CALL create_metadata_table builds one")
    return MetadataTable.load(ctx.table.storage)


def _show_partitions(ctx: Context, args: dict[str, object]) -> list[tuple]:
    listing = _metadata_table(ctx, "show_metadata_table_partitions").listing(ctx.table.timeline)
    return [(partition,) for partition in listing]


def _show_files(ctx: Context, args: dict[str, object]) -> list[tuple]:
    partition = str(args.get("partition") or "")
    listing = _metadata_table(ctx, "show_metadata_table_files").listing(ctx.table.timeline, [partition])
    names = sorted(listing.get(partition, {}))
    return [(name,) for name in names[:int(args["limit"])]]


PROCEDURES: tuple[Procedure, ...] = (
    Procedure("delete_metadata_table", (TABLE,), "result string", _delete),
    Procedure("create_metadata_table", (TABLE,), "result string", _create),
    Procedure("show_metadata_table_partitions", (TABLE,), "partition string", _show_partitions),
    Procedure("show_metadata_table_files", (TABLE, Parameter("partition"), Parameter("limit", INT, 100)),
              "file_path string", _show_files),
)
