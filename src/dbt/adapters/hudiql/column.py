"""Columns with Spark SQL type names (``string``, ``bigint``, ``decimal(10,2)``) and backtick quoting."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from dbt.adapters.base.column import Column


@dataclass
class HudiqlColumn(Column):
    TYPE_LABELS: ClassVar[dict[str, str]] = {
        "STRING": "STRING",
        "TEXT": "STRING",
        "TIMESTAMP": "TIMESTAMP",
        "FLOAT": "DOUBLE",
        "INTEGER": "INT",
        "BIGINT": "BIGINT",
        "BOOLEAN": "BOOLEAN",
    }

    @classmethod
    def translate_type(cls, dtype: str) -> str:
        return cls.TYPE_LABELS.get(dtype.upper(), dtype)

    @property
    def quoted(self) -> str:
        return "`" + self.column.replace("`", "``") + "`"

    @property
    def data_type(self) -> str:
        return self.dtype

    def is_string(self) -> bool:
        return self.dtype.lower() in ("string", "varchar", "char") or self.dtype.lower().startswith(("varchar(", "char("))

    def is_integer(self) -> bool:
        return self.dtype.lower() in ("tinyint", "smallint", "int", "integer", "bigint")

    def is_float(self) -> bool:
        return self.dtype.lower() in ("float", "double")

    def is_numeric(self) -> bool:
        return self.dtype.lower().startswith(("decimal", "numeric"))

    def string_size(self) -> int:
        return 2**31 - 1  # Spark strings have no declared length

    def __repr__(self) -> str:
        return f"<HudiqlColumn {self.name} ({self.data_type})>"
