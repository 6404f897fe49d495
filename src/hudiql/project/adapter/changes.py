"""``{{ changes(ref('orders')) }}``: an incremental model reads only the rows its upstream hudiql
table changed since the model's last successful run.

The model's own commits record what they read: the commit that writes the model's rows carries, in
its ``extraMetadata``, ``_hudiql.consumed.<db>.<table>`` = the upstream's latest commit when the
run began (a session setting with the commit-metadata prefix, ``keys.commit_extra_metadata``).
The next run reads ``hudi_table_changes`` from there up to the upstream's latest commit then, deleted
records included (``_hoodie_is_deleted = true``, which a MERGE of the row into the model deletes).
A run that failed recorded nothing, so the next one reads its changes again.

The whole upstream (as of its latest commit, ``_hoodie_is_deleted = false`` on every row) is read
instead, with a console line saying why, on the model's first build, on a full refresh, when no
earlier run recorded what it read, and when the cleaner or archiver removed instants the changes
need.
"""

from __future__ import annotations

from dataclasses import dataclass

from hudiql.catalog import Catalog
from hudiql.io.storage import Storage
from hudiql.project.adapter.relation import table_location
from hudiql.project.artifacts.nodes import Relation
from hudiql.project.errors import CompilationError
from hudiql.read.incremental import LATEST_STATE, ChangeRange, unreadable_reason
from hudiql.table.fsview import read_commit_metadata
from hudiql.record.schema import IS_DELETED
from hudiql.table.table import HudiTable, has_table
from hudiql.timeline.active import WRITE_ACTIONS

#: The commit-metadata key (with Hudi's default prefix ``_``) of the upstream instant a model read up to.
CONSUMED_PREFIX = "_hudiql.consumed."
#: Commits that write no rows of the model's own (a schema change, table services): they never
#: record a consumption, and the one before them tells.
_NOT_A_RUN = ("ALTER_SCHEMA", "COMPACT", "CLUSTER")


@dataclass(frozen=True)
class Changes:
    """What a model reads of its upstream, the upstream instant it reads up to, and why it reads
    the whole upstream (``None``: only the changes)."""

    sql: str
    consumed: str | None
    full_because: str | None


def consumed_key(upstream: Relation) -> str:
    return f"{CONSUMED_PREFIX}{upstream.schema or 'default'}.{upstream.identifier}"


def last_consumed(model: HudiTable, key: str) -> str | None:
    """The upstream instant the model's latest commit of rows recorded under ``key``."""
    for instant in reversed(model.timeline.completed(WRITE_ACTIONS)):
        meta = read_commit_metadata(model.timeline, instant)
        if meta.operation_type not in _NOT_A_RUN:
            return meta.extra_metadata.get(key)
    return None


def plan_changes(catalog: Catalog, upstream: Relation, model: Relation, incremental: bool) -> Changes:
    """What ``model`` reads of ``upstream`` in this run (``incremental``: the model's table exists
    and is not being rebuilt)."""
    location, _ = table_location(catalog, upstream)
    if not has_table(Storage(location)):
        raise CompilationError(f"changes({upstream}): {upstream} is not a hudiql table (a view or an ephemeral "
                               "model has no commits); read it with ref() instead")
    table = HudiTable.load(location)
    commits = table.timeline.completed(WRITE_ACTIONS)
    if not commits:
        return Changes(_whole(table, upstream, None), None, None)
    end = commits[-1].timestamp
    begin = last_consumed(HudiTable.load(table_location(catalog, model)[0]), consumed_key(upstream)) if incremental else None
    if not incremental:
        reason = "the model's table is built from scratch"
    elif begin is None:
        reason = f"no earlier run of {model} recorded what it read of {upstream}"
    else:
        reason = unreadable_reason(table, ChangeRange(begin, end), include_deletes=True)
    if reason is not None:
        return Changes(_whole(table, upstream, end), end, reason)
    return Changes(f"hudi_table_changes('{upstream.schema or 'default'}.{upstream.identifier}', '{LATEST_STATE}', "
                   f"'{begin}', '{end}')", end, None)


def _whole(table: HudiTable, upstream: Relation, end: str | None) -> str:
    """The whole upstream as of ``end``, with the deleted-record flag the changes carry (false)."""
    as_of = f" TIMESTAMP AS OF '{end}'" if end else ""
    has_flag = IS_DELETED in {f.name.lower() for f in table.schema.fields}
    return f"(SELECT *{'' if has_flag else f', false AS {IS_DELETED}'} FROM {upstream}{as_of})"
