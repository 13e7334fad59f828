"""``/goal`` in the interactive mode: answered by the session (no model call), shown in the
footer and the status bar, refused while a run works."""

from __future__ import annotations

from pathlib import Path

from heron.ai.providers.faux import FauxProvider, text, tool_call
from tests.cli.test_tui_controller import controller_for, project, wait_until
from tests.cli.tui_helpers import output, submit

__all__ = ["project"]


async def test_goal_is_set_shown_in_the_footer_and_sent(project: Path, home: Path, faux: FauxProvider) -> None:
    c = controller_for(project, home, faux)
    out = await submit(c, "/goal --budget 100k Make the tests pass")
    assert "Goal set." in out and "budget: 0 of 100,000 tokens spent" in out
    assert faux.requests == []
    faux.queue(text("on it"))
    out = await submit(c, "start")
    assert "goal: Make the tests pass" in out
    assert c.goal_status is not None and c.goal_status.startswith("goal: Make the tests pass")
    first = faux.requests[-1].messages[0]
    assert "<goal>\nMake the tests pass\n</goal>" in first.text()  # type: ignore[union-attr]
    out = await submit(c, "/goal --budget abc")
    assert "invalid token budget 'abc'" in out


async def test_goal_waits_for_the_run(project: Path, home: Path, faux: FauxProvider) -> None:
    faux.queue(tool_call("bash", {"command": "sleep 0.4"}), text("done"))
    c = controller_for(project, home, faux)
    await c.submit("start")
    await wait_until(lambda: c.renderer.activity.startswith("bash"))
    await c.submit("/goal ship it")
    assert "/goal waits until the run ends" in output(c.console)
    await c.wait()
    assert c.session.goal.current() is None
