"""Helpers for the session tests: messages, raw JSONL files, pi's format rules."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from heron.ai.types import (
    AssistantMessage,
    StopReason,
    TextContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from tests.support.fixtures import SHARED, missing_reason

REPO = Path(__file__).resolve().parents[2]

GENERATOR = SHARED / "tools" / "gen_pi_session.py"
PI_SESSIONS = SHARED / "fixtures" / "pi" / "sessions"

ISO_MS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
ENTRY_ID = re.compile(r"^[0-9a-f]{8}$")
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def user(text: str, ts: int = 1_700_000_000_000) -> UserMessage:
    return UserMessage(content=[TextContent(text=text)], timestamp=ts)


def assistant(
    text: str = "ok",
    *,
    provider: str = "faux",
    model: str = "faux-1",
    calls: list[ToolCall] | None = None,
    usage: Usage | None = None,
    stop: StopReason = StopReason.STOP,
) -> AssistantMessage:
    content: list[Any] = [TextContent(text=text), *(calls or [])]
    return AssistantMessage(
        api="faux",
        provider=provider,
        model=model,
        content=content,
        usage=usage or Usage(input=10, output=5),
        stop_reason=stop,
        timestamp=1_700_000_000_001,
    )


def tool_result(call_id: str, text: str, name: str = "read") -> ToolResultMessage:
    return ToolResultMessage(
        tool_call_id=call_id, tool_name=name, content=[TextContent(text=text)], timestamp=1_700_000_000_002
    )


def header(version: int | None = 3, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "session"}
    if version is not None:
        out["version"] = version
    out.update(
        {
            "id": "0193a7b4-1111-7222-8333-444455556666",
            "timestamp": "2026-01-05T09:00:00.000Z",
            "cwd": "/home/dev/project",
        }
    )
    out.update(extra)
    return out


def msg_line(entry_id: str, parent: str | None, message: Any, ts: str = "2026-01-05T09:00:01.000Z") -> dict[str, Any]:
    data = message.to_json_dict() if hasattr(message, "to_json_dict") else message
    return {"type": "message", "id": entry_id, "parentId": parent, "timestamp": ts, "message": data}


def write_jsonl(path: Path, lines: list[Any], *, trailing_newline: bool = True) -> Path:
    """Write dicts as JSON lines; str items are written as they are (for broken lines)."""
    text = "\n".join(item if isinstance(item, str) else json.dumps(item, separators=(",", ":")) for item in lines)
    path.write_text(text + ("\n" if trailing_newline and lines else ""))
    return path


def chain(n: int, start: int = 0) -> list[dict[str, Any]]:
    """``n`` message entries, alternately user / assistant, ids e0000000.., linked in order."""
    out: list[dict[str, Any]] = []
    parent: str | None = None
    for k in range(start, start + n):
        eid = f"e{k:07x}"
        message = user(f"question {k}") if k % 2 == 0 else assistant(f"answer {k}")
        out.append(msg_line(eid, parent, message))
        parent = eid
    return out


def generate_pi_session(path: Path, entries: int, seed: int = 1) -> dict[str, Any]:
    """A session written the way pi 0.73 writes them (the shared generator); the test
    is skipped, naming the generator, when the shared data is absent."""
    reason = missing_reason(GENERATOR)
    if reason is not None:
        pytest.skip(reason)
    done = subprocess.run(
        [sys.executable, str(GENERATOR), "--entries", str(entries), "--out", str(path), "--seed", str(seed)],
        check=True,
        capture_output=True,
        text=True,
    )
    stats: dict[str, Any] = json.loads(done.stdout)
    return stats


PI_ENTRY_FIELDS: dict[str, tuple[set[str], set[str]]] = {
    # type: (required fields besides type/id/parentId/timestamp, optional fields)
    "message": ({"message"}, set()),
    "model_change": ({"provider", "modelId"}, set()),
    "thinking_level_change": ({"thinkingLevel"}, set()),
    "compaction": ({"summary", "firstKeptEntryId", "tokensBefore"}, {"details", "fromHook"}),
    "branch_summary": ({"fromId", "summary"}, {"details", "fromHook"}),
    "custom": ({"customType"}, {"data"}),
    "custom_message": ({"customType", "content", "display"}, {"details"}),
    "label": ({"targetId"}, {"label"}),
    "session_info": (set(), {"name"}),
}


def snake_keys(value: Any, where: str = "") -> list[str]:
    """Keys written in snake_case anywhere in a JSON value (pi's format is camelCase)."""
    found: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if "_" in key:
                found.append(f"{where}.{key}")
            if key not in ("arguments", "details", "data"):  # free-form: the tool's or extension's own
                found.extend(snake_keys(item, f"{where}.{key}"))
    elif isinstance(value, list):
        for n, item in enumerate(value):
            found.extend(snake_keys(item, f"{where}[{n}]"))
    return found


def pi_format_problems(path: Path) -> list[str]:
    """What pi's version-3 session format rules say about a file (empty: accepted)."""
    problems: list[str] = []
    lines = path.read_text().split("\n")
    if lines[-1] != "":
        problems.append("the file does not end with a newline")
    lines = [ln for ln in lines if ln]
    head = json.loads(lines[0])
    if head.get("type") != "session" or head.get("version") != 3:
        problems.append(f"header: {head}")
    if not UUID.match(str(head.get("id"))):
        problems.append(f"header id {head.get('id')!r} is not a uuid")
    if not ISO_MS.match(str(head.get("timestamp"))):
        problems.append(f"header timestamp {head.get('timestamp')!r}")
    if not str(head.get("cwd", "")).startswith("/"):
        problems.append("header cwd is not absolute")
    seen: set[str] = set()
    for n, line in enumerate(lines[1:], start=2):
        entry = json.loads(line)
        keys = list(entry)
        if keys[:4] != ["type", "id", "parentId", "timestamp"]:
            problems.append(f"line {n}: fields start {keys[:4]}")
        if not ENTRY_ID.match(str(entry.get("id"))) or entry["id"] in seen:
            problems.append(f"line {n}: id {entry.get('id')!r}")
        parent = entry.get("parentId")
        if parent is not None and parent not in seen:
            problems.append(f"line {n}: parentId {parent!r} names no earlier entry")
        seen.add(entry["id"])
        if not ISO_MS.match(str(entry.get("timestamp"))):
            problems.append(f"line {n}: timestamp {entry.get('timestamp')!r}")
        spec = PI_ENTRY_FIELDS.get(entry["type"])
        if spec is None:
            problems.append(f"line {n}: unknown type {entry['type']!r}")
            continue
        required, optional = spec
        fields = set(keys) - {"type", "id", "parentId", "timestamp"}
        if not required <= fields or fields - required - optional:
            problems.append(f"line {n}: {entry['type']} fields {sorted(fields)}")
        problems.extend(f"line {n}: snake_case key {k}" for k in snake_keys(entry))
        if entry["type"] == "message":
            message = entry["message"]
            if not isinstance(message.get("timestamp"), int):
                problems.append(f"line {n}: message timestamp must be milliseconds")
    return problems
