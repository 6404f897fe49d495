"""The process that holds a lock or beats a heartbeat: known by host, process id and (on Linux)
its start time and PID namespace, so that another process on the same machine can tell at once
that it is gone, where a process elsewhere is only judged by its file's age.

Example:
    >>> me = WriterProcess.current()
    >>> me.is_gone(), WriterProcess.from_dict(me.as_dict()) == me
    (False, True)
    >>> WriterProcess(me.host, 2 ** 22 + 7, None, me.namespace).is_gone()  # no such process here
    True
    >>> WriterProcess("elsewhere", 2 ** 22 + 7, None, None).is_gone()  # another host: unknown
    False
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass

_PROC = "/proc"


@dataclass(frozen=True)
class WriterProcess:
    host: str
    pid: int
    #: The process's start time (clock ticks since boot, Linux), so a reused process id is not taken for it.
    started: int | None
    #: The PID namespace it runs in (Linux): a process of another container is not looked up in ours.
    namespace: int | None

    @classmethod
    def current(cls) -> WriterProcess:
        return cls(socket.gethostname(), os.getpid(), _start_time(os.getpid()), _pid_namespace())

    @classmethod
    def from_dict(cls, data: dict) -> WriterProcess | None:
        """The process a file names; ``None`` when it names none (written before files did)."""
        try:
            return cls(str(data["host"]), int(data["pid"]), data.get("started"), data.get("namespace"))
        except (KeyError, TypeError, ValueError):
            return None

    def as_dict(self) -> dict:
        return {"host": self.host, "pid": self.pid, "started": self.started, "namespace": self.namespace}

    def is_gone(self) -> bool:
        """Whether the process is known to have ended: it ran on this host, in this PID namespace,
        and no process of its id runs (or one that started at another time)."""
        if self.host != socket.gethostname() or self.namespace != _pid_namespace() or self.pid <= 0:
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            pass  # another user's process: alive
        return self.started is not None and _start_time(self.pid) not in (None, self.started)

    def __str__(self) -> str:
        return f"process {self.pid} on {self.host}"


def _start_time(pid: int) -> int | None:
    """Field 22 of ``/proc/<pid>/stat``: when the process started; ``None`` without ``/proc``."""
    try:
        with open(f"{_PROC}/{pid}/stat", "rb") as f:
            stat = f.read().decode(errors="replace")
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may hold spaces: count from its end.
    fields = stat[stat.rindex(")") + 2:].split()
    return int(fields[19]) if len(fields) > 19 else None


def _pid_namespace() -> int | None:
    try:
        return os.stat(f"{_PROC}/self/ns/pid").st_ino
    except OSError:
        return None
