"""The ``details`` each tool attaches to its result, one typed shape per tool.

Details travel as plain JSON objects (they are stored in the session file, shown by the
UI and read by the runtime's ledger), so each shape is a ``TypedDict``: the type checker
knows every key and its type, and the value stays an ordinary ``dict`` on the wire.
Keys are snake_case, one spelling each; the runtime relies on ``kind``, ``size``,
``truncation`` (with ``truncated`` and ``total_bytes``) and ``full_output_path``.
"""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict

from heron.context.tool_output.truncate import TruncatedBy, Truncation

BackendUsed = Literal["rg", "fd", "python"]


class TruncationDetails(TypedDict):
    """A :class:`~heron.context.tool_output.truncate.Truncation` without the kept text."""

    truncated: bool
    truncated_by: TruncatedBy | None
    total_lines: int
    total_bytes: int
    output_lines: int
    output_bytes: int
    max_lines: int
    max_bytes: int
    last_line_partial: bool
    first_line_exceeds_limit: bool


def truncation_details(truncation: Truncation | None) -> TruncationDetails | None:
    if truncation is None:
        return None
    return TruncationDetails(
        truncated=truncation.truncated,
        truncated_by=truncation.truncated_by,
        total_lines=truncation.total_lines,
        total_bytes=truncation.total_bytes,
        output_lines=truncation.output_lines,
        output_bytes=truncation.output_bytes,
        max_lines=truncation.max_lines,
        max_bytes=truncation.max_bytes,
        last_line_partial=truncation.last_line_partial,
        first_line_exceeds_limit=truncation.first_line_exceeds_limit,
    )


# --- read ---------------------------------------------------------------------------


class ReadTextDetails(TypedDict):
    path: str
    kind: Literal["text"]
    size: int
    total_lines: int
    start_line: int
    end_line: int
    lines_cut: int
    invalid_utf8: bool
    next_offset: int | None
    truncation: TruncationDetails | None
    mtime_ns: NotRequired[int]  # of the file read: the view's read index keys on it
    remaining_lines: NotRequired[int]  # stopped by the caller's limit
    line_bytes: NotRequired[int]  # the first line alone is over the byte limit
    large_file: NotRequired[bool]


class ReadEmptyDetails(TypedDict):
    path: str
    kind: Literal["empty"]
    size: int
    total_lines: int


class ReadUnchangedDetails(TypedDict):
    """A repeated read of an unchanged range: the runtime's ledger records it as a dedupe."""

    path: str
    kind: Literal["unchanged"]
    size: int
    mtime_ns: int  # of the file when answered: the view checks its earlier read matches
    previous_read_at: float


class ReadImageDetails(TypedDict):
    path: str
    kind: Literal["image"]
    size: int
    mime_type: str
    original_mime_type: str
    width: int
    height: int
    original_width: int
    original_height: int
    resized: bool


ReadDetails = ReadTextDetails | ReadEmptyDetails | ReadUnchangedDetails | ReadImageDetails


# --- bash ---------------------------------------------------------------------------


class BashDetails(TypedDict):
    exit_code: int | None
    truncation: TruncationDetails | None
    full_output_path: str | None
    timed_out: bool
    aborted: bool
    background_killed: NotRequired[bool]
    spill_error: NotRequired[str]
    spill_omitted_bytes: NotRequired[int]  # the full-output file hit its size cap
    sandboxed: NotRequired[bool]  # ran inside the sandbox (docs/permissions.md, "Sandbox")
    escalated: NotRequired[bool]  # ran outside it, as the user approved for this call
    escaped_pids: NotRequired[list[int]]  # output holders killed that had left the process group
    left_running: NotRequired[list[int]]  # output holders still alive after SIGKILL


class BashPartialDetails(TypedDict):
    """What a running command has printed so far (``on_update``)."""

    partial: Literal[True]
    total_lines: int
    total_bytes: int
    full_output_path: str | None


# --- edit and write -------------------------------------------------------------------


class EditDetails(TypedDict):
    diff: str
    first_changed_line: int
    edits: int
    fuzzy_match: bool
    hard_link: NotRequired[bool]  # written in place to keep the file's other names


class WriteDetails(TypedDict):
    path: str
    bytes: int
    created: bool
    hard_link: NotRequired[bool]


# --- grep, find, ls -------------------------------------------------------------------


class GrepDetails(TypedDict):
    backend: BackendUsed
    matches: int
    limit_reached: bool
    lines_cut: bool
    truncation: TruncationDetails | None


class FindDetails(TypedDict):
    backend: BackendUsed
    results: int
    limit_reached: bool
    truncation: TruncationDetails | None


class LsDetails(TypedDict):
    backend: BackendUsed
    entries: int
    ignored: int
    limit_reached: bool
    truncation: TruncationDetails | None
