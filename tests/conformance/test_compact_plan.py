"""Conformance: ``heron sessions compact-plan`` cuts pi's real sessions where pi's
compaction algorithm (with its repeated-compaction data loss fixed) cuts them.

The expected plan is worked out here a second time, straight from the specification
(docs/context.md, "Compaction", steps 1-5) over the raw JSON lines of the files, without
any of heron's session or compaction code. The two fixtures are pi's version-1 files:
entries have no ids, each entry's parent is the line before it (so the path from the root
to the leaf is simply every entry in file order, and the leaf is the last line), and a
compaction names its first kept entry by ``firstKeptEntryIndex``, a 0-based line number
counted *with* the header line (entry ``i`` of the list without the header is line
``i + 1``).

What the specification gives for the two files (default settings: keep the most recent
20,000 tokens; the reserve does not move the cut):

``large-session.jsonl`` (1,018 entries, no compaction yet)
    The region is the whole path (step 2: no previous compaction). Walking back from the
    last entry and adding the estimated tokens of each ``message`` entry, the running
    total reaches 20,000 at entry 837, an assistant message, which is a valid cut point
    itself. The entry before it (836) is a message, so nothing travels with the cut. The first message at
    the cut is an assistant reply, not a user message: the cut splits a turn. Scanning
    back from 837, the nearest turn start is the user message at 834, so entries 834-836
    (3 messages) are the turn prefix, summarised separately, and entries 0-833 (730
    messages; the 104 ``thinking_level_change`` / ``model_change`` entries among them are
    not messages) are the history summary.

``before-compaction.jsonl`` (1,002 entries, compactions at 358 and 627)
    The latest compaction (entry 627) has ``firstKeptEntryIndex`` 551, i.e. entry 550.
    pi starts the next region after the compaction entry (628) and so silently drops
    entries 550-626, which that compaction had kept; the fixed algorithm starts the region
    at entry 550 (step 2), and the compaction entry at 627 inside it is not a message. The
    walk back reaches 20,000 tokens at entry 945, a ``toolResult`` - never a cut point, as
    a kept result whose call was summarised would be an orphan - so the cut moves forward
    to the next valid cut point, the assistant message at 946 (945 before it is a message:
    nothing travels with the cut); its turn started with the user message at 939: a split
    turn with a prefix of 939-945 (7 messages) and a history of the 383 messages from 550
    up to 938 (the compaction entry at 627 and five ``model_change`` entries at 709-713
    are not messages). A previous summary exists, so the summariser is asked to update it.
"""

from __future__ import annotations

import argparse
import io
import json
import math
from pathlib import Path
from typing import Any

import pytest

from heron.cli import sessions_cmd
from tests.support.fixtures import FIXTURES, needs_shared

SESSIONS = sorted((FIXTURES / "pi" / "sessions").glob("*.jsonl"))
# Without the shared data: one placeholder, so the tests skip with needs_shared's reason
# instead of pytest's "empty parameter set".
SESSION_PARAMS = SESSIONS or [FIXTURES / "pi" / "sessions" / "(missing)"]
KEEP_RECENT_TOKENS = 20_000  # pi's default ``keepRecentTokens``
IMAGE_CHARS = 4_800  # an image in a tool result or custom message counts as 1,200 tokens

# Step 3: message roles that may start the kept part. Never ``toolResult``: a kept tool
# result whose call was summarised would be an orphan every provider rejects.
CUT_ROLES = {"user", "assistant", "bashExecution", "custom", "branchSummary", "compactionSummary"}
# Entry types (other than ``message``) that are cut points, and that start a turn.
CUT_TYPES = {"branch_summary", "custom_message"}
# Step 4: what starts a turn.
TURN_START_ROLES = {"user", "bashExecution"}


# --- reading the file ---------------------------------------------------------------


