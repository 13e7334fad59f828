"""The frontier in the view: the goal at the head of every request; plan, skills and recent
steps after a compaction - all from the session path, the same bytes for every reader."""

from __future__ import annotations

from pathlib import Path

import pytest

from heron.ai.types import ToolCall, ToolResultMessage
from heron.context.continuity.frontier import FrontierSettings
from heron.context.continuity.goal import (
    GOAL_CUSTOM_TYPE,
    Goal,
    GoalError,
    check_text,
    goal_on_path,
    parse_budget,
    render_goal,
    spent_on_path,
)
from heron.context.continuity.kept_plan import PLAN_CUSTOM_TYPE
from heron.context.continuity.kept_skills import SKILL_CUSTOM_TYPE, SkillUse, is_skill_read, render_skills, skill_use
from heron.context.continuity.recent_steps import HEADER as STEPS_HEADER
from heron.context.pruning.prune import prune_step
from heron.context.view.build import session_messages
from heron.session.entries import CustomEntry
from heron.session.store import SessionStore
from tests.context.test_view import assistant, read_call, read_result, texts, user
from tests.support.tools import BUILTIN

CWD = Path("/tmp/frontier-project")


@pytest.mark.parametrize(
    ("raw", "tokens"),
    [("200000", 200_000), ("200_000", 200_000), ("200,000", 200_000), ("200k", 200_000), ("1.5m", 1_500_000)],
)
def test_budgets_are_read_in_the_usual_spellings(raw: str, tokens: int) -> None:
    assert parse_budget(raw) == tokens


@pytest.mark.parametrize(("raw", "said"), [("lots", "invalid token budget"), ("-5k", "invalid"), ("12", "too small")])
def test_bad_budgets_are_refused_with_what_to_type(raw: str, said: str) -> None:
    with pytest.raises(GoalError, match=said):
        parse_budget(raw)


def test_an_empty_goal_is_refused() -> None:
    with pytest.raises(GoalError, match="the goal is empty"):
        check_text("  \n ")
    with pytest.raises(GoalError, match="at most"):
        check_text("x" * 5_000)


def session_with_goal() -> SessionStore:
    store = SessionStore.in_memory(CWD)
    store.append_message(user("first", 1))
    store.append_custom(GOAL_CUSTOM_TYPE, Goal(text="Ship it.", budget=10_000).to_data())
    return store


def test_the_goal_leads_every_view_and_counts_its_spending() -> None:
    store = session_with_goal()
    reply = assistant(text="ok", ts=5)
    reply.usage.total_tokens = 1_234
    store.append_message(reply)
    view = session_messages(store, store.leaf_id)
    assert texts(view)[0] == "heron.goal:" + render_goal(Goal(text="Ship it.", budget=10_000))
    assert texts(view)[1:] == ["user:first", "assistant:ok"]
    ids, types = store.lineage(store.leaf_id)
    goal, index = goal_on_path(store.get, ids, types)
    assert goal is not None and spent_on_path(goal, store.get, ids, types, index) == 1_234
    store.append_custom(GOAL_CUSTOM_TYPE, {"text": None})
    assert texts(session_messages(store, store.leaf_id)) == ["user:first", "assistant:ok"]


def compacted_session(skill_body: str = "<skill>follow the steps</skill>") -> SessionStore:
    """u1 a1(read SKILL.md) r1 a2(bash) r2 | plan, skill | u3 a3 -- compaction keeping from u3."""
    store = SessionStore.in_memory(CWD)
    store.append_custom(GOAL_CUSTOM_TYPE, Goal(text="Ship it.").to_data())
    store.append_message(user("use the deploy skill", 1))
    store.append_message(assistant(read_call("c1", ".heron/skills/deploy/SKILL.md"), ts=2))
    store.append_custom(SKILL_CUSTOM_TYPE, {"name": "deploy", "path": "/p/SKILL.md", "body": skill_body})
    store.append_message(read_result("c1", skill_body))
    store.append_message(assistant(ToolCall(id="c2", name="bash", arguments={"command": "make test"}), ts=4))
    store.append_message(ToolResultMessage(tool_call_id="c2", tool_name="bash", content=[], is_error=True, timestamp=4))
    store.append_custom(PLAN_CUSTOM_TYPE, {"text": "1. test\n2. tag\n3. deploy"})
    kept = store.append_message(user("now deploy", 6)).id
    store.append_message(assistant(text="deploying", ts=7))
    store.append_compaction("the summary", kept, 5_000, details={})
    return store


