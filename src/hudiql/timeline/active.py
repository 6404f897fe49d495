"""The timeline: instants in ``.hoodie/``, their states, and the atomic completion of a write.

Two layouts, read and written; ``hoodie.properties`` tells which, as it does for every Hudi reader.
Layout 1 (table version 6): instants in ``.hoodie/``, a completed one named ``<t>.<action>``.
Layout 2 (table versions 8 and 9): instants in ``.hoodie/<hoodie.timeline.path>/``, a completed one
named ``<t>_<completion time>.<action>``: when it completed decides, for readers of those versions,
which file slice a log file belongs to and what an incremental query returns. A clustering is its
own action there (``<t>.clustering.requested``) and completes as a replacecommit; on layout 1 it is
a replacecommit whose request holds a clustering plan. Queries for replacecommits find both.

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
from datetime import datetime, timedelta, timezone, tzinfo
from enum import Enum
from typing import NamedTuple

from hudiql.config.table_config import TableConfig
from hudiql.errors import HudiqlError
from hudiql.io.cache import ProcessCache
from hudiql.io.storage import Storage
from hudiql.layout import META_FOLDER

COMMIT = "commit"
DELTA_COMMIT = "deltacommit"
REPLACE_COMMIT = "replacecommit"
COMPACTION = "compaction"
LOG_COMPACTION = "logcompaction"
CLEAN = "clean"
ROLLBACK = "rollback"
SAVEPOINT = "savepoint"
RESTORE = "restore"
CLUSTERING = "clustering"

#: Actions whose completed instants make data visible to readers.
WRITE_ACTIONS = (COMMIT, DELTA_COMMIT, REPLACE_COMMIT)
#: Actions whose completed file is another action's: a compaction's is a commit, a log
#: compaction's a delta commit, a clustering's (layout 2) a replacecommit.
COMPLETES_AS = {COMPACTION: COMMIT, LOG_COMPACTION: DELTA_COMMIT, CLUSTERING: REPLACE_COMMIT}


def as_layout_1(action: str) -> str:
    """The action an instant has on timeline layout 1, where a clustering is a replacecommit."""
    return REPLACE_COMMIT if action == CLUSTERING else action

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


#: What a query may give as an instant: Hudi's three spellings (HoodieSqlCommonUtils.formatQueryInstant).
_QUERY_INSTANT_FORMATS = (
    (re.compile(r"^\d{17}$"), None),
    (re.compile(r"^\d{14}$"), None),
    (re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3}$"), "%Y-%m-%d %H:%M:%S.%f"),
    (re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$"), "%Y-%m-%d %H:%M:%S"),
    (re.compile(r"^\d{4}-\d{2}-\d{2}$"), "%Y-%m-%d"),
)


def parse_query_instant(text: str, zone: tzinfo = timezone.utc) -> str:
    """The instant time a query names, as Hudi reads it: ``yyyyMMddHHmmss[SSS]`` as written (a
    14-digit one stands for the last millisecond of its second, as Hudi's compatibility rule
    has it), ``yyyy-MM-dd HH:mm:ss[.SSS]`` and ``yyyy-MM-dd`` (midnight) in the timeline's time
    zone.

    Example:
        >>> parse_query_instant("20240101120000"), parse_query_instant("2024-01-01 12:00:00.250")
        ('20240101120000999', '20240101120000250')
        >>> parse_query_instant("2024-01-01")
        '20240101000000000'
        >>> parse_query_instant("yesterday")
        Traceback (most recent call last):
        ...
        hudiql.errors.HudiqlError: 'yesterday' is not an instant; write 'yyyyMMddHHmmss[SSS]', 'yyyy-MM-dd HH:mm:ss[.SSS]' or 'yyyy-MM-dd'
    """
    value = text.strip()
    for pattern, date_format in _QUERY_INSTANT_FORMATS:
        if not pattern.match(value):
            continue
        try:
            if date_format is None:
                parse_instant_time(value)  # a real date and time
                return value if len(value) == 17 else value + "999"
            return format_instant_time(datetime.strptime(value, date_format).replace(tzinfo=zone))
        except ValueError:
            break
    raise HudiqlError(f"'{text}' is not an instant; write 'yyyyMMddHHmmss[SSS]', 'yyyy-MM-dd HH:mm:ss[.SSS]' or 'yyyy-MM-dd'")


#: The table versions hudiql writes, and the timeline layout of each.
WRITABLE_VERSIONS = {6: 1, 8: 2, 9: 2}


def ensure_writable(config: TableConfig, base_uri: str) -> None:
    """Refuse to write a table of a version, or a timeline layout, hudiql does not write (``HudiqlError``)."""
    layout = WRITABLE_VERSIONS.get(config.version)
    if layout is None:
        raise HudiqlError(f"table {base_uri} is of table version {config.version}; hudiql writes table versions "
                          f"{', '.join(map(str, list(WRITABLE_VERSIONS)[:-1]))} and {list(WRITABLE_VERSIONS)[-1]}")
    if config.timeline_layout_version != layout:
        raise HudiqlError(f"table {base_uri} is of table version {config.version} with timeline layout "
                          f"{config.timeline_layout_version}; hudiql writes that version with layout {layout} only")


def instant_file_name(action: str, state: State, ts: str, completion_time: str | None = None) -> str:
    """File name of an instant; a completed one with its ``completion_time`` on timeline layout 2.

    >>> instant_file_name(COMMIT, State.INFLIGHT, "001"), instant_file_name(COMPACTION, State.COMPLETED, "001", "002")
    ('001.inflight', '001_002.commit')
    """
    if action == COMMIT and state is not State.COMPLETED:
        return {State.REQUESTED: f"{ts}.commit.requested", State.INFLIGHT: f"{ts}.inflight"}[state]
    if state is not State.COMPLETED:
        return f"{ts}.{action}.{state.value}"
    action = COMPLETES_AS.get(action, action)
    return f"{ts}_{completion_time}.{action}" if completion_time else f"{ts}.{action}"


class InstantFile(NamedTuple):
    """What an instant file's name says."""

    instant_time: str
    action: str
    state: State
    completion_time: str | None  # layout 2, completed


