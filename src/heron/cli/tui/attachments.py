"""Files in the interactive input line: ``@path`` completion and attachment, and image
paths pasted into the line.

* Typing ``@`` and part of a path offers the project's files, matched fuzzily (the
  letters in order, not necessarily together: ``@grt`` finds ``src/greeting.py``) and
  listed by heron's own walk, so ``.gitignore``d files (and ``.git``) are left out as the
  ``find`` tool leaves them out.
* On submit, each ``@path`` naming a file attaches it: a text file's content goes into the
  prompt as a ``<file path="...">`` block before the text (as ``heron @file`` does on the
  command line), an image becomes an image block when the model accepts images. A path
  to an image pasted or dropped into the line (absolute, ``~/`` or ``./``, possibly
  quoted or with escaped spaces, as terminals paste them) is attached the same way.
* What cannot be attached (no such file, a directory, too large, an image for a
  text-only model) is said in one line and the prompt goes as typed.
"""

from __future__ import annotations

import base64
import mimetypes
import os
import re
import shlex
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document

from heron.ai.types import ImageContent, Model
from heron.cli.task_input import IMAGE_TYPES
from heron.coding.tools.walker import Walker

MAX_TEXT_BYTES = 1024 * 1024  # a larger file is left to the read tool, which pages it
MAX_IMAGE_BYTES = 20 * 1024 * 1024
INDEX_LIMIT = 50_000  # files listed for completion; a huge tree is cut here
INDEX_TTL = 5.0  # seconds a listing is reused between completions
COMPLETIONS = 40

# "@path" at the start or after whitespace; "@\"a b.txt\"" for a path with spaces.
MENTION = re.compile(r'(?:(?<=\s)|^)@(?:"([^"\n]+)"|([^\s"]+))')
_IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp")


@dataclass
class Attached:
    """The prompt to send: file blocks before the typed text, images, and what to tell
    the user about what was (not) attached."""

    text: str
    images: list[ImageContent] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)


def _resolve(raw: str, cwd: Path) -> Path:
    path = Path(os.path.expanduser(raw))
    return path if path.is_absolute() else cwd / path


def _is_image(path: Path) -> bool:
    return (mimetypes.guess_type(path.name)[0] or "") in IMAGE_TYPES


def _pasted_paths(text: str) -> list[str]:
    """Image paths as a terminal pastes a dropped file: ``/tmp/a.png``, ``'/tmp/my shot.png'``,
    ``/tmp/my\\ shot.png``, ``~/x.jpg``, ``./x.gif`` (not ``@`` mentions, handled apart)."""
    try:
        words = shlex.split(text, posix=True)
    except ValueError:  # an unbalanced quote: plain words
        words = text.split()
    return [w for w in words if w.startswith(("/", "~/", "./")) and w.lower().endswith(_IMAGE_SUFFIXES)]


def attach(text: str, cwd: Path, model: Model) -> Attached:
    """Resolve the ``@path`` mentions and pasted image paths of a prompt."""
    out = Attached(text=text)
    blocks: list[str] = []
    seen: set[Path] = set()
    for match in MENTION.finditer(text):
        raw = match.group(1) or match.group(2)
        path = _resolve(raw, cwd)
        if path in seen:
            continue
        seen.add(path)
        if path.is_dir():
            out.notes.append(f"@{raw} is a directory: not attached (name a file)")
        elif not path.is_file():
            if "/" in raw or "." in raw:  # "@someone" is just text
                out.notes.append(f"@{raw}: no such file, sent as text")
        elif _is_image(path):
            _attach_image(out, raw, path, model)
        else:
            block = _text_block(out, raw, path)
            if block is not None:
                blocks.append(block)
    for raw in _pasted_paths(text):
        path = _resolve(raw, cwd)
        if path not in seen and path.is_file() and _is_image(path):
            seen.add(path)
            _attach_image(out, raw, path, model)
    out.text = "\n\n".join([*blocks, text]) if blocks else text
    return out


