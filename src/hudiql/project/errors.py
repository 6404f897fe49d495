"""Errors of the project layer. All are ``HudiqlError``: a user can fix each by editing the project.

Example:
    >>> isinstance(ConfigError("model m: unknown config 'materialised'; did you mean 'materialized'?"), HudiqlError)
    True
"""

from hudiql.errors import HudiqlError


class ProjectError(HudiqlError):
    """``dbt_project.yml``, ``profiles.yml`` or the project's files are missing or invalid."""


class ConfigError(ProjectError):
    """A config key is unknown or its value is not valid."""


class CompilationError(ProjectError):
    """A model, test or macro cannot be rendered: Jinja errors, unknown refs, cycles."""


class RelationStateError(HudiqlError):
    """Whether a table exists cannot be decided; the model fails rather than recreate it."""
