"""The view built incrementally equals the view built from scratch, at every length.

The builder keeps what it derived for the list it last saw and extends it by the new
messages; a process that opens the session later builds the same list from scratch. Both
must give the same bytes, the same counts and the same read index - also across a prune
step (new stubs), a list that no longer starts the same (a compaction) and a killed tool
call (a call without a result, followed by a later message).
"""

from __future__ import annotations

from heron.agent.messages import AgentMessage
from heron.context.records.decisions import ContextDecisions
from heron.context.view.build import ReadIndex, ViewBuilder
from heron.context.window.budget import request_tokens, tally_of
from tests.context.test_view import (
    CWD,
    assistant,
    dedup_result,
    read_call,
    read_result,
    read_turn,
    user,
    wire,
)
from tests.support.tools import BUILTIN


def session() -> list[AgentMessage]:
    out: list[AgentMessage] = [user("go")]
    out += read_turn("c1", "data/a.txt", read_result("c1", "a" * 2_000))
    out += read_turn("c2", "data/a.txt", dedup_result("c2", size=5_000))
    out += [assistant(read_call("c3", "data/b.txt"))]  # killed: no result ...
    out += [user("again")]  # ... and a later message
    out += read_turn("c4", "./data/b.txt", read_result("c4", "b" * 3_000))
    out += read_turn("c5", "data/b.txt", dedup_result("c5"))
    return out


def assert_same(kept: ViewBuilder, messages: list[AgentMessage], decisions: ContextDecisions) -> None:
    view = kept.apply(messages, decisions)
    fresh = ViewBuilder(CWD, BUILTIN).apply(messages, decisions)
    assert wire(view) == wire(fresh)
    assert view.tally.sums[: len(view) + 1] == tally_of(fresh).sums
    assert request_tokens(view, 100, tally=view.tally) == request_tokens(fresh, 100)
    assert (
        view.reads._reads == fresh.reads._reads == ReadIndex.of_view(fresh, CWD, decisions.stubs, tools=BUILTIN)._reads
    )


def test_extending_gives_what_a_build_from_scratch_gives_at_every_length() -> None:
    messages = session()
    kept = ViewBuilder(CWD, BUILTIN)
    for stop in range(len(messages) + 1):
        assert_same(kept, messages[:stop], ContextDecisions())


def test_new_stubs_or_another_start_are_built_again() -> None:
    messages = session()
    kept = ViewBuilder(CWD, BUILTIN)
    assert_same(kept, messages, ContextDecisions())
    pruned = ContextDecisions(stubs={"c1": "[Pruned: read data/a.txt]"})
    assert_same(kept, messages, pruned)  # c2's stub now points at nothing: a note
    assert "no longer in the context" in kept.apply(messages, pruned)[4].text()  # type: ignore[union-attr]
    assert_same(kept, [user("summary"), *messages[5:]], pruned)  # a compaction: a new start
    assert_same(kept, messages[:4], ContextDecisions())  # shorter: another branch
