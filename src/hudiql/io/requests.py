"""The storage requests a process makes through ``Storage``, counted: what a statement costs its
driver on an object store, where each request is a round trip of 20-100 ms. (Spark's tasks run in
other processes and are not counted; neither are Spark's own parquet reads.) For benchmarks and
tests.

Example:
    >>> storage = Storage(warehouse)
    >>> storage.write(".hoodie/hoodie.properties", b"hoodie.table.name=t")
    >>> with counted_requests() as count:
    ...     _ = storage.list(".hoodie"), storage.read(".hoodie/hoodie.properties"), storage.exists("x")
    >>> count.lists, count.reads, count.probes, count.reads_of(".hoodie/hoodie.properties")
    (1, 1, 1, 1)
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from hudiql.io.storage import Storage

#: The methods of ``Storage`` that each make one request, by kind.
KINDS = {
    "list": "list",
    "read_if_exists": "read", "open_input_file": "read",
    "exists": "probe", "is_dir": "probe", "size": "probe", "modified_time": "probe",
}


@dataclass
class RequestCount:
    """Requests by kind (``list``, ``read``, ``probe``) and path (relative to the table or warehouse)."""

    by_path: Counter[tuple[str, str]] = field(default_factory=Counter)

    def total(self, kind: str) -> int:
        return sum(n for (k, _), n in self.by_path.items() if k == kind)

    @property
    def lists(self) -> int:
        return self.total("list")

    @property
    def reads(self) -> int:
        return self.total("read")

    @property
    def probes(self) -> int:
        return self.total("probe")

    def reads_of(self, path: str) -> int:
        return self.by_path[("read", path)]

    def lists_of(self, *folders: str) -> int:
        """Listings of any of ``folders`` (trailing ``/`` aside)."""
        wanted = {f.rstrip("/") for f in folders}
        return sum(n for (k, p), n in self.by_path.items() if k == "list" and p.rstrip("/") in wanted)


@contextmanager
def counted_requests() -> Iterator[RequestCount]:
    """Count every request made through ``Storage`` in this process while the block runs."""
    count = RequestCount()
    originals = {name: getattr(Storage, name) for name in KINDS}

    def counting(name: str):
        method = originals[name]

        @functools.wraps(method)
        def counted(self: Storage, rel: str = "", *args, **kwargs):
            count.by_path[(KINDS[name], rel)] += 1
            return method(self, rel, *args, **kwargs)

        return counted

    for name in KINDS:
        setattr(Storage, name, counting(name))
    try:
        yield count
    finally:
        for name, method in originals.items():
            setattr(Storage, name, method)
