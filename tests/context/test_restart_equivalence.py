"""Restart equivalence: the requests heron sends do not depend on how often it restarted.

Random scripted sessions (faux provider: big reads, re-reads of unchanged files, big
command outputs, edits, manual compactions, in a small window so pruning and automatic
compaction happen) are driven twice: once by one long-lived ``CodingSession``, once with
the session re-opened from its file by a new ``CodingSession`` before random turns (what
``heron -p --continue`` does, one process per turn). Every request's serialised form and
output cap must be byte-identical, apart from clock times shown in notices and the
session id in spill paths. Every request is also checked against the context
invariants (``HERON_CHECK_CONTEXT=strict``, see tests/conftest.py).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from heron.ai.options import StreamOptions
from heron.ai.providers.faux import FauxProvider, FauxReply, serialise_request, text, tool_call
from heron.ai.registry import unregister_provider
from heron.ai.types import Context, Model
from heron.coding.runtime import CodingSession
from heron.coding.settings import settings_from_dict
from heron.context.compaction.summary.summary_text import is_summary_request
from heron.session.store import SessionStore
from tests.support.sandbox_fixtures import bubblewrap, no_bwrap

__all__ = ["bubblewrap", "no_bwrap"]  # fixtures

WINDOW = 16_384
ACTIONS = ("read_big", "reread_big", "read_small", "reread_small", "bash_big", "edit", "todo", "write_big", "text")
WRITE_CHARS = 30_000  # a write whose arguments pass one result's budget: requests show them shortened


def workspace(root: Path) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "big.txt").write_text(
        "".join(f"line {i}: the quick brown fox jumps over the lazy dog\n" for i in range(3_000))
    )
    (root / "small.py").write_text("def answer():\n    return 41\n" + "# padding line\n" * 60)


def calls_for(action: str, turn: int, step: int) -> FauxReply:
    if action in ("read_big", "reread_big"):
        return tool_call("read", {"path": "big.txt"})
    if action in ("read_small", "reread_small"):
        return tool_call("read", {"path": "small.py"})
    if action == "bash_big":
        return tool_call("bash", {"command": f"seq 1 9000 | sed 's/$/ turn {turn} step {step}/'"})
    if action == "todo":
        return tool_call(
            "todo",
            {
                "todos": [
                    {"content": f"step {turn}.{step}", "status": "in_progress"},
                    {"content": "the rest", "status": "pending"},
                ]
            },
        )
    if action == "write_big":
        body = "".join(f"generated line {i} of turn {turn} step {step}\n" for i in range(WRITE_CHARS // 40))
        return tool_call("write", {"path": f"out/{turn}-{step}.txt", "content": body})
    if action == "edit":
        return tool_call(
            "edit",
            {
                "path": "small.py",
                "edits": [
                    {
                        "oldText": "return 41" if turn % 2 == 0 else "return 42",
                        "newText": "return 42" if turn % 2 == 0 else "return 41",
                    }
                ],
            },
        )
    return text(f"note {turn}.{step}: " + "thinking out loud " * 40)


def script(turns: list[list[str]]) -> list[list[FauxReply]]:
    out = []
    for t, actions in enumerate(turns):
        replies = [calls_for(a, t, i) for i, a in enumerate(actions) if a != "text"]
        replies.append(text(f"turn {t} done. " + "summary of the work " * 30))
        out.append(replies)
    return out


class Recorder:
    """A faux provider whose replies come from the script and that records every request."""

    def __init__(self, turns: list[list[FauxReply]]) -> None:
        self.provider = FauxProvider.install("faux")
        self.queue: list[FauxReply] = [r for turn in turns for r in turn]
        self.requests: list[str] = []
        original = self.provider.stream

        def stream(model: Model, context: Context, options: StreamOptions, builder: Any) -> Any:
            self.requests.append(f"max_tokens={options.max_tokens}\n{serialise_request(context)}")
            return original(model, context, options, builder)

        self.provider.stream = stream  # type: ignore[method-assign]
        self.provider.set_fallback(self.reply)

    def reply(self, context: Context) -> FauxReply:
        if is_summary_request(context):
            return text("## Goal\nKeep going.\n## Progress\nRead files, ran commands.")
        return self.queue.pop(0) if self.queue else text("out of script")


def normalise(request: str, session_ids: list[str]) -> str:
    for sid in session_ids:
        request = request.replace(sid, "SESSION")
    return re.sub(r"\b\d\d:\d\d:\d\d\b", "HH:MM:SS", request)


async def drive(
    root: Path, home: Path, turns: list[list[str]], restart_before: Callable[[int], bool], compact_after: set[int]
) -> tuple[list[str], list[str]]:
    recorder = Recorder(script(turns))
    try:
        model = recorder.provider.model(context_window=WINDOW, max_tokens=4_096)
        # pruning from half the budget, and results up to 15% of the window (the scenarios'
        # sizes were chosen for it), so that these short scenarios prune as well as compact
        settings = settings_from_dict(
            {
                "memory": {"directory": str(home / "memory")},
                "pruning": {"highWater": 0.5, "lowWater": 0.2},
                "toolLimits": {"windowShare": 0.15},
            }
        )
        store = SessionStore.create(root, home=home)
        session: CodingSession | None = None
        ids = [store.session_id]
        for t in range(len(turns)):
            if session is None or restart_before(t):
                if session is not None:
                    session._recorder.close()
                    assert store.path is not None
                    store.close()
                    store = SessionStore.open(store.path)
                session = CodingSession(
                    cwd=root,
                    model=model,
                    store=store,
                    settings=settings,
                    home=home,
                    tools=["read", "bash", "edit", "write", "todo"],
                )
            await session.prompt(f"turn {t}: carry on with the task")
            if t in compact_after:
                await session.compact()
        return [normalise(r, ids) for r in recorder.requests], ids
    finally:
        unregister_provider("faux")


turn_strategy = st.lists(st.sampled_from(ACTIONS), min_size=1, max_size=4)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    turns=st.lists(turn_strategy, min_size=3, max_size=7),
    restarts=st.sets(st.integers(min_value=1, max_value=6)),
    compactions=st.sets(st.integers(min_value=0, max_value=6), max_size=2),
)
def test_requests_are_the_same_with_and_without_restarts(
    tmp_path_factory: Any,
    bubblewrap: str | None,
    monkeypatch: pytest.MonkeyPatch,
    turns: list[list[str]],
    restarts: set[int],
    compactions: set[int],
) -> None:
    if bubblewrap is not None:  # a machine without it: bash results may carry the sandbox's note
        monkeypatch.setenv("PATH", bubblewrap)
    base = tmp_path_factory.mktemp("restart")
    workspace(base / "solo" / "proj")
    workspace(base / "many" / "proj")
    one, _ = asyncio.run(drive(base / "solo" / "proj", base / "solo" / "home", turns, lambda t: False, compactions))
    many, _ = asyncio.run(
        drive(base / "many" / "proj", base / "many" / "home", turns, lambda t: t in restarts, compactions)
    )
    paths = (str(base / "solo"), str(base / "many"))
    one = [r.replace(paths[0], "BASE") for r in one]
    many = [r.replace(paths[1], "BASE") for r in many]
    assert len(one) == len(many)
    for index, (a, b) in enumerate(zip(one, many, strict=True)):
        assert a == b, f"request {index} differs after a restart"


def test_a_restart_every_turn_sends_the_same_requests(
    tmp_path: Path, bubblewrap: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fixed scenario that prunes, de-duplicates, compacts automatically and by hand;
    with bubblewrap and without it (then its bash results carry the sandbox's note once)."""
    if bubblewrap is not None:
        monkeypatch.setenv("PATH", bubblewrap)
    turns = [
        ["read_big", "read_small", "todo"],
        ["reread_small", "bash_big"],
        ["read_big", "edit", "write_big"],
        ["reread_small", "bash_big"],
        ["read_big"],
        ["reread_big", "read_small"],
        ["bash_big", "text"],
    ]
    workspace(tmp_path / "solo" / "proj")
    workspace(tmp_path / "many" / "proj")
    one, _ = asyncio.run(drive(tmp_path / "solo" / "proj", tmp_path / "solo" / "home", turns, lambda t: False, {3}))
    many, _ = asyncio.run(drive(tmp_path / "many" / "proj", tmp_path / "many" / "home", turns, lambda t: True, {3}))
    one = [r.replace(str(tmp_path / "solo"), "BASE") for r in one]
    many = [r.replace(str(tmp_path / "many"), "BASE") for r in many]
    assert len(one) == len(many) > len(turns)
    assert any("more characters of this argument are not shown" in r for r in one), "a big write shown shortened"
    assert one == many
    joined = "\n".join(one)
    assert "[Pruned from the context" in joined  # the scenario really exercises pruning
    assert "compacted into the following summary" in joined
    notes = [r.count("[sandbox unavailable:") for r in one]
    assert max(notes) == (0 if bubblewrap is None else 1)  # without it: said, and once a session
