#!/usr/bin/env python
"""Benchmark: a merge-on-read table under steady concurrent writes keeps moving (issue 34): three
writer processes upsert overlapping keys while a fourth compacts, for ``--minutes``.

Usage:
    python bench/soak.py [--minutes 10] [--rows 100000] [--batch 2000] [--concurrency optimistic|non-blocking]
                         [--workdir DIR] [--json FILE]

What it does:

* loads ``--rows`` rows (``base_rows`` of ``bench/common.py``, 10 partitions) into a merge-on-read
  hudiql table (inline compaction off: the compactor compacts), then times its snapshot read
  (``count(*)`` and ``sum(value)``), three times, the median. ``--concurrency optimistic`` (the
  default): a version 6 table with the default SIMPLE index, under optimistic concurrency control
  with hudiql's default retries on a lost conflict; ``non-blocking``: a version 8 table with the
  bucket index (4 buckets per partition) under Hudi 1.x's non-blocking concurrency control;
* starts four processes, each with its own local[1] SparkSession on the same warehouse: three
  writers loop ``INSERT INTO``
  upserts of ``--batch`` stored keys each (half of them from a range the three share, so their
  statements conflict, half from a range of their own), so the table keeps its rows and its log
  files grow, and a compactor loops ``CALL run_compaction``. Each process
  records every statement's outcome (ok, conflict after retries, other error) and its retries (the
  ``Warning:`` lines of ``transaction.retry``);
* when the time is up, the processes stop after their statement, and the snapshot read is timed
  again, then once more after one more compaction (what the logs left since the last one cost).

Printed, with the goals of issue 34: rows lost (every seeded key must be there once, and each
writer's own keys must hold the value of the last successful statement that wrote them: goal 0),
statements failed after retries (goal at most 10%), compaction attempts completed (goal at least
90%; an attempt that found nothing to compact counts as completed), and the read at the end against
the read at the start (goal at most 1.5x). The official Hudi reader (PyPI ``hudi``) counts the
same rows. Under non-blocking concurrency control the goal for failed statements is none.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

from common import base_rows, fmt, hudi_table_ddl, save_json, snapshot_hudiql, spark_session, timed

SHARED_KEYS = 20_000  # ids 0..SHARED_KEYS-1 the three writers share; each has as many of its own after them
PARTITIONS = 10
#: The table properties of each ``--concurrency``.
CONCURRENCY = {
    "optimistic": [],
    "non-blocking": ["'hoodie.write.table.version'='8'", "'hoodie.index.type'='BUCKET'",
                     "'hoodie.bucket.index.num.buckets'='4'",
                     "'hoodie.write.concurrency.mode'='NON_BLOCKING_CONCURRENCY_CONTROL'"],
}
_RETRY = "running the statement again on the new snapshot"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=2000)
    parser.add_argument("--concurrency", choices=tuple(CONCURRENCY), default="optimistic")
    parser.add_argument("--workdir")
    parser.add_argument("--json")
    parser.add_argument("--role", choices=("writer", "compactor"), help=argparse.SUPPRESS)
    parser.add_argument("--id", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--until", type=float, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rows < 4 * SHARED_KEYS:
        parser.error(f"--rows must be at least {4 * SHARED_KEYS}: the writers' key ranges lie in the seeded rows")
    workdir = args.workdir or tempfile.mkdtemp(prefix="hudiql-soak-")
    if args.role:
        return _worker(args, workdir)
    hudiql, described = snapshot_hudiql(workdir, None)
    print(f"hudiql: {described}; workdir {workdir}")
    spark = spark_session("soak", 4)
    warehouse = os.path.join(workdir, "warehouse")
    session = hudiql.connect(warehouse=warehouse, spark=spark)
    session.sql(hudi_table_ddl("t", ["type='mor'", "'hoodie.compact.inline'='false'", *CONCURRENCY[args.concurrency]]))
    base_rows(spark, args.rows, PARTITIONS).createOrReplaceTempView("seed")
    session.sql("SET hoodie.spark.sql.insert.into.operation=bulk_insert")
    session.sql("INSERT INTO t SELECT * FROM seed")
    read_start = _read_time(session)
    print(f"loaded {args.rows} rows; snapshot read {fmt(read_start)}")

    until = time.time() + args.minutes * 60
    logs = [os.path.join(workdir, f"{role}{i}.jsonl") for role, i in (("writer", 1), ("writer", 2), ("writer", 3),
                                                                    ("compactor", 0))]
    procs = [subprocess.Popen([sys.executable, __file__, "--role", role, "--id", str(i), "--until", str(until),
                               "--workdir", workdir, "--rows", str(args.rows), "--batch", str(args.batch)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for role, i in (("writer", 1), ("writer", 2), ("writer", 3), ("compactor", 0))]
    for p in procs:
        p.wait()
    records = {path: [json.loads(line) for line in open(path)] if os.path.exists(path) else [] for path in logs}
    writes = [r for path, rs in records.items() if "writer" in path for r in rs]
    compactions = records[logs[3]]

    read_end = _read_time(session)
    # What the logs left since the last compaction cost the read: one more compaction, the read again.
    session.sql("CALL run_compaction(table => 't')").collect()
    read_compacted = _read_time(session)
    lost, extra = _check(session, args.rows, [records[path] for path in logs[:3]])
    official = _official_count(os.path.join(warehouse, "t"))
    ours = session.sql("SELECT count(*) FROM t").first()[0]
    failed = [w for w in writes if w["outcome"] != "ok"]
    retried = sum(w["retries"] for w in writes)
    done = [c for c in compactions if c["outcome"] == "ok"]
    results = {
        "minutes": args.minutes, "rows": args.rows, "batch": args.batch, "concurrency": args.concurrency,
        "statements": len(writes),
        "failed_after_retries": len(failed), "retries": retried, "failures": sorted({w["error"][:120] for w in failed}),
        "compactions": len(compactions), "compactions_completed": len(done),
        "compactions_that_compacted": sum(1 for c in done if c["compacted"]),
        "read_start_s": read_start, "read_end_s": read_end, "read_after_final_compaction_s": read_compacted,
        "rows_lost": lost, "updates_lost": extra,
        "rows_hudiql": ours, "rows_official": official,
    }
    share = len(failed) / len(writes) if writes else 0.0
    completed = len(done) / len(compactions) if compactions else 0.0
    goal = "0" if args.concurrency == "non-blocking" else "<= 10%"
    print(f"statements: {len(writes)}, failed after retries: {len(failed)} ({share:.0%}; goal {goal}), "
          f"retries: {retried}")
    print(f"compaction attempts: {len(compactions)}, completed: {len(done)} ({completed:.0%}; goal >= 90%), "
          f"of which compacted something: {results['compactions_that_compacted']}")
    print(f"rows lost or stored twice: {lost}, updates lost: {extra} (goal 0 and 0); hudiql counts {ours}, "
          f"the official reader {official}")
    print(f"snapshot read: {fmt(read_start)} at the start, {fmt(read_end)} at the end "
          f"({read_end / read_start:.2f}x; goal <= 1.5x), {fmt(read_compacted)} after one more compaction")
    save_json(args.json, args, results)


def _read_time(session) -> float:
    return statistics.median(timed(lambda: session.sql("SELECT count(*), sum(value) FROM t").collect())[0]
                             for _ in range(3))


def _check(session, rows: int, writers: list[list[dict]]) -> tuple[int, int]:
    """(keys missing or stored twice, own keys of a writer whose value is not its last successful
    statement's: a lost update, or a failed statement's row)."""
    last: dict[int, str] = {}
    for records in writers:  # a writer's statements run one after another
        for r in records:
            if r["outcome"] == "ok":
                last.update((k, r["tag"]) for k in r["own_keys"])
    stored = {}
    twice = 0
    for key, name in session.sql("SELECT id, name FROM t").collect():
        twice += key in stored
        stored[key] = name
    missing = len(set(range(rows)) - set(stored))
    return missing + twice, sum(1 for k, tag in last.items() if stored.get(k) != tag)


def _official_count(path: str) -> int | None:
    try:
        from hudi import HudiTableBuilder
    except ImportError:
        return None
    return sum(batch.num_rows for batch in HudiTableBuilder.from_base_uri(path).build().read())


def _worker(args, workdir: str) -> None:
    """One writer or the compactor: statements until ``--until``, each outcome a line of its log."""
    import hudiql
    spark = spark_session(f"soak-{args.role}{args.id}", 2, driver_memory="2g",
                          configs={"spark.master": "local[1]"})
    session = hudiql.connect(warehouse=os.path.join(workdir, "warehouse"), spark=spark)
    session.sql("SET hoodie.spark.sql.insert.into.operation=upsert")
    log = open(os.path.join(workdir, f"{args.role}{args.id}.jsonl"), "a")
    rng = random.Random(args.id)
    n = 0
    while time.time() < args.until:
        n += 1
        record: dict = {"n": n}
        if args.role == "writer":
            half = args.batch // 2
            shared = rng.sample(range(SHARED_KEYS), half)
            own = rng.sample(range(SHARED_KEYS * args.id, SHARED_KEYS * (args.id + 1)), half)
            tag = f"w{args.id}_{n}"
            values = ", ".join(f"({k}, '{tag}', {k * 1.0}, {int(time.time() * 1000)}, "
                               f"'{'p%03d' % (k % PARTITIONS)}')" for k in shared + own)
            sql = f"INSERT INTO t VALUES {values}"
            record.update(tag=tag, own_keys=own)
        else:
            sql = "CALL run_compaction(table => 't')"
        stderr = _Captured()
        started = time.time()
        try:
            with stderr:
                rows = session.sql(sql).collect()
            record.update(outcome="ok", compacted=bool(rows) if args.role == "compactor" else None)
        except Exception as exc:  # the outcome is the record; the soak goes on
            record.update(outcome=type(exc).__name__, error=str(exc).splitlines()[0] if str(exc) else "")
        record.update(seconds=time.time() - started, retries=stderr.text.count(_RETRY))
        log.write(json.dumps(record) + "\n")
        log.flush()
        if args.role == "compactor":
            time.sleep(1)


class _Captured:
    """stderr of one statement, kept (the retry warnings) and passed through."""

    def __enter__(self):
        import io
        self._real, self._buffer = sys.stderr, io.StringIO()
        sys.stderr = self._buffer
        return self

    def __exit__(self, *exc):
        sys.stderr = self._real
        self.text = self._buffer.getvalue()
        self._real.write(self.text)
        return False


if __name__ == "__main__":
    main()
