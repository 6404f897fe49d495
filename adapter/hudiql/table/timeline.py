"""The timeline: instants in ``.hoodie/``, their states, and the atomic completion of a write.

We write timeline layout 1 (table version 6). We read layout 1 and layout 2 (table version 8,
instants in ``.hoodie/<hoodie.timeline.path>/`` with the completion time in completed file names);
``hoodie.properties`` tells which, as it does for every Hudi reader.

Example:
    >>> storage = Storage(warehouse + "/orders")
    >>> TableConfig({"hoodie.table.name": "orders"}).save(storage)
    >>> timeline = Timeline.load(storage)
    >>> instant = timeline.start(COMMIT, "20240101000000000")          # requested, then inflight
    >>> sorted(f.name for f in storage.list(".hoodie"))
    ['20240101000000000.commit.requested', '20240101000000000.inflight', 'hoodie.properties']
    >>> "20240101000000000" in Timeline.load(storage).committed()
    False
    >>> timeline.complete(instant, b"{}").file_name                   # one atomic write: visible from here on
    '.hoodie/20240101000000000.commit'
    >>> "20240101000000000" in Timeline.load(storage).committed()
    True
    >>> Timeline.next_instant_time("20240101235959999")
    '20240102000000000'
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from enum import Enum

from hudiql.errors import HudiqlError
from hudiql.io.storage import Storage
from hudiql.table.config import TableConfig
from hudiql.table.layout import META_FOLDER

COMMIT = "commit"
DELTA_COMMIT = "deltacommit"
REPLACE_COMMIT = "replacecommit"
COMPACTION = "compaction"
LOG_COMPACTION = "logcompaction"
CLEAN = "clean"
ROLLBACK = "rollback"
SAVEPOINT = "savepoint"
RESTORE = "restore"

#: Actions whose completed instants make data visible to readers.
WRITE_ACTIONS = (COMMIT, DELTA_COMMIT, REPLACE_COMMIT)

INSTANT_FORMAT = "%Y%m%d%H%M%S"
_INSTANT_RE = re.compile(r"^(?P<ts>\d{14,17})(?:_(?P<completion>\d{14,17}))?\.(?P<suffix>[a-z.]+)$")


class State(Enum):
    REQUESTED = "requested"
    INFLIGHT = "inflight"
    COMPLETED = "completed"


@dataclass(frozen=True, order=True)
class Instant:
    """One action at one instant time, in one state."""

    timestamp: str
    action: str = field(compare=False)
    state: State = field(compare=False)
    file_name: str = field(compare=False, default="")
    completion_time: str | None = field(compare=False, default=None)

    @property
    def is_completed(self) -> bool:
        return self.state is State.COMPLETED


def format_instant_time(when: datetime) -> str:
    """``yyyyMMddHHmmssSSS`` in UTC: the one instant format of the project."""
    when = when.astimezone(timezone.utc)
    return when.strftime(INSTANT_FORMAT) + f"{when.microsecond // 1000:03d}"


def parse_instant_time(ts: str) -> datetime:
    base = datetime.strptime(ts[:14], INSTANT_FORMAT).replace(tzinfo=timezone.utc)
    return base + timedelta(milliseconds=int(ts[14:17] or 0))


def instant_file_name(action: str, state: State, ts: str) -> str:
    """File name of an instant in timeline layout 1."""
    if action == COMMIT:
        return {State.REQUESTED: f"{ts}.commit.requested", State.INFLIGHT: f"{ts}.inflight"}.get(state, f"{ts}.commit")
    if action in (COMPACTION, LOG_COMPACTION) and state is State.COMPLETED:
        # A completed compaction is a commit (log compaction: a deltacommit).
        return f"{ts}.{COMMIT if action == COMPACTION else DELTA_COMMIT}"
    if state is State.COMPLETED:
        return f"{ts}.{action}"
    return f"{ts}.{action}.{state.value}"


def _parse_suffix(suffix: str) -> tuple[str, State] | None:
    if suffix == "inflight":
        return COMMIT, State.INFLIGHT
    parts = suffix.split(".")
    if len(parts) == 1:
        return parts[0], State.COMPLETED
    if len(parts) == 2 and parts[1] in ("requested", "inflight"):
        return parts[0], State(parts[1])
    return None


@dataclass(frozen=True)
class CommittedInstants:
    """Which instant times committed their writes: the rule Hudi's readers apply to base files
    and log blocks.

    An instant committed when the active timeline holds it completed, or when it is older than
    the active timeline's first completed write: archiving moved it out, and Hudi archives only
    completed instants. Savepointed commits that archiving left behind do not count as the start.
    An instant still pending on the timeline never committed.

    Example:
        >>> committed = CommittedInstants(completed=frozenset({"002", "003"}), pending=frozenset({"004"}), start="002")
        >>> "003" in committed, "001" in committed, "004" in committed    # completed, archived, pending
        (True, True, False)
    """

    completed: frozenset[str]
    pending: frozenset[str]
    start: str | None  # the first completed write the active timeline holds

    def __contains__(self, instant_time: object) -> bool:
        return instant_time in self.completed or self.archived(instant_time)

    def archived(self, instant_time: object) -> bool:
        """Older than the active timeline: a completed write whose instant was archived."""
        return (
            isinstance(instant_time, str) and self.start is not None
            and instant_time < self.start and instant_time not in self.pending
        )


class Timeline:
    """All instants of one table, oldest first."""

    def __init__(self, storage: Storage, instants: list[Instant], layout_version: int, folder: str = META_FOLDER) -> None:
        self.storage = storage
        self.instants = instants
        self.layout_version = layout_version
        self.folder = folder

    @classmethod
    def load(cls, storage: Storage) -> Timeline:
        """The instants of the table at ``storage``, in the folder its layout version names."""
        config = TableConfig.load(storage)
        layout = config.timeline_layout_version
        folder = f"{META_FOLDER}/{config.timeline_path}" if layout >= 2 else META_FOLDER
        # Files of one instant: by time, and a savepoint apart (Hudi writes it at the time of its commit).
        files: dict[tuple[str, bool], list[tuple[str, State, str, str | None]]] = {}
        for info in storage.list(folder):
            m = None if info.is_dir else _INSTANT_RE.match(info.name)
            parsed = m and _parse_suffix(m["suffix"])
            # Only a completed instant carries a completion time (``T_C.action``); anything else is no instant.
            if parsed and (m["completion"] is None or parsed[1] is State.COMPLETED):
                key = (m["ts"], parsed[0] == SAVEPOINT)
                files.setdefault(key, []).append((*parsed, f"{folder}/{info.name}", m["completion"]))
        instants = []
        order = [State.REQUESTED, State.INFLIGHT, State.COMPLETED]
        for (ts, _), entries in files.items():
            # One instant per time: its furthest state; a compaction keeps its action once completed.
            action, state, path, completion = max(entries, key=lambda e: order.index(e[1]))
            for other_action, _, _, _ in entries:
                if other_action in (COMPACTION, LOG_COMPACTION):
                    action = other_action
            instants.append(Instant(ts, action, state, path, completion))
        return cls(storage, sorted(instants), layout, folder)

    # ---- queries -------------------------------------------------------------------------
    def completed(self, actions: tuple[str, ...] = WRITE_ACTIONS) -> list[Instant]:
        """Completed instants of the given actions (a completed compaction counts as a commit)."""
        wanted = set(actions)
        if COMMIT in wanted:
            wanted.add(COMPACTION)
        if DELTA_COMMIT in wanted:
            wanted.add(LOG_COMPACTION)
        return [i for i in self.instants if i.is_completed and i.action in wanted]

    def committed(self) -> CommittedInstants:
        """The instants whose writes readers see, archived ones included."""
        completed = [i.timestamp for i in self.completed()]
        savepoints = {i.timestamp for i in self.instants if i.action == SAVEPOINT}
        start = next((t for t in completed if t not in savepoints), None)
        return CommittedInstants(frozenset(completed), frozenset(i.timestamp for i in self.pending()), start)

    def pending(self, actions: tuple[str, ...] | None = None) -> list[Instant]:
        return [i for i in self.instants if not i.is_completed and (actions is None or i.action in actions)]

    def read(self, instant: Instant) -> bytes:
        return self.storage.read(instant.file_name)

    def requested_path(self, instant: Instant) -> str:
        return f"{self.folder}/{instant.timestamp}.{instant.action}.requested"

    def read_requested(self, instant: Instant) -> bytes:
        """The content of an instant's requested file (a compaction's plan)."""
        return self.storage.read(self.requested_path(instant))

    def new_instant_time(self) -> str:
        """Now, in UTC, and later than every instant on the timeline."""
        now = format_instant_time(datetime.now(timezone.utc))
        if self.instants:
            now = max(now, self.next_instant_time(max(i.timestamp for i in self.instants)))
        return now

    @staticmethod
    def next_instant_time(instant_time: str) -> str:
        """The instant time one millisecond after ``instant_time``."""
        return format_instant_time(parse_instant_time(instant_time) + timedelta(milliseconds=1))

    # ---- transitions (layout 1) ------------------------------------------------------------
    def ensure_writable(self) -> None:
        """Refuse to write a timeline of another layout: layout 1 instants there are invisible to every reader."""
        if self.layout_version != 1:
            raise HudiqlError(
                f"table {self.storage.base_uri} uses timeline layout {self.layout_version}; hudiql can read it "
                "but writes only timeline layout 1 (table version 6): copy its rows into a table hudiql created"
            )

    def _path(self, action: str, state: State, ts: str) -> str:
        self.ensure_writable()
        return f"{META_FOLDER}/{instant_file_name(action, state, ts)}"

    def request(self, action: str, timestamp: str, plan: bytes = b"") -> Instant:
        """Create the requested instant of a new action (holding its plan, if any)."""
        path = self._path(action, State.REQUESTED, timestamp)
        self.storage.write_atomic(path, plan)
        return Instant(timestamp, action, State.REQUESTED, path)

    def start(self, action: str, timestamp: str, plan: bytes = b"") -> Instant:
        """Create the requested then the inflight instant of a new write."""
        return self.transition_to_inflight(self.request(action, timestamp, plan))

    def transition_to_inflight(self, instant: Instant, content: bytes = b"") -> Instant:
        self.storage.write_atomic(self._path(instant.action, State.INFLIGHT, instant.timestamp), content)
        return Instant(instant.timestamp, instant.action, State.INFLIGHT)

    def complete(self, instant: Instant, content: bytes) -> Instant:
        """Make the instant visible: one atomic write of its completed file."""
        path = self._path(instant.action, State.COMPLETED, instant.timestamp)
        self.storage.write_atomic(path, content)
        return Instant(instant.timestamp, instant.action, State.COMPLETED, path)

    def remove_pending(self, instant: Instant, keep_requested: bool = False) -> None:
        """Delete the inflight (and requested) file of an instant that did not complete."""
        for state in (State.INFLIGHT,) if keep_requested else (State.INFLIGHT, State.REQUESTED):
            self.storage.delete(self._path(instant.action, state, instant.timestamp))
