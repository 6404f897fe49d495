# dbt reads the adapter's version from here (``dbt --version``); it is hudiql's.
from hudiql import __version__ as version

__all__ = ["version"]
