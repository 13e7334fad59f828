"""Prompt templates: reusable prompts typed as ``/name args``.

A template is a ``*.md`` file in ``$HERON_HOME/prompts`` (the user's) or
``<cwd>/.heron/prompts`` (the project's); its name is the file name without ``.md``.
Optional YAML front matter gives a ``description`` (shown in completion lists);
without one, the body's first non-empty line stands in.

When both places have a template of the same name, **the project's wins** (with a
diagnostic naming both): like settings, the project is the more specific place, and a
template is text the user chose to type, not something a repository can slip past them
(skills go the other way, see :mod:`heron.coding.skills`).

Arguments are split like a shell does (``"two words"`` is one argument; a backslash is
kept as is, so Windows paths survive), and an unbalanced quote falls back to splitting
on whitespace instead of failing. Placeholders in the body:

* ``$1`` .. ``$9`` (any ``$N``): the N-th argument, empty when missing;
* ``$@`` and ``$ARGUMENTS``: all arguments joined by single spaces;
* ``${@:N}``: the arguments from the N-th on; ``${@:N:L}``: ``L`` arguments from the N-th.

Substitution is one pass, so an argument containing ``$1`` is not expanded again. A
template without any placeholder gets the arguments appended on a line of their own,
so what the user typed is never silently dropped.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from heron.ai.models import heron_home

TemplateSource = Literal["user", "project"]

DESCRIPTION_FALLBACK_CHARS = 80

_PLACEHOLDER = re.compile(r"\$\{@:(\d+)(?::(\d+))?\}|\$ARGUMENTS|\$@|\$([1-9]\d*)")


@dataclass(frozen=True, slots=True)
class PromptTemplate:
    """One prompt template (``/name``) read from disk, with where it came from so that a
    project's template can be told apart from the user's."""

    name: str
    description: str
    body: str
    path: Path
    source: TemplateSource


@dataclass(slots=True)
class TemplateSet:
    """The prompt templates found for a session by name, and the problems met reading them
    (reported, never fatal)."""

    templates: dict[str, PromptTemplate] = field(default_factory=dict)
    diagnostics: list[str] = field(default_factory=list)

    def get(self, name: str) -> PromptTemplate | None:
        return self.templates.get(name)

    def sorted(self) -> list[PromptTemplate]:
        return [self.templates[name] for name in sorted(self.templates)]


def _fallback_description(body: str) -> str:
    for line in body.splitlines():
        text = line.strip().lstrip("#").strip()
        if text:
            if len(text) > DESCRIPTION_FALLBACK_CHARS:
                return text[: DESCRIPTION_FALLBACK_CHARS - 3].rstrip() + "..."
            return text
    return ""


def load_template(path: Path, source: TemplateSource) -> tuple[PromptTemplate | None, str | None]:
    """One template file, or None and the reason it was skipped."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return None, f"{path}: cannot read template: {exc}"
    from heron.coding.frontmatter import FrontMatterError, parse_front_matter  # with the first file, not at start

    try:
        front = parse_front_matter(text)
    except FrontMatterError as exc:
        return None, f"{path}: {exc}; template skipped"
    raw = front.data.get("description")
    description = " ".join(raw.split()) if isinstance(raw, str) and raw.strip() else _fallback_description(front.body)
    body = front.body.strip("\n")
    return PromptTemplate(path.stem, description, body, path, source), None


def template_dirs(cwd: Path, home: Path | None = None) -> list[tuple[Path, TemplateSource]]:
    """Where templates live, lowest precedence first."""
    home = home if home is not None else heron_home()
    return [(home / "prompts", "user"), (Path(cwd) / ".heron" / "prompts", "project")]


def load_templates(cwd: Path, home: Path | None = None) -> TemplateSet:
    """All templates for ``cwd``; a project template replaces a user one of the same name."""
    result = TemplateSet()
    for directory, source in template_dirs(cwd, home):
        try:
            paths = sorted(p for p in directory.glob("*.md") if p.is_file())
        except OSError:
            continue
        for path in paths:
            if any(ch.isspace() for ch in path.stem):
                result.diagnostics.append(f"{path}: a template name cannot contain spaces; template skipped")
                continue
            template, problem = load_template(path, source)
            if template is None:
                result.diagnostics.append(problem or f"{path}: template skipped")
                continue
            previous = result.templates.get(template.name)
            if previous is not None:
                result.diagnostics.append(
                    f"{path}: template /{template.name} replaces the one in {previous.path} (the project's wins)"
                )
            result.templates[template.name] = template
    return result


def split_args(text: str) -> list[str]:
    """Shell-like splitting: quotes group, backslashes are literal; bad quoting -> whitespace split."""
    lexer = shlex.shlex(text, posix=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    lexer.escape = ""
    try:
        return list(lexer)
    except ValueError:
        return text.split()


def substitute(body: str, args: Sequence[str]) -> str:
    """Fill the placeholders of ``body`` from ``args`` (see the module docstring)."""

    def replace(match: re.Match[str]) -> str:
        start, length, index = match.group(1), match.group(2), match.group(3)
        if index is not None:
            position = int(index) - 1
            return args[position] if position < len(args) else ""
        if start is not None:
            first = max(1, int(start)) - 1
            chosen = args[first:] if length is None else args[first : first + int(length)]
            return " ".join(chosen)
        return " ".join(args)

    return _PLACEHOLDER.sub(replace, body)


def expand_template(template: PromptTemplate, args_text: str) -> str:
    """The text to send for ``/name args_text``."""
    args = split_args(args_text)
    if _PLACEHOLDER.search(template.body) is None:
        return f"{template.body}\n\n{args_text.strip()}" if args_text.strip() else template.body
    return substitute(template.body, args)


def parse_template_command(text: str) -> tuple[str, str] | None:
    """``("name", "args")`` for ``/name args``, else None."""
    stripped = text.lstrip()
    if not stripped.startswith("/"):
        return None
    parts = stripped[1:].split(maxsplit=1)
    if not parts:
        return None
    return parts[0], parts[1] if len(parts) > 1 else ""


def expand_template_command(text: str, templates: TemplateSet) -> str | None:
    """The expansion of ``text`` when it invokes a known template, else None (send as is)."""
    parsed = parse_template_command(text)
    if parsed is None:
        return None
    template = templates.get(parsed[0])
    if template is None:
        return None
    return expand_template(template, parsed[1])
