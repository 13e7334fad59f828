"""Pruning replaces old tool results with deterministic stubs, in steps, in memory only."""

from __future__ import annotations

import copy

from heron.ai.types import AssistantMessage, StopReason, TextContent, ToolCall, ToolResultMessage, UserMessage
from heron.context.pruning.prune import MIN_PRUNE_CHARS, PruneState, apply_pruning, extend_pruning, prunable
from tests.support.tools import BUILTIN


def turn(i: int, tool: str = "read", args: dict[str, object] | None = None, size: int = 2_000) -> list[object]:
    call = ToolCall(id=f"c{i}", name=tool, arguments=args or {"path": f"src/f{i}.py"})
    assistant = AssistantMessage(
        api="faux", provider="faux", model="m", content=[call], stop_reason=StopReason.TOOL_USE, timestamp=i
    )
    result = ToolResultMessage(
        tool_call_id=f"c{i}", tool_name=tool, content=[TextContent(text="x" * size)], timestamp=i
    )
    return [assistant, result]


def session(turns: int) -> list[object]:
    messages: list[object] = [UserMessage(content="go", timestamp=0)]
    for i in range(turns):
        messages += turn(i)
    return messages


def test_only_results_older_than_the_last_turns_are_prunable() -> None:
    messages = session(6)
    indices = prunable(messages, keep_turns=3)
    assert [messages[i].tool_call_id for i in indices] == ["c0", "c1", "c2"]  # type: ignore[attr-defined]
    assert prunable(session(3), keep_turns=3) == []


def test_small_results_are_left_alone() -> None:
    messages: list[object] = [UserMessage(content="go")]
    for i in range(5):
        messages += turn(i, size=MIN_PRUNE_CHARS - 1)
    assert prunable(messages, keep_turns=1) == []


def test_stubs_say_what_was_there_and_how_to_get_it_back() -> None:
    messages: list[object] = [UserMessage(content="go")]
    messages += turn(0, "read", {"path": "src/app.py", "offset": 10, "limit": 50})
    messages += turn(1, "bash", {"command": "pytest -q"})
    messages += turn(2, "grep", {"pattern": "TODO"})
    messages += turn(3, "bash", {"command": "make"})
    messages[-1].details = {"full_output_path": "/tmp/out.log"}  # type: ignore[attr-defined]
    messages += turn(4) + turn(5) + turn(6)
    state = PruneState()
    records = extend_pruning(messages, state, keep_turns=3, tools=BUILTIN)
    texts = {cid: stub.text() for cid, stub in state.stubs.items()}
    assert texts["c0"] == (
        "[Pruned from the context to save space: the result of read src/app.py (2,000 chars, 1 lines). "
        "Read src/app.py with offset=10 limit=50 again if you need it. search_history finds it too.]"
    )
    assert texts["c1"].endswith("Re-run the command if you need its output. search_history finds it too.]")
    assert "bash `pytest -q`" in texts["c1"]
    assert 'grep "TODO"' in texts["c2"] and texts["c2"].endswith(
        "Run grep again if you need the listing. search_history finds it too.]"
    )
    assert texts["c3"].endswith(
        "The full output is saved in /tmp/out.log; read it (with offset/limit) if you need it. "
        "search_history finds it too.]"
    )
    assert [r.ref for r in records] == ["c0", "c1", "c2", "c3"]
    assert all(r.kind == "prune" and r.chars_before == 2_000 and r.chars_after < 300 for r in records)


def test_pruning_is_in_memory_and_deterministic() -> None:
    messages = session(8)
    original = copy.deepcopy(messages)
    state = PruneState()
    extend_pruning(messages, state, keep_turns=3, tools=BUILTIN)
    first = apply_pruning(messages, state)
    second = apply_pruning(messages, state)
    assert messages == original  # the stored list is untouched
    assert [m is n for m, n in zip(first, second, strict=True)] == [True] * len(first)  # same objects reused
    again = PruneState()
    extend_pruning(copy.deepcopy(messages), again, keep_turns=3, tools=BUILTIN)
    assert [s.text() for s in again.stubs.values()] == [s.text() for s in state.stubs.values()]


def test_pruning_moves_in_steps() -> None:
    messages = session(8)
    state = PruneState()
    assert len(extend_pruning(messages, state, keep_turns=3, tools=BUILTIN)) == 5
    before = apply_pruning(messages, state)
    messages += turn(8)  # a new turn: nothing changes until the next step is taken
    after = apply_pruning(messages, state)
    assert after[: len(before)] == before
    assert len(extend_pruning(messages, state, keep_turns=3, tools=BUILTIN)) == 1
    assert extend_pruning(messages, state, keep_turns=3, tools=BUILTIN) == []


def test_stub_keeps_the_pairing_and_error_flag() -> None:
    messages = session(5)
    messages[2].is_error = True  # type: ignore[attr-defined]
    state = PruneState()
    extend_pruning(messages, state, keep_turns=1, tools=BUILTIN)
    pruned = apply_pruning(messages, state)
    for original, new in zip(messages, pruned, strict=True):
        assert type(original) is type(new)
        if isinstance(new, ToolResultMessage):
            assert new.tool_call_id == original.tool_call_id  # type: ignore[attr-defined]
            assert new.is_error == original.is_error  # type: ignore[attr-defined]
    assert "(it was an error)" in pruned[2].text()  # type: ignore[attr-defined]
    state.reset()
    assert apply_pruning(messages, state) == messages


def test_a_step_too_small_to_pay_for_the_cache_miss_is_not_taken() -> None:
    messages = session(5)  # two prunable results of 2,000 chars: about 1,000 tokens to gain
    state = PruneState()
    assert extend_pruning(messages, state, keep_turns=3, min_saving_tokens=5_000, tools=BUILTIN) == []
    assert len(state) == 0
    assert len(extend_pruning(messages, state, keep_turns=3, min_saving_tokens=500, tools=BUILTIN)) == 2
