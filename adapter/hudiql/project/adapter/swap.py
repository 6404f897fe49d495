"""Replace a table atomically: build the new one aside, then switch the catalog entry.

The new table is created (CTAS) under a build name at its own location,
``<warehouse>/[<db>.db/].hudiql_builds/<table>/<build id>``. One atomic write of the catalog's
registry entry then points the table's name at it; until that write readers see the old table
whole, after it the new one whole. The old table's files are deleted after the switch, when
they are hudiql's own (its managed folder or an earlier build); a user's LOCATION is left alone.

In a materialization: ``prepare_build`` names the new table's folder and relation, the table is
created there (CTAS), then ``switch`` points the target's registration at it (or ``discard``).
"""

from __future__ import annotations

import posixpath
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone

from hudiql.catalog import Catalog
from hudiql.io.storage import Storage
from hudiql.project.adapter.relation import table_exists, table_location
from hudiql.project.artifacts.nodes import Relation

BUILDS_FOLDER = ".hudiql_builds"  # hidden: SHOW TABLES skips folders starting with '.'
BUILD_SUFFIX = "__hudiql_build"


@dataclass(frozen=True)
class Build:
    relation: Relation  # the build name the CTAS creates
    location: str


def _builds_root(catalog: Catalog, relation: Relation) -> str:
    db_path = catalog.database_path(relation.schema or "default")
    return posixpath.join(db_path, BUILDS_FOLDER, relation.identifier) if db_path else posixpath.join(BUILDS_FOLDER, relation.identifier)


def _same_place(a: str, b: str) -> bool:
    return Storage(a).full_path() == Storage(b).full_path()


def _is_ours(catalog: Catalog, relation: Relation, location: str) -> bool:
    """hudiql made this location: the table's managed folder or one of its builds."""
    builds = Storage(catalog.storage.uri(_builds_root(catalog, relation))).full_path()
    managed = catalog.managed_location(relation.schema or "default", relation.identifier)
    return _same_place(location, managed) or Storage(location).full_path().startswith(builds + "/")


def prepare_build(catalog: Catalog, target: Relation) -> Build:
    """A fresh build name and location for ``target``; what a crashed build left is removed first."""
    relation = Relation(target.schema, target.identifier + BUILD_SUFFIX, "table")
    database = target.schema or "default"
    if catalog.is_external(database, relation.identifier):
        stale = catalog.location(database, relation.identifier)
        catalog.unregister(database, relation.identifier)
        if stale and _is_ours(catalog, target, stale):
            Storage(stale).delete_dir()
    build_id = datetime.now(timezone.utc).strftime("%Y%m%d%H%M%S") + "_" + uuid.uuid4().hex[:8]
    location = catalog.storage.uri(posixpath.join(_builds_root(catalog, target), build_id))
    return Build(relation, location)


def switch(catalog: Catalog, build: Build, target: Relation) -> None:
    """Point ``target`` at the finished build (one atomic write), then drop the old files."""
    database = target.schema or "default"
    old = table_location(catalog, target)[0] if table_exists(catalog, target) else None
    new = catalog.location(database, build.relation.identifier)
    if new is None:
        raise RuntimeError(f"build {build.relation} is not registered; it cannot replace {target}")
    catalog.register_external(database, target.identifier, new)
    catalog.unregister(database, build.relation.identifier)
    if old is not None and not _same_place(old, new) and _is_ours(catalog, target, old):
        Storage(old).delete_dir()


def discard(catalog: Catalog, build: Build) -> None:
    """Remove a build that will not be switched in (its statement failed)."""
    database = build.relation.schema or "default"
    if catalog.is_external(database, build.relation.identifier):
        catalog.unregister(database, build.relation.identifier)
    Storage(build.location).delete_dir()
