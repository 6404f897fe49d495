"""The file formats a table stores besides parquet: Hudi's log file (``log_file``: blocks, headers,
the archived timeline and merge-on-read logs are written in it) and the Avro record codec of its
data blocks (``avro``)."""
