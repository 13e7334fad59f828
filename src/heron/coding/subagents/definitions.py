"""Agent definitions: markdown files with YAML front matter that describe a sub-agent.

Looked for in ``$HERON_HOME/agents/`` (the user's), then ``.heron/agents/`` and
``.claude/agents/`` of the project; a later directory wins for the same name, so a
project can override a user's definition. Claude Code's files are read as they are:
their tool names (``Read``, ``Glob``, ``TodoWrite``...) are mapped to heron's.

Front matter keys: ``name`` and ``description`` (required), ``tools`` (a comma list or a
YAML list; default: the parent's tools minus ``task``), ``model`` (optional; default:
the parent's) and ``skills`` (names of skills whose content is given to the child as its
first user message). The body is the child's system prompt.

A file that cannot be used is skipped and reported with the reason; the reason is kept
by name, so a ``task`` call that names a skipped definition is told why it is missing.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from heron.ai.models import heron_home
from heron.coding.tools import ALL_TOOLS

log = logging.getLogger(__name__)

TASK_TOOL = "task"

# Claude Code's tool names -> heron's (what a .claude/agents file lists).
CLAUDE_TOOL_NAMES: dict[str, str] = {
    "read": "read",
    "write": "write",
    "edit": "edit",
    "multiedit": "edit",
    "bash": "bash",
    "grep": "grep",
    "glob": "find",
    "ls": "ls",
    "todowrite": "todo",
    "task": TASK_TOOL,
    "agent": TASK_TOOL,
}


@dataclass(frozen=True, slots=True)
class AgentDefinition:
    """One sub-agent type read from its definition file: the prompt, tools and model a
    ``task`` call of that type runs with."""

    name: str
    description: str
    path: Path
    system_prompt: str = ""
    tools: tuple[str, ...] | None = None  # None: the parent's minus task
    model: str | None = None
    skills: tuple[str, ...] = ()

    @property
    def allows_task(self) -> bool:
        return self.tools is not None and TASK_TOOL in self.tools


@dataclass(frozen=True, slots=True)
class DefinitionProblem:
    """Why a sub-agent definition file was skipped, reported to the user instead of failing
    the session."""

    path: Path
    reason: str
    name: str | None = None  # the name the file declared, when it got that far

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


@dataclass(slots=True)
class AgentDefinitions:
    """The usable definitions by name and the files that were skipped."""

    agents: dict[str, AgentDefinition] = field(default_factory=dict)
    problems: list[DefinitionProblem] = field(default_factory=list)

    def get(self, name: str) -> AgentDefinition | None:
        return self.agents.get(name)

    def why_missing(self, name: str) -> str:
        """The error a ``task`` call naming an unknown definition gets."""
        for problem in self.problems:
            if problem.name == name:
                return f"agent definition {name!r} was skipped: {problem.reason} ({problem.path})"
        available = ", ".join(sorted(self.agents)) or "none"
        return f"unknown agent {name!r} (available: {available})"


def agent_dirs(cwd: Path, home: Path | None = None) -> list[Path]:
    """Where definitions are looked for, lowest precedence first."""
    home = home if home is not None else heron_home()
    return [home / "agents", cwd / ".heron" / "agents", cwd / ".claude" / "agents"]


def _tool_list(raw: Any) -> tuple[str, ...]:
    if isinstance(raw, str):
        items = [part.strip() for part in raw.split(",")]
    elif isinstance(raw, list) and all(isinstance(item, str) for item in raw):
        items = [item.strip() for item in raw]
    else:
        raise ValueError("'tools' must be a comma-separated list of tool names")
    names: list[str] = []
    unknown: list[str] = []
    for item in items:
        if not item:
            continue
        name = item if item in ALL_TOOLS or item == TASK_TOOL else CLAUDE_TOOL_NAMES.get(item.lower())
        if name is None:
            unknown.append(item)
        elif name not in names:
            names.append(name)
    if unknown:
        known = ", ".join([*ALL_TOOLS, TASK_TOOL])
        raise ValueError(f"unknown tool(s) {', '.join(unknown)} (heron has: {known})")
    return tuple(names)


def _string_list(raw: Any, key: str) -> tuple[str, ...]:
    if raw is None:
        return ()
    if isinstance(raw, str):
        return tuple(part.strip() for part in raw.split(",") if part.strip())
    if isinstance(raw, list) and all(isinstance(item, str) for item in raw):
        return tuple(item.strip() for item in raw if item.strip())
    raise ValueError(f"{key!r} must be a comma-separated list of names")


def parse_definition(path: Path, text: str) -> AgentDefinition:
    """One definition file; raises ValueError with the reason it cannot be used."""
    from heron.coding.frontmatter import FrontMatterError, parse_front_matter  # with the first file, not at start

    try:
        front = parse_front_matter(text)
    except FrontMatterError as exc:
        raise ValueError(str(exc)) from exc
    if not front.present:
        raise ValueError("no YAML front matter (a '---' block with name and description)")
    data = front.data
    name, description = data.get("name"), data.get("description")
    if not isinstance(name, str) or not name.strip():
        raise ValueError("'name' is missing")
    if not isinstance(description, str) or not description.strip():
        raise _Named(name.strip(), "'description' is missing")
    try:
        tools = _tool_list(data["tools"]) if data.get("tools") is not None else None
        skills = _string_list(data.get("skills"), "skills")
    except ValueError as exc:
        raise _Named(name.strip(), str(exc)) from exc
    model = data.get("model")
    if model is not None and not isinstance(model, str):
        raise _Named(name.strip(), "'model' must be a model name")
    if isinstance(model, str) and model.strip().lower() in ("", "inherit"):
        model = None
    return AgentDefinition(
        name=name.strip(),
        description=" ".join(description.split()),
        path=path,
        system_prompt=front.body.strip(),
        tools=tools,
        model=model,
        skills=skills,
    )


class _Named(ValueError):
    """A reason, for a file that declared its name (so a task call naming it learns why)."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(reason)
        self.name = name


