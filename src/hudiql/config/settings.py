"""The settings one statement runs with: decided once, by one rule of precedence (a table's
property, under the session's ``SET``, under the statement's own option), and read by type, each
key parsed once (``registry`` says each key's kind and default).

A statement's table (``HudiTable.settings``) carries them to every layer: its write, its
transaction and the services that run after it.

Example:
    >>> from hudiql.config import registry as K
    >>> settings = Settings({K.MAX_FILE_SIZE: "1", K.CLEAN_AUTOMATIC: "false"}, {K.MAX_FILE_SIZE: "2"})
    >>> settings.number(K.MAX_FILE_SIZE), settings.flag(K.CLEAN_AUTOMATIC), settings.choice(K.CLEANER_POLICY)
    (2, False, 'KEEP_LATEST_COMMITS')
    >>> settings.over({K.MAX_FILE_SIZE: "3"}).number(K.MAX_FILE_SIZE)
    3
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from hudiql.config import registry


class Settings(Mapping[str, str]):
    """What one statement runs with (``registry.effective_settings``), as strings by key and typed
    by the accessors, which parse a key the first time it is read."""

    def __init__(self, table_properties: Mapping[str, str] | None = None, session: Mapping[str, str] | None = None,
                 statement: Mapping[str, str] | None = None) -> None:
        self._table_properties = table_properties or {}
        #: What the session and the statement set, without the table's properties.
        self.given = registry.effective_settings({}, session, statement)
        self._values = registry.effective_settings(self._table_properties, self.given)
        self._parsed: dict[tuple[str, str], str | int | bool] = {}

    def __getitem__(self, key: str) -> str:
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"Settings({self._values!r})"

    def over(self, statement: Mapping[str, str]) -> Settings:
        """These settings under a statement's (or a procedure's) own options."""
        return Settings(self._table_properties, self.given, statement)

    def _typed(self, name: str, read) -> str | int | bool | float:
        key = (read.__name__, name)
        if key not in self._parsed:
            self._parsed[key] = read(self._values, name)
        return self._parsed[key]

    def value(self, name: str) -> str:
        """``name``'s text (or another spelling's), else its default (``registry.setting``)."""
        return self._typed(name, registry.setting)

    def number(self, name: str) -> int:
        """``name``'s whole number (an INT key), else its default."""
        return self._typed(name, registry.number)

    def flag(self, name: str) -> bool:
        """Whether ``name`` (a BOOL key) is on, else its default."""
        return self._typed(name, registry.flag)

    def fraction(self, name: str) -> float:
        """``name``'s number between 0 and 1 (a FRACTION key), else its default."""
        return self._typed(name, registry.fraction)

    def size(self, name: str) -> int:
        """``name``'s size in bytes (a MEGABYTES key), else its default."""
        return self._typed(name, registry.size)

    def choice(self, name: str) -> str:
        """``name``'s value (an ENUM key) spelled as the registry spells it, else its default."""
        return self._typed(name, registry.choice)

    def check(self, names: tuple[str, ...]) -> None:
        """Refuse (``OptionError``) the first of ``names`` whose value is not valid."""
        registry.check_values(self._values, names)

    def commit_extra_metadata(self) -> dict[str, str]:
        """The settings a commit records in its ``extraMetadata`` (``registry.commit_extra_metadata``)."""
        return registry.commit_extra_metadata(self._values)
