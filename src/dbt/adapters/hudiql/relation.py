"""Relations as hudiql names them: ``schema.identifier`` (a hudiql database and a table or view),
never a database (catalog) part, quoted with backticks only when asked to."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dbt.adapters.base.relation import BaseRelation, Policy
from dbt.adapters.contracts.relation import RelationType

from hudiql.project.artifacts.nodes import Relation


@dataclass
class HudiqlQuotePolicy(Policy):
    database: bool = False
    schema: bool = False
    identifier: bool = False


@dataclass
class HudiqlIncludePolicy(Policy):
    database: bool = False
    schema: bool = True
    identifier: bool = True


@dataclass(frozen=True, eq=False, repr=False)
class HudiqlRelation(BaseRelation):
    quote_policy: Policy = field(default_factory=HudiqlQuotePolicy)
    include_policy: Policy = field(default_factory=HudiqlIncludePolicy)
    quote_character: str = "`"

    @classmethod
    def create(cls, database: str | None = None, schema: str | None = None, identifier: str | None = None,
               type: RelationType | None = None, **kwargs: Any) -> HudiqlRelation:
        # No database part: always the empty one nodes have (the relation cache and the docs catalog
        # match on it), whatever dbt passes.
        return super().create("", schema, identifier, type, **kwargs)

    def as_hudiql(self) -> Relation:
        """The relation as hudiql's own project layer names it (its rules take these)."""
        kind = "view" if self.is_view else "table"
        return Relation(self.schema, self.identifier, kind)
