"""Extension slash commands and prompt templates.

:class:`CommandRegistry` is ``session.extensions.commands``: what a front end consults
for ``/name`` (completion, help) and what :meth:`ExtensionHost.run_command` dispatches.
A command name another extension took first is refused with a message (the first one
keeps it). Extension templates join the session's :class:`TemplateSet`; a template file
of the same name (user or project) wins, since the user wrote it for this place.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from heron.coding.templates import PromptTemplate, TemplateSet, parse_template_command

if TYPE_CHECKING:  # the extension API loads with the first extension
    from heron.coding.extensions.api import ExtensionCommand, ExtensionTemplate


class CommandRegistry:
    def __init__(self) -> None:
        self._commands: dict[str, ExtensionCommand] = {}

    def add(self, commands: Iterable[ExtensionCommand]) -> list[str]:
        """Adds ``commands``; returns the problems (names already taken)."""
        problems: list[str] = []
        for command in commands:
            previous = self._commands.get(command.name)
            if previous is not None:
                problems.append(f"command /{command.name} is already extension {previous.extension}'s; not added")
                continue
            self._commands[command.name] = command
        return problems

    def get(self, name: str) -> ExtensionCommand | None:
        return self._commands.get(name)

    def match(self, text: str) -> tuple[ExtensionCommand, str] | None:
        """The command ``text`` invokes and its arguments, or None."""
        parsed = parse_template_command(text)
        if parsed is None:
            return None
        command = self._commands.get(parsed[0])
        return (command, parsed[1]) if command is not None else None

    def sorted(self) -> list[ExtensionCommand]:
        return [self._commands[name] for name in sorted(self._commands)]

    def names(self) -> list[tuple[str, str]]:
        """``(name, description)`` pairs, the shape the interactive completer takes."""
        return [(c.name, c.description or f"extension {c.extension}") for c in self.sorted()]

    def __len__(self) -> int:
        return len(self._commands)


def add_templates(templates: TemplateSet, new: Iterable[ExtensionTemplate], path: str, source: str) -> list[str]:
    problems: list[str] = []
    for template in new:
        existing = templates.get(template.name)
        if existing is not None:
            problems.append(f"template /{template.name} is already defined by {existing.path}; the file's is kept")
            continue
        description = template.description or template.body.strip().splitlines()[0][:80]
        templates.templates[template.name] = PromptTemplate(
            template.name,
            description,
            template.body.strip("\n"),
            Path(path),
            "project" if source == "project" else "user",
        )
    return problems
