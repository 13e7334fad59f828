"""The ``grep`` tool: search file contents with a regular expression.

It runs ``rg`` when it is on PATH and a pure-Python search otherwise; both give exactly
the same text for the same tree, so a model's habits (and a test's expectations) do not
depend on what is installed. Output, one line per line found::

    src/app.py:12: def main():        a matching line:  path:LINE: text
    src/app.py-13-     run()          a context line:   path-LINE- text
    --                                between non-adjacent groups (only when context > 0)

* Paths are relative to the session cwd when the searched path is inside it, else
  absolute. Files come depth first, each directory's entries sorted by name (what
  ``rg --sort path`` prints); lines in file order.
* Which files: those rg would search -- hidden files included, ``.git`` never, files
  ignored by ``.gitignore``/``.ignore``/``.rgignore`` skipped (see ``walk``), symbolic
  links not followed. A ``glob`` has rg's meaning: without a ``/`` it matches file names
  at any depth, with one it matches the path below the searched directory; a file that
  matches it is searched even if a ``.gitignore`` ignores it (rg's rule), but ignored
  directories are still skipped. A path naming a file searches that file, ignored or not.
* Binary files (a NUL byte anywhere, rg's test) are skipped. A UTF-8 BOM is dropped and
  UTF-16 files with a BOM are decoded, as rg does. Bytes that are not UTF-8 show as U+FFFD.
* A line longer than ``limits.grep_line_chars`` characters is cut with a marker and a
  notice; the line ending (``\\n`` or ``\\r\\n``) is never shown.
* At most ``limit`` matching lines (default ``limits.grep_matches``); when more exist the
  output says so with the limit to ask for. The whole output is also capped at
  ``limits.max_lines`` / ``limits.max_bytes``.

Regex dialects differ: rg uses Rust's regex syntax, the fallback Python's ``re``.
Common Rust spellings are translated (``(?<name>...)``, ``\\z``, ``[[:alpha:]]``); an
invalid pattern is reported as ``Invalid regex pattern: <pattern>: <reason>`` by both,
the reason being each engine's own. Patterns never match across lines (``\\n`` is
refused), as with rg without ``--multiline``.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import threading
import warnings
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from heron.agent.tool_meta import ToolMeta, tree_argument
from heron.agent.tools import AgentTool, ToolError, ToolResult, UpdateCallback
from heron.ai.abort import AbortSignal
from heron.coding.tools.details import GrepDetails, truncation_details
from heron.coding.tools.env import ToolEnv, display_path, resolve_path
from heron.coding.tools.external import ExternalProcess, read_records
from heron.coding.tools.globs import GlobError
from heron.coding.tools.ignore import Overrides
from heron.coding.tools.listing import (
    Backend,
    cap_output,
    check_path,
    find_program,
    path_joiner,
    pick_backend,
    printable,
)
from heron.coding.tools.schema_table import builtin_params
from heron.coding.tools.walker import Walker
from heron.context.tool_output.truncate import cut_line

if TYPE_CHECKING:
    from heron.coding.tools.params import GrepParams

NO_MATCHES = "No matches found"

Line = tuple[int, bool, str]  # line number, is a match, text without its line ending
FileHits = tuple[str, list[Line]]  # path relative to the search root, lines in order


# --- the regex of the Python search -------------------------------------------------

_POSIX_CLASSES = {
    "alnum": "0-9A-Za-z",
    "alpha": "A-Za-z",
    "ascii": "\\x00-\\x7F",
    "blank": "\\t ",
    "cntrl": "\\x00-\\x1F\\x7F",
    "digit": "0-9",
    "graph": "!-~",
    "lower": "a-z",
    "print": " -~",
    "punct": "!-/:-@\\[-`{-~",
    "space": "\\t\\n\\v\\f\\r ",
    "upper": "A-Z",
    "word": "0-9A-Za-z_",
    "xdigit": "0-9A-Fa-f",
}

# Constructs whose meaning changes when the search runs over a whole block of text
# instead of one line at a time (see _LineFinder).
_LINE_SENSITIVE = re.compile(r"\\[AZ]|\(\?<?[=!]")


def rust_to_python(pattern: str) -> str:
    """Translate the Rust regex spellings Python's ``re`` lacks; leave the rest alone."""
    out: list[str] = []
    i, n = 0, len(pattern)
    in_class = False
    while i < n:
        c = pattern[i]
        if c == "\\":
            nxt = pattern[i + 1 : i + 2]
            out.append("\\Z" if nxt == "z" else pattern[i : i + 2])
            i += 2
            continue
        if in_class:
            if pattern.startswith("[:", i):
                end = pattern.find(":]", i + 2)
                body = _POSIX_CLASSES.get(pattern[i + 2 : end]) if end > 0 else None
                if body is not None:
                    out.append(body)
                    i = end + 2
                    continue
            if c == "[":
                out.append("\\[")
            else:
                out.append(c)
                in_class = c != "]"
            i += 1
            continue
        if c == "[":
            in_class = True
            out.append(c)
            i += 1
            if pattern[i : i + 1] == "^":
                out.append("^")
                i += 1
            if pattern[i : i + 1] == "]":
                out.append("\\]")
                i += 1
            continue
        if pattern.startswith("(?<", i) and i + 3 < n and (pattern[i + 3].isalpha() or pattern[i + 3] == "_"):
            out.append("(?P<")
            i += 3
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _has_newline_escape(pattern: str) -> bool:
    """``\\n`` written as an escape (not ``\\\\n``, an escaped backslash then ``n``)."""
    i = 0
    while True:
        i = pattern.find("\\", i)
        if i < 0 or i + 1 >= len(pattern):
            return False
        if pattern[i + 1] == "n":
            return True
        i += 2


