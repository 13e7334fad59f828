"""Entry point of the ``heron`` command.

Parses arguments before importing anything heavy, so ``heron --version`` answers in the
time Python takes to start.
"""

from __future__ import annotations

import argparse
import sys


def build_parser() -> argparse.ArgumentParser:
    from heron import __version__
    from heron.cli import sessions_cmd  # standard library only at import

    parser = argparse.ArgumentParser(prog="heron", description="A coding agent that manages its context window.")
    parser.add_argument("--version", action="version", version=f"heron {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    sessions_cmd.add_parser(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return 0
    result: int = handler(args)
    return result


if __name__ == "__main__":
    raise SystemExit(main())