def read_lines(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The header and the entries (every other line), as plain dicts."""
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return lines[0], lines[1:]


def path_positions(entries: list[dict[str, Any]]) -> list[int]:
    """Positions (in the entry list) of the entries from the root to the leaf.

    Version 1 has no ids: parents are chained in file order, so the path is every entry.
    Later versions: follow ``parentId`` from the last entry (the leaf)."""
    if all("id" not in entry for entry in entries):
        return list(range(len(entries)))
    by_id = {entry["id"]: i for i, entry in enumerate(entries)}
    out = []
    current: int | None = len(entries) - 1
    while current is not None:
        out.append(current)
        parent = entries[current].get("parentId")
        current = by_id.get(parent) if parent is not None else None
    out.reverse()
    return out


def first_kept_position(compaction: dict[str, Any], entries: list[dict[str, Any]]) -> int | None:
    """Where a compaction's kept part starts, as a position in the entry list."""
    if "firstKeptEntryIndex" in compaction:  # version 1: a line number counted with the header
        return int(compaction["firstKeptEntryIndex"]) - 1
    for i, entry in enumerate(entries):
        if entry.get("id") == compaction.get("firstKeptEntryId"):
            return i
    return None


# --- the per-message estimate (step 3) ---------------------------------------------------


def blocks_text(content: Any, image_chars: int) -> int:
    if isinstance(content, str):
        return len(content)
    chars = 0
    for block in content or []:
        if block.get("type") == "text":
            chars += len(block.get("text", ""))
        elif block.get("type") == "image":
            chars += image_chars
    return chars


def message_chars(message: dict[str, Any]) -> int:
    role = message.get("role")
    if role == "user":  # text only: a user's images are not counted
        return blocks_text(message.get("content"), 0)
    if role == "assistant":  # text + thinking + each call's name and compact-JSON arguments
        chars = 0
        for block in message.get("content", []):
            kind = block.get("type")
            if kind == "text":
                chars += len(block.get("text", ""))
            elif kind == "thinking":
                chars += len(block.get("thinking", ""))
            elif kind == "toolCall":
                chars += len(block.get("name", ""))
                chars += len(json.dumps(block.get("arguments", {}), separators=(",", ":"), ensure_ascii=False))
        return chars
    if role in ("toolResult", "custom"):  # text plus 4,800 per image
        return blocks_text(message.get("content"), IMAGE_CHARS)
    if role == "bashExecution":
        if message.get("excludeFromContext"):
            return 0
        return len(message.get("command", "")) + len(message.get("output", ""))
    if role in ("branchSummary", "compactionSummary"):
        return len(message.get("summary", ""))
    return 0


def tokens(message: dict[str, Any]) -> int:
    return math.ceil(message_chars(message) / 4)


# --- the plan ----------------------------------------------------------------------------


def is_cut_point(entry: dict[str, Any]) -> bool:
    if entry["type"] == "message":
        return entry["message"].get("role") in CUT_ROLES
    return entry["type"] in CUT_TYPES


def is_turn_start(entry: dict[str, Any]) -> bool:
    if entry["type"] == "message":
        return entry["message"].get("role") in TURN_START_ROLES
    return entry["type"] in CUT_TYPES


def gives_message(entry: dict[str, Any]) -> bool:
    """Entries that contribute a message to the summariser's transcript."""
    if entry["type"] in ("message", "custom_message"):
        return True
    return entry["type"] == "branch_summary" and bool(entry.get("summary"))


def tool_paths(entries: list[dict[str, Any]]) -> tuple[set[str], set[str]]:
    """Files read, and files written or edited, by the tool calls in ``entries``."""
    read: set[str] = set()
    modified: set[str] = set()
    for entry in entries:
        if entry["type"] != "message" or entry["message"].get("role") != "assistant":
            continue
        for block in entry["message"].get("content", []):
            if block.get("type") != "toolCall":
                continue
            target = (block.get("arguments") or {}).get("path")
            if not isinstance(target, str) or not target:
                continue
            if block["name"] == "read":
                read.add(target)
            elif block["name"] in ("write", "edit"):
                modified.add(target)
    return read, modified


def context_tokens(path: list[dict[str, Any]], entries: list[dict[str, Any]], positions: list[int]) -> int:
    """tokens_before: the leaf's context (summary, kept entries, what follows), measured as
    the usage of the last successful assistant reply newer than the latest compaction plus
    ceil(chars/4) of every message after it."""
    latest = max((i for i, e in enumerate(path) if e["type"] == "compaction"), default=None)
    context: list[dict[str, Any]] = []
    kept_from = 0
    floor = None
    if latest is not None:
        compaction = path[latest]
        context.append({"role": "compactionSummary", "summary": compaction["summary"]})
        kept_at = first_kept_position(compaction, entries)
        kept_from = positions.index(kept_at) if kept_at in positions else latest + 1
        from datetime import datetime

        floor = int(datetime.fromisoformat(compaction["timestamp"].replace("Z", "+00:00")).timestamp() * 1000)
    for i, entry in enumerate(path):
        if i < kept_from or i == latest:
            continue
        if entry["type"] == "message":
            context.append(entry["message"])
        elif entry["type"] == "custom_message":
            context.append({"role": "custom", "content": entry.get("content")})
        elif entry["type"] == "branch_summary" and entry.get("summary"):
            context.append({"role": "branchSummary", "summary": entry["summary"]})
    for i in range(len(context) - 1, -1, -1):
        message = context[i]
        if message.get("role") != "assistant" or message.get("stopReason") in ("error", "aborted"):
            continue
        usage = message.get("usage") or {}
        reported = sum(int(usage.get(k) or 0) for k in ("input", "output", "cacheRead", "cacheWrite"))
        if reported <= 0:
            continue
        if floor is not None and int(message.get("timestamp") or 0) <= floor:
            break  # from before the compaction: it measured the old context
        return reported + sum(tokens(m) for m in context[i + 1 :])
    return sum(tokens(m) for m in context)


def expected_plan(path_file: Path, keep_recent: int = KEEP_RECENT_TOKENS) -> dict[str, Any]:
    _, entries = read_lines(path_file)
    positions = path_positions(entries)
    path = [entries[i] for i in positions]

    # Step 1: a leaf that is a compaction has nothing left to compact.
    assert path and path[-1]["type"] != "compaction"

    # Step 2: the region starts at the previous compaction's first kept entry - not after
    # the compaction entry, which would lose what that compaction kept.
    previous = max((i for i, e in enumerate(path) if e["type"] == "compaction"), default=None)
    region_start = 0
    if previous is not None:
        kept_at = first_kept_position(path[previous], entries)
        region_start = positions.index(kept_at) if kept_at in positions[:previous] else previous + 1

    # Step 3: walk back from the newest entry, adding message entries only, until the
    # total reaches the keep-recent budget...
    total = 0
    reached = None
    for i in range(len(path) - 1, region_start - 1, -1):
        if path[i]["type"] == "message":
            total += tokens(path[i]["message"])
            if total >= keep_recent:
                reached = i
                break
    assert reached is not None, "the fixtures are all larger than the budget"
    # ...the cut goes to the first valid cut point at or after that position...
    cut = next(i for i in range(reached, len(path)) if is_cut_point(path[i]))
    # ...and moves back over entries that are neither messages nor compactions (settings
    # and labels travel with the message they precede).
    while cut > region_start and path[cut - 1]["type"] not in ("message", "compaction"):
        cut -= 1

    # Step 4: judge the cut by the first message entry at or after it; a cut before an
    # assistant reply or a tool result splits a turn, whose start is the nearest user or
    # bashExecution message (or branch_summary / custom_message entry) at or before the cut.
    judge = next((path[i] for i in range(cut, len(path)) if path[i]["type"] == "message"), None)
    turn_start = -1
    if judge is not None and judge["message"].get("role") != "user":
        turn_start = next((i for i in range(cut, region_start - 1, -1) if is_turn_start(path[i])), -1)
    split = turn_start != -1 and turn_start < cut  # a turn starting exactly at the cut is not split
    history_end = turn_start if split else cut
    history = [e for e in path[region_start:history_end] if gives_message(e)]
    prefix = [e for e in path[turn_start:cut] if gives_message(e)] if split else []

    # Step 5: file lists from the read/write/edit calls of everything summarised, plus the
    # previous compaction's lists (v1 compactions have none); modified wins over read.
    read, modified = tool_paths(history + prefix)
    details = path[previous].get("details") if previous is not None else None
    if isinstance(details, dict):
        read |= set(details.get("readFiles", []))
        modified |= set(details.get("modifiedFiles", []))

    return {
        "first_kept_index": positions[cut],
        "turn_start_index": positions[turn_start] if split else -1,
        "split_turn": split,
        "region_start_index": positions[region_start],
        "messages_to_summarize": len(history),
        "turn_prefix_messages": len(prefix),
        "read_files": sorted(read - modified),
        "modified_files": sorted(modified),
        "previous_summary": previous is not None,
        "tokens_before": context_tokens(path, entries, positions),
        "reached": positions[reached],
    }


# --- the command ------------------------------------------------------------------------


def command_json(*argv: str) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="heron")
    sessions_cmd.add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["sessions", "compact-plan", *argv, "--json"])
    out, err = io.StringIO(), io.StringIO()
    assert sessions_cmd.run(args, out, err) == 0, err.getvalue()
    data: dict[str, Any] = json.loads(out.getvalue())
    return data


