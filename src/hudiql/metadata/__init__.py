"""The metadata table's format: its records (``records``), as Hudi writes them in HFiles
(``formats.hfile``). The table itself, read and kept in step with the data table, is
``table.metadata_table``."""
