"""Each context rule (heron.context.rules.invariants) on a request that keeps it and one that breaks it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from heron.agent.messages import AgentMessage, CompactionSummaryMessage, ExtensionMessage
from heron.ai.types import (
    AssistantMessage,
    Context,
    Message,
    StopReason,
    TextContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from heron.context.rules.check_mode import mode_from
from heron.context.rules.invariants import (
    RULES,
    DedupHasReferent,
    FitsWindow,
    InjectedFirst,
    PrunedStaysPruned,
    RequestSnapshot,
    ToolPairing,
    TurnPromptPresent,
    Violation,
    ViolationLog,
    check_compaction,
    check_request,
)
from heron.context.view.build import GONE_PREFIX, REINJECTED_FILES_TYPE
from tests.support.tools import BUILTIN

CWD = Path("/work/project")
UNCHANGED = "[File unchanged since you last read it at 10:00:00; its content is already in the conversation above.]"


def user(text: str, ts: int = 1) -> UserMessage:
    return UserMessage(content=[TextContent(text=text)], timestamp=ts)


def assistant(
    *calls: ToolCall,
    text: str = "",
    ts: int = 2,
    usage: Usage | None = None,
    stop: StopReason | None = None,
    model: str = "faux-1",
) -> AssistantMessage:
    content: list[Any] = [TextContent(text=text)] if text else []
    content += list(calls)
    reason = stop or (StopReason.TOOL_USE if calls else StopReason.STOP)
    return AssistantMessage(
        api="faux",
        provider="faux",
        model=model,
        content=content,
        stop_reason=reason,
        usage=usage or Usage(),
        timestamp=ts,
    )


def call(call_id: str, name: str = "read", **arguments: Any) -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=arguments or {"path": "a.py"})


def result(call_id: str, text: str = "ok", name: str = "read", details: Any = None) -> ToolResultMessage:
    return ToolResultMessage(
        tool_call_id=call_id, tool_name=name, content=[TextContent(text=text)], details=details, timestamp=3
    )


def whole(call_id: str, text: str = "content", mtime: int = 100, size: int = 7) -> ToolResultMessage:
    return result(call_id, text, details={"path": "a.py", "mtime_ns": mtime, "size": size})


def dedup(call_id: str, mtime: int = 100, size: int = 7, text: str = UNCHANGED) -> ToolResultMessage:
    return result(call_id, text, details={"path": "a.py", "kind": "unchanged", "mtime_ns": mtime, "size": size})


def llm(view: Sequence[AgentMessage]) -> list[Message]:
    """What the provider would get: the LLM messages (summaries and injected blocks as user text)."""
    out: list[Message] = []
    for message in view:
        if isinstance(message, UserMessage | AssistantMessage | ToolResultMessage):
            out.append(message)
        elif isinstance(message, CompactionSummaryMessage):
            out.append(UserMessage(content=[TextContent(text=message.summary)], timestamp=message.timestamp))
        elif isinstance(message, ExtensionMessage):
            text = message.content if isinstance(message.content, str) else ""
            out.append(UserMessage(content=[TextContent(text=text)], timestamp=message.timestamp))
    return out


def snapshot(
    view: Sequence[AgentMessage],
    *,
    messages: Sequence[Message] | None = None,
    system: str = "You are heron.",
    tools: Sequence[Tool] = (),
    max_tokens: int = 1_000,
    window: int = 10_000,
    reserve: int = 2_000,
    stubs: Mapping[str, str] | None = None,
    turn_prompt: UserMessage | None = None,
    floor_ms: int = 0,
    model: tuple[str, str] | None = ("faux", "faux-1"),
    over: str | None = None,
) -> RequestSnapshot:
    context = Context(
        system_prompt=system, messages=list(messages if messages is not None else llm(view)), tools=list(tools)
    )
    return RequestSnapshot(
        view=view,
        context=context,
        max_tokens=max_tokens,
        window=window,
        reserve=reserve,
        stubs=stubs or {},
        cwd=CWD,
        turn_prompt=turn_prompt,
        floor_ms=floor_ms,
        model=model,
        over_threshold_reason=over,
        tools=BUILTIN,
    )


# --- a. fits-window -----------------------------------------------------------------------------------------


def test_a_small_request_fits() -> None:
    assert FitsWindow().check(snapshot([user("hello")])) == []


def test_a_request_over_window_minus_reserve_breaks_a() -> None:
    view = [user("x" * 4 * 8_500)]  # 8,500 tokens > 10,000 - 2,000
    problems = FitsWindow().check(snapshot(view))
    assert len(problems) == 1 and "8,5" in problems[0] and "reserve 2,000" in problems[0]


def test_the_system_prompt_and_tools_count() -> None:
    view = [user("x" * 4 * 4_000)]
    assert FitsWindow().check(snapshot(view)) == []
    assert FitsWindow().check(snapshot(view, system="s" * 4 * 4_500)) != []
    tool = Tool(name="big", description="d" * 4 * 4_500)
    assert FitsWindow().check(snapshot(view, tools=[tool])) != []


def test_over_the_threshold_is_allowed_when_the_policy_said_why_but_never_over_the_window() -> None:
    view = [user("x" * 4 * 8_500)]
    assert FitsWindow().check(snapshot(view, over="the kept recent messages alone exceed the threshold")) == []
    problems = FitsWindow().check(snapshot(view, over="nothing left", max_tokens=2_000))
    assert len(problems) == 1 and "output cap 2,000" in problems[0]


def test_the_output_cap_counts_with_the_input() -> None:
    view = [user("x" * 4 * 6_900)]  # 6,900 + the system prompt's few tokens
    assert FitsWindow().check(snapshot(view, max_tokens=3_000)) == []
    assert any("output cap" in p for p in FitsWindow().check(snapshot(view, max_tokens=3_200)))


def test_the_usage_anchor_counts_only_when_nothing_changed_before_it() -> None:
    # The provider measured 9,000 tokens for the request that produced this reply; the
    # estimate of the same messages is tiny.
    view = [user("hi", ts=1), assistant(text="hello", ts=10, usage=Usage(input=8_900, output=100)), user("more", 20)]
    assert FitsWindow().check(snapshot(view)) != []  # anchored: 9,000 + a few > 8,000
    assert FitsWindow().check(snapshot(view, floor_ms=15)) == []  # a prune step after it: estimated
    assert FitsWindow().check(snapshot(view, model=("faux", "other"))) == []  # another model's count


# --- b. dedup-has-referent ----------------------------------------------------------------------------------


def reads(*pairs: tuple[ToolCall, ToolResultMessage]) -> list[AgentMessage]:
    out: list[AgentMessage] = [user("go")]
    for c, r in pairs:
        out += [assistant(c), r]
    return out


def test_a_dedup_stub_with_its_content_earlier_keeps_b() -> None:
    view = reads((call("c1", path="a.py"), whole("c1")), (call("c2", path="./a.py"), dedup("c2")))
    assert DedupHasReferent().check(snapshot(view)) == []


def test_a_dedup_stub_without_its_content_breaks_b() -> None:
    view = reads((call("c2", path="a.py"), dedup("c2")))
    assert DedupHasReferent().check(snapshot(view)) == ["read c2: de-dup stub without that content earlier"]


def test_a_dedup_stub_whose_content_was_pruned_breaks_b() -> None:
    view = reads(
        (call("c1", path="a.py"), result("c1", "[Pruned]", details={"mtime_ns": 100, "size": 7})),
        (call("c2", path="a.py"), dedup("c2")),
    )
    assert DedupHasReferent().check(snapshot(view, stubs={"c1": "[Pruned]"})) != []


def test_a_dedup_stub_for_another_range_breaks_b() -> None:
    view = reads((call("c1", path="a.py", offset=1, limit=10), whole("c1")), (call("c2", path="a.py"), dedup("c2")))
    assert DedupHasReferent().check(snapshot(view)) != []


def test_a_dedup_stub_for_a_file_that_changed_breaks_b() -> None:
    view = reads((call("c1", path="a.py"), whole("c1", mtime=100)), (call("c2", path="a.py"), dedup("c2", mtime=200)))
    assert DedupHasReferent().check(snapshot(view)) == ["read c2: de-dup stub for a file that changed since"]


def test_the_gone_note_and_a_pruned_stub_keep_b() -> None:
    gone = dedup("c2", text=f"{GONE_PREFIX} of a.py, which is no longer in the context. Read a.py again.]")
    assert DedupHasReferent().check(snapshot(reads((call("c2", path="a.py"), gone)))) == []
    pruned = reads((call("c2", path="a.py"), dedup("c2", text="[Pruned]")))
    assert DedupHasReferent().check(snapshot(pruned, stubs={"c2": "[Pruned]"})) == []


# --- c. pruned-stays-pruned ---------------------------------------------------------------------------------


def test_a_pruned_result_with_its_stub_keeps_c() -> None:
    view = reads((call("c1"), result("c1", "[Pruned: read a.py]")))
    assert PrunedStaysPruned().check(snapshot(view, stubs={"c1": "[Pruned: read a.py]"})) == []


def test_a_pruned_result_sent_whole_or_with_another_stub_breaks_c() -> None:
    stubs = {"c1": "[Pruned: read a.py]"}
    whole_again = reads((call("c1"), result("c1", "the original content")))
    assert PrunedStaysPruned().check(snapshot(whole_again, stubs=stubs)) == [
        "result c1 was pruned but is sent without its stub"
    ]
    other_stub = reads((call("c1"), result("c1", "[Pruned: read a.py] ")))
    assert PrunedStaysPruned().check(snapshot(other_stub, stubs=stubs)) != []


# --- d. turn-prompt-present ---------------------------------------------------------------------------------


def test_the_turn_prompt_in_the_request_keeps_d() -> None:
    prompt = user("fix the bug", ts=5)
    view: list[AgentMessage] = [CompactionSummaryMessage(summary="s", timestamp=1), prompt, assistant(text="ok")]
    assert TurnPromptPresent().check(snapshot(view, turn_prompt=prompt)) == []
    # An equal message (the one loaded from the session) counts: verbatim, not the same object.
    copy = user("fix the bug", ts=5)
    assert TurnPromptPresent().check(snapshot([copy], turn_prompt=prompt)) == []
    assert TurnPromptPresent().check(snapshot([user("x")], turn_prompt=None)) == []  # no turn running


def test_a_missing_or_altered_turn_prompt_breaks_d() -> None:
    prompt = user("fix the bug")
    summary_only: list[AgentMessage] = [
        CompactionSummaryMessage(summary="The user asked: fix the bug"),
        assistant(text="ok"),
    ]
    assert TurnPromptPresent().check(snapshot(summary_only, turn_prompt=prompt)) == [
        "the turn's prompt is not in the request as its own user message"
    ]
    merged = [user("fix the bug\n\nFiles you were working on: ...")]
    assert TurnPromptPresent().check(snapshot(merged, turn_prompt=prompt)) != []
    as_string = [UserMessage(content="fix the bug!")]
    assert TurnPromptPresent().check(snapshot(as_string, turn_prompt=prompt)) != []


def test_a_prompt_given_as_a_string_matches_its_single_text_block() -> None:
    prompt = UserMessage(content="fix the bug")
    assert TurnPromptPresent().check(snapshot([user("fix the bug")], turn_prompt=prompt)) == []


# --- e. injected-first --------------------------------------------------------------------------------------


def block(custom_type: str = REINJECTED_FILES_TYPE) -> ExtensionMessage:
    return ExtensionMessage(custom_type=custom_type, content="Files ...", display=False, timestamp=2)


def test_injected_messages_before_the_kept_ones_keep_e() -> None:
    view: list[AgentMessage] = [CompactionSummaryMessage(summary="s"), block(), user("prompt"), assistant(text="a")]
    assert InjectedFirst().check(snapshot(view)) == []


def test_an_injected_message_after_a_kept_one_breaks_e() -> None:
    view: list[AgentMessage] = [
        CompactionSummaryMessage(summary="s"),
        user("prompt"),
        assistant(call("c1")),
        result("c1"),
        block(),
    ]
    assert InjectedFirst().check(snapshot(view)) == [f"injected message ({REINJECTED_FILES_TYPE}) after a kept message"]
    late_summary: list[AgentMessage] = [user("prompt"), CompactionSummaryMessage(summary="s")]
    assert InjectedFirst().check(snapshot(late_summary)) != []


def test_other_extension_messages_are_kept_messages() -> None:
    view: list[AgentMessage] = [CompactionSummaryMessage(summary="s"), block("some.extension"), user("p")]
    assert InjectedFirst().check(snapshot(view)) == []
    after: list[AgentMessage] = [CompactionSummaryMessage(summary="s"), block("some.extension"), block()]
    assert InjectedFirst().check(snapshot(after)) != []


# --- f. tool-pairing ----------------------------------------------------------------------------------------


def test_paired_calls_and_results_keep_f() -> None:
    view: list[AgentMessage] = [
        user("go"),
        assistant(call("c1"), call("c2")),
        result("c1"),
        result("c2"),
        assistant(text="done"),
    ]
    assert ToolPairing().check(snapshot(view)) == []


def test_a_call_without_a_result_breaks_f() -> None:
    at_end: list[AgentMessage] = [user("go"), assistant(call("c1"), call("c2")), result("c1")]
    assert ToolPairing().check(snapshot(at_end)) == ["tool call c2 has no result"]
    before_user: list[AgentMessage] = [user("go"), assistant(call("c1")), user("next")]
    assert ToolPairing().check(snapshot(before_user)) == ["tool call c1 has no result before the next user message"]
    before_assistant: list[AgentMessage] = [user("go"), assistant(call("c1")), assistant(text="x")]
    assert ToolPairing().check(snapshot(before_assistant)) == ["tool call c1 has no result"]


def test_a_result_without_its_call_or_before_it_breaks_f() -> None:
    orphan: list[AgentMessage] = [user("go"), result("c9")]
    assert ToolPairing().check(snapshot(orphan)) == ["tool result c9 has no call before it"]
    early: list[AgentMessage] = [user("go"), result("c1"), assistant(call("c1"))]
    problems = ToolPairing().check(snapshot(early))
    assert "tool result c1 has no call before it" in problems


def test_calls_of_a_failed_or_aborted_reply_need_no_result() -> None:
    for stop in (StopReason.ERROR, StopReason.ABORTED):
        view: list[AgentMessage] = [user("go"), assistant(call("c1"), stop=stop), user("again")]
        assert ToolPairing().check(snapshot(view)) == []


def test_pairing_is_checked_on_the_provider_messages_not_the_view() -> None:
    view: list[AgentMessage] = [user("go"), assistant(call("c1")), result("c1")]
    dropped = llm(view)[:2]  # a conversion step lost the result
    assert ToolPairing().check(snapshot(view, messages=dropped)) == ["tool call c1 has no result"]


# --- all rules together -------------------------------------------------------------------------------------


def test_the_rules_are_named_a_to_f() -> None:
    assert [rule.name.split(".")[0] for rule in RULES] == ["a", "b", "c", "d", "e", "f"]
    assert len({rule.name for rule in RULES}) == 6


def test_check_request_names_each_broken_rule() -> None:
    prompt = user("the prompt")
    view: list[AgentMessage] = [user("x" * 4 * 9_000), assistant(call("c1", path="a.py")), dedup("c1"), block()]
    violations = check_request(snapshot(view, turn_prompt=prompt, stubs={"c9": "[Pruned]"}))
    rules = sorted({v.rule for v in violations})
    assert rules == ["a.fits-window", "b.dedup-has-referent", "d.turn-prompt-present", "e.injected-first"]
    assert str(violations[0]).startswith("context invariant a.fits-window violated: ")


def test_a_good_request_breaks_no_rule() -> None:
    prompt = user("the prompt", ts=5)
    view: list[AgentMessage] = [
        CompactionSummaryMessage(summary="s"),
        block(),
        prompt,
        assistant(call("c1", path="a.py")),
        whole("c1"),
        assistant(call("c2", path="a.py")),
        dedup("c2"),
        assistant(call("c3", name="bash", command="make")),
        result("c3", "[Pruned: bash make]", name="bash"),
    ]
    assert check_request(snapshot(view, turn_prompt=prompt, stubs={"c3": "[Pruned: bash make]"})) == []


def test_check_request_with_chosen_rules() -> None:
    view: list[AgentMessage] = [user("go"), result("c9")]
    assert check_request(snapshot(view), rules=[InjectedFirst()]) == []
    assert check_request(snapshot(view), rules=[ToolPairing()]) == [
        Violation("f.tool-pairing", "tool result c9 has no call before it")
    ]


def test_violation_log_hands_over_what_it_saw_once() -> None:
    log = ViolationLog()
    log.add([Violation("a.fits-window", "too big")])
    assert log.take() == [Violation("a.fits-window", "too big")]
    assert log.take() == []


# --- compaction never grows the context ---------------------------------------------------------------------


@pytest.mark.parametrize(("before", "after"), [(5_200, 3_600), (5_000, 5_000), (1, 0)])
def test_a_compaction_that_does_not_grow_the_context_keeps_e(before: int, after: int) -> None:
    assert check_compaction(before, after) == []


def test_a_compaction_that_grows_the_context_breaks_e() -> None:
    violations = check_compaction(3_600, 5_200)
    assert violations == [Violation("e.compaction-shrinks", "compaction grew the context: 3,600 -> 5,200 tokens")]


# --- turning the checks on ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "setting", "mode"),
    [
        ("strict", False, "strict"),
        (" STRICT ", False, "strict"),
        ("1", False, "warn"),
        ("warn", False, "warn"),
        ("true", False, "warn"),
        ("yes", False, "warn"),
        ("on", False, "warn"),
        ("WARN", False, "warn"),
        ("0", True, "off"),
        ("off", True, "off"),
        ("false", True, "off"),
        ("no", True, "off"),
        ("", True, "warn"),
        ("", False, "off"),
        ("maybe", True, "warn"),
        ("maybe", False, "off"),
    ],
)
def test_mode_from_the_environment_then_the_setting(value: str, setting: bool, mode: str) -> None:
    assert mode_from(setting, {"HERON_CHECK_CONTEXT": value}) == mode


def test_mode_from_without_the_variable_is_the_setting() -> None:
    assert mode_from(True, {}) == "warn"
    assert mode_from(False, {}) == "off"


def test_mode_from_reads_the_process_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERON_CHECK_CONTEXT", "1")
    assert mode_from(False) == "warn"
    monkeypatch.delenv("HERON_CHECK_CONTEXT")
    assert mode_from(True) == "warn" and mode_from(False) == "off"


def test_the_check_invariants_setting_turns_checks_on(tmp_path: Path) -> None:
    from heron.coding.settings import read_settings_file, settings_from_dict

    settings_file = tmp_path / "settings.json"
    settings_file.write_text('{"context": {"checkInvariants": true}}')
    warnings: list[str] = []
    data = read_settings_file(settings_file, warnings)
    assert data is not None and warnings == []
    settings = settings_from_dict(data)
    assert mode_from(bool(getattr(settings, "check_invariants", False)), {}) == "warn"
