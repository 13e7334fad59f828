"""The built-in tools' parameter models (and the ``task`` and ``goal`` tools').

They live apart from the tools because defining them imports pydantic, which a one-shot
run does not need before its first request: the tools send the schemas precomputed in
``schemas.json`` (:mod:`heron.coding.tools.schema_table`) and this module is imported when
a call's arguments are first validated (docs/architecture.md, "The path to the first request").
Changing a model means regenerating the table: ``python -m heron.coding.tools.schema_table``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from heron.agent.params import ToolParams
from heron.coding.tools.compact import MAX_FOCUS
from heron.coding.tools.env import PATH_DESCRIPTION
from heron.coding.tools.todo import MAX_CONTENT
from heron.context.continuity.goal_loop import MAX_EVIDENCE_CHARS


class ReadParams(ToolParams):
    path: str = Field(description=PATH_DESCRIPTION)
    offset: int | None = Field(default=None, ge=1, description="First line to read (1-based).")
    limit: int | None = Field(default=None, ge=1, description="Maximum lines to read.")


class WriteParams(ToolParams):
    path: str = Field(description=PATH_DESCRIPTION)
    content: str = Field(description="The complete file content.")
    overwrite: bool = Field(
        default=False, description="Replace the file even if it changed on disk since you last read or wrote it."
    )


class Replacement(ToolParams):
    old_text: str = Field(description="Exact text to replace; must occur once.")
    new_text: str = Field(description="Replacement text.")


class EditParams(ToolParams):
    path: str = Field(description=PATH_DESCRIPTION)
    old_text: str | None = Field(default=None, description="Exact text to replace; must occur once in the file.")
    new_text: str | None = Field(default=None, description="Replacement for old_text.")
    edits: list[Replacement] | None = Field(
        default=None, description="Several non-overlapping replacements, instead of old_text/new_text."
    )


class BashParams(ToolParams):
    command: str = Field(description="Shell command (bash syntax).")
    timeout: float | None = Field(
        default=None, gt=0, description="Seconds after which the command and everything it started are killed."
    )
    outside_sandbox: bool | None = Field(
        default=None,
        description="Run this one command outside the sandbox (network, writes outside the project); the user "
        "is asked first. Only after it failed at the sandbox's edge, with a justification.",
    )
    justification: str | None = Field(
        default=None, max_length=2000, description="With outside_sandbox: why, in one sentence the user reads."
    )


class SearchHistoryParams(ToolParams):
    query: str = Field(
        min_length=1,
        description="Words to find (each matched as a word, punctuation included: MARKER-x, foo.py). "
        'FTS5 syntax is used as written when the query has it: "exact phrase", AND, OR, NOT, NEAR(a b), prefix*',
    )
    scope: Literal["session", "project", "all"] = Field(
        default="session",
        description="session: this session's whole tree, including what was compacted away; "
        "project: every session of this working directory; all: every session",
    )
    limit: int = Field(default=10, ge=1, le=100, description="Maximum number of matches")


class TodoEntry(BaseModel):
    content: str = Field(min_length=1, max_length=MAX_CONTENT, description="What to do, in a few words")
    status: Literal["pending", "in_progress", "completed"] = Field(description="pending, in_progress or completed")


class TodoParams(ToolParams):
    todos: list[TodoEntry] = Field(description="The whole list; it replaces the previous one")


class ScriptParams(ToolParams):
    code: str = Field(description="Python 3 source. Print or return (last expression, or `return`) what you need.")
    timeout: float | None = Field(default=None, gt=0, description="Seconds before the script is stopped.")


class GrepParams(ToolParams):
    pattern: str = Field(
        description="Regular expression to search for (ripgrep/Rust syntax), or plain text with literal=true"
    )
    path: str | None = Field(default=None, description="Directory or file to search (default: the working directory)")
    glob: str | None = Field(
        default=None, description="Only search files matching this glob, e.g. '*.py', '*.{ts,tsx}' or 'src/**/*.rs'"
    )
    ignore_case: bool = Field(default=False, description="Match case-insensitively")
    literal: bool = Field(default=False, description="Treat the pattern as plain text, not a regular expression")
    context: int = Field(default=0, ge=0, le=100, description="Lines of context to show before and after each match")
    limit: int | None = Field(default=None, ge=1, description="Maximum number of matching lines to return")


class FindParams(ToolParams):
    pattern: str = Field(
        min_length=1,
        description="Glob to match: '*.py' matches names at any depth; 'src/**/*.ts' or '**/test_*.py' match paths "
        "below the search directory",
    )
    path: str | None = Field(default=None, description="Directory to search (default: the working directory)")
    limit: int | None = Field(default=None, ge=1, description="Maximum number of paths to return")


class LsParams(ToolParams):
    path: str | None = Field(default=None, description="Directory to list (default: the working directory)")
    limit: int | None = Field(default=None, ge=1, description="Maximum number of entries to return")


class JsonQueryParams(ToolParams):
    path: str = Field(min_length=1, description="A JSON (or JSON Lines) file, e.g. a spill file named in a result")
    expr: str = Field(min_length=1, description="A jq expression, e.g. '.items | length' or '.[] | select(.ok) | .id'")


class CompactParams(ToolParams):
    focus: str | None = Field(
        default=None,
        max_length=MAX_FOCUS,
        description="What the summary must keep (the task at hand, a decision, an exact error...)",
    )


class TaskParams(ToolParams):
    description: str = Field(description="What the sub-agent will do, in 3 to 7 words")
    prompt: str = Field(min_length=1, description="The whole task: everything the sub-agent needs to know")
    agent: str | None = Field(default=None, description="Name of an agent definition (default: a general agent)")
    context: Literal["isolated", "fork"] = Field(
        default="isolated",
        description='"isolated" (default): a fresh context with only the prompt; "fork": a copy of this '
        "conversation so far",
    )
    goal: bool | None = Field(
        default=None,
        description="true: give an isolated sub-agent this session's goal too (a fork always has it)",
    )


class GoalParams(ToolParams):
    status: Literal["complete", "blocked"] = Field(
        description='"complete": the goal is met; "blocked": you cannot go on without the user'
    )
    evidence: str = Field(
        min_length=1,
        max_length=MAX_EVIDENCE_CHARS,
        description="complete: what shows the goal is met (tests run, files changed); blocked: what you need and why",
    )