def compile_python_regex(pattern: str, literal: bool, ignore_case: bool) -> re.Pattern[str]:
    source = re.escape(pattern) if literal else rust_to_python(pattern)
    flags = re.MULTILINE | (re.IGNORECASE if ignore_case else 0)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "possible nested set" and the like
            return re.compile(source, flags)
    except re.error as exc:
        raise ToolError(f"Invalid regex pattern: {pattern}: {exc}") from None
    except (OverflowError, RecursionError) as exc:
        raise ToolError(f"Invalid regex pattern: {pattern}: {exc}") from None


# --- the Python search of one file ----------------------------------------------------

FIRST_READ = 1 << 16
BLOCK_BYTES = 1 << 20


class _Binary(Exception):
    pass


def _strip_cr(text: str) -> str:
    return text[:-1] if text.endswith("\r") else text


class Searcher:
    """Finds the matching lines of one file the way rg does, without holding a large
    file in memory: the file is read in blocks of whole lines.

    Speed comes from searching a whole block with one regex call and only looking at
    the lines where it stops, instead of a Python loop over every line. A match found
    that way is confirmed on its line alone (a pattern like ``a\\s*b`` could otherwise
    match across a line break); patterns whose meaning depends on what lies beyond the
    line (``\\A``, ``\\Z``, lookaround) are run line by line instead.
    """

    def __init__(self, regex: re.Pattern[str], context: int, cancelled: Callable[[], bool] | None = None) -> None:
        self.regex = regex
        self.context = context
        self.cancelled = cancelled
        self.per_line = bool(_LINE_SENSITIVE.search(regex.pattern))

    def search(self, path: str | bytes, max_matches: int) -> tuple[list[Line], int]:
        """Up to ``max_matches`` matching lines (plus context) and how many matched;
        nothing for a binary or unreadable file."""
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            return [], 0
        try:
            # Plain os.read: most files are small, and a buffered 1 MB read would cost a
            # 1 MB allocation per file (measured: a third of a full scan).
            head = os.read(fd, FIRST_READ)
            if head.startswith((b"\xff\xfe", b"\xfe\xff")):
                rest = [head]
                while chunk := os.read(fd, BLOCK_BYTES):
                    rest.append(chunk)
                text = b"".join(rest).decode("utf-16", "replace")
                if "\0" in text:
                    return [], 0
                return self._run(iter([text.encode("utf-8", "surrogatepass")]), max_matches)
            if len(head) < FIRST_READ:  # the whole file
                if b"\0" in head:
                    return [], 0
                if not self.per_line:
                    body = head[3:] if head.startswith(b"\xef\xbb\xbf") else head
                    text = body.decode("utf-8", "surrogateescape")
                    if self.regex.search(text) is None:
                        return [], 0  # no line can match if the whole text does not
                    return self._run(iter([body]), max_matches)
            return self._run(self._blocks(fd, head), max_matches)
        except (OSError, _Binary):
            return [], 0
        finally:
            os.close(fd)

    @staticmethod
    def _blocks(fd: int, head: bytes) -> Iterator[bytes]:
        """Blocks of whole lines; raises :class:`_Binary` at the first NUL byte."""
        if b"\0" in head:
            raise _Binary
        first = head[3:] if head.startswith(b"\xef\xbb\xbf") else head
        if len(head) < FIRST_READ:
            yield first
            return
        buf = bytearray(first)
        while True:
            chunk = os.read(fd, BLOCK_BYTES)
            if not chunk:
                if buf:
                    yield bytes(buf)
                return
            if b"\0" in chunk:
                raise _Binary
            cut = chunk.rfind(b"\n")
            if cut < 0 or len(buf) + cut < BLOCK_BYTES // 2:
                buf += chunk  # one long line, or too little yet: keep reading
                continue
            buf += chunk[: cut + 1]
            yield bytes(buf)
            buf = bytearray(chunk[cut + 1 :])

    def _run(self, blocks: Iterator[bytes], max_matches: int) -> tuple[list[Line], int]:
        out: list[Line] = []
        found_total = 0
        context = self.context
        before: deque[tuple[int, str]] = deque(maxlen=context or 1)  # last lines of earlier blocks
        base = 0  # lines in earlier blocks
        last_emitted = 0
        after_until = 0  # context lines still owed to the previous block's last match
        for raw in blocks:
            if found_total >= max_matches:
                continue  # only the binary check of the rest of the file remains
            if self.cancelled is not None and self.cancelled():
                return [], 0
            text = raw.decode("utf-8", "surrogateescape")
            if not text:
                continue
            nlines = text.count("\n") + (0 if text.endswith("\n") else 1)
            hits = self._find(text, max_matches - found_total)
            found_total += len(hits)
            if context == 0:
                out.extend((base + idx + 1, True, _strip_cr(text[start:end])) for idx, start, end in hits)
                base += nlines
                continue
            if not hits and after_until <= base:
                body = text[:-1] if text.endswith("\n") else text
                tail = body.rsplit("\n", context)[-context:]
                before.extend((base + nlines - len(tail) + k + 1, s) for k, s in enumerate(tail))
                base += nlines
                continue
            lines = text.split("\n")
            if text.endswith("\n"):
                lines.pop()
            match_numbers = [base + idx + 1 for idx, _, _ in hits]
            is_match = set(match_numbers)
            wanted: set[int] = set(range(base + 1, min(after_until, base + nlines) + 1))
            for number in match_numbers:
                wanted.update(range(max(1, number - context), number + context + 1))
            stop = match_numbers[-1] if found_total >= max_matches else None
            earlier = dict(before)
            for number in sorted(wanted):
                if number <= last_emitted or (stop is not None and number > stop):
                    continue
                if number > base + nlines:
                    break
                line = lines[number - base - 1] if number > base else earlier.get(number)
                if line is None:
                    continue
                out.append((number, number in is_match, _strip_cr(line)))
                last_emitted = number
            if match_numbers and stop is None:
                after_until = max(after_until, match_numbers[-1] + context)
            before.extend((base + k + 1, s) for k, s in enumerate(lines[-context:], start=max(0, nlines - context)))
            base += nlines
        return out, found_total

    def _find(self, text: str, want: int) -> list[tuple[int, int, int]]:
        """``(line index, start, end)`` of up to ``want`` matching lines of ``text``."""
        regex = self.regex
        out: list[tuple[int, int, int]] = []
        n = len(text)
        pos = 0
        idx = 0
        if self.per_line:
            while pos < n and len(out) < want:
                end = text.find("\n", pos)
                if end < 0:
                    end = n
                if regex.search(text[pos:end]) is not None:
                    out.append((idx, pos, end))
                pos = end + 1
                idx += 1
            return out
        ends_with_newline = text.endswith("\n")
        while len(out) < want:
            m = regex.search(text, pos)
            if m is None:
                break
            start = m.start()
            if start >= n and (ends_with_newline or n == 0):
                break  # the empty "line" after the final newline is not a line
            line_start = text.rfind("\n", pos, start) + 1 or pos
            line_end = text.find("\n", start)
            if line_end < 0:
                line_end = n
            idx += text.count("\n", pos, line_start)
            if m.end() <= line_end or regex.search(text, line_start, line_end) is not None:
                out.append((idx, line_start, line_end))
            pos = line_end + 1
            idx += 1
            if pos > n:
                break
        return out


