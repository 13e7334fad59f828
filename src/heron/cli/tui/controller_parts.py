"""Pieces of the interactive controller that need no controller state: a background job,
a question waiting for its answer, the record of a ``!command`` and the ``/session`` rows."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from heron.agent.messages import AgentMessage, BashExecutionMessage
from heron.ai.types import Model, ThinkingLevel
from heron.cli.tui.call_text import result_text
from heron.cli.tui.render import Totals
from heron.coding.handoff_link import handoff_details
from heron.session.store import SessionStore, count_by


@dataclass
class Question:
    """A line the user is asked for (a permission, a /rewind choice): the next submitted
    line answers it instead of steering or starting a run; Ctrl+C or Esc answer None."""

    label: str  # shown as the input line's prompt
    answer: asyncio.Future[str | None]
    keys: str = ""  # keys that answer at once, pressed alone on an empty line (no Enter)


@dataclass
class Job:
    """Work running in the background while the input line stays usable."""

    kind: str  # "run", "compact", "shell", "tree"
    task: asyncio.Task[Any]
    abort: Callable[[], object]
    aborting: bool = False


def bash_message(command: str, result: Any, *, keep: bool) -> BashExecutionMessage:
    """A :class:`BashExecutionMessage` from the bash tool's result: the tool appends its
    notices (truncation, background kill, exit status) after the output, separated by
    blank lines; the message keeps them as fields instead, and the model is told about
    them in its own words (``bash_execution_text``)."""
    details = result.details if isinstance(result.details, dict) else {}
    text = result_text(result.content)
    appended = sum(
        1 for present in (details.get("truncation"), details.get("background_killed"), result.is_error) if present
    )
    body = text.rsplit("\n\n", appended)[0] if appended and "\n\n" in text else ("" if appended else text)
    if body == "(no output)":
        body = ""
    exit_code = details.get("exit_code")
    return BashExecutionMessage(
        command=command,
        output=body,
        exit_code=exit_code if isinstance(exit_code, int) else None,
        cancelled=bool(details.get("aborted") or details.get("timed_out")),
        truncated=details.get("truncation") is not None,
        full_output_path=details.get("full_output_path") if isinstance(details.get("full_output_path"), str) else None,
        exclude_from_context=not keep,
    )


class Described(Protocol):
    """What ``/session`` reads of a session: its file, model and thinking level, its
    messages and their estimated tokens, against its window."""

    @property
    def store(self) -> SessionStore: ...

    @property
    def model(self) -> Model: ...

    @property
    def thinking_level(self) -> ThinkingLevel: ...

    @property
    def messages(self) -> list[AgentMessage]: ...

    @property
    def window(self) -> int: ...

    def estimate_request_tokens(self, messages: Sequence[AgentMessage]) -> int: ...


def session_rows(s: Described, totals: Totals) -> list[tuple[str, str]]:
    """``/session``: file, id, name, counts, model, tokens and context, as label/value rows."""
    store: SessionStore = s.store
    types = store.types()
    roles = count_by([r for r, t in zip(store.roles(), types, strict=True) if t == "message"])
    tokens = s.estimate_request_tokens(s.messages)
    rows = [
        ("file", str(store.path) if store.path is not None else "(in memory, not saved)"),
        ("id", store.session_id),
        ("name", store.name or "(none; /name sets one)"),
        ("cwd", store.header.cwd),
        ("entries", f"{len(types)} ({', '.join(f'{k} {v}' for k, v in sorted(count_by(types).items()))})"),
        ("messages", ", ".join(f"{k} {v}" for k, v in sorted(roles.items())) or "none"),
        ("leaf", f"{store.leaf_id} (entry {store.leaf_index})" if store.leaf_id else "(empty)"),
        ("model", f"{s.model.ref} · thinking {s.thinking_level}"),
        (
            "tokens",
            f"in {totals.input:,} · out {totals.output:,} · cache read {totals.cache_read:,} · ${totals.cost:.4f}",
        ),
        ("context", f"~{tokens:,} of {s.window:,} tokens in {len(s.messages)} messages"),
    ]
    if store.header.parent_session:
        rows.append(("handed off from" if handoff_details(store) else "forked from", store.header.parent_session))
    return rows
