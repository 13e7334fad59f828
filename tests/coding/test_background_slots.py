"""No background summary beside the turn on a server that reports its slots (issue 37).

llama.cpp with one slot would only queue the summary behind the turn's request (or the
turn's next request behind the summary); with several, its slots may share one cache of
the window's size (its default), which the turn and a summary of the same history
overflow together - llama.cpp then fails both with "Context size has been exceeded". So a
model whose server said how many slots it has (:attr:`Model.server_slots`, from
``/props``) compacts in the foreground: the summary is asked for when the compaction is
due, never beside a turn's request. The same turns against a server that did not say
start a background summary (tests/coding/test_background_compaction.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from heron.ai.providers.faux import FauxProvider
from heron.coding.runtime import CodingSession
from heron.coding.settings import settings_from_dict
from heron.context.compaction.background import BACKGROUND_ENV
from heron.session.entries import CompactionEntry
from heron.session.store import SessionStore
from tests.coding.test_background_compaction import Script, decisions


@pytest.fixture(autouse=True)
def _background_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(BACKGROUND_ENV, raising=False)


def session(tmp_path: Path, faux: FauxProvider, script: Script, slots: int | None) -> CodingSession:
    faux.set_fallback(script)
    project, home = tmp_path / "proj", tmp_path / "home"
    project.mkdir(exist_ok=True)
    home.mkdir(exist_ok=True)
    settings = {
        "compaction": {"keepRecentTokens": 2_000},
        "pruning": {"enabled": False},
        "retry": {"enabled": False},
        "memory": {"enabled": False},
    }
    return CodingSession(
        cwd=project,
        model=faux.model(context_window=32_768, max_tokens=2_048, server_slots=slots),
        store=SessionStore.create(project, home=home),
        home=home,
        settings=settings_from_dict(settings),
        tools=["read"],
    )


@pytest.mark.parametrize("slots", [1, 4])
async def test_a_server_with_slots_compacts_in_the_foreground(tmp_path: Path, faux: FauxProvider, slots: int) -> None:
    script = Script()
    s = session(tmp_path, faux, script, slots)
    assert not s.context_owner.background.enabled
    for n in range(20):
        asked_before = len(script.summaries)
        await s.prompt(f"turn {n}: go on")
        if any(isinstance(e, CompactionEntry) for e in s.store.entries()):
            break
        assert len(script.summaries) == asked_before, f"turn {n}: a summary was asked for beside the turn"
    else:
        raise AssertionError("no compaction in 20 turns")
    assert not decisions(s), "no background summary was started"
    assert script.summaries, "the compaction asked for its summary when it was due"


async def test_a_server_that_did_not_say_starts_one(tmp_path: Path, faux: FauxProvider) -> None:
    script = Script()
    s = session(tmp_path, faux, script, None)
    assert s.context_owner.background.enabled
    for n in range(20):
        await s.prompt(f"turn {n}: go on")
        if decisions(s):
            break
    assert decisions(s), "the same turns start a background summary"
