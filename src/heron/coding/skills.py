"""Agent Skills: discovery, validation and ``/skill:name`` expansion.

A skill is a directory holding a ``SKILL.md`` whose YAML front matter names and
describes it (https://agentskills.io). The system prompt lists each skill's name,
description and location; the model reads the file itself when a task matches, so a
skill costs a few dozen tokens until it is used.

Validation never stops heron: every problem becomes a :class:`SkillDiagnostic`, and a
skill is skipped only when it cannot be offered sensibly (no description, unreadable or
invalid front matter). The checks and their outcomes follow pi's loader, so a skill
folder written for pi gives the same warnings here, with two deliberate differences:
a multi-line description is folded to one line (the prompt lists one skill per entry),
and a loose ``*.md`` directly in a skills directory is not a skill (a skill is a
directory, as the Agent Skills format says).

Where skills come from, in precedence order (the first skill of a name wins, later ones
are reported as collisions naming both files):

1. ``$HERON_HOME/skills`` (the user's own, so a repository cannot shadow them);
2. ``<cwd>/.heron/skills`` (the project);
3. ``.agents/skills`` in the cwd, then in each parent up to and including the git root
   (the directory holding ``.git``); without a git root, only the cwd's.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from heron.ai.models import heron_home

SKILL_FILE = "SKILL.md"
MAX_NAME_LENGTH = 64
MAX_DESCRIPTION_LENGTH = 1024

# Front-matter fields of the Agent Skills format, plus pi's disable-model-invocation.
KNOWN_FIELDS: frozenset[str] = frozenset(
    {"name", "description", "license", "compatibility", "metadata", "allowed-tools", "disable-model-invocation"}
)

_NAME_CHARS = re.compile(r"^[a-z0-9-]+$")
_SKIP_DIRS = frozenset({"node_modules"})

SkillSource = Literal["user", "project", "agents", "path"]
DiagnosticKind = Literal["warning", "collision"]


@dataclass(frozen=True, slots=True)
class Skill:
    """One skill found on disk: its name and description are offered to the model, its
    body is read only when the skill is used (so the prompt stays small)."""

    name: str
    description: str
    file_path: Path
    base_dir: Path  # the skill's directory: relative paths inside SKILL.md resolve against it
    source: SkillSource = "path"
    disable_model_invocation: bool = False  # True: only the user can invoke it, via /skill:name


@dataclass(frozen=True, slots=True)
class SkillDiagnostic:
    """One problem found while loading skills; ``other_path`` is the winner of a collision."""

    kind: DiagnosticKind
    message: str
    path: Path
    other_path: Path | None = None

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


@dataclass(slots=True)
class SkillSet:
    """The skills found for a session and the problems met while finding them; the problems
    are reported, never fatal, so one bad SKILL.md does not hide the others."""

    skills: list[Skill] = field(default_factory=list)
    diagnostics: list[SkillDiagnostic] = field(default_factory=list)

    def get(self, name: str) -> Skill | None:
        return next((skill for skill in self.skills if skill.name == name), None)

    def model_invocable(self) -> list[Skill]:
        return [skill for skill in self.skills if not skill.disable_model_invocation]


class SkillNotFoundError(LookupError):
    """``/skill:name`` named no loaded skill."""


# --- validation -------------------------------------------------------------


def validate_name(name: str, dir_name: str) -> list[str]:
    """The Agent Skills name rules; each broken rule is one message."""
    problems: list[str] = []
    if name != dir_name:
        problems.append(f'name "{name}" does not match parent directory "{dir_name}"')
    if len(name) > MAX_NAME_LENGTH:
        problems.append(f"name exceeds {MAX_NAME_LENGTH} characters ({len(name)})")
    if not _NAME_CHARS.match(name):
        problems.append("name contains invalid characters (only lowercase a-z, 0-9 and hyphens are allowed)")
    if name.startswith("-") or name.endswith("-"):
        problems.append("name must not start or end with a hyphen")
    if "--" in name:
        problems.append("name must not contain consecutive hyphens")
    return problems


def normalise_description(text: str) -> str:
    """Fold a multi-line YAML description into one line: the prompt lists one per entry."""
    return " ".join(text.split())


def load_skill_file(path: Path, source: SkillSource = "path") -> tuple[Skill | None, list[SkillDiagnostic]]:
    """One ``SKILL.md``: the skill (None when it must be skipped) and its diagnostics."""
    diagnostics: list[SkillDiagnostic] = []

    def warn(message: str) -> None:
        diagnostics.append(SkillDiagnostic("warning", message, path))

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        warn(f"cannot read skill file: {exc}")
        return None, diagnostics
    from heron.coding.frontmatter import FrontMatterError, parse_front_matter  # with the first file, not at start

    try:
        front = parse_front_matter(text)
    except FrontMatterError as exc:
        warn(f"{exc}; skill skipped")
        return None, diagnostics

    data = front.data
    for key in data:
        if key not in KNOWN_FIELDS:
            warn(f'unknown frontmatter field "{key}"')

    raw_description = data.get("description")
    description = ""
    if raw_description is None or (isinstance(raw_description, str) and not raw_description.strip()):
        reason = "no YAML front matter; " if not front.present else ""
        warn(f"{reason}description is required; skill skipped")
    elif not isinstance(raw_description, str):
        warn(f"description must be a string, not {type(raw_description).__name__}; skill skipped")
    else:
        description = normalise_description(raw_description)
        if len(description) > MAX_DESCRIPTION_LENGTH:
            warn(f"description exceeds {MAX_DESCRIPTION_LENGTH} characters ({len(description)})")

    base_dir = path.parent
    dir_name = base_dir.name
    raw_name = data.get("name")
    if raw_name is None or raw_name == "":
        name = dir_name
    elif isinstance(raw_name, str):
        name = raw_name.strip()
    else:
        warn(f"name must be a string, not {type(raw_name).__name__}; using the directory name")
        name = dir_name
    for problem in validate_name(name, dir_name):
        warn(problem)

    disable = data.get("disable-model-invocation", False)
    if not isinstance(disable, bool):
        warn(f"disable-model-invocation must be true or false, not {disable!r}; treated as false")
        disable = False

    if not description:
        return None, diagnostics
    skill = Skill(
        name=name,
        description=description,
        file_path=path,
        base_dir=base_dir,
        source=source,
        disable_model_invocation=disable,
    )
    return skill, diagnostics


# --- discovery --------------------------------------------------------------


def load_skills_from_dir(directory: Path, source: SkillSource = "path") -> SkillSet:
    """Every skill at or below ``directory``.

    A directory with its own ``SKILL.md`` is one skill and is not searched further (its
    subdirectories are the skill's resources, not more skills). Hidden directories and
    ``node_modules`` are skipped; entries are visited in sorted order so the result, and
    which of two same-named skills wins, does not depend on the file system.
    """
    result = SkillSet()
    _walk(Path(os.path.abspath(directory)), source, result, seen=set())
    return result


def _walk(directory: Path, source: SkillSource, result: SkillSet, seen: set[str]) -> None:
    try:
        real = os.path.realpath(directory)
    except OSError:
        return
    if real in seen or not directory.is_dir():
        return
    seen.add(real)  # symlink loops end here
    skill_file = directory / SKILL_FILE
    if skill_file.is_file():
        skill, diagnostics = load_skill_file(skill_file, source)
        result.diagnostics.extend(diagnostics)
        if skill is not None:
            result.skills.append(skill)
        return
    try:
        children = sorted(directory.iterdir(), key=lambda p: p.name)
    except OSError:
        return
    for child in children:
        if child.name.startswith(".") or child.name in _SKIP_DIRS:
            continue
        if child.is_dir():
            _walk(child, source, result, seen)


def find_git_root(start: Path) -> Path | None:
    """The nearest directory at or above ``start`` holding ``.git`` (a dir, or a file for worktrees)."""
    for directory in (start, *start.parents):
        if (directory / ".git").exists():
            return directory
    return None


def skill_locations(cwd: Path, home: Path | None = None) -> list[tuple[Path, SkillSource]]:
    """The skills directories to search, in precedence order (see the module docstring)."""
    cwd = Path(os.path.abspath(cwd))
    home = home if home is not None else heron_home()
    locations: list[tuple[Path, SkillSource]] = [(home / "skills", "user"), (cwd / ".heron" / "skills", "project")]
    root = find_git_root(cwd)
    upward = [cwd] if root is None else [cwd, *cwd.parents][: len(cwd.parts) - len(root.parts) + 1]
    locations.extend((directory / ".agents" / "skills", "agents") for directory in upward)
    return locations


def merge_skill_sets(sets: Iterable[SkillSet]) -> SkillSet:
    """Concatenate in order; the first skill of each name wins, later ones become collisions.

    The same file reached twice (a symlinked skills dir, or the cwd being the git root
    and the home at once) is dropped silently: it is not a conflict."""
    merged = SkillSet()
    by_name: dict[str, Skill] = {}
    files: set[str] = set()
    collisions: list[SkillDiagnostic] = []
    for skill_set in sets:
        merged.diagnostics.extend(skill_set.diagnostics)
        for skill in skill_set.skills:
            real = os.path.realpath(skill.file_path)
            if real in files:
                continue
            winner = by_name.get(skill.name)
            if winner is not None:
                message = f'name collision: "{skill.name}" already loaded from {winner.file_path}; this one is ignored'
                collisions.append(SkillDiagnostic("collision", message, skill.file_path, winner.file_path))
                continue
            by_name[skill.name] = skill
            files.add(real)
            merged.skills.append(skill)
    merged.diagnostics.extend(collisions)
    return merged


def load_skills(cwd: Path, home: Path | None = None, extra_dirs: Sequence[Path] = ()) -> SkillSet:
    """All skills for a session in ``cwd`` (``extra_dirs``, e.g. from a flag, come last)."""
    sets = [load_skills_from_dir(directory, source) for directory, source in skill_locations(cwd, home)]
    sets.extend(load_skills_from_dir(Path(directory), "path") for directory in extra_dirs)
    return merge_skill_sets(sets)


# --- /skill:name ------------------------------------------------------------

SKILL_COMMAND_PREFIX = "/skill:"


def parse_skill_command(text: str) -> tuple[str, str] | None:
    """``("name", "args")`` for ``/skill:name args`` (arguments may span lines), else None."""
    stripped = text.strip()
    if not stripped.startswith(SKILL_COMMAND_PREFIX):
        return None
    parts = stripped[len(SKILL_COMMAND_PREFIX) :].split(maxsplit=1)
    if not parts:
        return None
    return parts[0], parts[1].strip() if len(parts) > 1 else ""


def expand_skill_command(text: str, skills: SkillSet) -> str | None:
    """The message to send for ``/skill:name args``; None when ``text`` is not one.

    The skill file is read now (not at discovery), so edits made during a session apply.
    The body is wrapped in a header naming the file and its directory, because a skill's
    relative paths (scripts, references) resolve against that directory; the user's
    arguments follow the skill. Raises :class:`SkillNotFoundError` for an unknown name
    or an unreadable file, with a message fit to show the user.
    """
    parsed = parse_skill_command(text)
    if parsed is None:
        return None
    name, args = parsed
    skill = skills.get(name)
    if skill is None:
        available = ", ".join(sorted(s.name for s in skills.skills)) or "none"
        raise SkillNotFoundError(f"unknown skill {name!r} (available: {available})")
    try:
        content = skill.file_path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SkillNotFoundError(f"cannot read skill {name!r} at {skill.file_path}: {exc}") from exc
    from heron.coding.frontmatter import FrontMatterError, parse_front_matter  # with the first file, not at start

    try:
        body = parse_front_matter(content).body.strip()
    except FrontMatterError:
        body = content.strip()
    parts = [
        f'<skill name="{skill.name}" location="{skill.file_path}">',
        f"Relative paths in this skill resolve against {skill.base_dir}.",
        "",
        body,
        "</skill>",
    ]
    expanded = "\n".join(parts)
    return f"{expanded}\n\n{args}" if args else expanded
