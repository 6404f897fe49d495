"""Conflict resolution of optimistic concurrency control: may this write still commit?

At commit, under the table lock, a write compares what it wrote with every instant that
completed since its snapshot, and with every compaction planned since it (the file-group
overlap check of Hudi's default conflict resolution strategy, with two checks more):
- both wrote, replaced or compacted one file group: the write that commits second would undo
  the other's rows (a copy-on-write rewrite starts from the base file it read), or append logs
  to a slice a compaction no longer merges;
- bucket index: both wrote to one bucket of one partition (two new file groups for a bucket);
- both inserted one record key, into different new file groups: the key would be stored twice.
  Only this check reads data: the keys of the files both wrote in their shared partitions, in a
  Spark job that runs only when another write committed in such a partition meanwhile.
A compaction planned before the snapshot is no conflict: the write went to the slice it opened.
Under non-blocking concurrency control (``NON_BLOCKING``) only replaced file groups and schema
changes conflict.

Clustering (Hudi's defaults): a write to a file group under a pending clustering plan is
rejected, whenever the plan was made (Hudi's reject-update strategy; a compaction, which
changes no row, is exempt); and a clustering run, planned at one instant and committed later,
checks every write that completed since its plan (``ConflictRule.planned_at``), not only since
its run began: it rewrites the slices as it read them.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from dataclasses import dataclass

from pyspark.sql import SparkSession

from hudiql.errors import LostConflictError, WriteConflictError
from hudiql.layout import bucket_of_file_id, parse_data_file_name
from hudiql.read.snapshot import SOURCE_FILE, stored_keys
from hudiql.table.fsview import read_commit_metadata
from hudiql.table.table import HudiTable
from hudiql.record.schema import (
    PARTITION_PATH,
    RECORD_KEY,
    from_avro,
    without_meta_columns,
)
from hudiql.timeline.active import COMPACTION, REPLACE_COMMIT, WRITE_ACTIONS, Instant, Timeline, as_layout_1
from hudiql.timeline.commit import CommitMetadata, WriteStat
from hudiql.timeline.compaction_plan import decode_plan
from hudiql.timeline.replace_plan import pending_clusterings

RETRY = "nothing of this write was committed: run the statement again"


@dataclass(frozen=True)
class ConflictRule:
    """What counts as a conflict for one write."""

    #: Actions whose instants can conflict with it: a compaction conflicts only with replaced file groups.
    actions: tuple[str, ...] = (*WRITE_ACTIONS, COMPACTION)
    bucket_index: bool = False
    unique_keys: bool = False  # an upsert: one record per key
    #: A table service run from a plan made at this instant (clustering): the writes completed
    #: since the plan count, even those its run's snapshot knew.
    planned_at: str | None = None
    #: The actions whose writes to this write's file groups (or buckets) conflict with it; None:
    #: all of ``actions``. (Every one of ``actions`` conflicts when it changed the schema otherwise.)
    overlapping: tuple[str, ...] | None = None


#: Non-blocking concurrency control (Hudi 1.x): a delta commit conflicts with no other write of
#: its file groups, nor with a compaction planned while it ran: each writer keeps its own log
#: files, which readers merge by the ordering field, and a log whose delta commit completed after
#: a compaction was planned belongs to the slice that compaction opens (``fsview.log_slices``).
#: Hudi checks nothing at all; hudiql still fails a write to a file group that a replacecommit
#: (DROP PARTITION, TRUNCATE, or an overwrite run under optimistic control) replaced meanwhile,
#: whose logs no reader would merge, and a write whose schema another changed meanwhile, whose
#: commit would drop the other's new columns.
NON_BLOCKING = ConflictRule(actions=WRITE_ACTIONS, overlapping=(REPLACE_COMMIT,))


@dataclass(frozen=True)
class _Touched:
    """The file groups an instant wrote, replaced or plans to compact, and the base files it
    inserted records into."""

    groups: frozenset[tuple[str, str]]
    inserted: tuple[str, ...]
    schema: str | None = None


def concurrent_instants(snapshot: Timeline, current: Timeline, own: str, actions: tuple[str, ...],
                        planned_at: str | None = None) -> list[Instant]:
    """Instants of ``actions`` that completed since ``snapshot`` (it did not know them, or knew
    them pending) or after ``planned_at``, and compactions planned since the snapshot (a plan may
    be made while this write is in flight: its file groups are then this write's conflict)."""
    known = {i.timestamp: i for i in snapshot.instants}
    out = []
    for instant in current.instants:
        if instant.timestamp == own or as_layout_1(instant.action) not in actions:
            continue
        before = known.get(instant.timestamp)
        if instant.is_completed:
            # A compaction pending in the snapshot completing is no news: the write went past it.
            if (before is None or (not before.is_completed and before.action != COMPACTION)
                    or (planned_at is not None and instant.timestamp > planned_at)):
                out.append(instant)
        elif instant.action == COMPACTION and before is None:
            out.append(instant)
    return out


def check(
    spark: SparkSession,
    table: HudiTable,
    snapshot: Timeline,
    current: Timeline,
    own: Instant,
    ours: CommitMetadata,
    rule: ConflictRule,
) -> None:
    """Raise ``WriteConflictError`` naming the other instant when this write may not commit."""
    mine = _touched_by_stats(ours.write_stats, ours.partition_to_replace_file_ids)
    if own.action != COMPACTION:
        _check_pending_clustering(current, own, mine.groups)
    inserted_by: dict[str, Instant] = {}
    for other in concurrent_instants(snapshot, current, own.timestamp, rule.actions, rule.planned_at):
        theirs = _touched(current, other)
        if ours.schema and theirs.schema and _columns(ours.schema) != _columns(theirs.schema):
            # A commit's schema becomes the table's: the later one would undo the other's.
            raise _conflict(own, other, "the table's schema, differently")
        if rule.overlapping is not None and as_layout_1(other.action) not in rule.overlapping:
            continue
        both = mine.groups & theirs.groups
        if both:
            partition, file_id = sorted(both)[0]
            raise _conflict(own, other, f"file group {file_id} in partition '{partition}'")
        if rule.bucket_index:
            buckets = _buckets(mine.groups) & _buckets(theirs.groups)
            if buckets:
                partition, bucket = sorted(buckets)[0]
                raise _conflict(own, other, f"bucket {bucket} of partition '{partition}'")
        inserted_by.update((path, other) for path in theirs.inserted)
    if rule.unique_keys and mine.inserted and inserted_by:
        _check_keys(spark, table, own, mine.inserted, inserted_by)


def _check_pending_clustering(current: Timeline, own: Instant, groups: frozenset[tuple[str, str]]) -> None:
    for instant, plan in pending_clusterings(current):
        both = groups & plan.file_groups() if instant.timestamp != own.timestamp else set()
        if both:
            partition, file_id = sorted(both)[0]
            raise WriteConflictError(
                f"{own.action} {own.timestamp} writes file group {file_id} in partition '{partition}', which clustering "
                f"{instant.timestamp} is rewriting (its plan is pending); {RETRY} once the clustering completed "
                "(CALL run_clustering(table => ..., op => 'execute') runs it)"
            )


def _columns(avro_schema: str) -> list[tuple[str, str]]:
    """Names and types of a commit's schema (writers spell nullability and docs differently)."""
    return [(f.name.lower(), f.dataType.simpleString()) for f in without_meta_columns(from_avro(avro_schema)).fields]


def _conflict(own: Instant, other: Instant, what: str) -> LostConflictError:
    happened = "was planned" if not other.is_completed else "completed"
    action = "compaction" if other.action == COMPACTION else other.action
    return LostConflictError(
        f"{own.action} {own.timestamp} conflicts with {action} {other.timestamp}, which {happened} while it ran: "
        f"both wrote {what}; {RETRY}"
    )


def _touched(timeline: Timeline, instant: Instant) -> _Touched:
    if instant.action == COMPACTION and not instant.is_completed:
        plan = decode_plan(timeline.read_requested(instant))
        return _Touched(frozenset((op.partition_path, op.file_id) for op in plan), ())
    meta = read_commit_metadata(timeline, instant)
    touched = _touched_by_stats(meta.write_stats, meta.partition_to_replace_file_ids)
    return _Touched(touched.groups, touched.inserted, meta.schema)


def _touched_by_stats(stats: list[WriteStat], replaced: dict[str, list[str]]) -> _Touched:
    groups = {(s.partition_path, s.file_id) for s in stats}
    groups.update((partition, file_id) for partition, ids in replaced.items() for file_id in ids)
    inserted = tuple(
        s.path for s in stats
        if s.num_inserts > 0 and (parsed := parse_data_file_name(posixpath.basename(s.path))) and not parsed.is_log
    )
    return _Touched(frozenset(groups), inserted)


def _buckets(groups: frozenset[tuple[str, str]]) -> set[tuple[str, int]]:
    return {(p, b) for p, f in groups if (b := bucket_of_file_id(f)) is not None}


def _partitions(paths: Iterable[str]) -> set[str]:
    return {posixpath.dirname(p) for p in paths}


def _check_keys(spark: SparkSession, table: HudiTable, own: Instant, mine: tuple[str, ...],
                inserted_by: dict[str, Instant]) -> None:
    """Both inserted a key: in the partitions both inserted into, a join of their keys."""
    shared = _partitions(mine) & _partitions(inserted_by)
    theirs = [p for p in inserted_by if posixpath.dirname(p) in shared]
    if not theirs:
        return
    ours_df = stored_keys(spark, table, [p for p in mine if posixpath.dirname(p) in shared])
    theirs_df = stored_keys(spark, table, theirs, with_file_name=True)
    hit = ours_df.join(theirs_df, [RECORD_KEY, PARTITION_PATH]).limit(1).collect()
    if hit:
        by_name = {posixpath.basename(p): instant for p, instant in inserted_by.items()}
        raise _conflict(own, by_name[hit[0][SOURCE_FILE]], f"new record key '{hit[0][RECORD_KEY]}'")
