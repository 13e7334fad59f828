"""Reflection: a pass that keeps project memory true and short (docs/memory.md, "Reflection").

The model gets the session's view, the memory notes' text and one task: merge duplicate
notes, take out notes the conversation contradicted, keep ``MEMORY.md`` within its budget
(200 lines, 25 KB), and name the notes the conversation confirmed. It has the flush's limits
(:func:`heron.coding.memory.run_restricted`: only ``write``/``edit``, only inside the memory
directory, a few turns, an output cap sized to the window) plus a time limit. A note file
it writes empty is deleted. What it did is one commit (reason ``reflection``), so one
``heron memory revert`` takes it all back, and a ``memory`` ledger record.

It never blocks a turn: ``memory.reflect: compaction`` starts it as a background task after
each compaction, ``end`` when an interactive or rpc session ends (and after a ``-p`` run
that changed memory), ``heron memory reflect`` / ``/memory reflect`` on request. A pass
that fails, hangs past its time limit or is cut short has its file changes put back as they
were and is dropped with a ledger record.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from heron.ai.types import AssistantMessage, StopReason
from heron.coding.memory import (
    FLUSH_MIN_OUTPUT_TOKENS,
    INDEX_FILE,
    MAX_BYTES,
    MAX_LINES,
    fitting_view,
    run_restricted,
    side_room,
)
from heron.coding.memory_history import MemoryHistoryError
from heron.coding.memory_notes import note_files, set_marks
from heron.context.records.ledger import LedgerRecord

if TYPE_CHECKING:
    from heron.agent.agent import Agent
    from heron.agent.tools import AgentTool
    from heron.ai.types import Model
    from heron.coding.memory import MemoryKeeper
    from heron.coding.requests import RequestPath
    from heron.context.policy import ContextPolicy
    from heron.context.records.ledger import Ledger
    from heron.session.store import SessionStore

REFLECT_COMMAND = "/memory reflect"
REFLECT_TIMEOUT_S = 300.0
REFLECT_MAX_TURNS = 6
REFLECT_MAX_NOTE_CHARS = 60_000  # the notes' text sent in one pass; more is not reflected on
REFLECT_PROMPT = (
    "[heron: memory reflection] Tidy the project memory in {directory} so it stays true and short. Its notes "
    "are below. Using what this conversation showed: merge notes that say the same thing into one; take out "
    "notes the conversation contradicted (edit them out of {index}; to remove a whole note file, write it "
    "empty - heron deletes empty notes); keep {index} under {lines} lines and {kb} KB. Use only the write and "
    "edit tools, only inside that directory. End your answer with one line 'CONFIRMED: <note paths, comma "
    "separated>' naming the notes this conversation confirmed, or 'CONFIRMED: none'.\n\n{notes}"
)


def notes_text(directory: Path) -> str | None:
    """Every note as ``<note path=...>`` blocks; None when they are over the pass's limit."""
    parts = []
    for path in note_files(directory):
        try:
            text = (directory / path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        parts.append(f'<note path="{path}">\n{text.rstrip()}\n</note>')
    joined = "\n".join(parts)
    return joined if len(joined) <= REFLECT_MAX_NOTE_CHARS else None


def confirmed_notes(answer: AssistantMessage | None, directory: Path) -> list[str]:
    text = answer.text() if answer is not None else ""
    line = next((ln for ln in reversed(text.splitlines()) if ln.strip().upper().startswith("CONFIRMED:")), "")
    names = [n.strip() for n in line.split(":", 1)[1].split(",")] if line else []
    return [n for n in names if n and n.lower() != "none" and (directory / n).is_file()]


def drop_empty(directory: Path, files: list[str]) -> None:
    """Notes the pass wrote empty are removed (the tools cannot delete a file)."""
    for file in files:
        path = Path(file)
        with contextlib.suppress(OSError):
            if path.is_relative_to(directory) and path.name != INDEX_FILE and not path.read_text().strip():
                path.unlink()


class ReflectHost(Protocol):
    """What a reflection uses of its session: the memory and the ledger its outcome is
    recorded in, the store its commits name, and what a request of the session is made of
    (the policy's view and caps, the model, the system prompt and tools, the request path)
    so the pass shares the conversation's cached prefix."""

    @property
    def memory(self) -> MemoryKeeper: ...

    @property
    def ledger(self) -> Ledger: ...

    @property
    def store(self) -> SessionStore: ...

    @property
    def policy(self) -> ContextPolicy: ...

    @property
    def agent(self) -> Agent: ...

    @property
    def model(self) -> Model: ...

    @property
    def tools(self) -> list[AgentTool[Any]]: ...

    @property
    def requests(self) -> RequestPath: ...


async def reflect(session: ReflectHost, trigger: str) -> tuple[str, bool]:
    """One reflection pass; returns (what to tell the user, whether it failed)."""
    memory, ledger = session.memory, session.ledger
    directory = memory.directory
    if not memory.settings.enabled or not directory.is_dir():
        return "No project memory to reflect on.", False
    notes = notes_text(directory)
    if notes is None:
        return _dropped(session, trigger, f"the notes are over {REFLECT_MAX_NOTE_CHARS:,} characters")
    await memory.off_loop(ledger, functools.partial(memory.commit_outside, session.store))
    prompt = REFLECT_PROMPT.format(
        directory=directory, index=INDEX_FILE, lines=MAX_LINES, kb=MAX_BYTES // 1024, notes=notes
    )
    policy = session.policy
    view, tokens, _ = fitting_view(policy, policy.view(list(session.agent.state.messages)), len(prompt) // 4 + 1)
    if side_room(policy, tokens) < FLUSH_MIN_OUTPUT_TOKENS:
        return _dropped(session, trigger, f"the pass ({tokens:,} tokens) would not fit in the window")
    files: list[str] = []
    try:
        files, answer = await asyncio.wait_for(_run(session, view, prompt, tokens), REFLECT_TIMEOUT_S)
    except TimeoutError:
        return _dropped(session, trigger, f"no answer within {REFLECT_TIMEOUT_S:.0f} s", discard=True)
    except asyncio.CancelledError:
        _dropped(session, trigger, "cut short (the session ended or was aborted)", discard=True)
        raise
    if answer is None or answer.stop_reason in (StopReason.ERROR, StopReason.ABORTED):
        why = (answer.error_message if answer is not None else None) or "the model's answer failed"
        return _dropped(session, trigger, why, discard=True)
    drop_empty(directory, files)
    confirmed = confirmed_notes(answer, directory)
    await memory.off_loop(ledger, lambda records: memory.commit("reflection", session.store, records))
    memory.written = []  # the pass confirms what it kept: nothing it wrote is tentative
    with contextlib.suppress(OSError):
        set_marks(memory.history.git_dir, confirmed, tentative=False, session=session.store.session_id or "")
    changed = [str(Path(f).relative_to(directory)) for f in files]
    ledger.add(
        LedgerRecord(
            kind="memory",
            recover="heron memory log",
            detail={"reflection": True, "trigger": trigger, "files": changed, "confirmed": confirmed},
        )
    )
    return f"Reflected on memory: {len(changed)} note(s) changed, {len(confirmed)} confirmed.", False


async def _run(session: ReflectHost, view: list[Any], prompt: str, tokens: int) -> tuple[list[str], Any]:
    policy = session.policy

    def sized(context: Any) -> Any:
        count = max(tokens, policy.sizes.count(list(context.messages)))
        return session.requests.side_options(policy.sizes.output_cap(count))

    return await run_restricted(
        model=session.model,
        system_prompt=session.agent.state.system_prompt,
        tools=session.tools,
        view=view,
        send=session.requests.side_stream("reflection"),
        options=sized,
        directory=session.memory.directory,
        prompt=prompt,
        max_turns=REFLECT_MAX_TURNS,
    )


def _dropped(session: ReflectHost, trigger: str, why: str, *, discard: bool = False) -> tuple[str, bool]:
    if discard:
        try:
            session.memory.history.discard()
        except (MemoryHistoryError, OSError) as exc:
            why += f"; its changes could not be put back ({exc})"
    detail = {"reflection": True, "trigger": trigger, "dropped": True}
    session.ledger.add(LedgerRecord(kind="memory", recover=f"reflection dropped: {why}", detail=detail))
    return f"Memory reflection dropped: {why}", True
