"""Shared fixtures: a fresh warehouse per test, on the one SparkSession of the run (``spark``, in
the repository's root ``conftest.py``, which the docstring examples share)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pyarrow as pa
import pytest

import hudiql

# Tables Apache Hudi wrote, carried in the repository (provenance and license: data/hudi-tables/PROVENANCE.md).
HUDI_TABLES = Path(__file__).resolve().parent / "data" / "hudi-tables"


@pytest.fixture
def warehouse(tmp_path) -> Path:
    return tmp_path / "warehouse"


@pytest.fixture
def session(spark, warehouse) -> hudiql.Session:
    return hudiql.connect(warehouse=str(warehouse), spark=spark)


def official_rows(base_path, columns: list[str], read_optimized: bool = False) -> list[tuple]:
    """Rows of a table as the official Hudi reader (PyPI ``hudi``) returns them, sorted."""
    from hudi import HudiReadOptions, HudiTableBuilder

    table = HudiTableBuilder.from_base_uri(str(Path(str(base_path).removeprefix("file://")).resolve())).build()
    options = HudiReadOptions(hudi_options={"hoodie.read.use.read_optimized.mode": "true"}) if read_optimized else None
    batches = table.read(options) if options else table.read()
    if not batches:
        return []
    data = pa.Table.from_batches(batches).select(columns).to_pylist()
    return sorted(tuple(r[c] for c in columns) for r in data)


def hudiql_rows(session, sql: str) -> list[tuple]:
    return sorted(tuple(r) for r in session.sql(sql).collect())


# ---- table files ----------------------------------------------------------------------------------

def logs(table: Path) -> list[Path]:
    """The table's log files (any slice, committed or not)."""
    return sorted(p for p in table.rglob(".*.log.*") if ".hoodie" not in p.relative_to(table).parts)


def timeline(table: Path) -> list[str]:
    """The instant files in ``.hoodie/`` (not hoodie.properties, nor a writer's lock file)."""
    return sorted(p.name for p in (table / ".hoodie").iterdir() if p.is_file() and p.name[:1].isdigit())


def instants(table: Path, suffix: str) -> list[str]:
    """Instant times of timeline files named ``<t>.<suffix>``."""
    return sorted(n.split(".", 1)[0] for n in timeline(table) if n.split(".", 1)[1] == suffix)


def damage(path: Path) -> None:
    """Make a data file unreadable, keeping its size: only a read of it finds out."""
    path.write_bytes(b"x" * path.stat().st_size)


def unzip(zipped: Path, dest: Path) -> Path:
    """Unzip a table ``<name>.zip`` of ``tests/data/hudi-tables`` into ``dest`` (without macOS
    resource forks); returns the table folder ``dest/<name>``."""
    with zipfile.ZipFile(zipped) as archive:
        archive.extractall(dest, members=[m for m in archive.namelist() if not m.startswith("__MACOSX/")])
    return dest / zipped.stem


# ---- tables of a given version ---------------------------------------------------------------------

#: The columns and query of ``versioned_table``'s table.
VERSIONED_COLUMNS = ["id", "name", "ts", "dt"]
VERSIONED_QUERY = "SELECT id, name, ts, dt FROM t"


def versioned_table(session, version: int, kind: str, *props: str) -> Path:
    """Table ``t`` (id, name, ts, dt; partitioned by dt) of table ``version`` and ``kind`` (cow or
    mor), its services left to the test (``props``: more table options); its folder."""
    from hudiql.sql.statements import TableName

    options = ["primaryKey='id'", "preCombineField='ts'", f"type='{kind}'", f"'hoodie.write.table.version'='{version}'",
               "'hoodie.compact.inline'='false'", "'hoodie.clean.automatic'='false'", *props]
    session.sql(f"CREATE TABLE t (id INT, name STRING, ts BIGINT, dt STRING) USING hudi PARTITIONED BY (dt) "
                f"TBLPROPERTIES ({', '.join(options)})")
    return Path(session.table(TableName(None, "t")).base_uri.removeprefix("file://"))
