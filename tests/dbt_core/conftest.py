"""dbt's own adapter test suite (``dbt-tests-adapter``) against the hudiql dbt-core adapter.

dbt's fixtures (``dbt.tests.fixtures.project``: ``project``, ``run_dbt``'s project folder, a schema
per test class) are imported here, so they apply to this folder only and the rest of the suite does
not load dbt. The profile points at a warehouse of the class's own, on the run's one SparkSession
(``spark``, root conftest), which the adapter finds as the process's active session.
"""

from __future__ import annotations

import pytest
from dbt.tests.fixtures.project import *  # dbt's test fixtures, for this folder only


@pytest.fixture(scope="class")
def dbt_profile_target(spark, tmp_path_factory):
    return {"type": "hudiql", "warehouse": str(tmp_path_factory.mktemp("dbt_warehouse")), "threads": 1}
