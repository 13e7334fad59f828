"""The task a run starts with: ``-p``, the positional words, piped stdin, ``@file``.

:class:`Task` and :func:`gather_task` are shared by the modes (print, json, interactive)
and the rpc protocol's image checks; they live here, not in the command's entry module.
"""

from __future__ import annotations

import argparse
import base64
import mimetypes
import os
import select
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TextIO

from heron.ai.types import ImageContent
from heron.cli.clean_input import read_text_stream
from heron.cli.terminal_text import visible
from heron.cli.usage import UsageError
from heron.session.jsonl import clean_text
from heron.session.unanswered import unanswered_prompt

if TYPE_CHECKING:
    from heron.coding.goal_loop import GoalLoop
    from heron.session.store import SessionStore

IMAGE_TYPES = {"image/png", "image/jpeg", "image/gif", "image/webp"}


@dataclass
class Task:
    """What the user asked, with ``@file`` attachments resolved."""

    text: str
    images: list[ImageContent] = field(default_factory=list)
    # no task given, and the session's last prompt was never answered: send that one again
    resend: bool = False

    def __bool__(self) -> bool:
        return bool(self.text.strip() or self.images or self.resend)


class Resumable(Protocol):
    """What a run without a task reads of its session: the store (an unanswered prompt)
    and the goal loop (one to pick up, or why there is none)."""

    @property
    def store(self) -> SessionStore: ...

    @property
    def goal_loop(self) -> GoalLoop: ...


def resend_task(session: Resumable) -> Task:
    """``heron -p --continue`` without a task: the session's unanswered prompt, sent again,
    else its goal loop, picked up where it stopped (a notice on stderr says which); a usage
    error when there is neither."""
    found = unanswered_prompt(session.store)
    if found is None and session.goal_loop.pending():
        goal = session.goal_loop.state().goal
        print(visible(f"heron: picking up the goal loop: {_preview(goal.text if goal else '')}"), file=sys.stderr)
        return Task(text="", resend=True)
    if found is None:
        why = session.goal_loop.idle_reason() if session.goal_loop.state().goal is not None else None
        raise UsageError(
            'no task given: heron -p "what to do" (or pipe it on stdin); '
            "the session's last prompt was answered, so there is none to send again" + (f", and {why}" if why else "")
        )
    what = "the prompt the last run stopped before sending" if found.journaled else "the unanswered prompt again"
    print(visible(f"heron: sending {what}: {_preview(found.message.text())}"), file=sys.stderr)
    return Task(text="", resend=True)


def _preview(text: str) -> str:
    first = (text.strip().splitlines() or ["(images only)"])[0]
    return first if len(first) <= 70 else first[:69] + "…"


def read_attachment(token: str, cwd: Path) -> tuple[str, ImageContent | None]:
    """``@path``: a text file becomes a tagged block of the prompt, an image an image block."""
    path = Path(os.path.expanduser(token[1:]))
    if not path.is_absolute():
        path = cwd / path
    if not path.is_file():
        raise UsageError(f"{token}: no such file")
    mime = mimetypes.guess_type(path.name)[0] or ""
    if mime in IMAGE_TYPES:
        data = base64.b64encode(path.read_bytes()).decode("ascii")
        return f'<file path="{token[1:]}">(image attached)</file>', ImageContent(data=data, mime_type=mime)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{token}: not a text file ({exc.reason})") from exc
    return f'<file path="{token[1:]}">\n{text}\n</file>', None


# How long a task given on the command line waits for piped stdin to show data (or end)
# before going on without it: `producer | heron -p "review"` has its data by then, while
# an open pipe that never writes (a CI runner, a parent process) must not block the run.
STDIN_WAIT_SECONDS = 1.0


def gather_task(args: argparse.Namespace, cwd: Path, stdin: TextIO | None = None) -> Task:
    """The task from ``-p``, the positional words, piped stdin and ``@file`` arguments.

    Piped stdin (print and json modes): with no task on the command line it is the task,
    read to its end; with a task, it is added only if it has data within
    :data:`STDIN_WAIT_SECONDS` - or always, read to its end, when ``-`` is one of the words.
    """
    parts: list[str] = []
    images: list[ImageContent] = []
    files: list[str] = []
    words = list(args.messages)
    if args.print_prompt:
        # `-p` takes the next word as its value, so in `heron -p @main.py "explain"` the
        # attachment is that value: a single @word there is a file like any other.
        words.insert(0, args.print_prompt)
    wants_stdin = "-" in words
    words = [word for word in words if word != "-"]
    for n, word in enumerate(words):
        is_value = n == 0 and bool(args.print_prompt) and word == args.print_prompt
        if word.startswith("@") and len(word) > 1 and not (is_value and any(c.isspace() for c in word)):
            block, image = read_attachment(word, cwd)
            files.append(block)
            if image is not None:
                images.append(image)
        else:
            parts.append(word)
    blocks = [*files, " ".join(parts)]
    stream = stdin if stdin is not None else sys.stdin
    if (
        args.mode in (None, "print", "json")
        and (args.print_prompt is not None or wants_stdin)
        and not _isatty(stream)
        and (wants_stdin or not words or _has_data(stream, STDIN_WAIT_SECONDS))
    ):
        # Piped text is a block of its own: joined to the words with a space, its lines
        # would run into the task ("Explain: <first line of the file>").
        blocks.append(read_text_stream(stream).strip("\n"))
    text = "\n\n".join(block for block in blocks if block.strip())
    return Task(text=clean_text(text.strip()), images=images)


def _has_data(stream: TextIO, timeout: float) -> bool:
    """Whether reading ``stream`` would not block (data, or its end) within ``timeout``."""
    try:
        fd = stream.fileno()
    except (AttributeError, ValueError, OSError):
        return True  # not a descriptor (a test's StringIO): reading cannot block
    try:
        ready, _, _ = select.select([fd], [], [], timeout)
    except (OSError, ValueError):
        return True
    return bool(ready)


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return True