def parse_instant_file_name(name: str) -> InstantFile | None:
    """What the name of an instant file of either layout says; ``None`` for any other file (only
    a completed instant carries a completion time, ``<t>_<c>.<action>``).

    >>> parse_instant_file_name("20240101000000000_20240101000000500.deltacommit").completion_time
    '20240101000000500'
    >>> parse_instant_file_name("20240101000000000.inflight")[:3]
    ('20240101000000000', 'commit', <State.INFLIGHT: 'inflight'>)
    """
    m = _INSTANT_RE.match(name)
    parsed = m and _parse_suffix(m["suffix"])
    if not parsed or (m["completion"] is not None and parsed[1] is not State.COMPLETED):
        return None
    return InstantFile(m["ts"], parsed[0], parsed[1], m["completion"])


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
    until: str | None = None  # a reader as of this instant: no later instant committed

    def __contains__(self, instant_time: object) -> bool:
        return instant_time in self.completed or self.archived(instant_time)

    def archived(self, instant_time: object) -> bool:
        """Older than the active timeline: a completed write whose instant was archived."""
        return (
            isinstance(instant_time, str) and self.start is not None
            and instant_time < self.start and instant_time not in self.pending
            and (self.until is None or instant_time <= self.until)
        )


#: Completed instant files this process read or wrote, by URI (commit metadata can be large: bounded).
_COMPLETED: ProcessCache[bytes] = ProcessCache(max_entries=4096, max_bytes=64 << 20)


