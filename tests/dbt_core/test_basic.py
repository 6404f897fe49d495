"""dbt-tests-adapter's basic classes: what every dbt adapter must pass."""

from __future__ import annotations

import pytest
from dbt.tests.adapter.basic import expected_catalog
from dbt.tests.adapter.basic.test_adapter_methods import BaseAdapterMethod
from dbt.tests.adapter.basic.test_base import BaseSimpleMaterializations
from dbt.tests.adapter.basic.test_docs_generate import BaseDocsGenerate
from dbt.tests.adapter.basic.test_empty import BaseEmpty
from dbt.tests.adapter.basic.test_ephemeral import BaseEphemeral
from dbt.tests.adapter.basic.test_generic_tests import BaseGenericTests
from dbt.tests.adapter.basic.test_incremental import BaseIncremental
from dbt.tests.adapter.basic.test_singular_tests import BaseSingularTests
from dbt.tests.adapter.basic.test_singular_tests_ephemeral import (
    BaseSingularTestsEphemeral,
)
from dbt.tests.adapter.basic.test_snapshot_check_cols import BaseSnapshotCheckCols
from dbt.tests.adapter.basic.test_snapshot_timestamp import BaseSnapshotTimestamp
from dbt.tests.adapter.basic.test_validate_connection import BaseValidateConnection
from dbt.tests.adapter.incremental.test_incremental_on_schema_change import BaseIncrementalOnSchemaChange
from dbt.tests.util import run_dbt


class TestSimpleMaterializations(BaseSimpleMaterializations):
    pass


class TestSingularTests(BaseSingularTests):
    pass


class TestSingularTestsEphemeral(BaseSingularTestsEphemeral):
    pass


class TestEmpty(BaseEmpty):
    pass


class TestEphemeral(BaseEphemeral):
    pass


class TestIncremental(BaseIncremental):
    pass


class TestIncrementalOnSchemaChange(BaseIncrementalOnSchemaChange):
    def test_run_incremental_sync_all_columns(self, project):
        """hudiql adds columns but cannot drop one: a model that dropped field2 is refused by name
        (dbt's own test expects the column dropped); its new columns alone are synced."""
        select = ["--select", "model_a incremental_sync_all_columns"]
        run_dbt(["run", *select])
        results = run_dbt(["run", *select], expect_pass=False)
        message = next(r.message for r in results if r.node.name == "incremental_sync_all_columns")
        assert "Compilation Error" in message
        assert "hudiql cannot drop columns of" in message and "(field2)" in message


class TestGenericTests(BaseGenericTests):
    pass


# The snapshot tests UPDATE rows of a seed between snapshots; hudiql updates tables with a record key
# only, so their seeds get one (a seed takes the Hudi configs of a model).
SEEDS_WITH_KEY = {"seeds": {"+unique_key": "id"}}


class TestSnapshotCheckCols(BaseSnapshotCheckCols):
    @pytest.fixture(scope="class")
    @classmethod
    def project_config_update(cls):
        return {"name": "snapshot_strategy_check_cols", **SEEDS_WITH_KEY}


class TestSnapshotTimestamp(BaseSnapshotTimestamp):
    @pytest.fixture(scope="class")
    @classmethod
    def project_config_update(cls):
        return {"name": "snapshot_strategy_timestamp", **SEEDS_WITH_KEY}


class TestDocsGenerate(BaseDocsGenerate):
    @pytest.fixture(scope="class")
    @classmethod
    def expected_catalog(cls, project):
        return expected_catalog.base_expected_catalog(
            project, role=None, id_type="bigint", text_type="string", time_type="timestamp",
            view_type="view", table_type="table", model_stats=expected_catalog.no_stats(),
        )


class TestAdapterMethod(BaseAdapterMethod):
    pass


class TestValidateConnection(BaseValidateConnection):
    pass
