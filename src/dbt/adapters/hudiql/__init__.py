"""The dbt-core adapter plugin: ``type: hudiql`` in ``profiles.yml`` (``pip install 'hudiql[dbt]'``).

dbt finds it by importing ``dbt.adapters.hudiql`` (``dbt`` is a namespace package shared with
dbt-core) and its macros in ``dbt.include.hudiql``.
"""

from dbt.adapters.base import AdapterPlugin
from dbt.adapters.hudiql.column import HudiqlColumn
from dbt.adapters.hudiql.connections import HudiqlConnectionManager, HudiqlCredentials
from dbt.adapters.hudiql.impl import HudiqlAdapter
from dbt.adapters.hudiql.relation import HudiqlRelation
from dbt.include import hudiql as include

Plugin = AdapterPlugin(adapter=HudiqlAdapter, credentials=HudiqlCredentials, include_path=include.PACKAGE_PATH)

__all__ = ["HudiqlAdapter", "HudiqlColumn", "HudiqlConnectionManager", "HudiqlCredentials", "HudiqlRelation", "Plugin"]
