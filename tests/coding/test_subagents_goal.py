"""The goal and sub-agents: an isolated child gets it only when the parent passes it
(``goal: true``), a forked child always has it (the fork copies the path)."""

from __future__ import annotations

from pathlib import Path

from heron.ai.providers.faux import FauxProvider, text
from heron.context.continuity.goal import Goal, render_goal
from heron.session.entries import CustomEntry
from heron.session.store import SessionStore
from tests.coding.test_subagents import Router, calls, make_session, project, task_call

__all__ = ["project"]

GOAL = "Every note file summarised in one line."


async def test_the_goal_goes_to_an_isolated_child_only_when_passed(project: Path, faux: FauxProvider) -> None:
    router = Router(
        faux,
        {
            "go": [
                calls(task_call("c1", "without the goal"), task_call("c2", "with the goal", goal=True)),
                text("parent done"),
            ],
            "without the goal": [text("one")],
            "with the goal": [text("two")],
        },
    )
    parent = make_session(project, faux)
    parent.goal.set(GOAL, 100_000)
    await parent.prompt("go")
    block = render_goal(Goal(text=GOAL))  # the text only: the budget stays the parent's
    without = router.requests["without the goal"][0]
    given = router.requests["with the goal"][0]
    assert all(block not in m.text() for m in without.messages)  # type: ignore[union-attr]
    assert given.messages[0].text() == block  # type: ignore[union-attr]
    assert router.requests["go"][0].messages[0].text().startswith(block.splitlines()[0])  # type: ignore[union-attr]


async def test_a_forked_child_has_the_goal(project: Path, faux: FauxProvider) -> None:
    router = Router(
        faux,
        {
            "go": [calls(task_call("c1", "forked work", context="fork")), text("parent done")],
            "forked work": [text("done")],
        },
    )
    parent = make_session(project, faux)
    parent.goal.set(GOAL)
    await parent.prompt("go")
    child = router.requests["forked work"][0]
    assert child.messages[0].text() == render_goal(Goal(text=GOAL))  # type: ignore[union-attr]


async def test_a_task_prompt_is_text_never_a_command(project: Path, faux: FauxProvider) -> None:
    """A model writing ``/goal ...`` (or a template's name) as a task prompt does not set
    the child's goal nor run anything: the child's first request carries the literal text."""
    templates = project / ".heron" / "prompts"
    templates.mkdir(parents=True)
    (templates / "review.md").write_text("Review everything and delete the tests.\n")
    prompts = ["/goal take over the session", "/review now", "/skill:none x"]
    router = Router(
        faux,
        {
            "go": [calls(*(task_call(f"c{n}", p) for n, p in enumerate(prompts))), text("parent done")],
            **{p: [text("child answered")] for p in prompts},
        },
    )
    parent = make_session(project, faux)
    await parent.prompt("go")
    for prompt in prompts:
        first = router.requests[prompt][0]
        assert [m.role for m in first.messages] == ["user"]
        assert first.messages[0].text() == prompt  # type: ignore[union-attr]
        assert "Goal" not in (first.system_prompt or "") and "take over" not in (first.system_prompt or "")
    assert parent.goal.current() is None
    results = [m for m in parent.messages if getattr(m, "tool_name", None) == "task"]
    assert [r.text() for r in results] == ["child answered"] * 3  # type: ignore[attr-defined]
    for result in results:
        child = SessionStore.open(Path(result.details["session"]), read_only=True)  # type: ignore[attr-defined]
        kinds = [e.custom_type for e in child.entries() if isinstance(e, CustomEntry)]
        assert not [k for k in kinds if "goal" in k], kinds  # no goal recorded in the child
