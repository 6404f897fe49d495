"""Damaged tables: a missing or damaged file a committed instant needs (base, log, commit,
hoodie.properties) makes a query fail with one hudiql error naming the file; it never returns
fewer or older rows, and never fails with another exception.

Each case copies a populated table (copy-on-write or merge-on-read, written by hudiql), damages
one file, then runs a SELECT.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from hudiql.errors import HudiqlError, raise_user_error
from hudiql.table.table import HudiTable

ROWS = [(1, "a2", 2, "x"), (2, "b", 1, "x"), (3, "c", 1, "y"), (4, "d", 1, "y")]


@pytest.fixture(scope="module")
def templates(spark, tmp_path_factory) -> Path:
    """A copy-on-write and a merge-on-read table, two commits each (the second updates a row:
    on merge-on-read, into a log file)."""
    import hudiql

    warehouse = tmp_path_factory.mktemp("templates")
    session = hudiql.connect(warehouse=str(warehouse), spark=spark)
    for kind in ("cow", "mor"):
        session.sql(f"CREATE TABLE {kind} (id INT, v STRING, ts BIGINT, dt STRING) USING hudi PARTITIONED BY (dt) "
                    f"TBLPROPERTIES (primaryKey='id', preCombineField='ts', type='{kind}', "
                    "'hoodie.compact.inline'='false')")
        session.sql(f"INSERT INTO {kind} VALUES (1,'a',1,'x'), (2,'b',1,'x'), (3,'c',1,'y')")
        session.sql(f"INSERT INTO {kind} VALUES (1,'a2',2,'x'), (4,'d',1,'y')")
        assert sorted(tuple(r) for r in session.sql(f"SELECT id, v, ts, dt FROM {kind}").collect()) == ROWS
    return warehouse


# ---- which file ----------------------------------------------------------------------------------

def _read_slice(table: Path):
    """A slice the snapshot reads: on merge-on-read one with a base file and logs."""
    slices = HudiTable.load(str(table)).file_system_view().read_slices()
    return next((s for s in slices if s.base_file and s.log_files), max(slices, key=lambda s: s.base_instant))


def base_file(table: Path) -> Path:
    return table / _read_slice(table).base_path


def log_file(table: Path) -> Path:
    s = _read_slice(table)
    assert s.log_files, "the merge-on-read template has a log file"
    return table / s.partition_path / s.log_files[-1]


def properties(table: Path) -> Path:
    return table / ".hoodie" / "hoodie.properties"


def last_commit(table: Path) -> Path:
    return max((p for p in (table / ".hoodie").iterdir() if p.suffix in (".commit", ".deltacommit")),
               key=lambda p: p.name)


# ---- how it is damaged ---------------------------------------------------------------------------

def delete(p: Path) -> None:
    p.unlink()


def empty(p: Path) -> None:
    p.write_bytes(b"")


def truncate(p: Path) -> None:
    p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])


def garble(p: Path) -> None:
    """Same size, every byte after the first few changed (magic numbers stay)."""
    data = p.read_bytes()
    p.write_bytes(data[:8] + bytes(b ^ 0x5A for b in data[8:]))


FILES: dict[str, Callable[[Path], Path]] = {
    "base": base_file, "log": log_file, "hoodie.properties": properties, "commit": last_commit,
}
CASES = [
    *[(kind, "base", how) for kind in ("cow", "mor") for how in (delete, empty, truncate, garble)],
    *[("mor", "log", how) for how in (delete, truncate, garble)],
    *[(kind, "hoodie.properties", how) for kind in ("cow", "mor") for how in (delete, empty, garble)],
    *[(kind, "commit", how) for kind in ("cow", "mor") for how in (truncate, garble)],
]


@pytest.mark.parametrize(("kind", "what", "how"), CASES, ids=lambda v: getattr(v, "__name__", v))
def test_a_damaged_file_is_an_error_naming_it(session, warehouse, templates, kind, what, how):
    table = warehouse / kind
    shutil.copytree(templates / kind, table)
    damaged = FILES[what](table)
    how(damaged)
    with pytest.raises(HudiqlError) as failure:
        try:
            rows = session.sql(f"SELECT id, v, ts, dt FROM {kind}").collect()
        except Exception as exc:  # an error inside a Spark task comes back as the hudiql error it stands for
            raise_user_error(exc)
        pytest.fail(f"{how.__name__} {damaged.name}: the query returned {len(rows)} rows, no error")
    message = str(failure.value)
    assert damaged.name in message and "\n" not in message.strip()
    assert "restore" in message or "backup" in message


def test_a_damaged_table_can_be_dropped(session, warehouse, templates):
    table = warehouse / "cow"
    shutil.copytree(templates / "cow", table)
    properties(table).unlink()
    assert [r.tableName for r in session.sql("SHOW TABLES").collect()] == ["cow"]
    session.sql("DROP TABLE cow")
    assert not table.exists()
