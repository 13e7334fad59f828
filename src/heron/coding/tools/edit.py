"""``edit``: replace a unique piece of a file and leave every other byte as it was.

Models copy ``old_text`` out of their context, where it may have lost trailing blanks or
picked up typographic quotes, dashes and non-breaking spaces. A loose match rescues those
edits, but only the *finding* is loose: the matched span is located in a normalised view
of the file, mapped back to offsets in the real text, and only that span is replaced. The
rest of the file (its other smart quotes, trailing blanks, CRLF endings, BOM) is never
rewritten, so an edit's diff shows the change the model asked for and nothing else.
"""

from __future__ import annotations

import asyncio
import difflib
import os
import re
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import accumulate, islice, pairwise
from pathlib import Path
from typing import TYPE_CHECKING

from heron.agent.tool_meta import ToolMeta, path_argument
from heron.agent.tools import AgentTool, ToolError, ToolResult, UpdateCallback
from heron.ai.abort import AbortSignal
from heron.coding.tools.details import EditDetails
from heron.coding.tools.env import ToolEnv, display_path, resolve_path
from heron.coding.tools.files import client_written, is_read_only, os_error, replace_file, stat_regular_file
from heron.coding.tools.read_source import is_content_stamp, unchanged_since_read
from heron.coding.tools.schema_table import builtin_params

if TYPE_CHECKING:
    from heron.coding.tools.params import EditParams

_BOM = "\ufeff"

# Loose matching maps each of these to its ASCII look-alike, one character for one, so
# offsets inside a line stay aligned with the original.
_LOOSE_CHARS: dict[str, str] = {
    **dict.fromkeys("\u2018\u2019\u201a\u201b", "'"),
    **dict.fromkeys("\u201c\u201d\u201e\u201f", '"'),
    **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212", "-"),
    **dict.fromkeys("\u00a0\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000", " "),
}
_BLANKS = " \t\f\v"

# Beyond this many occurrences the count stops (an ambiguity error needs no exact total).
_MAX_COUNTED = 1000
_LINES_LISTED = 10
_HINT_CUTOFF = 0.6
_HINT_LINE_CHARS = 200
_HINT_SCAN_LINES = 20_000
_DIFF_CONTEXT = 3


@dataclass(slots=True)
class _Span:
    """Where one edit lands in the original text, and what goes there."""

    index: int
    start: int
    end: int
    replacement: str
    loose: bool


class _View:
    """The file body as matching sees it, with a way back to original offsets.

    Both views keep the file's line count: the exact view only turns CRLF into LF (models
    write ``\\n``), the loose view additionally maps look-alike characters one for one and
    drops blanks at line ends. So line ``j`` of a view is line ``j`` of the file, and within
    a line the kept characters are a prefix of the original line; that is all the mapping
    needs. Line tables are built only when a match must be mapped back.
    """

    def __init__(self, body: str, loose: bool) -> None:
        self.body = body
        text = body.replace("\r\n", "\n") if "\r\n" in body else body
        if loose:
            text = _loosen(text)
        self.text = text
        self.identity = text is body
        self._lines: list[str] | None = None
        self._ends: list[int] | None = None  # cumulative line lengths, newlines not counted

    def _line_start(self, line: int) -> tuple[int, str]:
        """Original offset of line ``line`` and its text (CR included for a CRLF line)."""
        if self._lines is None or self._ends is None:
            self._lines = self.body.split("\n")
            self._ends = list(accumulate(map(len, self._lines)))
        return (self._ends[line - 1] + line if line else 0), self._lines[line]

    def _char(self, pos: int) -> tuple[int, int]:
        """Original offset and length of the view character at ``pos`` (a CRLF is two)."""
        line = self.text.count("\n", 0, pos)
        start, original = self._line_start(line)
        if self.text[pos] != "\n":
            return start + pos - (self.text.rfind("\n", 0, pos) + 1), 1
        if original.endswith("\r"):
            return start + len(original) - 1, 2
        return start + len(original), 1

    def to_original(self, start: int, end: int) -> tuple[int, int]:
        """Original span of view ``[start, end)``: first character to last, never the
        blanks dropped just outside it."""
        if self.identity:
            return start, end
        first, _ = self._char(start)
        last, width = self._char(end - 1)
        return first, last + width

    def line_of(self, pos: int) -> int:
        return self.text.count("\n", 0, pos) + 1


