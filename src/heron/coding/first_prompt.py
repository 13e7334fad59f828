"""The prompt a run starts with, in the session file before heron asks the network anything.

``heron -p "task"`` against a local server whose window nobody configured asks the server
first (:func:`heron.coding.model_limits.with_limits`, while the session is being built:
the window decides the tools' limits and which MCP tools are deferred). The prompt's own
message is written only once the session runs, so a process killed during those probes
- or stopped by a server that never answers them - would leave nothing of the prompt. So
before the probes the session's file is opened (created for a new session) and two
entries are written, neither of which reaches a request:

- the session's server (``heron.server``, :mod:`heron.coding.session_server`), which the
  run would record before its first request anyway, so that ``heron -p --continue``
  without flags finds the server again;
- the prompt (``heron.prompt``, :func:`heron.session.unanswered.journal_prompt`).

A run that goes on writes the prompt's message as usual: the journal entry stays behind as
a record. One killed before that leaves a session whose unanswered prompt is the journal
(docs/sessions.md, "An unanswered prompt"): ``heron -p --continue`` sends it, and a new
prompt puts it in the conversation with a note first (:mod:`heron.coding.unanswered`).
Only a run that will ask the network writes the journal (:func:`heron.coding.model_limits.probe_due`),
and only for a prompt the model is to get: a heron command (``/goal``, ``/compact``) is
answered by heron and writes its own record, so it leaves no journal that a later
``--continue`` would take for a prompt never sent.

The control that redacts secrets from every line of a session file is installed with the
session, after the probes; these two lines are redacted here with the values heron knows
at this point (the keys in use, the values of credential variables, models.json's literal
keys, URL passwords).
"""

from __future__ import annotations

from pathlib import Path

from heron.ai.types import Model, UserMessage
from heron.coding.secrets import REDACTOR, Redactor, SecretPolicy, known_secret_values, url_passwords
from heron.coding.session_server import ServerRecorder
from heron.session.store import SessionStore
from heron.session.unanswered import journal_prompt


def journal_first_prompt(
    store: SessionStore, model: Model, api_key: str | None, home: Path, prompt: UserMessage
) -> None:
    """Write the session's server and ``prompt``'s journal to ``store``'s file (module docstring)."""
    known = Redactor()
    known.add(known_secret_values(SecretPolicy.for_heron(home, (), [api_key]), home))
    known.add(url_passwords(model.base_url))
    previous = store.scrub
    store.scrub = lambda text: known.text(REDACTOR.text(text))
    try:
        ServerRecorder().record(store, model)
        if not prompt.text().startswith("/"):
            journal_prompt(store, prompt)
    finally:
        store.scrub = previous
