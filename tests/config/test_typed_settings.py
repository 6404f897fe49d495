"""Settings read by type in one place (``config.registry``): each kind parsed by the registry, every
key's default, one precedence rule (table property < session ``SET`` < statement option), and bad
or unknown keys refused by name."""

from __future__ import annotations

import pytest
from hudiql.config import registry as R
from hudiql.errors import OptionError


@pytest.mark.parametrize(
    ("read", "key", "given", "expected"),
    [
        (R.number, R.MAX_DELTA_COMMITS, " 7 ", 7),
        (R.flag, R.CLEAN_AUTOMATIC, "False", False),
        (R.flag, R.INLINE_COMPACT, "TRUE", True),
        (R.size, R.WRITE_BATCH_SIZE, "1.5", 1_572_864),  # megabytes, decimals allowed, as Hudi's Flink options
        (R.choice, R.CLEANER_POLICY, "keep_latest_by_hours", "KEEP_LATEST_BY_HOURS"),  # spelled as the registry does
        (R.choice, R.COMPRESSION, "ZSTD", "zstd"),
    ],
)
def test_each_kind_is_parsed_by_the_registry(read, key, given, expected):
    assert read({key: given}, key) == expected


@pytest.mark.parametrize(
    ("read", "key", "default"),
    [
        (R.number, R.MAX_DELTA_COMMITS, 5),
        (R.number, R.MAX_FILE_SIZE, 120 * 1024 * 1024),
        (R.flag, R.CLEAN_AUTOMATIC, True),
        (R.flag, R.INLINE_COMPACT, False),
        (R.size, R.WRITE_BATCH_SIZE, 256 * 1024 * 1024),
        (R.choice, R.CLEANER_POLICY, "KEEP_LATEST_COMMITS"),
        (R.choice, R.CONCURRENCY_MODE, "OPTIMISTIC_CONCURRENCY_CONTROL"),
    ],
)
def test_an_absent_key_takes_its_default(read, key, default):
    assert read({}, key) == default


def test_another_spelling_of_a_key_counts():
    assert R.number({"hoodie.clean.commits.retained": "4"}, R.CLEANER_COMMITS_RETAINED) == 4


def test_one_precedence_rule():
    table, session, statement = {R.MAX_FILE_SIZE: "1"}, {R.MAX_FILE_SIZE: "2"}, {R.MAX_FILE_SIZE: "3"}
    assert R.number(R.effective_settings(table), R.MAX_FILE_SIZE) == 1
    assert R.number(R.effective_settings(table, session), R.MAX_FILE_SIZE) == 2
    assert R.number(R.effective_settings(table, session, statement), R.MAX_FILE_SIZE) == 3
    assert R.number(R.effective_settings(table, None, statement), R.MAX_FILE_SIZE) == 3


def test_a_session_set_beats_the_table_property(session):
    session.sql("CREATE TABLE t (id INT) USING hudi TBLPROPERTIES (primaryKey = 'id', "
                "'hoodie.write.concurrency.mode' = 'SINGLE_WRITER')")

    def mode() -> str:
        rows = session.sql("DESCRIBE EXTENDED t").collect()
        return next(r.data_type for r in rows if r.col_name == "Concurrency Mode")

    assert mode() == "SINGLE_WRITER"
    session.sql("SET hoodie.write.concurrency.mode = optimistic_concurrency_control")
    assert mode() == "OPTIMISTIC_CONCURRENCY_CONTROL"


@pytest.mark.parametrize(
    ("read", "key", "bad", "message"),
    [
        (R.number, R.MAX_DELTA_COMMITS, "many", "give a whole number of delta commits"),
        (R.flag, R.CLEAN_AUTOMATIC, "yes", "use true or false"),
        (R.size, R.WRITE_TASK_MAX_SIZE, "-1", "give a size in MB greater than 0"),
        (R.choice, R.CLEANER_POLICY, "KEEP_ALL", "is not valid; use"),
    ],
)
def test_a_bad_value_is_refused_by_name(read, key, bad, message):
    with pytest.raises(OptionError, match=message) as error:
        read({key: bad}, key)
    assert str(error.value).startswith(f"{key}={bad} ")


def test_a_read_of_the_wrong_kind_is_a_programming_error():
    with pytest.raises(AssertionError, match="is an option of kind int, not bool"):
        R.flag({}, R.MAX_DELTA_COMMITS)


def test_unknown_keys_are_refused_with_the_closest_one():
    with pytest.raises(OptionError, match="hoodie.cleaner.commits.retained"):
        R.validate_session_option("hoodie.cleaner.commit.retained", "3")
    with pytest.raises(OptionError, match="unknown session option 'write.batch.sise'; did you mean 'write.batch.size'"):
        R.validate_session_option("write.batch.sise", "3")


def test_a_statement_reads_its_settings_from_its_table(tmp_path):
    """The table a statement loads carries the settings it runs with (``HudiTable.for_statement``):
    its property, under the session's SET, under the statement's option; a procedure's options on top."""
    from hudiql.config.table_config import TableConfig
    from hudiql.table.table import HudiTable

    table = HudiTable.create(str(tmp_path / "t"), TableConfig({"hoodie.table.name": "t", R.MAX_DELTA_COMMITS: "7"}))
    assert table.settings.number(R.MAX_DELTA_COMMITS) == 7
    session = table.for_statement({R.MAX_DELTA_COMMITS: "8", R.CLEAN_AUTOMATIC: "false"})
    assert session.settings.number(R.MAX_DELTA_COMMITS) == 8
    assert session.settings.given == {R.MAX_DELTA_COMMITS: "8", R.CLEAN_AUTOMATIC: "false"}
    statement = table.for_statement({R.MAX_DELTA_COMMITS: "8"}, {R.MAX_DELTA_COMMITS: "9"})
    assert statement.settings.number(R.MAX_DELTA_COMMITS) == 9
    procedure = session.with_options({R.CLEAN_AUTOMATIC: "true"})
    assert procedure.settings.flag(R.CLEAN_AUTOMATIC) and procedure.settings.number(R.MAX_DELTA_COMMITS) == 8
    assert procedure.settings.given[R.CLEAN_AUTOMATIC] == "true"
    # Later snapshots of the statement keep its settings.
    assert session.refreshed().settings is session.settings
    assert session.as_of("99999999999999999").settings is session.settings


def test_each_setting_is_parsed_once():
    from hudiql.config.settings import Settings

    settings = Settings({R.MAX_DELTA_COMMITS: "7"})
    assert settings.number(R.MAX_DELTA_COMMITS) == 7
    settings._values[R.MAX_DELTA_COMMITS] = "many"  # a second read does not parse the text again
    assert settings.number(R.MAX_DELTA_COMMITS) == 7
    assert settings.value(R.MAX_DELTA_COMMITS) == "many"  # the text is a read of its own
    with pytest.raises(OptionError, match="give a whole number of delta commits"):
        Settings({R.MAX_DELTA_COMMITS: "many"}).number(R.MAX_DELTA_COMMITS)