def _normalise_old(old_text: str, loose: bool) -> str:
    text = old_text.replace("\r\n", "\n")
    return _loosen(text) if loose else text


def _loosen(text: str) -> str:
    """Look-alikes flattened and line-end blanks dropped.

    Written with ``str.replace`` per character actually present and a split/rstrip/join:
    on a 13 MB file that takes 0.5 s where ``str.translate`` with a mapping and a
    multiline regex took 4 s.
    """
    for char in [c for c in _LOOSE_CHARS if c in text]:
        text = text.replace(char, _LOOSE_CHARS[char])
    return "\n".join([line.rstrip(_BLANKS) for line in text.split("\n")])


def _occurrences(haystack: str, needle: str) -> list[int]:
    """Start offsets, overlapping ones included (``aa`` occurs twice in ``aaa``: ambiguous)."""
    found: list[int] = []
    pos = haystack.find(needle)
    while pos != -1 and len(found) <= _MAX_COUNTED:
        found.append(pos)
        pos = haystack.find(needle, pos + 1)
    return found


def _line_list(lines: list[int]) -> str:
    distinct = list(dict.fromkeys(lines))
    shown = ", ".join(str(n) for n in distinct[:_LINES_LISTED])
    if len(distinct) > _LINES_LISTED:
        shown += ", …"
    return f"line {shown}" if len(distinct) == 1 else f"lines {shown}"


def _line_range(first: int, last: int) -> str:
    return f"line {first}" if first == last else f"lines {first}-{last}"


def _count_text(found: list[int]) -> str:
    return f"more than {_MAX_COUNTED}" if len(found) > _MAX_COUNTED else str(len(found))


class EditTool(AgentTool["EditParams"]):
    name = "edit"
    label = "Edit"
    meta = ToolMeta(kind="edit", paths=path_argument(access="write"), aliases=("MultiEdit",))
    description = (
        "Replace exact text in a file. old_text must match one unique part of the file, whitespace and "
        "indentation included; add surrounding lines to make it unique. For several changes to one file pass "
        "edits: [{old_text, new_text}, ...], each matched against the file before the call, all applied or none. "
        "Line endings and BOM are kept."
    )
    parameters_ref = builtin_params("edit")

    def __init__(self, env: ToolEnv) -> None:
        self.env = env

    def concurrency_key(self, params: EditParams) -> str | None:
        return str(resolve_path(params.path, self.env.cwd))

    async def execute(
        self, call_id: str, params: EditParams, signal: AbortSignal, on_update: UpdateCallback
    ) -> ToolResult:
        pairs, multi = _requested_edits(params)
        path = resolve_path(params.path, self.env.cwd)
        shown = display_path(path, self.env.cwd)
        if signal.aborted:
            raise ToolError(f"Edit aborted; {shown} was not changed.")

        last = self.env.reads.last_read(path)
        files = self.env.client_files
        held = await files.read_text(path) if files is not None else None
        plan = await asyncio.to_thread(
            _plan,
            path,
            shown,
            pairs,
            multi,
            last.mtime_ns if last else None,
            last.size if last else None,
            None if held is None else held.encode("utf-8"),
        )
        if signal.aborted:
            raise ToolError(f"Edit aborted; {shown} was not changed.")
        if files is not None:
            await files.write_text(path, plan.data.decode("utf-8"))
            written = client_written(plan.data, created=False)
        else:
            written = await asyncio.to_thread(replace_file, path, shown, plan.data, plan.info)
        self.env.reads.note_write(path, written.mtime_ns, written.size)

        count = len(pairs)
        text = (
            f"Successfully applied {count} edits to {shown}."
            if count > 1
            else f"Successfully replaced text in {shown}."
        )
        details = EditDetails(
            diff=plan.diff, first_changed_line=plan.first_changed_line, edits=count, fuzzy_match=plan.loose
        )
        if written.in_place:
            details["hard_link"] = True
            text += " (Written in place: the file has other hard links, which see the change too.)"
        return ToolResult.text(text, details=details)


