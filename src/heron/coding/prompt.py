"""The system prompt: identity, tools, guidelines, context files, skills, date and cwd.

The prompt is a pure function of its inputs and byte-stable for a whole session: the
date is passed in (fixed at session start), tools keep the order they are given in, and
nothing here reads a clock or the environment. Providers cache the prompt prefix, so a
prompt that changed by one byte per request would be billed in full every time.

What can replace or extend the default (body = identity + tools + guidelines):

* ``--system-prompt TEXT`` replaces the body (``TEXT`` naming an existing file means
  that file's content), else ``SYSTEM.md`` does (the project's ``.heron/SYSTEM.md``
  first, then ``$HERON_HOME/SYSTEM.md``);
* ``APPEND_SYSTEM.md`` (same lookup) and then ``--append-system-prompt`` are appended
  after the body: both, in that order, since one is standing configuration and the
  other a one-off addition.

Context files, skills, date and cwd are added after any body, custom or not: they are
facts about this session, not style.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from heron.ai.models import heron_home
from heron.ai.types import Tool
from heron.coding.context_files import ContextFile
from heron.coding.skills import Skill

IDENTITY = (
    "You are heron, a coding agent working in the user's project on their machine: you read code, run "
    "commands and edit files with the tools below, and carry each task through to a verified result."
)

# One line per built-in tool, as the model sees it in the prompt. The full description
# (limits, parameters) travels with the tool definition; repeating it here would cost its
# length again on every request.
TOOL_SUMMARIES: dict[str, str] = {
    "read": "Read a file or an image; long files come in pages (offset/limit)",
    "write": "Create or overwrite a whole file",
    "edit": "Replace exact, unique text in a file",
    "bash": "Run a shell command; returns its output and exit code",
    "grep": "Search file contents for a regex pattern (respects .gitignore)",
    "find": "Find files by glob pattern (respects .gitignore)",
    "ls": "List the entries of a directory",
    "search_history": "Search this session's whole history, including what compaction summarised",
    "json_query": "Run a jq expression on a JSON file or spill file",
    "todo": "Keep a task list for multi-step work; it survives compaction",
    "compact": "Compact the conversation once a piece of work is done (focus: what to keep)",
    "script": "Run Python that calls these tools; only what it prints and returns comes back",
}

DEFAULT_TOOLS = ("read", "write", "edit", "bash")

SYSTEM_FILE = "SYSTEM.md"
APPEND_SYSTEM_FILE = "APPEND_SYSTEM.md"


@dataclass(frozen=True, slots=True)
class PromptFiles:
    """``SYSTEM.md`` / ``APPEND_SYSTEM.md`` as found on disk (content and where from)."""

    system: str | None = None
    system_path: Path | None = None
    append: str | None = None
    append_path: Path | None = None


def _first_file(name: str, directories: Sequence[Path]) -> tuple[str | None, Path | None]:
    for directory in directories:
        path = directory / name
        try:
            return path.read_text(encoding="utf-8"), path
        except (OSError, UnicodeDecodeError):
            continue
    return None, None


def load_prompt_files(cwd: Path, home: Path | None = None) -> PromptFiles:
    """``SYSTEM.md`` and ``APPEND_SYSTEM.md``, each from ``<cwd>/.heron/`` else ``$HERON_HOME/``."""
    home = home if home is not None else heron_home()
    directories = [Path(cwd) / ".heron", home]
    system, system_path = _first_file(SYSTEM_FILE, directories)
    append, append_path = _first_file(APPEND_SYSTEM_FILE, directories)
    return PromptFiles(system, system_path, append, append_path)


def resolve_prompt_text(value: str, cwd: Path) -> str:
    """A ``--system-prompt`` / ``--append-system-prompt`` value: a file's content when it
    names an existing file (``~`` expanded, relative to ``cwd``), else the text itself."""
    candidate = value.strip()
    if not candidate or "\n" in candidate:
        return value
    path = Path(os.path.expanduser(candidate))
    if not path.is_absolute():
        path = Path(cwd) / path
    try:
        if path.is_file():
            return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError, ValueError):
        pass
    return value


ToolSpec = str | tuple[str, str]


def _tool_lines(tools: Sequence[ToolSpec], summaries: Mapping[str, str]) -> list[tuple[str, str]]:
    """``(name, summary)`` per tool. The table's one line wins for the tools it knows; a
    pair's own description is shortened to its first sentence (the tool definition sent
    with each request carries it whole)."""
    lines: list[tuple[str, str]] = []
    for tool in tools:
        name, given = (tool, "") if isinstance(tool, str) else tool
        summary = summaries.get(name) or first_sentence(given)
        lines.append((name, summary))
    return lines


_SUMMARY_CHARS = 160


def first_sentence(text: str) -> str:
    """The first sentence (or line) of a description, at most ``_SUMMARY_CHARS`` characters."""
    line = text.strip().split("\n", 1)[0]
    end = line.find(". ")
    if end != -1:
        line = line[: end + 1]
    if len(line) > _SUMMARY_CHARS:
        line = line[: _SUMMARY_CHARS - 1].rstrip() + "…"
    return line


def request_overhead_chars(system_prompt: str, tools: Sequence[Tool]) -> int:
    """Characters every request carries before its first message: the system prompt plus
    each tool's name, description and parameter schema (as compact-separator-free JSON,
    the way the figure in ``docs/benchmarks.md`` is measured)."""
    definitions = [{"name": t.name, "description": t.description, "parameters": t.parameters} for t in tools]
    return len(system_prompt) + len(json.dumps(definitions, ensure_ascii=False))


def guidelines(active: Sequence[str]) -> list[str]:
    """Advice that depends on which tools are active; a tool the model lacks is never named."""
    has = set(active).__contains__
    rules: list[str] = []
    search = [name for name in ("grep", "find", "ls") if has(name)]
    if search:
        tools = "/".join(search)
        instead = " rather than bash commands: their output is bounded" if has("bash") else ""
        gitignore = " and they respect .gitignore" if {"grep", "find"} & set(search) else ""
        rules.append(f"Explore the project with {tools}{instead}{gitignore}.")
    elif has("bash"):
        rules.append("Explore the project with bash (ls, rg or grep, find); keep output small with filters and head.")
    if has("read"):
        rules.append("Use read to look at files" + (", not cat or sed through bash." if has("bash") else "."))
    if has("read") and has("edit"):
        rules.append("Read a file before editing it: edit's old_text must match the file exactly, once.")
    if has("edit") and has("write"):
        rules.append("Change existing files with edit; use write only for new files or complete rewrites.")
    elif has("write"):
        rules.append("write replaces a whole file: include every line you want to keep.")
    if has("bash"):
        rules.append("bash is non-interactive: no prompts (pass -y or similar), no editors or pagers.")
        rules.append("Run the project's tests or build after changing code, when it has them.")
    if has("read") or has("bash"):
        rules.append("Tool output can be truncated; its notice says how to get the rest.")
    rules.append("Keep answers short and concrete; name the files you changed.")
    return rules


def _default_body(tools: Sequence[tuple[str, str]]) -> str:
    parts = [IDENTITY]
    if tools:
        listed = "\n".join(f"- {name}: {summary}" if summary else f"- {name}" for name, summary in tools)
        parts.append(f"Available tools:\n{listed}")
    else:
        parts.append("No tools are available in this session: answer from the conversation alone.")
    rules = guidelines([name for name, _ in tools])
    parts.append("Guidelines:\n" + "\n".join(f"- {rule}" for rule in rules))
    return "\n\n".join(parts)


def context_files_block(files: Sequence[ContextFile]) -> str:
    """The project instructions, general first and most specific (closest to the cwd) last."""
    if not files:
        return ""
    parts = [
        "# Project context\n\n"
        "Instructions from the user's context files, from the most general to the most specific "
        "(closest to the working directory). Follow them; where two disagree, the later one wins."
    ]
    parts.extend(f"## {record.path}\n\n{record.content.strip()}" for record in files)
    return "\n\n".join(parts)


def _escape(text: str) -> str:
    import html  # its entity table loads only when there is a skill to list

    return html.escape(text, quote=True)


def skills_block(skills: Sequence[Skill], active: Sequence[str]) -> str:
    """The model-invocable skills (name, description, location) and how to use them.

    Empty when no tool can read a file: the model could not open a skill anyway."""
    visible = [skill for skill in skills if not skill.disable_model_invocation]
    if not visible or not ({"read", "bash"} & set(active)):
        return ""
    how = "read its file with the read tool" if "read" in active else "print its file with bash (cat)"
    lines = [
        "# Skills",
        "",
        f"Skills give instructions for specific tasks. When a task matches a skill's description, {how} "
        "before starting and follow it. Relative paths in a skill file resolve against the skill's directory "
        "(the one holding SKILL.md).",
        "",
        "<available_skills>",
    ]
    for skill in visible:
        lines += [
            "  <skill>",
            f"    <name>{_escape(skill.name)}</name>",
            f"    <description>{_escape(skill.description)}</description>",
            f"    <location>{_escape(str(skill.file_path))}</location>",
            "  </skill>",
        ]
    lines.append("</available_skills>")
    return "\n".join(lines)


# Not strftime("%A"): that follows the C locale, and the prompt must not vary with it.
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def _format_date(date: _dt.date | str) -> str:
    if isinstance(date, _dt.datetime):
        date = date.date()
    if isinstance(date, _dt.date):
        return f"{date.isoformat()} ({_WEEKDAYS[date.weekday()]})"
    return date


def build_system_prompt(
    *,
    cwd: Path | str,
    date: _dt.date | str,
    tools: Sequence[ToolSpec] = DEFAULT_TOOLS,
    context_files: Sequence[ContextFile] = (),
    skills: Sequence[Skill] = (),
    prompt_files: PromptFiles | None = None,
    system_prompt: str | None = None,
    append_system_prompt: str | None = None,
    tool_summaries: Mapping[str, str] | None = None,
) -> str:
    """The whole system prompt, the same bytes for the same inputs.

    ``tools`` are names (described from :data:`TOOL_SUMMARIES`, or ``tool_summaries``)
    or ``(name, one-line description)`` pairs, listed in the order given.
    ``system_prompt`` / ``append_system_prompt`` are the flag values, already resolved
    with :func:`resolve_prompt_text`. ``date`` is the session's start date.
    """
    tool_lines = _tool_lines(tools, {**TOOL_SUMMARIES, **(tool_summaries or {})})
    active = [name for name, _ in tool_lines]
    files = prompt_files or PromptFiles()

    if system_prompt is not None and system_prompt.strip():
        body = system_prompt.strip()
    elif files.system is not None and files.system.strip():
        body = files.system.strip()
    else:
        body = _default_body(tool_lines)

    sections = [body]
    for extra in (files.append, append_system_prompt):
        if extra is not None and extra.strip():
            sections.append(extra.strip())
    for block in (context_files_block(context_files), skills_block(skills, active)):
        if block:
            sections.append(block)
    sections.append(f"Current date: {_format_date(date)}\nCurrent working directory: {cwd}")
    return "\n\n".join(sections) + "\n"
