"""Automatic compaction switched off: by heron (the 5% rule) it gives way when a request
cannot be sent otherwise, and a compaction that saves enough turns it back on; by the user
(rpc ``set_auto_compaction``) it stays off (docs/context.md, "Compaction"). The process
behaviour is in tests/cli/test_compact_from_a_shell.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from heron.ai.providers.faux import FauxProvider, text
from heron.ai.types import Context
from heron.coding.runtime import CodingSession
from heron.coding.settings import settings_from_dict
from heron.context.compaction.summary.summary_text import is_summary_request
from heron.context.records.decisions import ContextDecisions, auto_compaction_data
from heron.session.store import SessionStore

WORDS = " ".join(f"word{i:04d}" for i in range(700))  # ~1,700 tokens a prompt


def test_who_switched_it_off_is_recorded_and_read_back() -> None:
    decisions = ContextDecisions()
    decisions.apply(auto_compaction_data(False, "saved too little"), 1)
    assert not decisions.auto_compaction and not decisions.auto_compaction_by_user
    decisions.apply(auto_compaction_data(False, "the rpc client asked for it", by_user=True), 2)
    assert decisions.auto_compaction_by_user
    assert auto_compaction_data(True, "x", by_user=True)["by"] == "user"
    decisions.apply(auto_compaction_data(True, "back"), 3)
    assert decisions.auto_compaction and not decisions.auto_compaction_by_user


async def session_past_the_window(tmp_path: Path, faux: FauxProvider, by_user: bool) -> CodingSession:
    project = tmp_path / "proj"
    project.mkdir()

    def reply(context: Context) -> object:
        return text("## Goal\nwords") if is_summary_request(context) else text("ok")

    faux.set_fallback(reply)  # type: ignore[arg-type]
    session = CodingSession(
        cwd=project,
        model=faux.model(context_window=8_192, max_tokens=1_024),
        store=SessionStore.create(project, home=tmp_path / "home"),
        settings=settings_from_dict({"compaction": {"keepRecentTokens": 500}}),
        home=tmp_path / "home",
        tools=["read"],
    )
    await session.prompt(f"turn 0: {WORDS}")
    session.policy.recorder.disable_auto_compaction("switched off", by_user=by_user)
    return session


@pytest.mark.parametrize("by_user", [False, True], ids=["by-heron", "by-user"])
async def test_a_request_that_does_not_fit(tmp_path: Path, faux: FauxProvider, by_user: bool) -> None:
    session = await session_past_the_window(tmp_path, faux, by_user)
    for n in range(1, 6):
        await session.prompt(f"turn {n}: {WORDS}")
    last = session.messages[-1]
    summaries = [r for r in faux.requests if is_summary_request(r)]
    if by_user:
        assert summaries == [] and not session.policy.auto_compaction
        assert "ContextFull" in str(getattr(last, "error_message", "")) and "heron compact" in last.error_message  # type: ignore[attr-defined]
    else:
        assert summaries and session.policy.auto_compaction  # compacted, and switched back on
        assert getattr(last, "error_message", None) is None


async def test_an_overflow_compaction_leaves_the_users_switch_off(tmp_path: Path, faux: FauxProvider) -> None:
    session = await session_past_the_window(tmp_path, faux, True)
    for n in range(1, 3):
        await session.prompt(f"turn {n}: {WORDS}")
    end = await session.context_owner.compact(reason="overflow")
    assert end.entry_id is not None and not session.policy.auto_compaction
