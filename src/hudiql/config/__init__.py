"""A table's configuration: ``hoodie.properties`` read and written (``table_config``), the registry
of every option key hudiql knows, with its kind, default and where it may be given
(``registry``), and the index a table is laid out by (``index_config``)."""
