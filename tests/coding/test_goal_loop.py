"""The goal loop inside one process, on the scripted ``faux`` provider: its state read
from the session (the fold, kept up to date one entry at a time, equals the whole path
read again), where a session stands for a resume, the evaluator steering a step and the
user's words replacing the continuation, no continuation while a permission question is
open, and sub-agents (offered the tool as their parent is, never looping)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from heron.agent.tools import ToolError
from heron.ai.providers.faux import FauxProvider, FauxReply, text
from heron.ai.types import AssistantMessage, Context, StopReason, TextContent, ToolCall, ToolResultMessage, UserMessage
from heron.coding.goal_evaluator import SYSTEM_PROMPT, parse_judgement, step_text
from heron.coding.goal_loop import _full, _step, resume_point
from heron.coding.settings import load_settings, settings_from_dict
from heron.context.continuity.goal_loop import (
    CONTINUATION_TEXT,
    EVALUATION_TYPE,
    VERDICT_TYPE,
    continuation,
    evaluation_data,
    verdict_data,
)
from heron.context.continuity.path_fold import PathFold
from heron.session.store import SessionStore
from tests.coding.test_subagents import Router, calls, make_session, project, task_call

__all__ = ["project"]

GOAL = "Every note file summarised in one line."


def answer(words: str, *calls_made: ToolCall, stop: StopReason = StopReason.STOP) -> AssistantMessage:
    content: list[TextContent | ToolCall] = [TextContent(text=words), *calls_made]
    return AssistantMessage(content=content, api="faux", provider="faux", model="faux-1", stop_reason=stop)


def user(words: str) -> UserMessage:
    return UserMessage(content=[TextContent(text=words)])


# --- the state on the path -----------------------------------------------------------------


def test_the_state_follows_verdicts_prompts_and_continuations(tmp_path: Path) -> None:
    store = SessionStore.in_memory(tmp_path)
    states = []
    fold: PathFold[object] = PathFold(_full, _step)

    def state():  # type: ignore[no-untyped-def]
        found = fold.get(store)
        assert found == _full(store)[0]  # one entry at a time == the whole path read again
        states.append(found)
        return found

    assert state().status == "none"
    store.append_custom("heron.goal", {"text": GOAL, "budget": None, "spent": 0})
    store.append_message(user("start"))
    store.append_message(answer("step 1"))
    store.append_message(continuation())
    store.append_message(continuation())
    now = state()
    assert (now.status, now.continuations, now.offers_tool) == ("active", 2, True)
    store.append_custom(VERDICT_TYPE, verdict_data("blocked", "need a key", "tool"))
    assert state().status == "blocked" and state().offers_tool
    store.append_message(user("here it is"))  # the user's answer takes the loop up again
    now = state()
    assert (now.status, now.continuations, now.verdict) == ("active", 0, None)
    store.append_custom(EVALUATION_TYPE, evaluation_data("step 2 is missing", "faux/judge"))
    assert state().evaluation is not None and state().evaluation.reason == "step 2 is missing"
    store.append_message(continuation(state().evaluation))
    assert state().evaluation is None and state().continuations == 1  # acted on: gone
    store.append_custom(VERDICT_TYPE, verdict_data("complete", "all ran", "tool"))
    store.append_message(answer("done"))
    assert state().status == "complete" and state().offers_tool  # the run that met it keeps the tool
    store.append_message(user("thanks"))
    assert state().status == "complete" and not state().offers_tool  # the user's next prompt does not
    store.append_custom("heron.goal", {"text": GOAL, "budget": 50_000, "spent": 900})  # the same goal again
    assert state().status == "complete" and not state().offers_tool  # (a budget's figure): its state stays
    store.append_custom("heron.goal", {"text": "A new goal.", "budget": None, "spent": 0})
    assert (state().status, state().offers_tool, state().continuations) == ("active", True, 0)
    store.append_custom("heron.goal", {"text": None})
    assert state().status == "none" and not state().offers_tool


def test_a_branch_reads_the_state_of_its_own_path(tmp_path: Path) -> None:
    store = SessionStore.in_memory(tmp_path)
    fold: PathFold[object] = PathFold(_full, _step)
    store.append_custom("heron.goal", {"text": GOAL, "budget": None, "spent": 0})
    fork_point = store.append_message(user("start")).id
    store.append_custom(VERDICT_TYPE, verdict_data("complete", "done", "tool"))
    assert fold.get(store).status == "complete"
    store.branch(fork_point)
    assert fold.get(store).status == "active"


def test_where_a_session_stands_for_a_resume() -> None:
    bash = ToolCall(id="c1", name="bash", arguments={"command": "ls"})
    done = answer("Step 1 done.")
    assert resume_point([user("start"), done]) == (done, [])
    asked = answer("", bash, stop=StopReason.TOOL_USE)
    assert resume_point([user("start"), asked]) == (asked, [bash])  # killed while the call ran
    result = ToolResultMessage(tool_call_id="c1", tool_name="bash", content=[TextContent(text="a")])
    assert resume_point([user("start"), asked, result]) == (None, [])
    assert resume_point([user("start"), done, continuation()]) == (None, [])
    failed = answer("", stop=StopReason.ERROR)
    assert resume_point([user("start"), done, failed]) == (done, [])  # a stop is never sent
    cut = answer("", ToolCall(id="c2", name="bash", arguments={}), stop=StopReason.ABORTED)
    cut_result = ToolResultMessage(tool_call_id="c2", tool_name="bash", content=[TextContent(text="aborted")])
    assert resume_point([user("start"), done, continuation(), cut, cut_result]) == (None, [])


# --- the evaluator ----------------------------------------------------------------------------


def test_the_evaluators_answer_is_read_leniently_and_never_raises() -> None:
    assert parse_judgement('```json\n{"met": true, "reason": "all ran"}\n```', "p/m").met
    judged = parse_judgement('{"met": false, "reason": "  step 2 missing "}', "p/m")
    assert (judged.met, judged.reason, judged.error) == (False, "step 2 missing", None)
    for bad in ("yes", '{"met": "yes"}', "{not json}"):
        judged = parse_judgement(bad, "p/m")
        assert not judged.met and judged.reason is None and judged.error is not None


def test_the_evaluator_sees_the_goal_and_the_step_only() -> None:
    bash = ToolCall(id="c1", name="bash", arguments={"command": "pytest -q"})
    result = ToolResultMessage(tool_call_id="c1", tool_name="bash", content=[TextContent(text="3 passed\nok")])
    shown = step_text(GOAL, [answer("", bash, stop=StopReason.TOOL_USE), result, answer("Tests pass.")])
    assert f"<goal>\n{GOAL}\n</goal>" in shown
    assert "- bash pytest -q -> 3 passed" in shown and "Tests pass." in shown


async def test_the_evaluators_reason_steers_the_next_step_and_met_ends_the_loop(
    project: Path, faux: FauxProvider
) -> None:
    seen: list[Context] = []
    verdicts = iter(['{"met": false, "reason": "the second note is not summarised"}', '{"met": true, "reason": "ok"}'])

    def reply(context: Context) -> FauxReply:
        seen.append(context)
        return text(next(verdicts) if context.system_prompt == SYSTEM_PROMPT else "a step")

    faux.set_fallback(reply)
    session = make_session(project, faux, settings={"goal": {"evaluator": "faux-1"}})
    session.goal.set(GOAL)
    events: list[object] = []
    session.subscribe(events.append)
    await session.prompt("start")
    work = [c for c in seen if c.system_prompt != SYSTEM_PROMPT]
    assert len(work) == 2 and len(seen) == 4
    steered = work[1].messages[-1]
    assert steered.text().startswith(CONTINUATION_TEXT)  # type: ignore[union-attr]
    assert "Not met yet, in the judgement of faux/faux-1: the second note is not summarised" in steered.text()  # type: ignore[union-attr]
    ends = [e for e in events if getattr(e, "type", "") == "goal_loop"]
    assert [(e.state, e.stop, e.evaluation) for e in ends] == [  # type: ignore[attr-defined]
        ("step", None, "the second note is not summarised"),
        ("end", "complete", None),
    ]
    assert ends[-1].evidence == "ok"  # type: ignore[attr-defined]


async def test_words_typed_meanwhile_replace_the_continuation(project: Path, faux: FauxProvider) -> None:
    seen: list[Context] = []
    session = make_session(project, faux, settings={"goal": {"evaluator": "faux-1", "maxTurns": 1}})

    def reply(context: Context) -> FauxReply:
        seen.append(context)
        if context.system_prompt == SYSTEM_PROMPT:
            if sum(c.system_prompt == SYSTEM_PROMPT for c in seen) == 1:
                session.steer("also count the words")  # typed while the evaluator judged
            return text('{"met": false, "reason": "not yet"}')
        return text("a step")

    faux.set_fallback(reply)
    session.goal.set(GOAL)
    await session.prompt("start")
    work = [c.messages[-1] for c in seen if c.system_prompt != SYSTEM_PROMPT]
    assert [m.text() for m in work[:2]] == ["start", "also count the words"]  # type: ignore[union-attr]
    assert work[2].text().startswith(CONTINUATION_TEXT)  # type: ignore[union-attr]
    assert len(work) == 3  # the user's words start a new allowance: one continuation after them


async def test_no_continuation_while_a_permission_question_is_open(project: Path, faux: FauxProvider) -> None:
    order: list[str] = []
    session = make_session(project, faux, settings={"goal": {"maxTurns": 1}})

    def answered() -> None:
        order.append("answered")
        session.control.questions_open -= 1

    def reply(context: Context) -> FauxReply:
        last = context.messages[-1]
        if isinstance(last, UserMessage) and last.text().startswith(CONTINUATION_TEXT):
            order.append("continuation")
        elif not order:
            session.control.questions_open += 1  # a question someone else asked, still open
            asyncio.get_running_loop().call_later(0.3, answered)
            order.append("asked")
        return text("a step")

    faux.set_fallback(reply)
    session.goal.set(GOAL)
    await session.prompt("start")
    assert order == ["asked", "answered", "continuation"]


# --- sub-agents and settings -------------------------------------------------------------------


async def test_a_forked_child_is_offered_the_tool_as_its_parent_is_and_never_loops(
    project: Path, faux: FauxProvider
) -> None:
    goal_call = ToolCall(id="g1", name="goal", arguments={"status": "complete", "evidence": "the child did it"})
    router = Router(
        faux,
        {
            "go": [calls(task_call("c1", "forked work", context="fork")), calls(goal_call), text("parent done")],
            "forked work": [text("done")],
        },
    )
    parent = make_session(project, faux)
    parent.goal.set(GOAL)
    added = await parent.prompt("go")
    assert added[-1].text() == "parent done"  # type: ignore[union-attr]
    [child] = router.requests["forked work"]  # one request: no loop in the child
    parents = router.requests["go"]
    assert [t.name for t in child.tools or []] == [t.name for t in parents[0].tools or []]
    assert "goal" in [t.name for t in child.tools or []]


def test_goal_settings_are_checked(tmp_path: Path) -> None:
    (tmp_path / "settings.json").write_text('{"goal": {"maxTurns": -1, "evaluator": 3}}')
    settings = load_settings(tmp_path / "nowhere", tmp_path)
    assert settings.goal.max_turns == 20 and settings.goal.evaluator is None
    assert any("goal.maxTurns" in w for w in settings.warnings)
    assert any("goal.evaluator" in w for w in settings.warnings)
    chosen = settings_from_dict({"goal": {"maxTurns": 0, "evaluator": "anthropic/claude-haiku-4-5"}})
    assert (chosen.goal.max_turns, chosen.goal.evaluator) == (0, "anthropic/claude-haiku-4-5")


@pytest.mark.parametrize("evidence", ["", "   "])
async def test_the_goal_tool_wants_evidence(project: Path, faux: FauxProvider, evidence: str) -> None:
    session = make_session(project, faux)
    session.goal.set(GOAL)
    with pytest.raises(ToolError, match="Give the evidence"):
        session.goal_loop._record_verdict("complete", evidence.strip())
    session.goal.clear()
    with pytest.raises(ToolError, match="No goal is set"):
        session.goal_loop._record_verdict("complete", "done")
    assert not [e for e in session.store.entries() if getattr(e, "custom_type", "") == VERDICT_TYPE]


def test_the_goal_tool_is_offered_last_and_only_while_the_goal_is_active(project: Path, faux: FauxProvider) -> None:
    session = make_session(project, faux)
    loop, agent = session.goal_loop, session.agent
    loop.sync_tools()
    assert "goal" not in [t.name for t in agent.state.tools]  # no goal
    session.goal.set(GOAL)
    loop.sync_tools()
    assert agent.state.tools[-1] is loop.tool
    found = session.tools[0]  # a tool added later (as an MCP search adds its finds)
    agent.set_tools([*agent.state.tools, found])
    loop.sync_tools()
    assert agent.state.tools[-2:] == [found, loop.tool]  # the order a resumed process builds
    session.goal_loop.max_turns = 0  # the loop off: the goal only leads the requests
    loop.sync_tools()
    assert loop.tool not in agent.state.tools
