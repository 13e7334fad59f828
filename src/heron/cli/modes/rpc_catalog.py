"""``get_commands``: the ``/name`` commands a client can send through ``prompt``, in pi's
shape (``name``, ``description``, ``source``, ``sourceInfo``). Editor adapters built on
pi's ``RpcClient`` call it to fill their command menus; an error answer would make
``RpcClient.getCommands()`` throw, so heron lists what it really expands: extension
commands, prompt templates and skills (``skill:<name>``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from heron.coding.extensions import ExtensionHost
    from heron.coding.skills import SkillSet
    from heron.coding.templates import TemplateSet

# Where heron found a skill -> pi's scope words (a skill given by a flag lives only for this run).
_SKILL_SCOPE = {"user": "user", "project": "project", "agents": "project", "path": "temporary"}


class Commanded(Protocol):
    """Where a session's ``/name`` commands come from: extensions, templates, skills."""

    @property
    def extensions(self) -> ExtensionHost: ...

    @property
    def templates(self) -> TemplateSet: ...

    @property
    def skills(self) -> SkillSet: ...


def discoverable_commands(session: Commanded) -> list[dict[str, Any]]:
    """Extension commands first, then templates, then skills, as pi orders them."""
    out: list[dict[str, Any]] = []
    extensions = {extension.name: extension for extension in session.extensions.extensions}
    for command in session.extensions.command_list():
        extension = extensions.get(command.extension)
        info = {
            "path": extension.path if extension else command.extension,
            "source": "local",
            "scope": extension.source if extension else "project",
            "origin": "top-level",
        }
        out.append(
            {"name": command.name, "description": command.description, "source": "extension", "sourceInfo": info}
        )
    for template in session.templates.sorted():
        out.append(
            {
                "name": template.name,
                "description": template.description,
                "source": "prompt",
                "sourceInfo": {
                    "path": str(template.path),
                    "source": "local",
                    "scope": template.source,
                    "origin": "top-level",
                },
            }
        )
    for skill in session.skills.skills:
        out.append(
            {
                "name": f"skill:{skill.name}",
                "description": skill.description,
                "source": "skill",
                "sourceInfo": {
                    "path": str(skill.file_path),
                    "source": "cli" if skill.source == "path" else "local",
                    "scope": _SKILL_SCOPE.get(skill.source, "project"),
                    "origin": "top-level",
                    "baseDir": str(skill.base_dir),
                },
            }
        )
    return out
