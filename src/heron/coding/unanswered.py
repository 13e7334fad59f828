"""Resuming a session whose last prompt was never answered (docs/sessions.md).

Two ways on from such a session, and both keep the context rules:

- **Send it again** (:func:`resend_unanswered`: interactive Enter, ``heron -p
  --continue`` without a task). The re-send continues from the unanswered entry's
  *parent*: the leaf moves there (nothing is written) and the prompt is sent as a new
  entry, a sibling of the unanswered one, which stays in the file as an abandoned branch.
  The request then carries the prompt once - never two copies of it in a row - and is the
  request the process that died would have sent.
- **Send something else** (a new prompt in any mode). The unanswered prompt stays where it
  is, and :func:`note_unanswered` - called by the runtime before every prompt - first
  appends a note after it: an extension message (``heron.unanswered``, a user message for
  the model) saying that the message before it was never answered, plus a ledger record
  (kind ``unanswered``) naming the entry. The note is an entry of the path like any
  message, so the model sees it once, in its place, in every later request, and a resumed
  process rebuilds exactly the same context from the file. Nothing is dropped silently.

A prompt that was never sent at all - only its journal entry was written, the run that
wrote it stopped while it asked the server for its window
(:func:`heron.session.unanswered.journal_prompt`) - goes the same two ways. Sent again,
it is sent from the journal's parent like any other. Followed by something else, it is
first written where it would have been, as the user message it was about to be, and the
note follows it: the model sees that prompt, the note and the new one, as when the
request had been sent and never answered.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from heron.agent.messages import AgentMessage, ExtensionMessage
from heron.context.records.ledger import LedgerRecord
from heron.session.unanswered import unanswered_prompt

if TYPE_CHECKING:
    from heron.agent.agent import Agent
    from heron.ai.types import ImageContent
    from heron.context.records.ledger import Ledger
    from heron.session.store import SessionStore

UNANSWERED_TYPE = "heron.unanswered"
NOTE_TEXT = (
    "[heron: the user's message above was never answered - the heron process stopped before "
    "an answer arrived. The user has since sent the next message.]"
)


class NoteHost(Protocol):
    """What the note uses of a session: the store and the agent's messages it is appended
    to, and the ledger its record goes in."""

    @property
    def store(self) -> SessionStore: ...

    @property
    def agent(self) -> Agent: ...

    @property
    def ledger(self) -> Ledger: ...


class ResendHost(Protocol):
    """What sending the prompt again uses of a session: the store it is found in, and the
    session's own moves (back to the prompt's parent, then the prompt as the user's)."""

    @property
    def store(self) -> SessionStore: ...

    async def navigate(self, entry_id: str | None, *, summarize: bool = False) -> str | None: ...

    async def prompt(
        self, text: str, images: Sequence[ImageContent] = (), *, commands: bool = True
    ) -> list[AgentMessage]: ...


def note_unanswered(session: NoteHost) -> ExtensionMessage | None:
    """Before a new prompt: when the leaf's path ends with an unanswered prompt, append the
    note (to the session and the agent's messages) and its ledger record; else nothing."""
    found = unanswered_prompt(session.store)
    if found is None:
        return None
    entry_id = found.entry_id
    if found.journaled:  # never sent: in the conversation first, where it would have been
        entry_id = session.store.append_message(found.message).id
        session.agent.state.messages.append(found.message)
    note = ExtensionMessage(
        custom_type=UNANSWERED_TYPE, content=NOTE_TEXT, display=False, details={"entryId": entry_id}
    )
    session.store.append_message(note)
    session.agent.state.messages.append(note)
    chars = len(found.message.text())
    session.ledger.add(
        LedgerRecord(
            kind="unanswered",
            ref=entry_id,
            chars_before=chars,
            chars_after=chars,
            recover=f"the prompt stays in the context (entry {entry_id}), a note after it",
        )
    )
    return note


async def resend_unanswered(session: ResendHost) -> list[AgentMessage] | None:
    """Send the unanswered prompt again, from its parent (see the module docstring); None
    when the session has no unanswered prompt."""
    found = unanswered_prompt(session.store)
    if found is None:
        return None
    text, images = found.parts()
    await session.navigate(found.parent_id)
    return await session.prompt(text, images)