class Timeline:
    """All instants of one table, oldest first."""

    def __init__(self, storage: Storage, instants: list[Instant], layout_version: int, folder: str = META_FOLDER) -> None:
        self.storage = storage
        self.instants = instants
        self.layout_version = layout_version
        self.folder = folder
        #: Set on a reader's view as of an instant (``as_of``): the instant, and the active
        #: timeline's first completed write (what was archived before it stays committed).
        self.as_of_instant: str | None = None
        self._active_start: str | None = None

    @classmethod
    def load(cls, storage: Storage, config: TableConfig | None = None) -> Timeline:
        """The instants of the table at ``storage``, in the folder its layout version names: one
        listing. ``config``: the table's, as loaded (``hoodie.properties`` is read when not given)."""
        config = config or TableConfig.load(storage)
        layout = config.timeline_layout_version
        folder = config.timeline_folder
        # Files of one instant: by time, and a savepoint apart (Hudi writes it at the time of its commit).
        files: dict[tuple[str, bool], list[tuple[str, State, str, str | None]]] = {}
        for info in storage.list(folder):
            parsed = None if info.is_dir else parse_instant_file_name(info.name)
            if parsed:
                key = (parsed.instant_time, parsed.action == SAVEPOINT)
                files.setdefault(key, []).append((parsed.action, parsed.state, f"{folder}/{info.name}", parsed.completion_time))
        instants = []
        order = [State.REQUESTED, State.INFLIGHT, State.COMPLETED]
        for (ts, _), entries in files.items():
            # One instant per time: its furthest state; a compaction keeps its action once completed.
            action, state, path, completion = max(entries, key=lambda e: order.index(e[1]))
            for other_action, _, _, _ in entries:
                if other_action in COMPLETES_AS:
                    action = other_action
            instants.append(Instant(ts, action, state, path, completion))
        return cls(storage, sorted(instants), layout, folder)

    # ---- queries -------------------------------------------------------------------------
    def completed(self, actions: tuple[str, ...] = WRITE_ACTIONS) -> list[Instant]:
        """Completed instants of the given actions (a completed compaction counts as a commit, a
        clustering as a replacecommit: ``COMPLETES_AS``)."""
        wanted = set(actions) | {a for a, completed_as in COMPLETES_AS.items() if completed_as in actions}
        return [i for i in self.instants if i.is_completed and i.action in wanted]

    def committed(self) -> CommittedInstants:
        """The instants whose writes readers see, archived ones included."""
        completed = [i.timestamp for i in self.completed()]
        if self.as_of_instant is not None:
            start = self._active_start
        else:
            savepoints = {i.timestamp for i in self.instants if i.action == SAVEPOINT}
            # When every completed write is savepointed (after a restore), the first of them starts it.
            start = next((t for t in completed if t not in savepoints), completed[0] if completed else None)
        return CommittedInstants(frozenset(completed), frozenset(i.timestamp for i in self.pending()), start,
                                 self.as_of_instant)

    def as_of(self, instant_time: str) -> Timeline:
        """The timeline a reader as of ``instant_time`` sees: the instants up to it (Hudi's time
        travel compares instant times, not completion times). It cannot be written.

        Example:
            >>> timeline = Timeline(None, [Instant("001", COMMIT, State.COMPLETED), Instant("003", COMMIT, State.COMPLETED)], 1)
            >>> past = timeline.as_of("002")
            >>> [i.timestamp for i in past.instants], "003" in past.committed()
            (['001'], False)
        """
        view = Timeline(self.storage, [i for i in self.instants if i.timestamp <= instant_time], self.layout_version,
                        self.folder)
        view._active_start = self.committed().start
        view.as_of_instant = instant_time
        return view

    def pending(self, actions: tuple[str, ...] | None = None) -> list[Instant]:
        """Pending instants of the given actions (a pending clustering counts as a replacecommit)."""
        return [i for i in self.instants
                if not i.is_completed and (actions is None or as_layout_1(i.action) in actions)]

    @property
    def clustering_action(self) -> str:
        """The action a new clustering is requested as: its own on layout 2, a replacecommit on 1."""
        return CLUSTERING if self.layout_version >= 2 else REPLACE_COMMIT

    def read(self, instant: Instant) -> bytes:
        """The content of an instant's file; a completed one is read once per process (it never
        changes: a rolled back instant's time is never used again)."""
        if not instant.is_completed:
            return self.storage.read(instant.file_name)
        return _COMPLETED.fetch(self.storage.uri(instant.file_name), lambda: self.storage.read(instant.file_name))

    def requested_path(self, instant: Instant) -> str:
        return f"{self.folder}/{instant.timestamp}.{instant.action}.requested"

    def read_requested(self, instant: Instant) -> bytes:
        """The content of an instant's requested file (a compaction's plan)."""
        return self.storage.read(self.requested_path(instant))

    def new_instant_time(self) -> str:
        """Now, in UTC, and later than every instant on the timeline and every completion (layout
        2): a log belongs to the slice whose base instant is at most its delta commit's completion
        time, so a compaction's instant must not tie with the completion of a delta commit it
        compacted (one millisecond apart on a fast machine)."""
        now = format_instant_time(datetime.now(timezone.utc))
        times = [t for i in self.instants for t in (i.timestamp, i.completion_time) if t]
        if times:
            now = max(now, self.next_instant_time(max(times)))
        return now

    @staticmethod
    def next_instant_time(instant_time: str) -> str:
        """The instant time one millisecond after ``instant_time`` (one after a metadata table's
        initialization instants, ``00000000000000000`` and on, which are no dates)."""
        if instant_time[:8] < "19700101":
            return f"{int(instant_time) + 1:0{len(instant_time)}d}"
        return format_instant_time(parse_instant_time(instant_time) + timedelta(milliseconds=1))

    # ---- transitions ------------------------------------------------------------------------
    def _path(self, action: str, state: State, ts: str, completion_time: str | None = None) -> str:
        assert self.as_of_instant is None, "a timeline as of an instant is read, never written"
        return f"{self.folder}/{instant_file_name(action, state, ts, completion_time)}"

    def _completion_time(self, instant: Instant) -> str | None:
        """When ``instant`` completes (layout 2): now, and later than its own time and every
        completion on the timeline, so that completion order is the order writers committed in."""
        if self.layout_version < 2:
            return None
        latest = max((i.completion_time for i in self.instants if i.completion_time), default=instant.timestamp)
        return max(format_instant_time(datetime.now(timezone.utc)), self.next_instant_time(max(latest, instant.timestamp)))

    def request(self, action: str, timestamp: str, plan: bytes = b"") -> Instant:
        """Create the requested instant of a new action (holding its plan, if any)."""
        path = self._path(action, State.REQUESTED, timestamp)
        self.storage.write_atomic(path, plan)
        return Instant(timestamp, action, State.REQUESTED, path)

    def start(self, action: str, timestamp: str, plan: bytes = b"") -> Instant:
        """Create the requested then the inflight instant of a new write."""
        return self.transition_to_inflight(self.request(action, timestamp, plan))

    def transition_to_inflight(self, instant: Instant, content: bytes = b"") -> Instant:
        path = self._path(instant.action, State.INFLIGHT, instant.timestamp)
        self.storage.write_atomic(path, content)
        return Instant(instant.timestamp, instant.action, State.INFLIGHT, path)

    def with_instant(self, instant: Instant) -> Timeline:
        """This timeline and an instant just written to it (in its new state), without listing the
        folder again."""
        others = [i for i in self.instants if (i.timestamp, i.action == SAVEPOINT) != (instant.timestamp, instant.action == SAVEPOINT)]
        return Timeline(self.storage, sorted([*others, instant]), self.layout_version, self.folder)

    def complete(self, instant: Instant, content: bytes) -> Instant:
        """Make the instant visible: one atomic write of its completed file."""
        completion_time = self._completion_time(instant)
        path = self._path(instant.action, State.COMPLETED, instant.timestamp, completion_time)
        self.storage.write_atomic(path, content)
        _COMPLETED.put(self.storage.uri(path), content)
        return Instant(instant.timestamp, instant.action, State.COMPLETED, path, completion_time)

    def delete_completed(self, instant_time: str, savepoint: bool = False) -> None:
        """Delete the completed file of the instant at ``instant_time`` (a ``savepoint``'s, or the
        other action's there), as listed: its name holds its completion time on layout 2. Nothing
        when it is gone already (a rollback run again after a crash)."""
        for instant in self.instants:
            if instant.timestamp == instant_time and instant.is_completed and (instant.action == SAVEPOINT) == savepoint:
                self.storage.delete(instant.file_name)

    def remove_pending(self, instant: Instant, keep_requested: bool = False) -> None:
        """Delete the inflight (and requested) file of an instant that did not complete."""
        for state in (State.INFLIGHT,) if keep_requested else (State.INFLIGHT, State.REQUESTED):
            self.storage.delete(self._path(instant.action, state, instant.timestamp))