def _text_block(out: Attached, raw: str, path: Path) -> str | None:
    try:
        size = path.stat().st_size
        if size > MAX_TEXT_BYTES:
            out.notes.append(
                f"@{raw} is {size / 1024 / 1024:.1f} MB: too large to attach "
                f"(limit {MAX_TEXT_BYTES // 1024 // 1024} MB); the model can read it with its tools"
            )
            return None
        content = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        out.notes.append(f"@{raw} is not a text file: not attached")
        return None
    except OSError as exc:
        out.notes.append(f"@{raw}: cannot read it ({exc.strerror or exc})")
        return None
    out.files.append(raw)
    return f'<file path="{raw}">\n{content}\n</file>'


def _attach_image(out: Attached, raw: str, path: Path, model: Model) -> None:
    if not model.supports_images():
        out.notes.append(
            f"{raw}: {model.ref} does not accept images, so it was not attached (/model switches to one that does)"
        )
        return
    try:
        data = path.read_bytes()
    except OSError as exc:
        out.notes.append(f"{raw}: cannot read it ({exc.strerror or exc})")
        return
    if len(data) > MAX_IMAGE_BYTES:
        out.notes.append(f"{raw}: {len(data) / 1024 / 1024:.1f} MB is too large for an image (limit 20 MB)")
        return
    mime = mimetypes.guess_type(path.name)[0] or "image/png"
    out.images.append(ImageContent(data=base64.b64encode(data).decode("ascii"), mime_type=mime))
    out.files.append(raw)


# --- completion ----------------------------------------------------------------------------


def fuzzy_score(query: str, path: str) -> float | None:
    """How well ``query`` matches ``path`` (higher is better), or None when its letters
    do not all appear in order. Matches in the file name, at word starts and in runs
    count more; shorter paths win ties."""
    if not query:
        return 0.0 - len(path) / 1000
    q, p = query.lower(), path.lower()
    base = p.rfind("/") + 1
    score = 0.0
    position = -1
    run = 0
    for char in q:
        found = p.find(char, position + 1)
        if found < 0:
            return None
        run = run + 1 if found == position + 1 else 0
        score += 1 + run * 2
        if found >= base:
            score += 1.5
        if found == 0 or p[found - 1] in "/_-. ":
            score += 2
        position = found
    if p[base:].startswith(q):
        score += 10
    return score - len(path) / 1000


class FileIndex:
    """The project's files as heron's walker lists them (ignore files respected), kept
    for a few seconds so typing does not walk the tree at every key."""

    def __init__(self, root: Path, limit: int = INDEX_LIMIT) -> None:
        self.root = root
        self.limit = limit
        self._files: list[str] = []
        self._paths: list[str] = []  # files, then their directories ("src/")
        self._when = -INDEX_TTL

    def files(self) -> list[str]:
        self._refresh()
        return self._files

    def _refresh(self) -> None:
        now = time.monotonic()
        if now - self._when <= INDEX_TTL:
            return
        listed: list[str] = []
        for rel, _ in Walker(self.root).files():
            listed.append(os.fsdecode(rel))
            if len(listed) >= self.limit:
                break
        dirs = {f[: i + 1] for f in listed for i, c in enumerate(f) if c == "/"}
        self._files, self._paths, self._when = listed, [*listed, *sorted(dirs)], now

    def candidates(self, query: str) -> list[str]:
        """Files and their directories matching ``query``, best first."""
        self._refresh()
        scored = [(s, path) for path in self._paths if (s := fuzzy_score(query, path)) is not None]
        scored.sort(key=lambda item: (-item[0], item[1]))
        return [path for _, path in scored[:COMPLETIONS]]


def mention_before(text: str) -> str | None:
    """The ``@partial`` being typed at the end of ``text`` (without the ``@``), or None."""
    match = re.search(r'(?:(?<=\s)|^)@"?([^\s"]*)$', text)
    return match.group(1) if match else None


class FileCompleter(Completer):
    """Completes ``@partial`` to a project path (quoted when it holds a space)."""

    def __init__(self, index: FileIndex) -> None:
        self.index = index

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterable[Completion]:
        before = document.text_before_cursor
        partial = mention_before(before)
        if partial is None:
            return
        typed = before[before.rfind("@") :]
        for path in self.index.candidates(partial):
            text = f'@"{path}"' if " " in path else f"@{path}"
            yield Completion(
                text, start_position=-len(typed), display=path, display_meta="folder" if path.endswith("/") else ""
            )
