"""Whether a model's table exists, decided from storage and failing closed.

A table exists when its ``.hoodie`` folder does, at its registered location (an external table)
or its managed one. Anything that prevents a sure answer (a failed listing, a
registered location without ``.hoodie``, a ``.hoodie`` without ``hoodie.properties``) raises
``RelationStateError``: the model fails, and a table it could not see is never recreated.

Example:
    >>> import tempfile
    >>> catalog = Catalog(tempfile.mkdtemp())
    >>> table_exists(catalog, Relation("default", "orders", "table")), table_location(catalog, Relation("default", "orders", "table"))[1]
    (False, False)
"""

from __future__ import annotations

from hudiql.catalog import Catalog
from hudiql.io.storage import Storage
from hudiql.layout import META_FOLDER, PROPERTIES_FILE
from hudiql.project.artifacts.nodes import Relation
from hudiql.project.errors import RelationStateError
from hudiql.table.table import has_table


def table_location(catalog: Catalog, relation: Relation) -> tuple[str, bool]:
    """Where ``relation``'s table is or would be, and whether the catalog registers it there."""
    database, name = relation.schema or "default", relation.identifier
    if catalog.is_external(database, name):
        location = catalog.location(database, name)
        if location:
            return location, True
    return catalog.managed_location(database, name), False


def table_exists(catalog: Catalog, relation: Relation) -> bool:
    location = "?"
    try:
        location, registered = table_location(catalog, relation)
        storage = Storage(location)
        if has_table(storage):
            if not storage.exists(PROPERTIES_FILE):
                raise RelationStateError(
                    f"{relation}: {location}/{META_FOLDER} exists but has no hoodie.properties; the table is damaged, "
                    "so it is neither written nor recreated (restore the file, or DROP TABLE and run again)"
                )
            return True
        if registered:
            raise RelationStateError(
                f"{relation} is registered at {location}, which has no {META_FOLDER} folder; refusing to recreate it "
                f"(restore the table, or DROP TABLE {relation} and run again)"
            )
        return False
    except OSError as e:
        raise RelationStateError(
            f"cannot tell whether {relation} exists: reading {location} failed ({e}); the model fails instead of recreating the table"
        ) from None
