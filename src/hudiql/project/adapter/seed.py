"""Seed CSV files: read on the driver (seeds are small reference data) and typed by inference.

Each column gets the narrowest type all its non-empty values fit, in this order: BOOLEAN
(true/false), BIGINT, DOUBLE, DATE (``YYYY-MM-DD``), TIMESTAMP (``YYYY-MM-DD HH:MM:SS[.f]``),
else STRING. Empty cells are NULL. ``column_types`` overrides the inference per column.

Example:
    >>> seed = read_seed(Path("models_example/seeds/orders.csv"), delimiter=",", column_types={"amount": "decimal(10,2)"})
    >>> seed.columns[:4]
    [('order_id', 'bigint'), ('customer_id', 'bigint'), ('status', 'string'), ('amount', 'decimal(10,2)')]
    >>> infer_type(["2024-05-01", None, "2024-05-02"]), infer_type(["1", "2.5"])
    ('date', 'double')
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path

from hudiql.catalog import check_name
from hudiql.project.errors import ProjectError

_PATTERNS = [
    ("boolean", re.compile(r"^(true|false)$", re.IGNORECASE)),
    ("bigint", re.compile(r"^[+-]?\d{1,18}$")),
    ("double", re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")),
    ("date", re.compile(r"^\d{4}-\d{2}-\d{2}$")),
    ("timestamp", re.compile(r"^\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?$")),
]


@dataclass
class Seed:
    columns: list[tuple[str, str]]  # name, Spark SQL type
    rows: list[list[str | None]]  # the cells as text; None for an empty cell


def infer_type(values: list[str | None]) -> str:
    present = [v for v in values if v is not None]
    for name, pattern in _PATTERNS:
        if present and all(pattern.match(v) for v in present):
            return name
    return "string"


def read_seed(path: Path, delimiter: str, column_types: dict[str, str]) -> Seed:
    try:
        with path.open(encoding="utf-8-sig", newline="") as f:
            records = list(csv.reader(f, delimiter=delimiter))
    except OSError as e:
        raise ProjectError(f"cannot read seed {path}: {e.strerror}") from None
    if not records or not records[0]:
        raise ProjectError(f"seed {path} is empty; its first line must name the columns")
    header = [h.strip() for h in records[0]]
    for name in header:
        check_name("seed column", name)
    unknown = set(column_types) - set(header)
    if unknown:
        raise ProjectError(f"seed {path}: column_types names {', '.join(sorted(unknown))}, not columns of the file ({', '.join(header)})")
    rows = []
    for line, record in enumerate(records[1:], start=2):
        if not any(cell.strip() for cell in record):
            continue
        if len(record) != len(header):
            raise ProjectError(f"seed {path} line {line} has {len(record)} values; the header has {len(header)}")
        rows.append([cell if cell != "" else None for cell in record])
    columns = [
        (name, column_types.get(name) or infer_type([r[i] for r in rows])) for i, name in enumerate(header)
    ]
    return Seed(columns, rows)
