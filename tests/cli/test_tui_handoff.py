"""``/handoff [focus]`` in the interactive mode: the child session opens with the draft in
the input box (nothing sent), its first request carries the frontier, not the transcript."""

from __future__ import annotations

from pathlib import Path

import pytest

from heron.ai.providers.faux import FauxProvider, text, tool_call
from heron.ai.types import UserMessage
from heron.cli.tui.controller import Controller
from heron.coding.handoff import DEFAULT_DRAFT, hand_off
from heron.coding.handoff_link import handoff_details, lineage
from heron.context.continuity.kept_plan import PLAN_CUSTOM_TYPE, plan_before
from heron.context.continuity.kept_skills import SKILL_CUSTOM_TYPE, SkillUse, skills_before
from tests.cli.tui_helpers import make_app, recording_console, submit

GOAL = "Keep the notes file tidy."
TODOS = [{"content": "sort the notes", "status": "pending"}]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "proj"
    path.mkdir()
    (path / "notes.txt").write_text("alpha\nbeta\n")
    return path


def controller_for(project: Path, home: Path, faux: FauxProvider, **kwargs: object) -> Controller:
    return Controller(make_app(project, home, faux, **kwargs), recording_console())  # type: ignore[arg-type]


async def test_handoff_opens_the_draft_for_editing_in_a_linked_child(
    project: Path, home: Path, faux: FauxProvider
) -> None:
    faux.queue(
        tool_call("todo", {"todos": TODOS}, text_before="Planning the old way."),
        tool_call("read", {"path": "notes.txt"}),
        text("read them"),
        text("sorted"),
    )
    c = controller_for(project, home, faux)
    await submit(c, f"/goal {GOAL}")
    await submit(c, "look at the notes")
    parent = c.session.store.path
    sent = len(faux.requests)

    out = await submit(c, "/handoff sort the notes now")
    child = c.session.store
    assert "handed off:" in out and child.path != parent
    assert child.header.parent_session == str(parent)
    assert c.take_prefill() == "sort the notes now"
    assert len(faux.requests) == sent  # the draft is not sent by itself
    assert "handed off from" in await submit(c, "/session")

    await submit(c, "sort the notes now")
    first = faux.requests[-1]
    said = "\n".join(m.text() for m in first.messages if isinstance(m, UserMessage))
    assert said.count(GOAL) == 1  # at the head only: the frontier message does not repeat it
    assert GOAL in said and "[pending] sort the notes" in said and "<read-files>\nnotes.txt" in said
    assert "Planning the old way." not in said and "look at the notes" in said  # the user's request, listed
    assert [m.role for m in first.messages] == ["user"] * len(first.messages)


async def test_handoff_without_focus_offers_the_default_draft(project: Path, home: Path, faux: FauxProvider) -> None:
    faux.queue(text("hi"))
    c = controller_for(project, home, faux)
    await submit(c, "hello")
    await submit(c, "/handoff")
    assert c.take_prefill() == DEFAULT_DRAFT


async def test_handoff_that_cannot_be_made_says_why(project: Path, home: Path, faux: FauxProvider) -> None:
    c = controller_for(project, home, faux)
    empty = c.session.store
    assert "nothing to hand off" in await submit(c, "/handoff")
    assert c.session.store is empty
    faux.queue(text("hi"))
    memory = controller_for(project, home, faux, in_memory=True)
    await submit(memory, "hello")
    assert "not recorded" in await submit(memory, "/handoff")
    assert not (home / "sessions").exists() or not list((home / "sessions").glob("**/*.jsonl"))


async def test_plan_and_skills_are_kept_as_entries_in_the_child(project: Path, home: Path, faux: FauxProvider) -> None:
    """So that a compaction in the child carries them on, as it would have in the parent."""
    faux.queue(text("hi"))
    c = controller_for(project, home, faux)
    await submit(c, "hello")
    c.session.store.append_custom(PLAN_CUSTOM_TYPE, {"text": "1. sort\n2. dedupe"})
    use = SkillUse("tidy", str(project / "skills" / "tidy" / "SKILL.md"), "Always sort first.")
    c.session.store.append_custom(SKILL_CUSTOM_TYPE, use.to_data())
    made = hand_off(c.session, None)
    child = made.child
    ids, types = child.lineage(child.leaf_id)
    assert plan_before(child.get, ids, types, len(ids)) == "1. sort\n2. dedupe"
    assert skills_before(child.get, ids, types, len(ids)) == [use]
    assert "1. sort\n2. dedupe" in made.frontier and "Always sort first." in made.frontier
    assert handoff_details(child) is not None and handoff_details(c.session.store) is None
    assert lineage(child) == (c.session.store.session_id,)
    child.close()
