"""How a Python worker reaches the driver's hudiql session: Spark commits a Python data source's
write (``DataSourceWriter.commit``) in a Python worker without a SparkSession, and a Hudi write
needs one, so the worker hands the write to the driver's Python process, which runs it.

One server per driver process, started by the first ``serve``: a ``multiprocessing.connection``
listener on 127.0.0.1 (the worker that commits runs beside the driver) with a random key, on a
daemon thread, each request answered on a thread of its own (its Spark jobs run while the
thread that called ``save()`` waits; PySpark pins each Python thread to a JVM thread). Each
registration is a token; a new one for the same SparkSession retires the one before, as the
data source Spark knows is the last one registered. The ``Callback`` (address, key, token)
travels with the data source Spark pickles to its workers.

Example:
    >>> callback = serve(object(), lambda request: request * 2)
    >>> callback.call(21)
    42
    >>> serve("owner", lambda request: 1 / 0).call(1)
    Traceback (most recent call last):
    ...
    hudiql.errors.HudiqlError: ZeroDivisionError: division by zero
"""

from __future__ import annotations

import secrets
import sys
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Client, Connection, Listener

import hudiql.errors as errors
from hudiql.errors import HudiqlError, from_spark_error

Handler = Callable[[object], object]


@dataclass(frozen=True)
class Callback:
    """Where a worker sends a request for one registration, and how it proves it may."""

    address: tuple[str, int]
    authkey: bytes
    token: str

    def call(self, request: object) -> object:
        """The registration's answer to ``request``; its error is raised here as the ``HudiqlError`` it was."""
        try:
            connection = Client(self.address, authkey=self.authkey)
        except OSError as exc:
            raise HudiqlError(f"cannot reach the Python process that registered format(\"hudi\") at "
                              f"{self.address[0]}:{self.address[1]} ({exc}); did it end?") from None
        with connection:
            connection.send((self.token, request))
            try:
                ok, answer = connection.recv()
            except EOFError:
                raise HudiqlError("the Python process that registered format(\"hudi\") ended before the write finished") from None
        if ok:
            return answer
        kind, message = answer
        error = getattr(errors, kind, None)
        raise (error if isinstance(error, type) and issubclass(error, HudiqlError) else HudiqlError)(message)


class _Server:
    def __init__(self) -> None:
        self.authkey = secrets.token_bytes(32)
        self.listener = Listener(("127.0.0.1", 0), authkey=self.authkey)
        self.handlers: dict[str, Handler] = {}
        self.tokens: dict[int, str] = {}  # per owner (by id): its current token
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, name="hudiql-datasource-callback", daemon=True).start()

    def serve(self, owner: object, handler: Handler) -> Callback:
        token = secrets.token_hex(16)
        with self.lock:
            self.handlers.pop(self.tokens.get(id(owner), ""), None)
            self.tokens[id(owner)] = token
            self.handlers[token] = handler
        return Callback(self.listener.address, self.authkey, token)

    def release(self, owner: object) -> None:
        with self.lock:
            self.handlers.pop(self.tokens.pop(id(owner), ""), None)

    def _accept(self) -> None:
        while True:
            try:
                connection = self.listener.accept()
            except Exception:  # a caller without the key, or one that hung up: serve the next
                continue
            threading.Thread(target=self._answer, args=(connection,), name="hudiql-datasource-write", daemon=True).start()

    def _answer(self, connection: Connection) -> None:
        with connection:
            try:
                token, request = connection.recv()
            except EOFError:
                return
            with self.lock:
                handler = self.handlers.get(token)
            try:
                if handler is None:
                    raise HudiqlError('the hudiql session that registered format("hudi") was replaced by another '
                                      'registration; write again')
                reply = (True, handler(request))
            except Exception as exc:
                reply = (False, _one_line(exc))
            connection.send(reply)


def _one_line(exc: Exception) -> tuple[str, str]:
    """``exc`` as (error class name, message): a ``HudiqlError`` or the one Spark's error stands for;
    anything else (a bug) keeps its type's name, and its traceback goes to the driver's stderr."""
    error = exc if isinstance(exc, HudiqlError) else from_spark_error(exc)
    if error is not None:
        return type(error).__name__, str(error)
    traceback.print_exception(exc, file=sys.stderr)
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return HudiqlError.__name__, f"{type(exc).__name__}: {first}" if first else type(exc).__name__


_server: _Server | None = None
_server_lock = threading.Lock()


def serve(owner: object, handler: Handler) -> Callback:
    """Answer requests with ``handler`` from now on, instead of ``owner``'s previous one."""
    global _server
    with _server_lock:
        if _server is None:
            _server = _Server()
    return _server.serve(owner, handler)


def release(owner: object) -> None:
    """``owner``'s handler no longer answers."""
    if _server is not None:
        _server.release(owner)
