"""Text from outside heron made safe to save and send: unpaired surrogates become U+FFFD.

A byte that is not UTF-8 in a command-line argument reaches Python as a lone surrogate
(``heron -p $'\\xff'`` gives ``'\\udcff'``); such a string cannot be encoded as UTF-8, so
it would fail the request and every write of the session. Arguments that name files
(``--cwd``, ``--session``, ``@path``, a prompt file) keep their bytes until the file is
opened - replacing them would name another file - and what is read from them is cleaned
instead (docs/configuration.md, "Text that is not UTF-8").
"""

from __future__ import annotations

import argparse
from typing import TextIO

from heron.session.jsonl import clean_text

# Options whose value may be a file name: cleaned after the file is read, not before.
_PATH_OPTIONS = frozenset({"cwd", "session", "system_prompt", "append_system_prompt"})


def clean_arguments(args: argparse.Namespace) -> None:
    """Replace unpaired surrogates in every text argument, in place (paths excepted)."""
    for name, value in vars(args).items():
        if name in _PATH_OPTIONS:
            continue
        if isinstance(value, str) and not (name == "print_prompt" and value.startswith("@")):
            setattr(args, name, clean_text(value))
        elif isinstance(value, list):
            setattr(args, name, [clean_text(v) if isinstance(v, str) and not v.startswith("@") else v for v in value])


def read_text_stream(stream: TextIO) -> str:
    """All of ``stream``: bytes that are not UTF-8 become U+FFFD (a piped binary file must
    not stop heron with a decoding error), then lone surrogates are cleaned."""
    buffer = getattr(stream, "buffer", None)
    if buffer is not None:
        data = buffer.read()
        text = data.decode("utf-8", "replace") if isinstance(data, bytes) else str(data)
    else:
        text = stream.read()
    return clean_text(text)
