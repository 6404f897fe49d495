"""The process that holds a lock or beats a heartbeat: known by host, process id and (on Linux)
its start time and PID namespace, so that another process on the same machine can tell at once
that it is gone, where a process elsewhere is only judged by its file's age. A PySpark driver's
Spark JVM (where local tasks write files) is named beside it: the writer is gone only when both
are, as the JVM outlives a killed driver for a moment and its tasks may still write.

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
import time
from dataclasses import dataclass

_PROC = "/proc"
#: How long a gone driver's Spark JVM is waited for (it exits once it sees the driver gone).
JVM_EXIT_WAIT_S = 15


@dataclass(frozen=True)
class WriterProcess:
    host: str
    pid: int
    #: The process's start time (clock ticks since boot, Linux), so a reused process id is not taken for it.
    started: int | None
    #: The PID namespace it runs in (Linux): a process of another container is not looked up in ours.
    namespace: int | None
    #: The driver's Spark JVM, when it runs one on this host, and its start time.
    jvm_pid: int | None = None
    jvm_started: int | None = None

    @classmethod
    def current(cls) -> WriterProcess:
        jvm = _spark_jvm_pid()
        return cls(socket.gethostname(), os.getpid(), _start_time(os.getpid()), _pid_namespace(), jvm,
                   _start_time(jvm) if jvm is not None else None)

    @classmethod
    def from_dict(cls, data: dict) -> WriterProcess | None:
        """The process a file names; ``None`` when it names none (written before files did)."""
        try:
            jvm = data.get("jvm_pid")
            return cls(str(data["host"]), int(data["pid"]), data.get("started"), data.get("namespace"),
                       int(jvm) if jvm is not None else None, data.get("jvm_started"))
        except (KeyError, TypeError, ValueError):
            return None

    def as_dict(self) -> dict:
        return {"host": self.host, "pid": self.pid, "started": self.started, "namespace": self.namespace,
                "jvm_pid": self.jvm_pid, "jvm_started": self.jvm_started}

    def is_gone(self) -> bool:
        """Whether the process is known to have ended: it ran on this host, in this PID namespace,
        and no process of its id runs (or one that started at another time); nor does its JVM."""
        if self.host != socket.gethostname() or self.namespace != _pid_namespace():
            return False
        if not _ended(self.pid, self.started):
            return False
        # A killed driver's JVM exits within a second or two, when it sees the driver's pipe close:
        # waited for, so that its last tasks cannot write after the writer is rolled back.
        deadline = time.monotonic() + JVM_EXIT_WAIT_S
        while self.jvm_pid is not None and not _ended(self.jvm_pid, self.jvm_started):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.1)
        return True

    def __str__(self) -> str:
        return f"process {self.pid} on {self.host}"


def _ended(pid: int, started: int | None) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # another user's process: alive
    return started is not None and _start_time(pid) not in (None, started)


_jvm_pids: dict[int, int | None] = {}  # per SparkContext


def _spark_jvm_pid() -> int | None:
    """The process id of this driver's Spark JVM, when a SparkContext runs (asked once per context)."""
    from pyspark import SparkContext

    context = SparkContext._active_spark_context
    if context is None:
        return None
    if id(context) not in _jvm_pids:
        try:
            _jvm_pids[id(context)] = int(context._jvm.java.lang.ProcessHandle.current().pid())
        except Exception:  # a JVM that cannot say (an old Java, a remote gateway): the driver alone decides
            _jvm_pids[id(context)] = None
    return _jvm_pids[id(context)]


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
