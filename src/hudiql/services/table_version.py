"""``CALL upgrade_table`` / ``CALL downgrade_table``: a table moved between versions 6, 8 and 9, as
Hudi's upgrade and downgrade move it, one version step at a time (6 <-> 8 <-> 9), rows and history
kept. hudiql never changes a table's version otherwise.

Before a step that changes the timeline's layout (6 <-> 8): failed writes are rolled back and a
merge-on-read table is compacted (log files are named by their slice's base instant on version 6,
by their own delta commit on 8: none may be left in a latest slice); then, under the table lock,
nothing may be pending. The archived timeline moves with the active one: version 6's archive files
become the LSM timeline of 8 (``timeline.archived.as_history_rows``), and back. What the other
version cannot hold is refused by name, the table unchanged: a one-field record key of the complex
key generator between 8 and 9 (9 stores it as ``field:value``, 8 as the value).

Crash-safe: the new timeline is written beside the old one first (no reader of the table's version
looks there), ``hoodie.properties`` is replaced in one atomic write (the table changes version
there), the old timeline's files are deleted last. A crash before the switch leaves the table as it
was; after it, the old files are left over, unread, and the same call deletes them.

Example:
    >>> _ = session.sql("CREATE TABLE orders (id INT, v STRING) USING hudi TBLPROPERTIES (primaryKey = 'id')")
    >>> _ = session.sql("INSERT INTO orders VALUES (1, 'a')")
    >>> session.sql("CALL upgrade_table(table => 'orders', to_version => 'NINE')").collect()
    [Row(result=True)]
    >>> table = HudiTable.load(warehouse + "/orders")
    >>> table.config.version, [i.completion_time is not None for i in table.timeline.completed()]
    (9, [True])
"""

from __future__ import annotations

from pyspark.sql import SparkSession

from hudiql.config import registry as K
from hudiql.config import table_config as C
from hudiql.errors import SqlError
from hudiql.layout import ARCHIVED_FOLDER, META_FOLDER
from hudiql.services import compaction
from hudiql.table.metadata_table import has_metadata_table, remove_metadata_table
from hudiql.table.table import HudiTable
from hudiql.timeline import lsm_timeline
from hudiql.timeline.active import parse_instant_file_name
from hudiql.timeline.archived import as_archive_entries, as_history_rows, write_archive
from hudiql.timeline.conversion import converted, write_converted
from hudiql.transaction.prologue import locked

#: Hudi's names of the versions (``HoodieTableVersion``), as ``to_version`` takes them.
VERSION_NAMES = {"SIX": 6, "EIGHT": 8, "NINE": 9}
_STEPS = (6, 8, 9)


def parse_version(procedure: str, text: object) -> int:
    """``to_version`` as Hudi names it (``'NINE'``) or as a number (``9``)."""
    value = str(text).strip().upper()
    version = VERSION_NAMES.get(value) or (int(value) if value in ("6", "8", "9") else None)
    if version is None:
        raise SqlError(f"CALL {procedure}: to_version {text} is not a version hudiql writes; use 6 (SIX), 8 (EIGHT) "
                       "or 9 (NINE)")
    return version


def change_version(spark: SparkSession, table: HudiTable, procedure: str,
                   to_version: int) -> None:
    """Move ``table`` to ``to_version`` (``procedure`` upgrade_table: up, downgrade_table: down)."""
    current = table.config.version
    upward = procedure == "upgrade_table"
    if to_version != current and (to_version > current) != upward:
        other = "downgrade_table" if upward else "upgrade_table"
        raise SqlError(f"CALL {procedure}: table {table.config.name} is of version {current}; CALL {other} moves "
                       f"it to version {to_version}")
    if to_version == current:
        # a step a crash cut short after its switch: the other layout's folder, as hudiql names it
        other = META_FOLDER if table.config.timeline_layout_version >= 2 else f"{META_FOLDER}/{C.DEFAULT_TIMELINE_PATH}"
        _delete_left_over(table, other)
        return
    path = [v for v in _STEPS if min(current, to_version) <= v <= max(current, to_version)]
    for step in path[1:] if upward else list(reversed(path))[1:]:
        table = _step(spark, table, procedure, step)


