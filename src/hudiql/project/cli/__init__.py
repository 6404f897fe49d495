"""The project commands' command line: ``flags`` (the typed command line, exit codes) and ``main``
(argparse wiring, ``invoke``)."""
