"""The pure parts of the ACP server: the tool-call description (kind, title, locations,
diffs), the permission options and answers, prompt blocks, and the line guard."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from acp.schema import (
    AllowedOutcome,
    DeniedOutcome,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    RequestPermissionResponse,
    ResourceContentBlock,
    TextContentBlock,
    TextResourceContents,
)

from heron.cli.acp import guard, permissions, toolcalls
from heron.cli.acp.prompting import PromptError, prompt_content
from heron.coding.control import PermissionPrompt
from heron.coding.permissions import Decision
from tests.support.tools import BUILTIN

CWD = Path("/work/project")


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("read", "read"),
        ("edit", "edit"),
        ("write", "edit"),
        ("bash", "execute"),
        ("grep", "search"),
        ("find", "search"),
        ("search_history", "search"),
        ("todo", "other"),
        ("mcp__x__y", "other"),
        ("task", "other"),
    ],
)
def test_kinds(name: str, kind: str) -> None:
    assert toolcalls.tool_kind(BUILTIN.meta(name)) == kind


def test_titles_and_locations() -> None:
    def title(name: str, args: dict[str, Any]) -> str:
        return toolcalls.title(name, BUILTIN.meta(name), args, CWD)

    assert title("read", {"path": "src/a.py", "offset": 10, "limit": 5}) == "Read src/a.py (10-14)"
    assert title("read", {"path": "/elsewhere/b.py"}) == "Read /elsewhere/b.py"
    assert title("bash", {"command": "make test\nmake lint"}) == "`make test`"
    assert title("grep", {"pattern": "TODO", "path": "src"}) == "grep TODO in src"
    assert title("ls", {"path": "src"}) == "List src"
    assert title("mcp__x__y", {}) == "mcp__x__y"
    [where] = toolcalls.locations(BUILTIN.meta("read"), {"path": "@src/a.py", "offset": 10}, CWD)
    assert (where.path, where.line) == ("/work/project/src/a.py", 10)
    assert toolcalls.locations(BUILTIN.meta("bash"), {"command": "ls"}, CWD) == []
    assert toolcalls.locations(BUILTIN.meta("read"), {"path": 5}, CWD) == []


def test_diffs_for_edits_and_writes() -> None:
    edits = toolcalls.diffs(
        BUILTIN.meta("edit"),
        {"path": "a.py", "edits": [{"old_text": "a", "new_text": "b"}, {"old_text": "c", "new_text": "d"}]},
        CWD,
    )
    assert [(d.path, d.old_text, d.new_text) for d in edits] == [
        ("/work/project/a.py", "a", "b"),
        ("/work/project/a.py", "c", "d"),
    ]
    [write] = toolcalls.diffs(BUILTIN.meta("write"), {"path": "n.txt", "content": "x"}, CWD)
    assert (write.old_text, write.new_text) == (None, "x")
    assert toolcalls.diffs(BUILTIN.meta("edit"), {"path": "a.py", "old_text": 3}, CWD) == []


def test_permission_options_and_answers() -> None:
    prompt = PermissionPrompt("c1", "edit", {"path": "/x"}, Decision("ask", "outside", suggestion="Edit(/x)"))
    options = permissions.options(prompt)
    assert [(o.option_id, o.kind, o.name) for o in options] == [
        ("allow_once", "allow_once", "Allow once"),
        ("allow_always", "allow_always", "Always allow Edit(/x)"),
        ("reject", "reject_once", "Reject"),
    ]

    def reply(outcome: AllowedOutcome | DeniedOutcome) -> str:
        return permissions.answer(RequestPermissionResponse(outcome=outcome)).answer

    assert reply(AllowedOutcome(outcome="selected", option_id="allow_once")) == "allow_once"
    assert reply(AllowedOutcome(outcome="selected", option_id="allow_always")) == "allow_always"
    assert reply(AllowedOutcome(outcome="selected", option_id="reject")) == "deny"
    assert reply(AllowedOutcome(outcome="selected", option_id="something-else")) == "deny"
    assert reply(DeniedOutcome(outcome="cancelled")) == "deny"


def test_prompt_blocks() -> None:
    text, images = prompt_content(
        [
            TextContentBlock(type="text", text="look"),
            ResourceContentBlock(type="resource_link", name="a.py", uri="file:///w/a%20b.py"),
            EmbeddedResourceContentBlock(
                type="resource", resource=TextResourceContents(uri="file:///w/c.py", text="x=1")
            ),
            ImageContentBlock(type="image", data="AAAA", mime_type="image/png"),
        ]
    )
    assert text == 'look\n\n@/w/a b.py\n\n<file path="/w/c.py">\nx=1\n</file>'
    assert [(i.data, i.mime_type) for i in images] == [("AAAA", "image/png")]
    with pytest.raises(PromptError, match="image/bmp"):
        prompt_content([ImageContentBlock(type="image", data="AAAA", mime_type="image/bmp")])


@pytest.mark.parametrize(
    ("line", "code"),
    [
        (b"{oops", -32700),
        (b"[]", -32600),
        (b"null", -32600),
        (b'{"id": {}, "method": "x"}', -32600),
        (b'{"id": 1, "method": "x", "params": 3}', -32600),
        (b'{"jsonrpc": "2.0"}', -32600),
    ],
)
def test_guard_answers_what_is_not_json_rpc(line: bytes, code: int) -> None:
    error = guard.problem(line)
    assert error is not None and error["error"]["code"] == code and error["jsonrpc"] == "2.0"


@pytest.mark.parametrize(
    "line",
    [
        b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}',
        b'{"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s"}}',
        b'{"jsonrpc": "2.0", "id": 4, "result": {}}',
    ],
)
def test_guard_passes_requests_notifications_and_responses(line: bytes) -> None:
    assert guard.problem(line) is None


def test_other_modes_do_not_import_the_sdk() -> None:
    code = (
        "import sys, heron.cli.main, heron.cli.app\n"
        "print(sorted(m for m in sys.modules if m == 'acp' or m.startswith(('acp.', 'heron.cli.acp'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_stop_reasons() -> None:
    """ACP's presentation of a run's outcome (decided by heron.coding.outcome)."""
    from heron.ai.types import AssistantMessage, StopReason
    from heron.cli.acp.prompting import stop_reason
    from heron.coding.outcome import decide

    def reply(reason: StopReason, error: str | None = None, kind: str | None = None) -> AssistantMessage:
        return AssistantMessage(
            api="x", provider="p", model="m", stop_reason=reason, error_message=error, error_kind=kind
        )

    def reason(*answers: AssistantMessage, cancelled: bool = False) -> tuple[str, object]:
        return stop_reason(decide(answers), cancelled)

    assert reason(reply(StopReason.STOP)) == ("end_turn", None)
    assert reason(reply(StopReason.LENGTH)) == ("max_tokens", None)
    assert reason(reply(StopReason.ABORTED)) == ("cancelled", None)
    assert reason(reply(StopReason.STOP), cancelled=True) == ("cancelled", None)
    failed = reply(StopReason.ERROR, "401 bad key", "auth")
    assert reason(failed) == ("end_turn", {"message": "401 bad key", "errorKind": "auth"})
    assert reason() == ("end_turn", None)  # nothing answered (an extension's command)
