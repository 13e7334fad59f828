"""A prompt that was never answered: the leaf's path ends with a user message.

A new session writes its file with the user's first prompt, before the request that
answers it is sent (:func:`heron.session.store.starts_file`), and every later prompt is
appended the same way. A process that dies while it waits for the answer (a kill, a
crash, a closed terminal, a server that never answers) therefore leaves a session whose
last message on the leaf's path is that prompt, with nothing after it. Such a session is
resumable like any other; this module only recognises the case, so the modes can offer
to send the prompt again (docs/sessions.md, "An unanswered prompt").

Only a prompt read from the file counts: one this process appended is being answered,
or precedes the next prompt on purpose (a sub-agent's preloaded skills are a user message
before its task), and is no business of this module.

Entries that are not part of the conversation may follow the prompt (settings changes,
ledger and context records, labels, a compaction made before the request): they do not
answer it. Any other message does - an assistant message (an error or an abort too), a
tool result, a note, a branch summary.

A prompt can be lost even earlier: a run that asks a local server for its window before
the session is built (:mod:`heron.coding.model_limits`) waits on the network before the
prompt's message exists. So such a run first writes the prompt as a ``custom`` entry of
type ``heron.prompt`` (:func:`journal_prompt`), with the session's file; it never reaches a
request (custom entries are not part of the conversation), and the prompt's message is
written as usual once the session runs. When that message never came - the path ends with
the journal entry and records - the journal is the unanswered prompt
(:attr:`Unanswered.journaled`: it was never sent at all).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from heron.agent.messages import agent_message_from_json
from heron.ai.types import ImageContent, UserMessage
from heron.session.entries import CustomEntry, MessageEntry

if TYPE_CHECKING:
    from heron.session.store import SessionStore

# entry types that never answer a prompt: they carry no message for the conversation
NOT_AN_ANSWER = frozenset({"model_change", "thinking_level_change", "custom", "label", "session_info", "compaction"})
PROMPT_JOURNAL_TYPE = "heron.prompt"  # a prompt written before the network was asked anything


@dataclass(frozen=True, slots=True)
class Unanswered:
    """The unanswered prompt's entry id, its parent's id (None: a root) and the message."""

    entry_id: str
    parent_id: str | None
    message: UserMessage
    journaled: bool = False  # only its journal entry was written: it was never sent

    def parts(self) -> tuple[str, list[ImageContent]]:
        """The text and images of the prompt, as a mode sends them again."""
        content = self.message.content
        images = [] if isinstance(content, str) else [b for b in content if isinstance(b, ImageContent)]
        return self.message.text(), images


def journal_prompt(store: SessionStore, message: UserMessage) -> CustomEntry:
    """Write ``message`` - the prompt a run is about to send - as a ``heron.prompt`` entry,
    and a new session's file with it (module docstring)."""
    entry = store.append_custom(PROMPT_JOURNAL_TYPE, {"message": message.to_json_dict()})
    store.materialize()
    return entry


def _journaled(entry: CustomEntry) -> UserMessage | None:
    """The prompt a ``heron.prompt`` entry holds, else None."""
    if entry.custom_type != PROMPT_JOURNAL_TYPE:
        return None
    raw = entry.data.get("message") if isinstance(entry.data, dict) else None
    try:
        message = agent_message_from_json(raw) if isinstance(raw, dict) else None
    except (ValueError, TypeError, KeyError):
        return None
    return message if isinstance(message, UserMessage) else None


def _sent(store: SessionStore, journal: int) -> bool:
    """Whether a message follows the journal at ``journal`` on any branch below it: its
    prompt went out (and is unanswered, if at all, as that message). The leaf may have
    been moved above that message (sending it again from its parent)."""
    children, types = store.children_indices(), store.types()
    below = list(children[journal])
    while below:
        index = below.pop()
        if types[index] == "message":
            return True
        below.extend(children[index])
    return False


def unanswered_prompt(store: SessionStore) -> Unanswered | None:
    """The user message the leaf's path ends with when nothing answered it and it was
    read from the file (a previous process left it) - or the journal of a prompt that was
    never sent - else None. Only the entries after that message are looked at (from the
    index: cheap on a big file), and only the message and the custom entries after it are
    decoded."""
    entry_id = store.leaf_id
    for _ in range(len(store)):  # from the leaf up, never further than the file is long (a cycle)
        if entry_id is None:
            return None
        index, kind = store.index_of(entry_id), store.type_of(entry_id)
        if kind == "custom" and index < store.opened_entries:
            journal = store.entry_at(index)
            if isinstance(journal, CustomEntry) and (message := _journaled(journal)) is not None:
                return None if _sent(store, index) else Unanswered(journal.id, journal.parent_id, message, True)
        if kind in NOT_AN_ANSWER:
            entry_id = store.parent_id_of(entry_id)
            continue
        if kind != "message" or store.role_at(index) != "user" or index >= store.opened_entries:
            return None
        entry = store.entry_at(index)
        if not isinstance(entry, MessageEntry) or not isinstance(entry.message, UserMessage):
            return None
        return Unanswered(entry.id, entry.parent_id, entry.message)
    return None
