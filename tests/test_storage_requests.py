"""What one statement costs its driver in storage requests (``io.requests``): a statement loads its
table once (``hoodie.properties`` read once), lists the timeline once under the lock when it starts
and once more under the lock when it commits (to check what completed meanwhile); its post-commit
services reuse that listing. A query reads each once.

On an object store each request is a round trip, so these bounds are what keeps a small statement
small. The table: 10 partitions, four commits of history. On the merge-on-read table inline
compaction is left for later (``max.delta.commits``): when it is due it runs as a service of its
own, with its own plan under the lock.
"""

from __future__ import annotations

import pytest
from hudiql.io.requests import counted_requests
from hudiql.layout import META_FOLDER, PROPERTIES_FILE

WRITES = {
    "insert 10 rows": "INSERT INTO t SELECT id, 'x', 9, CAST(id % 10 AS STRING) FROM range(5000, 5010)",
    "merge 1,000 rows": "MERGE INTO t USING (SELECT id, 'm' AS v, 10 AS ts, CAST(id % 10 AS STRING) AS part "
                        "FROM range(1500, 2500)) s ON t.id = s.id "
                        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
    "update one row": "UPDATE t SET v = 'u' WHERE id = 17",
    "delete one row": "DELETE FROM t WHERE id = 18",
}
QUERIES = {
    "count": "SELECT count(*) FROM t",
    "point query": "SELECT * FROM t WHERE id = 5",
}


def create_table(session, kind: str, *options: str):
    session.sql(f"""
        CREATE TABLE t (id BIGINT, v STRING, ts BIGINT, part STRING) USING hudi PARTITIONED BY (part)
        TBLPROPERTIES (primaryKey = 'id', preCombineField = 'ts', type = '{kind}',
                       'hoodie.compact.inline.max.delta.commits' = '20' {''.join(', ' + o for o in options)})""")
    for commit in range(4):
        session.sql(f"INSERT INTO t SELECT id, 'v{commit}', {commit}, CAST(id % 10 AS STRING) "
                    f"FROM range({commit * 500}, {(commit + 1) * 500})")
    return session


@pytest.fixture(params=["cow", "mor"])
def table(request, session):
    return create_table(session, request.param)


def requests_of(session, statements: dict[str, str]):
    """(name, its driver's storage requests) of each statement, run in order."""
    for name, statement in statements.items():
        with counted_requests() as count:
            session.sql(statement).collect()
        yield name, count


def test_a_write_reads_the_properties_once_and_lists_the_timeline_twice(table):
    for name, count in requests_of(table, WRITES):
        assert (count.reads_of(PROPERTIES_FILE), count.lists_of(META_FOLDER)) == (1, 2), name


def test_a_query_reads_the_properties_once_and_lists_the_timeline_once(table):
    for name, count in requests_of(table, QUERIES):
        assert (count.reads_of(PROPERTIES_FILE), count.lists_of(META_FOLDER)) == (1, 1), name


def test_a_commit_file_is_read_at_most_once_per_statement(table):
    """Completed instants never change: a statement reads each once, whoever asks."""
    for name, count in requests_of(table, {**WRITES, **QUERIES}):
        instant_reads = {path: n for (kind, path), n in count.by_path.items()
                         if kind == "read" and path.startswith(META_FOLDER + "/2")}
        assert all(n == 1 for n in instant_reads.values()), (name, instant_reads)


@pytest.mark.parametrize("kind", ["cow", "mor"])
def test_with_the_metadata_table_a_small_statement_makes_six_requests_and_a_query_two(session, kind):
    """Table version 9 with the metadata table and its record index, statements run one after the
    other in one process (as in a shell or a dbt run). A write: its properties read at the start and
    under the lock, the timeline listed at the start and under the lock, the metadata timeline
    under the lock (the listing before the lock is known current: the data timeline is as this
    process's last commit left it), the marker folder. A query: the properties and the timeline.
    Apart from these, a lookup by key reads its record index group's base HFile and the logs this
    process has not read: at most one group here. (The metadata table's own compaction, every
    ``hoodie.metadata.compact.max.delta.commits`` writes, is left out: it lists what it cleans.)"""
    create_table(session, kind, "'hoodie.write.table.version' = '9'", "'hoodie.metadata.record.index.enable' = 'true'",
                 "'hoodie.metadata.compact.max.delta.commits' = '100'")
    for name, count in requests_of(session, {**WRITES, **QUERIES}):
        index_reads = {p for (kind_, p), n in count.by_path.items() if p.startswith("record_index/")}
        others = count.lists + count.reads + count.probes - sum(count.by_path[("read", p)] for p in index_reads)
        assert others == (6 if name in WRITES else 2), (name, count.by_path)
        assert len({p.split("_")[0] for p in index_reads}) <= 1, (name, index_reads)  # one group's files
    # What a lookup read of its index group (its logs, its base file's ranges) is not read again.
    [(_, again)] = requests_of(session, {"the point query again": QUERIES["point query"]})
    assert (again.lists, again.reads, again.probes) == (1, 1, 0), again.by_path
