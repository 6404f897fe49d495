"""The procedures of clustering: run_clustering and show_clustering."""

from __future__ import annotations

from hudiql.procedures.base import Procedure

PROCEDURES: tuple[Procedure, ...] = ()