# --- output ---------------------------------------------------------------------------


def render(
    hits: list[FileHits], join: Callable[[str], str], limit: int, context: int, line_chars: int
) -> tuple[list[str], int, bool, bool]:
    """Output lines, matches shown, whether more matches exist, whether a line was cut.

    After the ``limit``-th match only its own after-context is kept: lines beyond it
    belong to matches the model does not get to see.
    """
    out: list[str] = []
    shown = 0
    more = False
    cut_any = False
    previous: tuple[str, int] | None = None
    for rel, lines in hits:
        path = join(rel)
        last_kept: int | None = None
        for number, is_match, text in lines:
            if shown >= limit:
                if is_match:
                    more = True
                    break
                if last_kept is None or number > last_kept + context:
                    continue
            elif is_match:
                shown += 1
                last_kept = number
            if context and previous is not None and previous != (path, number - 1):
                out.append("--")
            previous = (path, number)
            text, cut = cut_line(printable(text), line_chars)
            cut_any = cut_any or cut
            out.append(f"{path}:{number}: {text}" if is_match else f"{path}-{number}- {text}")
        if more:
            break
    return out, shown, more, cut_any


def _rg_text(value: dict[str, Any]) -> str:
    if "text" in value:
        return str(value["text"])
    return base64.b64decode(value["bytes"]).decode("utf-8", "replace")


