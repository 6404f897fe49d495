"""The procedures of a table's history: its commits and file system view, rollbacks and savepoints."""

from __future__ import annotations

from hudiql.procedures.base import Procedure

PROCEDURES: tuple[Procedure, ...] = ()