def _step(spark: SparkSession, table: HudiTable, procedure: str, to: int) -> HudiTable:
    """One version step; the table as it is after it."""
    name, config = table.config.name, table.config
    if {config.version, to} == {8, 9} and config.keygen_class == C.COMPLEX_KEYGEN and len(config.record_key_fields) == 1:
        raise SqlError(f"CALL {procedure}: table {name} keys its records by one field with the complex key generator, "
                       "whose keys version 9 stores as field:value and version 8 as the value; hudiql does not "
                       f"rewrite its records' keys, so it stays at version {config.version}")
    relayout = {config.version, to} == {6, 8}
    if relayout:
        if config.is_mor:
            compaction.schedule_and_execute(spark, table.refreshed())
    with locked(table, f"{procedure} to version {to}", roll_back_failed_writes=True) as held:
        table = held.table
        pending = table.timeline.pending()
        if pending:
            raise SqlError(f"CALL {procedure}: {pending[0].action} {pending[0].timestamp} of table {name} is pending; "
                           "let it finish (or a failed write be rolled back by the next write), then call again")
        if relayout and config.is_mor and any(s.log_files for s in table.file_system_view().latest_slices()):
            raise SqlError(f"CALL {procedure}: a write added log files to table {name} after its compaction; "
                           "call again")
        if has_metadata_table(table.storage, table.config):
            # Its layout is its version's: the next write builds it again in the new version (a
            # version 6 table keeps none), from a listing, as Hudi's writers build a missing one.
            table.config.props = dict(remove_metadata_table(table.storage).props)
        moved_config = C.TableConfig(C.properties_for_version(table.config, to))
        if relayout:
            # what a crashed attempt wrote
            table.storage.delete_dir(moved_config.timeline_folder if to == 8 else moved_config.archive_folder)
            table.storage.makedirs(moved_config.archive_folder)
            _convert_archive(table, moved_config)
            write_converted(table.storage, converted(table.timeline, moved_config))
        moved_config.save(table.storage)
        moved = HudiTable.load(table.base_uri).for_statement(table.settings.given)  # its new properties, the same SETs
    _delete_left_over(moved, config.timeline_folder)
    return moved


def _convert_archive(table: HudiTable, to: C.TableConfig) -> None:
    """Write the table's archived timeline in the form of the layout ``to`` has, beside the old one
    (deleted with the old timeline once the switch is written), as Hudi's upgrade and downgrade
    move it: layout 1's archive files to the LSM timeline, or back."""
    storage = table.storage
    if to.timeline_layout_version >= 2:
        rows = as_history_rows(storage)
        if rows:
            lsm_timeline.write(storage, to.archive_folder, rows, table.settings.choice(K.COMPRESSION))
    else:
        rows = lsm_timeline.read(storage, table.config.archive_folder)
        if rows:
            write_archive(storage, as_archive_entries(rows), table.settings.number(K.ARCHIVAL_BATCH))


def _delete_left_over(table: HudiTable, old_folder: str) -> None:
    """The timeline files the table had in ``old_folder`` before a step changed its layout, which
    the step deletes only after its switch is written."""
    if old_folder == table.config.timeline_folder or not table.storage.is_dir(old_folder):
        return
    if old_folder == META_FOLDER:  # layout 1's instants, beside hoodie.properties
        for info in table.storage.list(META_FOLDER):
            if not info.is_dir and parse_instant_file_name(info.name):
                table.storage.delete(info.path)
        table.storage.delete_dir(ARCHIVED_FOLDER)  # its instants are in the LSM timeline now
    else:
        table.storage.delete_dir(old_folder)
