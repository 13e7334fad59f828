"""The goal and sub-agents: an isolated child gets it only when the parent passes it
(``goal: true``), a forked child always has it (the fork copies the path)."""

from __future__ import annotations

from pathlib import Path

from heron.ai.providers.faux import FauxProvider, text
from heron.context.goal import Goal, render_goal
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