def test_after_a_compaction_plan_skills_and_steps_follow_the_summary_verbatim() -> None:
    store = compacted_session()
    view = texts(session_messages(store, store.leaf_id))
    assert view[0].startswith("heron.goal:")
    assert view[1] == "summary:the summary"
    assert view[2].startswith("heron.plan:") and "<plan>\n1. test\n2. tag\n3. deploy\n</plan>" in view[2]
    assert view[3].startswith("heron.skills:") and view[3].endswith("\n\n<skill>follow the steps</skill>")
    assert view[4] == (
        f"heron.recent-steps:{STEPS_HEADER}\n"
        "- read .heron/skills/deploy/SKILL.md -> <skill>follow the steps</skill>\n"
        "- bash make test -> error: (no output)"
    )
    assert view[5:] == ["user:now deploy", "assistant:deploying"]
    # a second reader (a restart) renders the same bytes
    again = SessionStore.in_memory(CWD)
    for entry in store.entries():
        again.adopt(entry)
    assert texts(session_messages(again, store.leaf_id)) == view


def test_no_recent_steps_when_the_setting_is_zero() -> None:
    store = compacted_session()
    view = texts(session_messages(store, store.leaf_id, FrontierSettings(recent_steps=0)))
    assert not any(t.startswith("heron.recent-steps:") for t in view)


def test_skills_over_their_budget_are_named_with_their_path() -> None:
    store = compacted_session("<skill>" + "x" * 30_000 + "</skill>")
    view = texts(session_messages(store, store.leaf_id))
    block = next(t for t in view if t.startswith("heron.skills:"))
    assert "x" * 100 not in block
    assert "- skill deploy (/p/SKILL.md): not repeated here, it is over the budget" in block


def test_the_total_budget_keeps_the_most_recent_skills() -> None:
    uses = [skill_use_of(f"s{n}", "b" * 8_000) for n in range(4)]  # 2,000 tokens each
    block = render_skills(uses, [], per_skill=5_000, total=5_000)
    assert block is not None
    assert block.count("b" * 8_000) == 2
    assert "- skill s0 (/p/s0/SKILL.md)" in block and "- skill s1 (/p/s1/SKILL.md)" in block


def skill_use_of(name: str, body: str) -> SkillUse:
    entry = CustomEntry(custom_type=SKILL_CUSTOM_TYPE, data={"name": name, "path": f"/p/{name}/SKILL.md", "body": body})
    use = skill_use(entry)
    assert use is not None
    return use


def test_a_skill_read_is_never_pruned() -> None:
    call = read_call("c1", "/p/deploy/SKILL.md")
    other = read_call("c2", "/p/notes.md")
    assert is_skill_read(call, BUILTIN) and not is_skill_read(other, BUILTIN)
    messages = [
        user("go", 1),
        assistant(call, ts=2),
        read_result("c1", "s" * 5_000),
        assistant(other, ts=3),
        read_result("c2", "n" * 5_000),
        *(m for n in range(4) for m in (assistant(text=f"a{n}", ts=4 + n), user(f"u{n}", 4 + n))),
    ]
    stubs, _ = prune_step(messages, {}, keep_turns=1, tools=BUILTIN)
    assert set(stubs) == {"c2"}


def test_a_compaction_reads_the_entries_before_it_once_and_each_branch_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Sizing the new view (before the write) and building it from the file (after) read
    # the same entries; a branch with another plan, or another session, is read again.
    import heron.context.continuity.frontier as frontier

    reads: list[int] = []
    real = frontier.plan_before

    def plan_before(*args: object) -> str | None:
        reads.append(1)
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(frontier, "plan_before", plan_before)
    store = compacted_session()
    ids, types = store.lineage(store.leaf_id)
    at = len(ids) - 1  # the compaction
    first = frontier.compaction_frontier(store.get, ids, types, at, [], 0, FrontierSettings())
    again = frontier.compaction_frontier(store.get, ids[:at], types[:at], at, [], 0, FrontierSettings())
    assert [m.content for m in again] == [m.content for m in first] and len(reads) == 1

    plans = [e for e in store.entries() if isinstance(e, CustomEntry) and e.custom_type == PLAN_CUSTOM_TYPE]
    parent = store.parent_id_of(plans[0].id)
    assert parent is not None
    store.branch(parent)
    store.append_custom(PLAN_CUSTOM_TYPE, {"text": "another plan"})
    ids2, types2 = store.lineage(store.leaf_id)
    other = frontier.compaction_frontier(store.get, ids2, types2, len(ids2), [], 0, FrontierSettings())
    assert "another plan" in str(other[0].content) and len(reads) == 2

    copy = SessionStore.in_memory(CWD)
    for entry in store.entries():
        copy.adopt(entry)
    frontier.compaction_frontier(copy.get, ids2, types2, len(ids2), [], 0, FrontierSettings())
    assert len(reads) == 3