def _requested_edits(params: EditParams) -> tuple[list[tuple[str, str]], bool]:
    """The (old, new) pairs asked for, after the checks that need no file."""
    single = params.old_text is not None or params.new_text is not None
    if single and params.edits is not None:
        raise ToolError("Give either old_text and new_text, or edits, not both.")
    if params.edits is not None:
        if not params.edits:
            raise ToolError("edits is empty: give at least one {old_text, new_text} pair.")
        pairs = [(e.old_text, e.new_text) for e in params.edits]
        multi = True
    elif single:
        if params.old_text is None:
            raise ToolError("old_text is missing: give the exact text to replace together with new_text.")
        if params.new_text is None:
            raise ToolError("new_text is missing: give the replacement together with old_text.")
        pairs = [(params.old_text, params.new_text)]
        multi = False
    else:
        raise ToolError("Give old_text and new_text (one replacement), or edits (a list of replacements).")

    problems: list[str] = []
    for index, (old, new) in enumerate(pairs):
        prefix = f"edits[{index}]: " if multi else ""
        if old == "":
            problems.append(
                f"{prefix}old_text is empty. Give the exact text to replace; use write to create "
                "or overwrite a whole file."
            )
        elif old.replace("\r\n", "\n") == new.replace("\r\n", "\n"):
            problems.append(f"{prefix}old_text and new_text are identical, so the edit changes nothing.")
    if problems:
        raise ToolError(_failure(problems, multi))
    return pairs, multi


def _failure(problems: list[str], multi: bool) -> str:
    text = "\n\n".join(problems)
    if multi:
        text += "\n\nNo edits were applied; fix the failing edits and send them all again."
    return text


@dataclass(slots=True)
class _Plan:
    """An edit worked out before anything is written: the new bytes, the diff shown to the
    model, and the stat of the file as matched, which the write keeps the file's mode from."""

    data: bytes
    info: os.stat_result  # the file as it was when matched
    diff: str
    first_changed_line: int
    loose: bool


