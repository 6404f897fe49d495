"""The log files of a merge-on-read file slice: their format, their Avro records, their scanner."""
