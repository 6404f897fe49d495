"""The merge rule (Hudi's payload semantics): which of two versions of a record wins.

- Event time ordering (DefaultHoodieRecordPayload): the larger ordering value wins; on a tie
  the later write wins (the stored version stays only when its value is greater). A null ordering
  value ranks below every value.
- Commit time ordering (OverwriteWithLatestAvroPayload, or no ordering field): the later write
  always wins.

Deletes: a delete without an ordering value ("natural order": null, or 0 as Hudi writes it)
always removes the record; one with a value removes it when not older, under event time.

Every path asks this module, in the form it computes in: precombine among incoming rows and a
DML statement's decision (Spark columns), the rewrite of a copy-on-write file group (Arrow
arrays, ``write.handle``), the fold of log records and deletes onto a slice's base file when a
merge-on-read slice is read or compacted (Python values, ``file_group.reader``).

Example:
    >>> stored, incoming = pa.array([5, None, 3]), pa.array([4, 1, 3])
    >>> MergeRule(EVENT_TIME_ORDERING, "ts").incoming_wins(stored, incoming).to_pylist()  # older, over null, tie
    [False, True, True]
    >>> MergeRule(COMMIT_TIME_ORDERING, None).incoming_wins(stored, incoming).to_pylist()
    [True, True, True]
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from hudiql.config.table_config import (
    COMMIT_TIME_ORDERING,
    EVENT_TIME_ORDERING,
    TableConfig,
)


@dataclass(frozen=True)
class MergeRule:
    mode: str
    ordering_field: str | None

    @classmethod
    def from_config(cls, config: TableConfig) -> MergeRule:
        return cls(config.merge_mode, config.ordering_field)

    @classmethod
    def latest_wins(cls) -> MergeRule:
        """The rule for rows a statement decided already against the stored rows it read (MERGE,
        UPDATE, DELETE): each replaces its key's stored version."""
        return cls(COMMIT_TIME_ORDERING, None)

    @property
    def is_event_time(self) -> bool:
        return self.mode == EVENT_TIME_ORDERING and self.ordering_field is not None

    def precombine(self, df: DataFrame, key_columns: list[str], sequence: str, ordering: str | None = None) -> DataFrame:
        """One row per key: the greatest ordering value, ties to the later input row (``sequence``).

        As Hudi's precombine of incoming records, this uses the ordering field whatever the merge
        mode (or the ``ordering`` column standing for it); without one, the later input row wins.
        """
        order: list[Column] = [F.col(sequence).desc()]
        if self.ordering_field:
            order.insert(0, F.col(ordering or self.ordering_field).desc_nulls_last())
        window = Window.partitionBy(*key_columns).orderBy(*order)
        rank = "__hudiql_rank"
        return df.withColumn(rank, F.row_number().over(window)).where(F.col(rank) == 1).drop(rank)

    def incoming_wins_column(self, stored: Column, incoming: Column) -> Column:
        """The same rule as ``incoming_wins``, as a Spark expression."""
        if not self.is_event_time:
            return F.lit(True)
        return stored.isNull() | (incoming.isNotNull() & (incoming >= stored))

    def incoming_wins(self, stored: pa.Array | None, incoming: pa.Array | None) -> pa.Array:
        """For aligned stored / incoming ordering values: does the incoming version replace the stored one?"""
        if not self.is_event_time:
            n = len(incoming) if incoming is not None else len(stored)
            return pa.array([True] * n, pa.bool_())
        assert stored is not None and incoming is not None
        if stored.type != incoming.type:
            incoming = incoming.cast(stored.type)
        not_older = pc.fill_null(pc.greater_equal(incoming, stored), False)
        return pc.or_(pc.is_null(stored), not_older)

    def record_wins(self, stored: object, incoming: object) -> bool:
        """``incoming_wins`` for one pair of ordering values (a log record over the current version)."""
        return not self.is_event_time or stored is None or (incoming is not None and incoming >= stored)

    def delete_wins(self, stored: object, delete_ordering: object) -> bool:
        """Does a delete ordered ``delete_ordering`` remove the version ordered ``stored``?"""
        if not self.is_event_time or natural_order(delete_ordering):
            return True
        return stored is None or delete_ordering >= stored


def natural_order(ordering: object) -> bool:
    """Hudi writes a record without an ordering value with null or the integer 0 ("natural order")."""
    return ordering is None or (type(ordering) is int and ordering == 0)


__all__ = ["MergeRule", "natural_order", "EVENT_TIME_ORDERING", "COMMIT_TIME_ORDERING"]
