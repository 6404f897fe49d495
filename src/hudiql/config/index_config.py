"""Which index a table uses (``hoodie.index.type``), with its options: decided once, at CREATE
TABLE, because the file groups on storage are laid out by it (``write.index`` tags records by it).

Example:
    >>> index = IndexConfig.from_settings({"hoodie.index.type": "BUCKET",
    ...                                    "hoodie.bucket.index.num.buckets": "4"}, ["id"])
    >>> index.num_buckets, index.is_bucket
    (4, True)
"""

from __future__ import annotations

from dataclasses import dataclass

from hudiql.config import registry as K
from hudiql.errors import OptionError

INDEX_TYPE = K.INDEX_TYPE
BUCKET_ENGINE = K.BUCKET_ENGINE
NUM_BUCKETS = K.NUM_BUCKETS
HASH_FIELD = K.HASH_FIELD
DEFAULT_NUM_BUCKETS = int(K.KEYS[NUM_BUCKETS].default)

SIMPLE = K.SIMPLE_INDEX
BUCKET = K.BUCKET_INDEX


@dataclass(frozen=True)
class IndexConfig:
    kind: str  # SIMPLE or BUCKET
    num_buckets: int = DEFAULT_NUM_BUCKETS
    hash_fields: tuple[str, ...] = ()

    @property
    def is_bucket(self) -> bool:
        return self.kind == BUCKET

    def check_unchanged(self, table_props: dict[str, str], settings: dict[str, str], record_key_fields: list[str]) -> None:
        """Refuse ``settings`` (a session's or a statement's) that change this index, the table's:
        the file groups on storage were laid out by it, so they may repeat its options only."""
        overrides = {k: v for k, v in settings.items() if k in (INDEX_TYPE, BUCKET_ENGINE, NUM_BUCKETS, HASH_FIELD)}
        if overrides and self.from_settings({**table_props, **overrides}, record_key_fields) != self:
            stored = ", ".join(f"{k}={table_props.get(k, '(not set)')}" for k in overrides)
            raise OptionError(
                f"{', '.join(f'{k}={v}' for k, v in overrides.items())} differs from the table's {stored}; "
                "a table's index is fixed when the table is created"
            )

    @classmethod
    def from_settings(cls, settings: dict[str, str], record_key_fields: list[str]) -> IndexConfig:
        """The index a table's properties (and session settings) ask for; validated."""
        for key in (INDEX_TYPE, BUCKET_ENGINE, NUM_BUCKETS):
            K.KEYS[key].check(K.setting(settings, key))
        if K.choice(settings, INDEX_TYPE) != BUCKET:
            # These lay out file groups as SIMPLE does; the record index (when the metadata table
            # has it) and the base files' bloom filters only find them faster, and the global ones
            # look in every partition (``write.index``).
            return cls(SIMPLE)
        if not record_key_fields:
            raise OptionError(f"{INDEX_TYPE}=BUCKET needs a record key; add PRIMARY KEY (...) to the table")
        raw = K.setting(settings, NUM_BUCKETS)
        hash_fields = [f.strip() for f in settings.get(HASH_FIELD, "").split(",") if f.strip()] or record_key_fields
        unknown = [f for f in hash_fields if f not in record_key_fields]
        if unknown:
            raise OptionError(
                f"{HASH_FIELD}={','.join(hash_fields)}: {', '.join(unknown)} is not a record key field; "
                f"the hash fields must be among {', '.join(record_key_fields)}"
            )
        return cls(BUCKET, int(raw), tuple(hash_fields))
