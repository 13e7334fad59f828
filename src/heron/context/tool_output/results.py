"""Budgets for tool results: one result, and all results of one assistant message.

A result too large for the budget is not cut and lost: its full text is written to a
spill file first, and the model gets a preview plus the path and how to read the rest
(read with offset/limit, or grep). The preview is the head, or head and tail when the
end of the output is where the answer usually is (a traceback, a test summary, the
closing bracket of a JSON document).

Everything here is a pure function of its inputs except for writing the spill file;
callers record the returned outcomes in the ledger.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from heron.ai.types import ImageContent, TextContent, ToolResultMessage
from heron.context.tool_output.json_preview import structural_preview
from heron.context.tool_output.limits import ToolLimits
from heron.context.tool_output.spill import SPILL_MAX_BYTES, CappedSpill
from heron.session.private_files import private_dir

PreviewKind = Literal["head", "head+tail", "json"]
BudgetReason = Literal["result", "turn"]

HEAD_SHARE = 0.75
# How far back from the end the tail is inspected for signs that it matters.
_TAIL_WINDOW = 1_000
_IMPORTANT_TAIL = re.compile(
    r"(?:error|exception)s?\b"  # also ValueError, NullPointerException
    r"|\b(?:traceback|failed|failures?|fatal|panic(?:ked)?|"
    r"summary|total|passed|succeeded|finished|completed|exit (?:code|status))\b"
    r"|^=+ .* =+$",
    re.IGNORECASE | re.MULTILINE,
)
_ID_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_MAX_ID_CHARS = 96
# Spilling a result only helps when it is clearly longer than the preview plus the notice.
_NOTICE_ALLOWANCE = 500
SPILL_KEY = "budget_spill"  # in a spilled message's details: the outcome, for the UI and the ledger


@dataclass(frozen=True, slots=True)
class BudgetOutcome:
    """What the budget did to one result (``spilled`` False: nothing)."""

    call_id: str
    text: str  # the text the model gets: unchanged, or preview + notice
    spilled: bool
    chars_before: int
    chars_after: int
    spill_path: str | None = None
    reused_existing_file: bool = False  # the result's own full-output file was used
    preview: PreviewKind | None = None
    reason: BudgetReason | None = None

    def to_json(self) -> dict[str, Any]:
        """For the ledger: everything except the text itself."""
        return {
            "call_id": self.call_id,
            "spilled": self.spilled,
            "chars_before": self.chars_before,
            "chars_after": self.chars_after,
            "spill_path": self.spill_path,
            "reused_existing_file": self.reused_existing_file,
            "preview": self.preview,
            "reason": self.reason,
        }


def spill_file_name(call_id: str) -> str:
    """A file name for a call id: provider ids carry ``|``, ``/`` or worse; a cleaned or
    shortened id gets a hash suffix so two ids never share a file."""
    cleaned = _ID_UNSAFE.sub("_", call_id).lstrip(".")
    if not cleaned:
        cleaned = "result"
    if cleaned != call_id or len(cleaned) > _MAX_ID_CHARS:
        digest = hashlib.sha256(call_id.encode("utf-8", "surrogatepass")).hexdigest()[:10]
        cleaned = f"{cleaned[:_MAX_ID_CHARS]}-{digest}"
    return f"{cleaned}.txt"


def tail_is_important(text: str) -> bool:
    """Whether the end of an output deserves a place in the preview."""
    tail = text[-_TAIL_WINDOW:]
    stripped = tail.rstrip()
    if stripped.endswith(("}", "]")):
        return True
    return _IMPORTANT_TAIL.search(tail) is not None


def make_preview(text: str, preview_chars: int) -> tuple[str, PreviewKind, int, int]:
    """Preview text, its kind, and how many characters of head and tail it shows.

    Cuts fall on line boundaries when one is near, so the preview does not start or end
    in the middle of a word.
    """
    if tail_is_important(text):
        head_chars = int(preview_chars * HEAD_SHARE)
        tail_chars = preview_chars - head_chars
        head = _head(text, head_chars)
        tail = _tail(text, tail_chars)
        omitted = len(text) - len(head) - len(tail)
        body = f"{head}\n\n[... {omitted:,} characters omitted ...]\n\n{tail}"
        return body, "head+tail", len(head), len(tail)
    head = _head(text, preview_chars)
    return head, "head", len(head), 0


def _head(text: str, chars: int) -> str:
    cut = text[:chars]
    newline = cut.rfind("\n")
    if newline >= chars * 3 // 4:
        return cut[:newline]
    return cut


def _tail(text: str, chars: int) -> str:
    cut = text[-chars:] if chars > 0 else ""
    newline = cut.find("\n")
    if 0 <= newline <= chars // 4:
        return cut[newline + 1 :]
    return cut


def _line_count(text: str) -> int:
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def spill_notice(text: str, path: str, kind: PreviewKind, head: int, tail: int, omitted_bytes: int = 0) -> str:
    shown = f"the first {head:,} characters" if kind == "head" else f"the first {head:,} and last {tail:,} characters"
    where = f"The full output is in {path}"
    if omitted_bytes:
        where = (
            f"The output is in {path}, capped: {omitted_bytes:,} bytes from its middle were left out "
            "(a marker line there says so)"
        )
    return (
        f"[Output too large for the context: {len(text):,} characters, {_line_count(text):,} lines. "
        f"{where}; shown here: {shown}. "
        f"Use read with offset/limit on that file to see the rest, or grep to search it.]"
    )


def _looks_like_json(text: str) -> bool:
    head = text.lstrip("\ufeff \t\r\n")[:1]
    return head in ("{", "[")


def json_spill_notice(text: str, path: str, omitted_bytes: int = 0) -> str:
    capped = f" (capped: {omitted_bytes:,} bytes from its middle left out)" if omitted_bytes else ""
    return (
        f"[JSON too large for the context: {len(text):,} characters; shown above: its structure (keys, types, "
        f"array lengths, first items). The whole document is in {path}{capped}. Query it with json_query "
        f"(jq syntax, e.g. '.items | length') if that tool is available, or read it with offset/limit.]"
    )


def _write_spill(text: str, call_id: str, spill_dir: Path, max_bytes: int) -> tuple[Path, int]:
    """Write the full text before anything is replaced; reuse an identical earlier copy.

    The file is private (0600 in a 0700 folder) and capped at ``max_bytes`` (head and
    tail kept, see :mod:`heron.context.tool_output.spill`); returns the path and the bytes left out.
    """
    private_dir(spill_dir, narrow=True)
    data = text.encode("utf-8", "surrogatepass")
    name = spill_file_name(call_id)
    path = spill_dir / name
    n = 1
    while path.exists():
        if len(data) <= max_bytes and path.stat().st_size == len(data) and path.read_bytes() == data:
            return path, 0
        n += 1
        path = spill_dir / f"{name[:-4]}-{n}.txt"
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.unlink(missing_ok=True)  # left by a crash
    spill = CappedSpill(tmp, max_bytes)
    try:
        spill.write(data)
        spill.close()
    except BaseException:
        spill.abandon()
        tmp.unlink(missing_ok=True)
        raise
    tmp.replace(path)
    return path, spill.omitted_bytes


def apply_result_budget(
    result_text: str,
    call_id: str,
    limits: ToolLimits,
    spill_dir: Path,
    *,
    existing_path: str | None = None,
    force: bool = False,
    reason: BudgetReason = "result",
    max_spill_bytes: int = SPILL_MAX_BYTES,
) -> BudgetOutcome:
    """Spill ``result_text`` if it is over ``limits.result_chars`` (or ``force``).

    ``existing_path``: a file that already holds the full output (bash writes one); the
    notice points there and no second copy is written.
    """
    before = len(result_text)
    if not force and before <= limits.result_chars:
        return BudgetOutcome(call_id, result_text, False, before, before)
    omitted = 0
    if existing_path is not None and Path(existing_path).is_file():
        path, reused = Path(existing_path), True
    else:
        (path, omitted), reused = _write_spill(result_text, call_id, spill_dir, max_spill_bytes), False
    structure = structural_preview(result_text, limits.preview_chars) if _looks_like_json(result_text) else None
    if structure is not None:  # JSON: its shape says more than its first characters
        text = f"{structure}\n\n{json_spill_notice(result_text, str(path), omitted)}"
        return BudgetOutcome(call_id, text, True, before, len(text), str(path), reused, "json", reason)
    body, kind, head, tail = make_preview(result_text, limits.preview_chars)
    text = f"{body}\n\n{spill_notice(result_text, str(path), kind, head, tail, omitted)}"
    return BudgetOutcome(call_id, text, True, before, len(text), str(path), reused, kind, reason)


def _existing_path(details: Any) -> str | None:
    if isinstance(details, dict):
        value = details.get("full_output_path")
        if isinstance(value, str) and value:
            return value
    return None


def _already_spilled(message: ToolResultMessage) -> bool:
    return isinstance(message.details, dict) and SPILL_KEY in message.details


def _cut_by_its_tool(message: ToolResultMessage, text: str, limits: ToolLimits) -> bool:
    """A result its tool already cut to the output cap (read's first page, bash's tail),
    with its own notice saying how to get the rest. The per-result budget leaves it alone:
    :meth:`ToolLimits.for_window` keeps that cap within the per-result budget, and
    spilling it again would replace a full page by a 2,000-character preview. (The turn
    budget still applies to it.)"""
    details = message.details
    if not isinstance(details, dict):
        return False
    truncation = details.get("truncation")
    if not isinstance(truncation, dict) or not truncation.get("truncated"):
        return False
    return len(text) <= max(limits.max_bytes, limits.result_chars) + _NOTICE_ALLOWANCE


def _spilled_message(message: ToolResultMessage, outcome: BudgetOutcome) -> ToolResultMessage:
    """The message with its text replaced by the preview; images stay as they were."""
    images = [block for block in message.content if isinstance(block, ImageContent)]
    content: list[TextContent | ImageContent] = [TextContent(text=outcome.text), *images]
    details = dict(message.details) if isinstance(message.details, dict) else {}
    if message.details is not None and not isinstance(message.details, dict):
        details["original_details"] = message.details
    details[SPILL_KEY] = outcome.to_json()
    return dataclasses.replace(message, content=content, details=details)


def apply_message_budget(
    message: ToolResultMessage,
    limits: ToolLimits,
    spill_dir: Path,
    *,
    force: bool = False,
    reason: BudgetReason = "result",
    max_spill_bytes: int = SPILL_MAX_BYTES,
) -> tuple[ToolResultMessage, BudgetOutcome]:
    """:func:`apply_result_budget` for one tool-result message (a new message if spilled)."""
    text = message.text()
    if _already_spilled(message) or (not force and _cut_by_its_tool(message, text, limits)):
        return message, BudgetOutcome(message.tool_call_id, text, False, len(text), len(text))
    outcome = apply_result_budget(
        text,
        message.tool_call_id,
        limits,
        spill_dir,
        existing_path=_existing_path(message.details),
        force=force,
        reason=reason,
        max_spill_bytes=max_spill_bytes,
    )
    if not outcome.spilled:
        return message, outcome
    return _spilled_message(message, outcome), outcome


def apply_turn_budget(
    results: list[ToolResultMessage], limits: ToolLimits, spill_dir: Path, max_spill_bytes: int = SPILL_MAX_BYTES
) -> tuple[list[ToolResultMessage], list[BudgetOutcome]]:
    """Both budgets over all tool results of one assistant message.

    First each result on its own; then, while the total text is over
    ``limits.turn_chars``, the largest result not yet spilled is spilled. Returns the new
    list (same order; untouched messages are the same objects) and one outcome per spill.
    """
    out = list(results)
    outcomes: list[BudgetOutcome] = []
    for i, message in enumerate(out):
        out[i], outcome = apply_message_budget(message, limits, spill_dir, max_spill_bytes=max_spill_bytes)
        if outcome.spilled:
            outcomes.append(outcome)
    sizes = [len(message.text()) for message in out]
    while sum(sizes) > limits.turn_chars:
        candidates = [
            i
            for i, message in enumerate(out)
            if not _already_spilled(message) and sizes[i] > limits.preview_chars + _NOTICE_ALLOWANCE
        ]
        if not candidates:
            break
        largest = max(candidates, key=lambda i: sizes[i])
        out[largest], outcome = apply_message_budget(
            out[largest], limits, spill_dir, force=True, reason="turn", max_spill_bytes=max_spill_bytes
        )
        if not outcome.spilled:
            break
        outcomes.append(outcome)
        sizes[largest] = len(out[largest].text())
    return out, outcomes