@needs_shared(FIXTURES / "pi" / "sessions")
@pytest.mark.parametrize("session", SESSION_PARAMS, ids=lambda p: p.name)
def test_compact_plan_matches_the_specification(session: Path) -> None:
    expected = expected_plan(session)
    got = command_json(str(session))
    assert got["compact"] is True
    for key in (
        "first_kept_index",
        "turn_start_index",
        "split_turn",
        "region_start_index",
        "messages_to_summarize",
        "turn_prefix_messages",
        "previous_summary",
        "tokens_before",
    ):
        assert got[key] == expected[key], key
    # pi sorts its file lists; heron keeps them in the order the files were first touched
    assert sorted(got["read_files"]) == expected["read_files"]
    assert sorted(got["modified_files"]) == expected["modified_files"]
    assert not set(got["read_files"]) & set(got["modified_files"])


@needs_shared(FIXTURES / "pi" / "sessions")
def test_the_cut_points_explained_in_the_docstring() -> None:
    """The numbers the module docstring walks through."""
    large = expected_plan(FIXTURES / "pi" / "sessions" / "large-session.jsonl")
    assert (large["reached"], large["first_kept_index"], large["turn_start_index"]) == (837, 837, 834)
    assert (large["messages_to_summarize"], large["turn_prefix_messages"], large["region_start_index"]) == (730, 3, 0)
    compacted = expected_plan(FIXTURES / "pi" / "sessions" / "before-compaction.jsonl")
    assert compacted["region_start_index"] == 550  # not 628: the fix for pi's data loss
    assert (compacted["reached"], compacted["first_kept_index"], compacted["turn_start_index"]) == (945, 946, 939)
    assert (compacted["messages_to_summarize"], compacted["turn_prefix_messages"]) == (383, 7)
    assert compacted["previous_summary"] is True


@needs_shared(FIXTURES / "pi" / "sessions")
@pytest.mark.parametrize("keep", [2_000, 8_000, 50_000, 120_000])
@pytest.mark.parametrize("session", SESSION_PARAMS, ids=lambda p: p.name)
def test_other_budgets_match_too(session: Path, keep: int) -> None:
    expected = expected_plan(session, keep)
    got = command_json(str(session), "--keep-recent-tokens", str(keep))
    for key in ("first_kept_index", "turn_start_index", "split_turn", "messages_to_summarize", "turn_prefix_messages"):
        assert got[key] == expected[key], (keep, key)
