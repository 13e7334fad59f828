"""The session report's data, page and sparkline, on session files built entry by entry.

The browser side (the page rendered in Chromium, hovered, screenshotted) is in
tests/cli/test_report_browser.py; these tests check what the page is made of.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

from heron.ai.types import AssistantMessage, Cost, TextContent, ToolCall, ToolResultMessage, Usage, UserMessage
from heron.coding.report import build_report, render_report, sparkline, write_report
from heron.coding.report.transcript import SEEN_CAP, clean
from heron.context.records.ledger import LEDGER_CUSTOM_TYPE, LedgerRecord
from heron.session.store import SessionStore


class _Tags(HTMLParser):
    """Every attribute of every tag, as a browser's parser sees them."""

    def __init__(self) -> None:
        super().__init__()
        self.attributes: list[tuple[str, str | None]] = []
        self.scripts = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.attributes.extend(attrs)
        if tag == "script" and ("type", "application/json") not in attrs:
            self.scripts += 1


def _assistant(
    text: str, tokens: int, *, cached: int = 0, calls: list[ToolCall] | None = None, model: str = "small"
) -> AssistantMessage:
    return AssistantMessage(
        content=[TextContent(text=text), *(calls or [])],
        provider="local",
        model=model,
        api="openai-chat",
        usage=Usage(input=tokens - cached, cache_read=cached, output=10, cost=Cost(total=0.001)),
    )


def _session(tmp_path: Path) -> SessionStore:
    """Two turns, a read that is later pruned, a compaction, a model switch, ledger records."""
    store = SessionStore.create(tmp_path / "proj", home=tmp_path / "home")
    store.append_model_change("local", "small")
    store.append_message(UserMessage(content=[TextContent(text="turn one")]))
    call = ToolCall(id="call_1", name="read", arguments={"path": "big.txt"})
    store.append_message(_assistant("", 1000, calls=[call]))
    store.append_custom(
        LEDGER_CUSTOM_TYPE, LedgerRecord(kind="truncate", ref="call_1", tool="read", chars_before=40_000).to_json_dict()
    )
    store.append_message(
        ToolResultMessage(tool_call_id="call_1", tool_name="read", content=[TextContent(text="x" * 9000)])
    )
    store.append_message(_assistant("read it", 3300, cached=3000))
    store.append_custom("heron.context", {"op": "prune", "stubs": {"call_1": "[Pruned: read big.txt again]"}})
    store.append_custom(LEDGER_CUSTOM_TYPE, LedgerRecord(kind="prune", ref="call_1", tool="read").to_json_dict())
    first_kept = store.append_message(UserMessage(content=[TextContent(text="turn two")])).id
    store.append_custom(LEDGER_CUSTOM_TYPE, LedgerRecord(kind="compaction", ref="PLACEHOLDER").to_json_dict())
    entry = store.append_compaction(
        summary="## Goal\nthe summary text", first_kept_entry_id=first_kept, tokens_before=5000
    )
    # the compaction record names the entry it made (written before it, as the compactor does)
    store.append_custom(LEDGER_CUSTOM_TYPE, LedgerRecord(kind="compaction", ref=entry.id).to_json_dict())
    store.append_model_change("local", "big")
    store.append_message(_assistant("done", 0, model="big"))  # no usage: heron's own count
    return store


def test_one_point_per_request_and_one_marker_per_ledger_record_and_switch(tmp_path: Path) -> None:
    store = _session(tmp_path)
    data = build_report(store, windows={"local/small": 16_384, "local/big": 32_768}, reserve=16_384)
    assert [p.tokens for p in data.requests[:2]] == [1000, 3300]
    assert data.requests[1].cache_hit is not None and round(data.requests[1].cache_hit, 3) == round(3000 / 3300, 3)
    assert data.requests[2].estimated and data.requests[2].tokens > 0  # no usage reported
    assert data.requests[2].window == 32_768 and data.threshold_at(data.requests[0]) == 16_384 - 4_096
    kinds = [m.kind for m in data.markers]
    assert kinds == ["truncate", "prune", "compaction", "compaction", "model_switch"]
    assert data.markers[0].request == 1  # the truncation happened after request 1, before request 2
    named = [m for m in data.markers if m.kind == "compaction" and m.summary]
    assert len(named) == 1 and named[0].summary == "## Goal\nthe summary text"
    assert data.pruned["call_1"] == ("[Pruned: read big.txt again]", 2)
    assert [t.prompt for t in data.turns] == ["turn one", "turn two"]
    assert data.turns[0].requests == 2 and abs(data.turns[0].cost - 0.002) < 1e-9


def test_the_page_carries_the_curve_markers_and_the_pruned_stub(tmp_path: Path) -> None:
    store = _session(tmp_path)
    page = render_report(store, windows={"local/small": 16_384}, reserve=16_384)
    curve = re.search(r'<polyline class="curve" data-points="(\d+)" points="([^"]*)"', page)
    assert curve is not None and curve.group(1) == "3" and len(curve.group(2).split()) == 3
    assert len(re.findall(r'<circle class="marker ', page)) == 5
    assert 'class="window-line"' in page and 'class="threshold-line"' in page
    turns = json.loads(re.search(r'id="heron-turns">(.*?)</script>', page, re.S).group(1))  # type: ignore[union-attr]
    result = next(m for m in turns[0]["m"] if m["r"] == "tool")
    assert result["pruned"] == "[Pruned: read big.txt again]" and "full" in result
    assert result["t"].startswith("x" * 100)


def test_hostile_session_text_is_never_markup(tmp_path: Path) -> None:
    store = SessionStore.create(tmp_path / "proj", home=tmp_path / "home")
    hostile = "</script><script>alert(1)</script><a href='javascript:alert(2)'>x</a>\x1b[2J\x1b]0;title\x07&amp;"
    store.append_message(UserMessage(content=[TextContent(text=hostile)]))
    store.append_message(_assistant(hostile + "\ud800", 100))
    store.append_custom(LEDGER_CUSTOM_TYPE, LedgerRecord(kind="spill", recover=hostile).to_json_dict())
    store.append_custom(LEDGER_CUSTOM_TYPE, {"kind": "x' onmouseover='alert(3)", "recover": hostile})
    store.append_message(UserMessage(content=[TextContent(text="y" * 1_000_000)]))  # a 1 MB single line
    target = write_report(store, tmp_path / "report.html")
    page = target.read_text(encoding="utf-8")
    assert page.count("<script") == 4  # three JSON blocks and the page's own script
    markup = re.sub(r'<script type="application/json".*?</script>', "", page, flags=re.S)
    assert "<script>alert" not in markup and "&lt;script&gt;alert(1)" in markup  # shown, as text
    tags = _Tags()
    tags.feed(page)
    assert not [a for a in tags.attributes if a[0].startswith("on")]  # no event handler from the session
    assert not [a for a in tags.attributes if a[0] == "href" and not (a[1] or "").startswith("file:")]
    assert tags.scripts == 1  # the page's own script; the rest are JSON blocks
    assert "\x1b" not in page and "\x07" not in page
    assert len(page) < 200_000  # the 1 MB line is capped in the page
    assert target.stat().st_mode & 0o077 == 0


def test_clean_shows_control_characters_and_keeps_newlines() -> None:
    assert clean("a\x1b[31mb\tc\nd\x7f") == "a\u241b[31mb\tc\nd\u2421"


def test_a_long_result_is_capped_with_the_rest_behind_the_toggle(tmp_path: Path) -> None:
    store = SessionStore.create(tmp_path / "proj", home=tmp_path / "home")
    store.append_message(UserMessage(content=[TextContent(text="go")]))
    store.append_message(ToolResultMessage(tool_call_id="c", tool_name="bash", content=[TextContent(text="z" * 9000)]))
    page = render_report(store)
    turns = json.loads(re.search(r'id="heron-turns">(.*?)</script>', page, re.S).group(1))  # type: ignore[union-attr]
    tool = turns[0]["m"][1]
    assert len(tool["t"]) < SEEN_CAP + 100 and "more characters" in tool["t"] and len(tool["full"]) == 9000


def test_the_transcript_budget_keeps_the_newest_turns(tmp_path: Path) -> None:
    store = SessionStore.create(tmp_path / "proj", home=tmp_path / "home")
    for n in range(40):
        store.append_message(UserMessage(content=[TextContent(text=f"turn {n} " + "w" * 3000)]))
        store.append_message(_assistant("a" * 3000, 100))
    data = build_report(store)
    from heron.coding.report.transcript import turn_views

    views = turn_views(data, budget=50_000)
    assert views[-1]["m"] and not views[0]["m"] and "omitted" in views[0]
    assert [v["i"] for v in views] == list(range(40))
    assert all(v["m"] for v in turn_views(data, budget=None))


def test_sparkline_marks_compactions_and_ends_on_the_window(tmp_path: Path) -> None:
    store = _session(tmp_path)
    line = sparkline(build_report(store, transcript=False), window=16_384)
    assert line.startswith("context ") and "▾" in line and "/ 16,384 tokens" in line
    assert sparkline(build_report(SessionStore.in_memory(tmp_path), transcript=False)) == (
        "context curve: no requests yet"
    )


def test_branches_and_child_sessions(tmp_path: Path) -> None:
    store = SessionStore.create(tmp_path / "proj", home=tmp_path / "home")
    store.append_message(UserMessage(content=[TextContent(text="first")]))
    root_answer = store.append_message(_assistant("one", 10))
    store.append_message(UserMessage(content=[TextContent(text="old branch")]))
    store.branch(root_answer.id)
    store.append_message(UserMessage(content=[TextContent(text="new branch")]))
    child = SessionStore.create(tmp_path / "proj", home=tmp_path / "home", parent_session=str(store.path))
    child.append_message(UserMessage(content=[TextContent(text="sub-agent task")]))
    child.append_message(_assistant("child answer", 10))
    data = build_report(store)
    assert len(data.branches) == 2 and data.branches[0].current
    assert data.branches[1].first_prompt == "old branch" and data.branches[1].fork_point == root_answer.id
    assert [c["id"] for c in data.children] == [child.session_id]


def test_window_and_threshold_are_step_lines_with_a_point_per_change(tmp_path: Path) -> None:
    store = SessionStore.create(tmp_path / "proj", home=tmp_path / "home")
    for n in range(50):
        store.append_message(UserMessage(content=[TextContent(text=f"turn {n}")]))
        store.append_message(_assistant("ok", 100 + n))
    page = render_report(store, windows={"local/small": 16_384}, reserve=16_384)
    window = re.search(r'class="window-line" points="([^"]*)"', page)
    assert window is not None and len(window.group(1).split()) == 2  # one window for all 50 requests
    assert 'data-points="50"' in page
