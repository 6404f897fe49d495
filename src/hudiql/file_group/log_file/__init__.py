"""The log files of a merge-on-read file slice: their scanner (the format is ``formats.log_file``)."""
