"""Skills survive: the instructions of every skill invoked in a session, kept verbatim.

A skill is invoked by ``/skill:name`` (its body goes into the prompt) or by the model
reading its ``SKILL.md``. Either way the coding layer records the text the model saw as
a ``custom`` entry of type ``heron.skill`` (name, path, body). Read results of a
``SKILL.md`` are never pruned (:func:`is_skill_read`), and after a compaction the view
re-injects, after the summary, the body of every skill recorded before it whose text is
no longer in the kept messages - verbatim, within a budget (default 5,000 tokens a skill,
25,000 in all); a skill beyond it is named with its path and a note to read it again.
Everything comes from the session file, so one process and a resumed one send the same
bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from heron.agent.messages import AgentMessage
from heron.agent.tool_meta import ToolCatalog
from heron.ai.types import TextContent, ToolCall, ToolResultMessage, UserMessage
from heron.session.entries import CustomEntry, Entry

SKILL_CUSTOM_TYPE = "heron.skill"
SKILLS_MESSAGE_TYPE = "heron.skills"
SKILL_FILE = "SKILL.md"
SKILL_TOKENS = 5_000
SKILLS_TOKENS = 25_000
HEADER = "Skills you invoked earlier in this session; their instructions still apply (verbatim):"


@dataclass(frozen=True, slots=True)
class SkillUse:
    """A skill the model used, with the exact text it saw, so that a compaction can carry the
    skill forward unchanged."""

    name: str
    path: str
    body: str  # the text the model saw, exactly

    def to_data(self) -> dict[str, Any]:
        return {"name": self.name, "path": self.path, "body": self.body}


def skill_use(entry: Entry | None) -> SkillUse | None:
    if not isinstance(entry, CustomEntry) or entry.custom_type != SKILL_CUSTOM_TYPE:
        return None
    data = entry.data if isinstance(entry.data, dict) else {}
    name, path, body = data.get("name"), data.get("path"), data.get("body")
    if not (isinstance(name, str) and isinstance(path, str) and isinstance(body, str) and body):
        return None
    return SkillUse(name, path, body)


def is_skill_path(path: str) -> bool:
    return PurePath(path).name == SKILL_FILE


def is_skill_read(call: ToolCall | None, tools: ToolCatalog) -> bool:
    """A call of a ``read``-kind tool that reads a ``SKILL.md`` (its result is never pruned)."""
    if call is None or tools.kind(call.name) != "read":
        return False
    return any(use.access == "read" and is_skill_path(use.path) for use in tools.uses(call))


def read_body(path: str, text: str) -> str:
    """What a skill read by the model is kept as: the file's text as the read returned it."""
    return f'<skill-file path="{path}">\n{text}\n</skill-file>'


def skills_before(
    get: Callable[[str], Entry | None], ids: Sequence[str], types: Sequence[str], stop: int
) -> list[SkillUse]:
    """Skills recorded among the first ``stop`` entries of a path, each path once (its
    latest body), in the order of their latest use."""
    found: dict[str, SkillUse] = {}
    for index in range(stop):
        if types[index] != "custom":
            continue
        use = skill_use(get(ids[index]))
        if use is not None:
            found.pop(use.path, None)
            found[use.path] = use
    return list(found.values())


def _texts(messages: Sequence[AgentMessage]) -> list[str]:
    out: list[str] = []
    for message in messages:
        if isinstance(message, (UserMessage, ToolResultMessage)):
            content = message.content
            if isinstance(content, str):
                out.append(content)
            else:
                out.extend(block.text for block in content if isinstance(block, TextContent))
    return out


def render_skills(
    uses: Sequence[SkillUse],
    kept: Sequence[AgentMessage],
    *,
    per_skill: int = SKILL_TOKENS,
    total: int = SKILLS_TOKENS,
) -> str | None:
    """The block for ``uses`` whose text is not in ``kept`` (None: nothing to add). The
    most recent skills get the budget first; the block lists them in the order of use."""
    texts = _texts(kept)
    missing = [use for use in uses if not any(use.body in text for text in texts)]
    if not missing:
        return None
    room = total * 4
    shown: dict[str, bool] = {}
    for use in reversed(missing):
        fits = len(use.body) <= per_skill * 4 and len(use.body) <= room
        shown[use.path] = fits
        if fits:
            room -= len(use.body)
    parts = [HEADER]
    for use in missing:
        if shown[use.path]:
            parts.append(use.body)
        else:
            parts.append(
                f"- skill {use.name} ({use.path}): not repeated here, it is over the budget for skills; "
                "read that file again before following it."
            )
    return "\n\n".join(parts)
