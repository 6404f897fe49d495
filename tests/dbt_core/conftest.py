"""dbt's own adapter test suite (``dbt-tests-adapter``) against the hudiql dbt-core adapter.

The fixtures come from ``dbt.tests.fixtures.project`` (declared in the root conftest). Each test
class gets a dbt project folder and a schema of its own (dbt's fixtures); here the profile points
at a warehouse of the class's own, on the run's one SparkSession (``spark``, root conftest), which
the adapter finds as the process's active session.
"""

from __future__ import annotations

import pytest


@pytest.fixture(scope="class")
def dbt_profile_target(spark, tmp_path_factory):
    return {"type": "hudiql", "warehouse": str(tmp_path_factory.mktemp("dbt_warehouse")), "threads": 1}