def load_definitions(cwd: Path, home: Path | None = None) -> AgentDefinitions:
    """Every definition found (see the module docstring); never raises for a bad file."""
    result = AgentDefinitions()
    for directory in agent_dirs(Path(os.path.abspath(cwd)), home):
        try:
            files = sorted(p for p in directory.iterdir() if p.suffix == ".md" and p.is_file())
        except OSError:
            continue
        for path in files:
            try:
                definition = parse_definition(path, path.read_text(encoding="utf-8"))
            except _Named as exc:
                result.problems.append(DefinitionProblem(path, str(exc), exc.name))
                result.agents.pop(exc.name, None)  # a broken override hides the one it meant to replace
                continue
            except (OSError, UnicodeDecodeError, ValueError) as exc:
                result.problems.append(DefinitionProblem(path, str(exc)))
                continue
            result.agents[definition.name] = definition
    for problem in result.problems:
        log.warning("agent definition skipped: %s", problem)
    return result


def listing_lines(definitions: AgentDefinitions) -> list[str]:
    """What ``/agents`` shows: each definition (name, tools, model, file), then each
    skipped file with its reason."""
    lines: list[str] = []
    for agent in sorted(definitions.agents.values(), key=lambda a: a.name):
        tools = ", ".join(agent.tools) if agent.tools is not None else "the parent's minus task"
        model = agent.model or "the parent's"
        lines.append(f"{agent.name}: {agent.description}")
        lines.append(f"    tools: {tools}; model: {model}; {agent.path}")
    if not definitions.agents:
        lines.append("No agent definitions (markdown files in ~/.heron/agents/, .heron/agents/, .claude/agents/).")
    lines += [f"skipped {problem}" for problem in definitions.problems]
    return lines