def _plan(
    path: Path,
    shown: str,
    pairs: list[tuple[str, str]],
    multi: bool,
    read_mtime_ns: int | None,
    read_size: int | None,
    held: bytes | None = None,
) -> _Plan:
    """Everything up to the write: checks, matching, the new bytes and the diff. ``held``:
    the content a client holds (``ToolEnv.client_files``), matched instead of the file's."""
    info = stat_regular_file(path, shown, "edited", "Give the path of one file to edit.")
    if (
        read_mtime_ns is not None
        and not is_content_stamp(read_mtime_ns)
        and (info.st_mtime_ns != read_mtime_ns or info.st_size != read_size)
    ):
        raise ToolError(
            f"{shown} has changed on disk since you last read it. Read it again, then redo the edit "
            "against its current content."
        )
    if is_read_only(info):
        raise ToolError(
            f"{shown} is read-only (mode {stat.S_IMODE(info.st_mode):04o}), so it was not changed. "
            "If it should change, make it writable first (e.g. chmod u+w with bash)."
        )
    try:
        raw = path.read_bytes() if held is None else held
    except OSError as exc:
        raise os_error(exc, path, shown) from None
    stamped = read_mtime_ns is not None and is_content_stamp(read_mtime_ns)
    if stamped and not unchanged_since_read(read_mtime_ns or 0, read_size, info, raw):
        raise ToolError(  # the model read a client's copy: compared by content
            f"{shown} has changed since you last read it. Read it again, then redo the edit "
            "against its current content."
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ToolError(
            f"{shown} is not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start}), so edit will not "
            "change it: rewriting it as text would corrupt it. Use bash to change it with a tool that keeps its "
            "encoding."
        ) from None

    bom = text.startswith(_BOM)
    body = text[1:] if bom else text
    spans = _locate(body, pairs, multi, shown)
    _check_overlaps(spans, body, shown, multi)
    pieces: list[str] = []
    cursor = 0
    for span in spans:
        pieces.append(body[cursor : span.start])
        pieces.append(span.replacement)
        cursor = span.end
    pieces.append(body[cursor:])
    new_body = "".join(pieces)
    if new_body == body:
        raise ToolError(f"The edit leaves {shown} unchanged: the text it matched already reads as new_text.")

    diff, first_line = _diff(body, new_body, spans, shown)
    data = ((_BOM if bom else "") + new_body).encode("utf-8")
    return _Plan(data, info, diff, first_line, any(s.loose for s in spans))


def _locate(body: str, pairs: list[tuple[str, str]], multi: bool, shown: str) -> list[_Span]:
    """Where each edit lands (exact match first, else the loose one), sorted by position;
    every edit that cannot be placed is reported, all in one error."""
    exact = _View(body, loose=False)
    loose_view: _View | None = None
    spans: list[_Span] = []
    problems: list[str] = []
    for index, (old, new) in enumerate(pairs):
        prefix = f"edits[{index}]: " if multi else ""
        needle = _normalise_old(old, loose=False)
        found = _occurrences(exact.text, needle)
        view = exact
        if not found:
            if loose_view is None:
                loose_view = _View(body, loose=True)
            loose_needle = _normalise_old(old, loose=True)
            found = _occurrences(loose_view.text, loose_needle) if loose_needle else []
            view, needle = loose_view, loose_needle
            if not found:
                problems.append(prefix + _not_found(shown, old, exact, loose_view))
                continue
            if len(found) > 1:
                problems.append(
                    f"{prefix}No exact match for the text in {shown}, and {_count_text(found)} near matches "
                    f"({_line_list([view.line_of(p) for p in found])}) that differ only in trailing whitespace, "
                    "quotes, dashes or spaces. The text must be unique; add more surrounding context."
                )
                continue
        elif len(found) > 1:
            problems.append(
                f"{prefix}Found {_count_text(found)} occurrences of the text in {shown} "
                f"({_line_list([view.line_of(p) for p in found])}). The text must be unique; "
                "add more surrounding context."
            )
            continue
        start, end = view.to_original(found[0], found[0] + len(needle))
        spans.append(_Span(index, start, end, _with_endings(new, body, start, end), view is not exact))
    if problems:
        raise ToolError(_failure(problems, multi))
    spans.sort(key=lambda s: (s.start, s.end))
    return spans


def _check_overlaps(spans: list[_Span], body: str, shown: str, multi: bool) -> None:
    for before, after in pairwise(spans):
        if after.start < before.end:
            first, second = sorted((before, after), key=lambda s: s.index)
            raise ToolError(
                _failure(
                    [
                        f"edits[{first.index}] ({_span_lines(body, first)}) and edits[{second.index}] "
                        f"({_span_lines(body, second)}) overlap in {shown}. Each edit must change a separate part of "
                        "the file; merge overlapping edits into one."
                    ],
                    multi,
                )
            )


def _with_endings(new_text: str, body: str, start: int, end: int) -> str:
    """``new_text`` with the line endings of the text it replaces (models write ``\\n``).

    The replaced span decides when it contains a line break; otherwise the file's most
    common ending does. A mixed file thus keeps each region's own style.
    """
    text = new_text.replace("\r\n", "\n")
    if "\n" not in text:
        return text
    replaced = body[start:end]
    newline = replaced.find("\n")
    if newline != -1:
        crlf = newline > 0 and replaced[newline - 1] == "\r"
    else:
        crlf_count = body.count("\r\n")
        crlf = crlf_count * 2 > body.count("\n")
    return text.replace("\n", "\r\n") if crlf else text


def _span_lines(body: str, span: _Span) -> str:
    first = body.count("\n", 0, span.start) + 1
    last = first + body.count("\n", span.start, max(span.start, span.end - 1))
    return _line_range(first, last)


def _not_found(shown: str, old_text: str, exact: _View, loose: _View) -> str:
    """The error for an ``old_text`` that is nowhere in the file, with a pointer to the
    line the model probably meant: the first line of ``old_text`` that the file lacks,
    and the file line most like it."""
    message = (
        f"Could not find the text in {shown}. old_text must match the file exactly, including whitespace "
        "and indentation."
    )
    wanted = _normalise_old(old_text, loose=True).split("\n")
    file_lines = loose.text.split("\n")
    present = set(file_lines)
    missing: str | None = None
    for position, line in enumerate(wanted):
        if not line.strip():
            continue
        # The first and last lines of old_text may be parts of a line.
        partial = position in (0, len(wanted) - 1)
        if (line not in loose.text) if partial else (line not in present):
            missing = line
            break
    if missing is None:
        if not any(line.strip() for line in wanted):
            return message
        return message + f"\nEvery line of old_text occurs in {shown}, but not as one consecutive block."
    closest = _closest_line(missing, loose.text, file_lines)
    if closest is None:
        return message
    original = exact.text.split("\n")[closest].rstrip()
    if len(original) > _HINT_LINE_CHARS:
        original = original[:_HINT_LINE_CHARS] + "…"
    return message + f"\nThe most similar line is line {closest + 1}:\n{original}"


def _lines_with(text: str, words: list[str]) -> Iterator[int]:
    """Indices of the lines of ``text`` that contain any of ``words``, in order."""
    pattern = re.compile("|".join(re.escape(word) for word in words))
    line, cursor, last = 0, 0, -1
    for match in pattern.finditer(text):
        line += text.count("\n", cursor, match.start())
        cursor = match.start()
        if line != last:
            yield line
            last = line


def _closest_line(target: str, text: str, lines: list[str]) -> int | None:
    """Index of the line most like ``target`` (difflib ratio of at least 0.6), if any.

    In a long file only lines sharing a word with ``target`` are compared, and at most
    ``_HINT_SCAN_LINES`` of them: the hint is a courtesy and must not take seconds.
    """
    wanted = target.strip()
    indices: Iterable[int] = range(len(lines))
    if len(lines) > _HINT_SCAN_LINES:
        words = sorted(set(re.findall(r"\w{3,}", wanted)), key=len, reverse=True)
        indices = islice(_lines_with(text, words) if words else indices, _HINT_SCAN_LINES)
    matcher = difflib.SequenceMatcher(autojunk=False)
    matcher.set_seq2(wanted)
    best_ratio = _HINT_CUTOFF
    best: int | None = None
    for index in indices:
        candidate = lines[index].strip()
        if not candidate:
            continue
        matcher.set_seq1(candidate)
        if matcher.real_quick_ratio() < best_ratio or matcher.quick_ratio() < best_ratio:
            continue
        ratio = matcher.ratio()
        if ratio > best_ratio or (best is None and ratio >= best_ratio):
            best_ratio, best = ratio, index
    return best


_HUNK = re.compile(r"^@@ -(\d+)((?:,\d+)?) \+(\d+)((?:,\d+)?) @@")


def _diff(old: str, new: str, spans: list[_Span], shown: str) -> tuple[str, int]:
    """Unified diff (3 lines of context) and the first changed line of the new file.

    Only the lines around the edits are handed to difflib, so editing a huge file costs
    what the change costs; hunk headers are shifted back to whole-file line numbers.
    """
    start = spans[0].start
    end_old = spans[-1].end
    delta = len(new) - len(old)
    region_start = old.rfind("\n", 0, start) + 1
    if end_old > 0 and old[end_old - 1] == "\n":
        region_end = end_old
    else:
        newline = old.find("\n", end_old)
        region_end = len(old) if newline == -1 else newline + 1
    for _ in range(_DIFF_CONTEXT):
        if region_start == 0:
            break
        region_start = old.rfind("\n", 0, region_start - 1) + 1
    for _ in range(_DIFF_CONTEXT):
        if region_end >= len(old):
            break
        newline = old.find("\n", region_end)
        region_end = len(old) if newline == -1 else newline + 1
    offset = old.count("\n", 0, region_start)

    old_lines = _split_lines(old[region_start:region_end])
    new_lines = _split_lines(new[region_start : region_end + delta])
    label = shown.lstrip("/")
    out: list[str] = []
    first_changed: int | None = None
    new_line = 0
    in_hunks = False
    for line in difflib.unified_diff(old_lines, new_lines, f"a/{label}", f"b/{label}", n=_DIFF_CONTEXT):
        hunk = _HUNK.match(line)
        if hunk:
            in_hunks = True
            old_at, new_at = int(hunk[1]) + offset, int(hunk[3]) + offset
            line = f"@@ -{old_at}{hunk[2]} +{new_at}{hunk[4]} @@\n"
            new_line = new_at if hunk[4] != ",0" else new_at + 1
        elif in_hunks:
            if line[0] == " ":
                new_line += 1
            else:
                if first_changed is None:
                    first_changed = new_line
                if line[0] == "+":
                    new_line += 1
        if not line.endswith("\n"):
            line += "\n\\ No newline at end of file\n"
        out.append(line)
    if first_changed is None:
        first_changed = new.count("\n", 0, start) + 1
    total_lines = new.count("\n") + (0 if new.endswith("\n") else 1)
    return "".join(out), max(1, min(first_changed, total_lines))


def _split_lines(text: str) -> list[str]:
    """Lines with their ``\\n``, split on ``\\n`` only (``str.splitlines`` also splits on form
    feeds and U+2028, which would shift every later line number); CRLF shown as LF."""
    parts = text.replace("\r\n", "\n").split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines
