"""The bounds on compactions below the threshold (issue 27): at most one a turn, none
that saves less than 5%, and what the soft threshold does with pruning turned on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from heron.ai.providers.faux import FauxProvider, FauxReply, text, tool_call
from heron.ai.types import Context
from heron.coding.events import CompactionEndEvent
from heron.coding.runtime import CodingSession
from heron.coding.settings import settings_from_dict
from heron.context.compaction.summary.summary_text import is_summary_request
from heron.session.entries import CompactionEntry
from heron.session.store import SessionStore

LONG = "A long explanation of what was found, with every detail spelled out. " * 60  # ~4k chars


def session(tmp_path: Path, faux: FauxProvider, replies: list[FauxReply], **settings: Any) -> CodingSession:
    def reply(context: Context) -> FauxReply:
        if is_summary_request(context):
            return text("## Goal\nkeep going")
        return replies.pop(0)

    faux.set_fallback(reply)
    project = tmp_path / "proj"
    project.mkdir(exist_ok=True)
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return CodingSession(
        cwd=project,
        model=faux.model(context_window=32_768, max_tokens=2_048),
        store=SessionStore.create(project, home=home),
        home=home,
        settings=settings_from_dict(
            {"defaultTools": ["read", "bash", "compact"], "compaction": {"keepRecentTokens": 500}, **settings}
        ),
        tools=["read", "bash", "compact"],
    )


async def test_at_most_one_requested_compaction_a_turn(tmp_path: Path, faux: FauxProvider) -> None:
    replies = [text(f"part {n}. {LONG}") for n in range(3)]
    replies += [
        tool_call("compact", {"focus": "the parts"}),
        tool_call("compact", {}),  # a second one in the same turn: acted on by nobody
        text("done"),
        tool_call("compact", {}),  # the next turn may compact again, if it saves 5%
        text("done again"),
    ]
    s = session(tmp_path, faux, replies)
    ends: list[CompactionEndEvent] = []
    s.subscribe(lambda e: ends.append(e) if isinstance(e, CompactionEndEvent) else None)
    for n in range(3):
        await s.prompt(f"tell me about part {n}")
    await s.prompt("compact, please")
    written = [e for e in s.store.entries() if isinstance(e, CompactionEntry)]
    assert len(written) == 1 and [e.reason for e in ends] == ["requested"]
    await s.prompt("and once more")
    # right after a compaction there is too little left to save: the request is turned down
    assert len([e for e in s.store.entries() if isinstance(e, CompactionEntry)]) == 1
    assert [e.reason for e in ends][-1] == "requested" and ends[-1].entry_id is None and ends[-1].skipped