def _rg_path(value: dict[str, Any]) -> str:
    if "text" in value:
        path = str(value["text"])
    else:
        path = base64.b64decode(value["bytes"]).decode("utf-8", "surrogateescape")
    return path[2:] if path.startswith("./") else path


def _rg_error(pattern: str, glob: str | None, stderr: str) -> ToolError:
    lines = [line.strip() for line in stderr.strip().splitlines()]
    if "regex parse error" in stderr or any("not allowed in a regex" in line for line in lines):
        reason = next((ln[len("error: ") :] for ln in lines if ln.startswith("error: ")), None)
        if reason is None:
            reason = next((ln for ln in lines if ln), "invalid pattern")
        return ToolError(f"Invalid regex pattern: {pattern}: {reason}")
    if "error parsing glob" in stderr and glob is not None:
        reason = stderr.split("': ", 1)[-1].strip()
        return ToolError(f"Invalid glob pattern: {glob}: {reason}")
    return ToolError(f"grep failed: {stderr.strip()}")


class GrepTool(AgentTool["GrepParams"]):
    name = "grep"
    label = "Grep"
    meta = ToolMeta(kind="search", paths=tree_argument(listing=False), aliases=("Grep",))
    parameters_ref = builtin_params("grep")

    def __init__(self, env: ToolEnv, backend: Backend = "auto") -> None:
        self.env = env
        self.backend: Backend = backend
        self._rg = find_program("rg")
        limits = env.limits
        self.description = (
            "Search file contents for a regular expression (ripgrep syntax). Returns matching lines as "
            "`path:LINE: text` (context lines as `path-LINE- text`), files in path order. Respects .gitignore, "
            "includes hidden files, skips binary files and .git. "
            f"At most {limits.grep_matches} matches by default (use limit for more); "
            f"lines are cut at {limits.grep_line_chars} characters."
        )

    async def execute(
        self, call_id: str, params: GrepParams, signal: AbortSignal, on_update: UpdateCallback
    ) -> ToolResult:
        limits = self.env.limits
        limit = params.limit or limits.grep_matches
        pattern = params.pattern
        if "\n" in pattern or (not params.literal and _has_newline_escape(pattern)):
            raise ToolError(
                f"Invalid regex pattern: {pattern}: a pattern cannot match a line break; search for one line at a time"
            )
        root = resolve_path(params.path or ".", self.env.cwd)
        shown = display_path(root, self.env.cwd)
        is_dir = check_path(root, shown)
        if not is_dir and not root.is_file():
            raise ToolError(f"{shown} is not a regular file (a device, socket or pipe), so it was not searched.")
        overrides: Overrides | None = None
        if params.glob is not None:
            try:
                overrides = Overrides([params.glob])
            except GlobError as exc:
                raise ToolError(f"Invalid glob pattern: {params.glob}: {exc}") from None
        program = pick_backend(self.backend, self._rg, "grep", "ripgrep (rg)")
        regex = None if program else compile_python_regex(pattern, params.literal, params.ignore_case)

        if program is not None:
            hits = await self._search_rg(program, root, is_dir, params, limit, signal)
        else:
            assert regex is not None
            hits = await self._search_python(regex, root, is_dir, overrides, params.context, limit, signal)
        if signal.aborted:
            raise ToolError("grep was aborted.")

        join = path_joiner(root, self.env.cwd) if is_dir else (lambda _rel: printable(shown))
        lines, count, more, cut_any = render(hits, join, limit, params.context, limits.grep_line_chars)
        details = GrepDetails(
            backend="rg" if program else "python", matches=count, limit_reached=more, lines_cut=cut_any, truncation=None
        )
        if not lines:
            return ToolResult.text(NO_MATCHES, details=details)
        notices: list[str] = []
        if more:
            notices.append(f"[{limit} matches limit reached. Use limit={limit * 2} for more, or refine the pattern.]")
        if cut_any:
            notices.append(
                f"[Some lines were cut at {limits.grep_line_chars} characters. Use read to see them in full.]"
            )
        capped = cap_output("\n".join(lines), notices, limits, "Refine the pattern, or use a smaller limit or context.")
        details["truncation"] = truncation_details(capped.truncation)
        return ToolResult.text(capped.text, details=details)

    async def _search_rg(
        self, program: str, root: Path, is_dir: bool, params: GrepParams, limit: int, signal: AbortSignal
    ) -> list[FileHits]:
        # --no-mmap: with mmap (its choice for a single file) rg misses a NUL past the start
        args = [program, "--json", "--no-config", "--no-messages", "--no-mmap", "--hidden", "--sort", "path"]
        if is_dir:
            if params.glob is not None:
                args += ["--glob", params.glob]
            args += ["--glob", "!.git"]
        if params.ignore_case:
            args.append("--ignore-case")
        if params.literal:
            args.append("--fixed-strings")
        if params.context:
            args += ["--context", str(params.context)]
        args += ["--regexp", params.pattern, "--", "." if is_dir else root.name]
        hits: list[FileHits] = []
        total = 0
        lines: list[Line] = []
        found = 0
        async with ExternalProcess(args, str(root if is_dir else root.parent), signal) as process:
            async for record in read_records(process, b"\n"):
                if not record:
                    continue
                message = json.loads(record)
                kind = message.get("type")
                data = message.get("data", {})
                if kind == "begin":
                    lines, found = [], 0
                elif kind in ("match", "context"):
                    if found > limit - total:
                        continue  # enough from this file; wait for its "end" (binary check)
                    is_match = kind == "match"
                    text = _rg_text(data["lines"])
                    text = _strip_cr(text[:-1] if text.endswith("\n") else text)
                    lines.append((int(data["line_number"]), is_match, text))
                    found += is_match
                elif kind == "end" and data.get("binary_offset") is None and found:
                    hits.append((_rg_path(data["path"]), lines))
                    total += found
                    if total > limit:
                        break
            code, stderr = await process.finish()
        if code == 2 and not hits and not signal.aborted and stderr.strip():
            raise _rg_error(params.pattern, params.glob, stderr)
        return hits

    async def _search_python(
        self,
        regex: re.Pattern[str],
        root: Path,
        is_dir: bool,
        overrides: Overrides | None,
        context: int,
        limit: int,
        signal: AbortSignal,
    ) -> list[FileHits]:
        stop = threading.Event()
        unsubscribe = signal.add_listener(stop.set)
        try:
            return await asyncio.to_thread(search_tree, regex, root, is_dir, overrides, context, limit, stop.is_set)
        finally:
            stop.set()  # also when this task is cancelled: the thread must not keep walking
            unsubscribe()


def search_tree(
    regex: re.Pattern[str],
    root: Path,
    is_dir: bool,
    overrides: Overrides | None,
    context: int,
    limit: int,
    cancelled: Callable[[], bool],
) -> list[FileHits]:
    """The pure-Python search: files in rg's order until one match more than ``limit``."""
    searcher = Searcher(regex, context, cancelled)
    if not is_dir:
        lines, _ = searcher.search(str(root), limit + 1)
        return [(root.name, lines)] if lines else []
    hits: list[FileHits] = []
    total = 0
    walker = Walker(root, tool_ignore_file=".rgignore", overrides=overrides)
    for rel, path in walker.files(cancelled):
        lines, found = searcher.search(path, limit + 1 - total)
        if found:
            hits.append((os.fsdecode(rel), lines))
            total += found
            if total > limit:
                break
    return hits
