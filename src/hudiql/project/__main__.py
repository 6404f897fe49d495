"""``python -m hudiql.project COMMAND ...``: the project commands without the rest of the CLI.

Example:
    $ python -m hudiql.project build --project-dir models_example
"""

import argparse
import sys

from hudiql.project.cli.main import add_commands


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="hudiql", description="dbt-style projects of Hudi tables on Spark.")
    add_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())
