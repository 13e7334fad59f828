"""A skill the model reads itself (its ``SKILL.md``) is recorded, never pruned, and comes
back verbatim after a compaction - in this process and in one that reopens the session."""

from __future__ import annotations

from pathlib import Path

from heron.ai.providers.faux import FauxProvider, text, tool_call
from heron.coding.runtime import CodingSession
from heron.context.continuity.kept_skills import SKILL_CUSTOM_TYPE, SKILLS_MESSAGE_TYPE
from heron.session.entries import CustomEntry
from heron.session.store import SessionStore
from tests.context.test_compaction import coding_session, proj, scripted

__all__ = ["proj"]

SKILL = "---\nname: lint\ndescription: How to lint.\n---\nRun ruff, then mypy. Never skip mypy.\n"


async def test_a_skill_read_by_the_model_survives_a_compaction(proj: Path, faux: FauxProvider) -> None:
    skill = proj / ".heron" / "skills" / "lint" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text(SKILL)
    scripted(
        faux,
        [
            tool_call("read", {"path": ".heron/skills/lint/SKILL.md"}),
            text("I will follow it."),
            *(text(f"step {n} " + "x" * 400) for n in range(4)),
        ],
    )
    session = coding_session(proj.parent, faux)
    await session.prompt("lint the project")
    for n in range(4):
        await session.prompt(f"go on {n}")
    recorded = [e for e in session.store.entries() if isinstance(e, CustomEntry) and e.custom_type == SKILL_CUSTOM_TYPE]
    assert len(recorded) == 1 and recorded[0].data["name"] == "lint"
    assert "Never skip mypy." in recorded[0].data["body"]
    end = await session.compact()
    assert end is not None
    block = next(m for m in session.messages if getattr(m, "custom_type", None) == SKILLS_MESSAGE_TYPE)
    assert recorded[0].data["body"] in block.content  # type: ignore[attr-defined]
    assert session.store.path is not None
    reopened = CodingSession(
        cwd=proj,
        model=session.model,
        store=SessionStore.open(session.store.path, read_only=True),
        home=session.home,
        settings=session.settings,
    )
    again = next(m for m in reopened.messages if getattr(m, "custom_type", None) == SKILLS_MESSAGE_TYPE)
    assert again.content == block.content  # type: ignore[attr-defined]
