"""Indexes kept beside the table that find records without reading them (the metadata table's record index)."""
