"""The bloom filters of a table's base files (``formats.bloom_filter``): which filter a write puts
in each base file's footer (``hoodie.parquet.bloom.filter.enabled`` and Hudi's sizing options), so
that Hudi's ``BLOOM`` index, and hudiql's, open only the files that may hold a key."""

from __future__ import annotations

from hudiql.config import registry as K
from hudiql.formats.bloom_filter import FilterSpec
from hudiql.table.table import HudiTable


def filter_spec(table: HudiTable) -> FilterSpec | None:
    """The bloom filter the table's base files get; None when ``hoodie.parquet.bloom.filter.enabled``
    is false (their footers then hold the smallest and largest key only)."""
    s = table.settings
    if not s.flag(K.BLOOM_FILTER_ENABLE):
        return None
    return FilterSpec(s.choice(K.BLOOM_FILTER_TYPE), s.number(K.BLOOM_NUM_ENTRIES), s.fraction(K.BLOOM_FPP),
                      s.number(K.BLOOM_MAX_ENTRIES))
