"""Time travel: a table as of an instant (``SELECT ... FROM t TIMESTAMP AS OF '<instant>'``, or
``SET hoodie.datasource.read.as.of.instant``).

A reader as of instant T sees the writes of the instants up to T: the file slices they wrote,
with the log blocks of those instants only, the file groups their replacecommits replaced gone,
and the schema of the last of them (``Timeline.as_of``). What the cleaner removed cannot be read:
an instant older than the earliest one whose slices the cleaner kept is refused, naming it.

Example:
    >>> _ = session.sql("CREATE TABLE orders (id INT, amount DOUBLE) USING hudi TBLPROPERTIES (primaryKey = 'id')")
    >>> _ = session.sql("INSERT INTO orders VALUES (1, 10.0)")
    >>> first = HudiTable.load(warehouse + "/orders").timeline.completed()[-1].timestamp
    >>> _ = session.sql("INSERT INTO orders VALUES (1, 99.0)")
    >>> session.sql(f"SELECT amount FROM orders TIMESTAMP AS OF '{first}'").collect()
    [Row(amount=10.0)]
    >>> table_as_of(HudiTable.load(warehouse + "/orders"), "2001-01-01")
    Traceback (most recent call last):
    ...
    hudiql.errors.SqlError: table orders has no commit at or before 20010101000000000 ('2001-01-01'); its first commit is ...
"""

from __future__ import annotations

from hudiql.errors import HudiqlError, SqlError
from hudiql.layout import parse_data_file_name
from hudiql.table.table import HudiTable
from hudiql.timeline.active import CLEAN, WRITE_ACTIONS, parse_query_instant
from hudiql.timeline.archived import read_archived
from hudiql.timeline.clean_plan import decode_metadata, decode_plan


def query_instant(table: HudiTable, text: str, what: str = "TIMESTAMP AS OF") -> str:
    """The instant time ``text`` names, in the table's timeline time zone; a malformed one is
    refused, naming the table and where it was given."""
    try:
        return parse_query_instant(text, table.config.timeline_zone)
    except HudiqlError as exc:
        raise SqlError(f"table {table.config.name}: {what} {exc}") from None


def earliest_readable_instant(table: HudiTable) -> str | None:
    """The oldest instant whose file slices are all still on storage, as the latest clean (or
    the clean being run) left them; ``None`` when nothing was cleaned.

    KEEP_LATEST_COMMITS and KEEP_LATEST_BY_HOURS record it: the earliest commit to retain. A
    KEEP_LATEST_FILE_VERSIONS clean records none: a file group it took slices from is readable
    from its oldest slice left, and a file group it removed whole (replaced) from the last
    commit that clean saw.
    """
    cleans = [i for i in table.timeline.instants if i.action == CLEAN]
    if not cleans:
        return None
    latest = cleans[-1]
    if latest.is_completed:
        meta = decode_metadata(table.timeline.read(latest))
        retained, last_commit, deleted = meta.earliest_commit_to_retain, meta.last_completed_commit, meta.deleted
    else:
        plan = decode_plan(table.timeline.read_requested(latest))
        retained, last_commit, deleted = plan.earliest_commit_to_retain, plan.last_completed_commit, plan.files
    if retained:
        return retained
    groups = set()
    for partition, names in deleted.items():
        for name in names:
            parsed = parse_data_file_name(name.rsplit("/", 1)[-1])
            if parsed is not None:
                groups.add((partition, parsed.file_id))
    view = table.file_system_view()
    floors = []
    for key in groups:
        group = view.groups.get(key)
        floors.append(min(group.slices) if group is not None and group.slices else last_commit)
    return max(floors, default=None)


def table_as_of(table: HudiTable, text: str) -> HudiTable:
    """``table`` as of the instant ``text`` names; refused when the cleaner removed what it
    read, or when the table had no commit by then."""
    instant = query_instant(table, text)
    name = table.config.name
    earliest = earliest_readable_instant(table)
    if earliest is not None and instant < earliest:
        raise SqlError(
            f"table {name} as of {instant} ('{text}'): the cleaner removed the files of that time; the earliest "
            f"instant it can read is {earliest} (hoodie.cleaner.commits.retained keeps more)"
        )
    past = table.as_of(instant)
    if not past.timeline.completed() and not _archived_commit_at_or_before(table, instant):
        commits = table.timeline.completed()
        first = f"its first commit is {commits[0].timestamp}" if commits else "it has no commit yet"
        raise SqlError(f"table {name} has no commit at or before {instant} ('{text}'); {first}")
    return past


def _archived_commit_at_or_before(table: HudiTable, instant: str) -> bool:
    return any(a.timestamp <= instant and a.action in WRITE_ACTIONS for a in read_archived(table.storage, table.config))
