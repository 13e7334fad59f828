"""Budget notices (docs/context.md, "Budget notices"): the remaining budget is told at the
end of the request that first reaches 50, 75 and 90% of the compaction threshold, on the
tool result that request ends with; every other request carries the previous one whole,
and a resumed process derives the same bytes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from heron.ai.providers.faux import FauxProvider, FauxReply, serialise_request, text, tool_call
from heron.ai.types import Context, Model, ToolResultMessage
from heron.coding.runtime import CodingSession
from heron.coding.settings import settings_from_dict
from heron.context.compaction.summary.summary_text import is_summary_request
from heron.context.window.budget_notice import MARKS, NOTICE_PREFIX, context_aware, due, render
from heron.session.store import SessionStore

WINDOW = 32_000


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HERON_HOME", str(tmp_path / "home"))
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "big.txt").write_text(
        "".join(f"line {i:05d} of a long file with some text in it\n" for i in range(1, 9001))
    )
    return proj


class Script:
    """Two paged reads and an answer per prompt; the count the policy planned each request with."""

    def __init__(self, session: list[CodingSession]) -> None:
        self.session = session
        self.step = 0
        self.page = 0
        self.counts: list[int] = []  # per main request

    def __call__(self, context: Context) -> FauxReply:
        if is_summary_request(context):
            return text("## Goal\nread the file")
        self.counts.append(self.session[0].request_plan.tokens)
        self.step = (self.step + 1) % 3
        if self.step:
            self.page += 1
            return tool_call("read", {"path": "big.txt", "offset": 1 + (self.page % 40) * 200, "limit": 200})
        return text("done")


def open_session(project: Path, faux: FauxProvider, store: SessionStore, model: Model | None = None) -> CodingSession:
    return CodingSession(
        cwd=project,
        model=model or faux.model(context_window=WINDOW, max_tokens=4_000),
        store=store,
        home=project.parent / "home",
        settings=settings_from_dict({"pruning": {"enabled": False}, "memory": {"enabled": False}}),
    )


def notice_of(context: Context) -> str | None:
    last = context.messages[-1] if context.messages else None
    if isinstance(last, ToolResultMessage) and last.content and last.content[-1].text.startswith(NOTICE_PREFIX):  # type: ignore[union-attr]
        return last.content[-1].text  # type: ignore[union-attr]
    return None


async def run(project: Path, faux: FauxProvider, turns: int) -> tuple[CodingSession, Script, list[Context]]:
    holder: list[CodingSession] = []
    script = Script(holder)
    faux.set_fallback(script)
    store = SessionStore.create(project, home=project.parent / "home")
    session = open_session(project, faux, store)
    holder.append(session)
    for turn in range(turns):
        await session.prompt(f"turn {turn}: read the next pages")
    main = [c for c in faux.requests if not is_summary_request(c)]
    return session, script, main


async def test_a_notice_exactly_when_a_mark_is_crossed(project: Path, faux: FauxProvider) -> None:
    session, script, main = await run(project, faux, 12)
    threshold = session.policy.sizes.threshold
    payloads = [serialise_request(c) for c in main]
    compacted = next((i for i, c in enumerate(main) if "compacted into the following summary" in payloads[i]), None)
    end = compacted if compacted is not None else len(main)
    assert end > 6
    told = 0
    seen: dict[int, int] = {}
    for index in range(end):
        notice = notice_of(main[index])
        if notice is not None:  # told with the count before the notice itself was added
            told_tokens = int(re.search(r"used: ([\d,]+) of", notice).group(1).replace(",", ""))  # type: ignore[union-attr]
            mark = due(told_tokens, threshold, told)
            assert mark is not None and notice == render(mark, told_tokens, threshold, False)
            assert told_tokens <= script.counts[index] <= told_tokens + 100
            seen[mark] = told_tokens
            told = mark
        else:  # no mark newly reached, or the request does not end with a tool result
            last = main[index].messages[-1]
            assert due(script.counts[index], threshold, told) is None or not isinstance(last, ToolResultMessage), (
                f"request {index}: a mark crossed without a notice"
            )
        if index:  # prefix stability: every request carries the previous one whole
            assert payloads[index].startswith(payloads[index - 1]), f"request {index} changed the prefix"
    assert set(seen) == set(MARKS), seen
    # the notice stays where it was told: later requests carry the same bytes
    for mark, told_tokens in seen.items():
        assert payloads[end - 1].count(render(mark, told_tokens, threshold, False)) == 1
    # a resumed process derives the same notices and the same view
    reopened = open_session(project, faux, SessionStore.open(session.store.path, read_only=True))
    assert reopened.policy.decisions.notices == session.policy.decisions.notices
    fresh = reopened.policy.view(reopened.agent.state.messages)
    ours = session.policy.view(session.agent.state.messages)
    assert [m.to_json_dict() for m in fresh] == [m.to_json_dict() for m in ours]  # type: ignore[union-attr]


async def test_the_marks_start_again_after_a_compaction(project: Path, faux: FauxProvider) -> None:
    _, _, main = await run(project, faux, 30)
    payloads = [serialise_request(c) for c in main]
    summarised = [i for i, p in enumerate(payloads) if "compacted into the following summary" in p]
    assert summarised, "the run compacts"
    after = [notice_of(c) for c in main[summarised[0] :]]
    assert any(n is not None and f"{NOTICE_PREFIX} 50%" in n for n in after)


def test_claude_context_awareness_form() -> None:
    aware = Model(id="claude-sonnet-4-5-20250929", api="anthropic-messages", provider="anthropic")
    assert context_aware(aware) and not context_aware(Model(id="gpt-5", api="openai-responses", provider="openai"))
    assert context_aware(Model(id="m", api="a", provider="p", compat={"contextAwareness": True}))
    assert render(75, 18_000, 24_000, True) == (
        "<system_warning>Token usage: 18000/24000; 6000 remaining</system_warning>"
    )
    assert render(75, 18_000, 24_000, False) == (
        f"{NOTICE_PREFIX} 75% of the context budget is used: 18,000 of 24,000 tokens. "
        "6,000 tokens (25%) remain before older messages are summarised."
    )
    assert due(11_999, 24_000, 0) is None and due(12_000, 24_000, 0) == 50
    assert due(22_000, 24_000, 0) == 90 and due(22_000, 24_000, 90) is None and due(19_000, 24_000, 50) == 75
