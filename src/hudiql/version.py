"""hudiql's version: the one place that says it (the package metadata reads it too)."""

__version__ = "0.1.0"
